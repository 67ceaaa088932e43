//! The bounded reader on real special files and symlinks, and `docs/limits.md` kept in step with
//! the code: its tables are generated from [`Limit`] and the engine's constants, and this test
//! fails when the document says anything else (`UPDATE_LIMITS_DOC=1` rewrites them).

use std::path::{Path, PathBuf};
use std::time::Duration;

use promptstack::limits::{
    BENCH_ITERATIONS_MAX, InputError, InputKind, Limit, Limits, MCP_TIMEOUT_DEFAULT,
    MCP_TIMEOUT_MAX_SECONDS, SIM_GAP_MAX_SECONDS, read, read_within,
};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("limits")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn special_files_are_refused_without_blocking() {
    let dir = scratch("special");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let limits = Limits::default();
    for (path, found) in [
        (fifo.as_path(), "a FIFO (named pipe)"),
        (Path::new("/dev/zero"), "a character device"),
        (dir.as_path(), "a directory"),
    ] {
        match read(path, InputKind::Spec, &limits) {
            Err(InputError::NotAFile { found: f, .. }) => assert_eq!(f, found),
            other => panic!("{}: {other:?}", path.display()),
        }
    }
}

#[test]
fn sizes_are_capped_while_reading() {
    let dir = scratch("sizes");
    let path = dir.join("big.json");
    std::fs::write(&path, vec![b'a'; 3000]).unwrap();
    let mut limits = Limits::default();
    limits.set(Limit::SendBytes, 2048).unwrap();
    let error = read(&path, InputKind::Send, &limits).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "send context {} is larger than 2 KiB (the `send-bytes` limit)",
            path.display()
        )
    );
    // Context files are cut to their cap instead.
    limits.set(Limit::ContextFileBytes, 1000).unwrap();
    let cut = read_within(&path, &dir, InputKind::ContextFile, &limits).unwrap();
    assert_eq!(cut.len(), 1000);
    // At the cap exactly, the file is read whole.
    limits.set(Limit::SendBytes, 3000).unwrap();
    assert_eq!(read(&path, InputKind::Send, &limits).unwrap().len(), 3000);
}

