//! `promptstack keys` end to end, on an SQLite data directory and on PostgreSQL: the key is
//! printed once on stdout, authenticates, lists without its secret, and stops working once
//! revoked. Keys, ids, times and temporary paths are random, so snapshots filter them.

use std::path::Path;
use std::process::{Command, Output};

use insta_cmd::assert_cmd_snapshot;
use promptstack_store::testing::TempDatabase;
use promptstack_store::{Location, Store, StoreConfig};

use crate::support::promptstack;

/// Filters for what differs between runs.
fn filters(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    // Specific values first: insta applies filters in order.
    let mut filters: Vec<(String, String)> = extra
        .iter()
        .map(|(from, to)| (regex_escape(from), (*to).to_owned()))
        .collect();
    filters.extend([
        (r"psk_[0-9a-f]{16}_[0-9a-f]{64}".into(), "[KEY]".into()),
        (r"\b[0-9a-f]{16}\b".into(), "[KEY-ID]".into()),
        (
            r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z".into(),
            "[TIME]".into(),
        ),
    ]);
    filters
}

/// The filters as insta takes them.
fn refs(filters: &[(String, String)]) -> Vec<(&str, &str)> {
    filters
        .iter()
        .map(|(from, to)| (from.as_str(), to.as_str()))
        .collect()
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special
                .then_some('\\')
                .into_iter()
                .chain(std::iter::once(c))
        })
        .collect()
}

fn keys(args: &[&str]) -> Command {
    let mut command = promptstack();
    command.arg("keys").args(args);
    command
}

/// `promptstack keys ARGS` run in `dir`, so that paths in the arguments (and so in the
/// snapshots) are relative and stable.
fn keys_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = keys(args);
    command.current_dir(dir);
    command
}

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

async fn open(location: Location) -> Store {
    Store::open_with(location, StoreConfig::default())
        .await
        .unwrap()
}

#[test]
fn help() {
    for args in [
        &["keys", "--help"][..],
        &["keys", "create", "--help"],
        &["keys", "list", "--help"],
        &["keys", "revoke", "--help"],
    ] {
        insta::with_settings!({ snapshot_suffix => args[..args.len() - 1].join("-") }, {
            assert_cmd_snapshot!("help", promptstack().args(args));
        });
    }
}

#[tokio::test]
async fn create_list_revoke_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = dir.join("data");

    let created = run(&mut keys_in(
        dir,
        &[
            "create",
            "--data",
            "data",
            "--tenant",
            "acme",
            "--role",
            "admin",
            "--name",
            "deploy bot",
        ],
    ));
    // Stdout holds the key and nothing else.
    let key = stdout(&created);
    let key = key.strip_suffix('\n').unwrap();
    assert!(is_key(key), "{key:?}");
    insta::with_settings!({ filters => refs(&filters(&[])) }, {
        insta::assert_snapshot!("create-stderr", String::from_utf8_lossy(&created.stderr));
    });

    // The printed key authenticates; the file and its directory are private.
    let store = open(Location::data_dir(&data)).await;
    let principal = store.authenticate(key).await.unwrap().unwrap();
    assert_eq!(principal.tenant.as_str(), "acme");
    store.close().await;
    check_private(&data);

    run(&mut keys_in(
        dir,
        &[
            "create", "--data", "data", "--tenant", "acme", "--role", "viewer",
        ],
    ));
    run(&mut keys_in(
        dir,
        &[
            "create", "--data", "data", "--tenant", "beta-2", "--role", "editor",
        ],
    ));
    let listed = run(&mut keys_in(dir, &["list", "--data", "data"]));
    assert!(
        !stdout(&listed).contains(&key[21..]),
        "the secret is never listed"
    );
    let id = principal.key_id.to_string();
    insta::with_settings!({ filters => refs(&filters(&[(&id, "[ADMIN-KEY-ID]")])) }, {
        assert_cmd_snapshot!("list-table", keys_in(dir, &["list", "--data", "data"]));
        assert_cmd_snapshot!(
            "list-json-tenant",
            keys_in(dir, &["list", "--data", "data", "--tenant", "beta-2", "--json"])
        );
        let mut revoke = keys_in(dir, &["revoke", "--data", "data"]);
        revoke.arg(&id);
        assert_cmd_snapshot!("revoke", revoke);
        let mut again = keys_in(dir, &["revoke", "--data", "data"]);
        again.arg(&id);
        assert_cmd_snapshot!("revoke-again", again);
        assert_cmd_snapshot!(
            "revoke-unknown",
            keys_in(dir, &["revoke", "--data", "data", "0123456789abcdef"])
        );
    });
    let store = open(Location::data_dir(&data)).await;
    assert_eq!(store.authenticate(key).await.unwrap(), None);
}

#[test]
fn default_data_directory_is_in_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let created =
        run(keys(&["create", "--tenant", "acme", "--role", "viewer"]).current_dir(dir.path()));
    assert!(is_key(stdout(&created).trim_end()));
    let data = dir.path().join("promptstack-data");
    assert!(data.join("promptstack.db").is_file());
    check_private(&data);
}

#[tokio::test]
async fn create_list_revoke_on_postgres() {
    let database = TempDatabase::create()
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL is required by this test: {e}"));
    let url = database.url();
    let created = run(&mut keys(&[
        "create",
        "--database",
        url,
        "--tenant",
        "acme",
        "--role",
        "editor",
    ]));
    let key = stdout(&created);
    let key = key.trim_end();
    let store = open(database.location()).await;
    let principal = store.authenticate(key).await.unwrap().unwrap();
    assert_eq!(principal.role.as_str(), "editor");
    let listed = run(&mut keys(&["list", "--database", url]));
    insta::with_settings!({ filters => refs(&filters(&[])) }, {
        insta::assert_snapshot!("list-postgres", stdout(&listed));
    });
    run(&mut keys(&[
        "revoke",
        "--database",
        url,
        principal.key_id.as_str(),
    ]));
    assert_eq!(store.authenticate(key).await.unwrap(), None);
    store.close().await;
}

#[test]
fn bad_input_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let cases: [(&str, &[&str]); 7] = [
        (
            "bad-role",
            &[
                "create", "--data", "data", "--tenant", "acme", "--role", "owner",
            ],
        ),
        (
            "bad-tenant",
            &[
                "create",
                "--data",
                "data",
                "--tenant",
                "Acme Corp",
                "--role",
                "admin",
            ],
        ),
        ("bad-url", &["list", "--database", "mysql://localhost/db"]),
        (
            "data-and-database",
            &[
                "list",
                "--data",
                "data",
                "--database",
                "postgres://localhost/db",
            ],
        ),
        ("bad-key-id", &["revoke", "--data", "data", "psk_nope"]),
        (
            "bad-tenant-escape",
            &[
                "create",
                "--data",
                "data",
                "--tenant",
                "\u{1b}[2J\u{7}",
                "--role",
                "admin",
            ],
        ),
        (
            "bad-name",
            &[
                "create", "--data", "data", "--tenant", "acme", "--role", "admin", "--name", "a\nb",
            ],
        ),
    ];
    for (name, args) in cases {
        assert_cmd_snapshot!(name, keys_in(dir, args));
    }
    // Refused input is refused before the store is opened: nothing was created.
    assert!(!dir.join("data").exists());
}

#[test]
fn unreachable_database_exits_one() {
    assert_cmd_snapshot!(keys(&[
        "list",
        "--database",
        "postgres://postgres@127.0.0.1:1/none"
    ]));
}

fn is_key(text: &str) -> bool {
    let bytes = text.as_bytes();
    text.len() == 85
        && text.starts_with("psk_")
        && bytes[20] == b'_'
        && text[4..20]
            .bytes()
            .chain(text[21..].bytes())
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_private(data: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(data), 0o700);
    assert_eq!(mode(&data.join("promptstack.db")), 0o600);
}

#[test]
fn a_tenant_at_its_key_quota_gets_no_more_keys() {
    let data = tempfile::tempdir().unwrap();
    let create = |quota: &str| {
        keys_in(
            data.path(),
            &[
                "create",
                "--tenant",
                "acme",
                "--role",
                "viewer",
                "--max-keys-per-tenant",
                quota,
            ],
        )
        .output()
        .unwrap()
    };
    assert!(create("2").status.success());
    let second = create("2");
    assert!(second.status.success());
    let refused = create("2");
    assert_eq!(refused.status.code(), Some(2));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(message.contains("tenant acme has 2 keys"), "{message}");
    assert!(refused.stdout.is_empty());
    // A higher quota lets the next one through.
    assert!(create("3").status.success());
}