#[test]
fn symlinks_may_not_leave_their_root() {
    let dir = scratch("links");
    std::fs::create_dir_all(dir.join("root/inner")).unwrap();
    std::fs::write(dir.join("root/inner/kept.md"), "kept").unwrap();
    std::fs::write(dir.join("secret.md"), "secret").unwrap();
    std::os::unix::fs::symlink("inner/kept.md", dir.join("root/inside.md")).unwrap();
    std::os::unix::fs::symlink(dir.join("secret.md"), dir.join("root/outside.md")).unwrap();
    std::os::unix::fs::symlink("../secret.md", dir.join("root/relative.md")).unwrap();
    let limits = Limits::default();
    let root = dir.join("root");
    let kind = InputKind::ContextFile;
    assert_eq!(
        read_within(&root.join("inside.md"), &root, kind, &limits).unwrap(),
        b"kept"
    );
    for name in ["outside.md", "relative.md"] {
        match read_within(&root.join(name), &root, kind, &limits) {
            Err(InputError::Escapes { target, .. }) => assert_eq!(target, dir.join("secret.md")),
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn the_context_chain_refuses_escaping_and_special_files() {
    let dir = scratch("chain");
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(dir.join("secret.md"), "secret").unwrap();
    std::os::unix::fs::symlink(dir.join("secret.md"), work.join("AGENTS.md")).unwrap();
    let limits = Limits::default();
    let error = promptstack::context_files::load_chain(None, &work, &limits).unwrap_err();
    assert!(
        error.to_string().contains("symlinks may not leave it"),
        "{error}"
    );
    std::fs::remove_file(work.join("AGENTS.md")).unwrap();
    mkfifo(&work.join("CLAUDE.md"));
    let error = promptstack::context_files::load_chain(None, &work, &limits).unwrap_err();
    assert!(error.to_string().contains("a FIFO"), "{error}");
}

/// One row of a generated table.
fn row(cells: &[String]) -> String {
    format!("| {} |\n", cells.join(" | "))
}

/// The limits an application changes, from [`Limit`].
fn changeable() -> String {
    let mut out = row(&[
        "name".into(),
        "bounds".into(),
        "default".into(),
        "at most".into(),
        "when it is hit".into(),
    ]);
    out.push_str("|---|---|---|---|---|\n");
    for limit in Limit::ALL {
        out.push_str(&row(&[
            format!("`{}`", limit.name()),
            limit.describe().to_owned(),
            limit.format_value(limit.default_value()),
            limit.format_value(limit.ceiling()),
            limit.on_hit().to_owned(),
        ]));
    }
    out
}

/// The limits fixed in the code, each from the constant that enforces it.
fn fixed() -> String {
    use promptstack::core::layers::files::Caps;
    let caps = Caps::default();
    let kib = |n: usize| format!("{} KiB", n / 1024);
    let rows: Vec<[String; 4]> = vec![
        [
            "nesting of arrays and tables in a spec or send context".into(),
            promptstack::core::spec::load::MAX_NESTING.to_string(),
            "fixed".into(),
            "refused (`too-deep`), located at the first bracket too deep, before any parser recurses".into(),
        ],
        [
            // The fuel constant is private to the engine's template module.
            "template fuel (instructions per render of one template)".into(),
            "5000000".into(),
            "fixed".into(),
            "the render fails with an out-of-fuel error (exit 1); a runaway loop ends instead of hanging".into(),
        ],
        [
            "one context file shown in the prompt".into(),
            kib(caps.max_file_bytes),
            "`context_files(max_file_bytes=…)` in a template".into(),
            "the file is cut with a visible note".into(),
        ],
        [
            "all context files shown in the prompt".into(),
            kib(caps.max_total_bytes),
            "`context_files(max_total_bytes=…)` in a template".into(),
            "later files are cut or left out with a visible note".into(),
        ],
        [
            "citation labels in one conversation".into(),
            promptstack::core::turn::DEFAULT_SOURCE_CAP.to_string(),
            "`[turn] source_cap` in the spec".into(),
            "no label is issued past the cap".into(),
        ],
        [
            "tool name length".into(),
            promptstack::core::tools::naming::MAX_TOOL_NAME_LEN.to_string(),
            "fixed (the providers' limit)".into(),
            "MCP names are shortened with a hash suffix; a longer spec tool name is refused".into(),
        ],
        [
            "stream processor lookahead".into(),
            format!("{} bytes", promptstack::core::stream::MAX_LOOKAHEAD),
            "fixed".into(),
            "an undecided run longer than this is released as plain text".into(),
        ],
        [
            "one MCP message (a stdio line or an HTTP event)".into(),
            format!(
                "{} MiB",
                rmcp_line_limit() / (1024 * 1024)
            ),
            "fixed (the MCP client's transport)".into(),
            "the message is dropped; the request then fails or times out and the server is skipped".into(),
        ],
        [
            "MCP start + handshake, and again the listing".into(),
            format!("{} s", MCP_TIMEOUT_DEFAULT.as_secs()),
            format!("`tools --mcp-timeout SECONDS` (more than 0, at most {MCP_TIMEOUT_MAX_SECONDS})"),
            "the server is skipped for this send (`connect` or `list` timed out) and retried in the background".into(),
        ],
        [
            "tenant instructions: reuse, failure memory, read time".into(),
            tenant_times(),
            "`tenant::CacheConfig` in Rust".into(),
            "a slow or failed read yields no instructions for the send (fail open), with the reason".into(),
        ],
        [
            "gap between simulated turns".into(),
            format!("{SIM_GAP_MAX_SECONDS} s"),
            "`cache-sim --gap-seconds` (default 60)".into(),
            "refused (exit 2); so is a simulation ending after the year 9999".into(),
        ],
        [
            "timed iterations of `bench`".into(),
            BENCH_ITERATIONS_MAX.to_string(),
            "`bench --iterations` (default 2000)".into(),
            "refused (exit 2)".into(),
        ],
        [
            "input quoted in one message".into(),
            format!(
                "{} characters",
                promptstack::core::diagnostic::QUOTE_MAX_CHARS
            ),
            "fixed".into(),
            "the rest is shown as `…`; control characters are always escaped".into(),
        ],
    ];
    let mut out = row(&[
        "limit".into(),
        "value".into(),
        "how to change it".into(),
        "when it is hit".into(),
    ]);
    out.push_str("|---|---|---|---|\n");
    for cells in rows {
        out.push_str(&row(&cells));
    }
    out
}

fn rmcp_line_limit() -> usize {
    rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH
}

fn tenant_times() -> String {
    let config = promptstack::tenant::CacheConfig::default();
    let s = |d: Duration| format!("{} s", d.as_secs());
    format!(
        "{}, {}, {}",
        s(config.ttl),
        s(config.error_ttl),
        s(config.timeout)
    )
}

/// Replaces the text between `<!-- begin NAME -->` and `<!-- end NAME -->`.
fn splice(doc: &str, name: &str, table: &str) -> String {
    let begin = format!("<!-- begin {name} -->\n");
    let end = format!("<!-- end {name} -->");
    let from = doc.find(&begin).expect("begin marker") + begin.len();
    let to = doc.find(&end).expect("end marker");
    format!("{}{table}{}", &doc[..from], &doc[to..])
}

#[test]
fn the_limits_document_matches_the_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/limits.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let expected = splice(
        &splice(&doc, "changeable limits", &changeable()),
        "fixed limits",
        &fixed(),
    );
    if std::env::var_os("UPDATE_LIMITS_DOC").is_some() {
        std::fs::write(&path, &expected).unwrap();
        return;
    }
    assert!(
        doc == expected,
        "docs/limits.md disagrees with the code; rerun with UPDATE_LIMITS_DOC=1 and review the \
         diff. Expected tables:\n\n{}\n{}",
        changeable(),
        fixed()
    );
}
