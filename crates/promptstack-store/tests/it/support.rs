//! The harness each case gets: one database of one backend, opened as many times as a case
//! needs, and small builders shared by the cases.

use std::sync::atomic::{AtomicU32, Ordering};

use promptstack_store::testing::TempDatabase;
use promptstack_store::{
    AgentName, ErrorKind, KeyId, LabelName, Location, NewRun, NewVersion, Principal, Role, RunRef,
    Store, StoreConfig, Tenant, VersionId,
};

/// One database for one case.
pub struct Harness {
    location: Location,
    // Held for their `Drop`: the directory or database goes away with the harness.
    _dir: Option<tempfile::TempDir>,
    _database: Option<TempDatabase>,
}

impl Harness {
    /// An SQLite file in a fresh temporary directory.
    pub async fn sqlite() -> Harness {
        let dir = tempfile::tempdir().expect("a temporary directory");
        Harness {
            location: Location::data_dir(dir.path().join("data")),
            _dir: Some(dir),
            _database: None,
        }
    }

    /// A fresh database on the test PostgreSQL server; fails the test when it is unreachable.
    pub async fn postgres() -> Harness {
        let database = TempDatabase::create()
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL is required by this suite: {e}"));
        Harness {
            location: database.location(),
            _dir: None,
            _database: Some(database),
        }
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The temporary database, for outage controls (PostgreSQL only).
    pub fn database(&self) -> &TempDatabase {
        self._database
            .as_ref()
            .expect("only PostgreSQL cases control the database")
    }

    /// A new store instance on this case's database.
    pub async fn open(&self) -> Store {
        self.open_with(StoreConfig::default()).await
    }

    pub async fn open_with(&self, config: StoreConfig) -> Store {
        Store::open_with(self.location.clone(), config)
            .await
            .expect("the store opens")
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self.location, Location::Postgres(_))
    }
}

/// A tenant slug unique within the process.
pub fn tenant(prefix: &str) -> Tenant {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    Tenant::parse(&format!(
        "{prefix}-{}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
    .unwrap()
}

pub fn agent(name: &str) -> AgentName {
    AgentName::parse(name).unwrap()
}

pub fn label(name: &str) -> LabelName {
    LabelName::parse(name).unwrap()
}

/// The version id of `n`: a fixed SHA-256-shaped id per number.
pub fn vid(n: u32) -> VersionId {
    VersionId::parse(&format!("{n:064x}")).unwrap()
}

/// A bundle whose id is `vid(n)`.
pub fn bundle(n: u32) -> NewVersion {
    NewVersion::new(
        vid(n),
        "application/json",
        format!("{{\"n\":{n}}}").into_bytes(),
    )
}

/// A run of one version of `agent`, referenced as `production`, with `models`, one scenario
/// and one repetition.
pub fn one_version_run(agent_name: &str, version: u32, models: &[&str]) -> NewRun {
    NewRun::new(
        agent(agent_name),
        "evals/smoke.toml",
        vec![RunRef {
            reference: "production".into(),
            version: vid(version),
        }],
        models.iter().map(|m| (*m).to_owned()).collect(),
        vec!["s".into()],
        1,
    )
}

/// A tenant with an admin key, authenticated.
pub async fn principal(store: &Store, prefix: &str) -> (Principal, String) {
    let tenant = tenant(prefix);
    let key = store
        .create_key(&tenant, Role::Admin, Some(&"test".parse().unwrap()))
        .await
        .unwrap();
    let secret = key.key.expose().to_owned();
    let principal = store.authenticate(&secret).await.unwrap().unwrap();
    (principal, secret)
}

/// Publishes versions `ns` of `agent` for `principal`.
pub async fn publish_all(store: &Store, who: &Principal, agent: &AgentName, ns: &[u32]) {
    for n in ns {
        store
            .publish(&who.tenant, agent, &bundle(*n), Some(&who.key_id))
            .await
            .unwrap();
    }
}

/// The kind of the error `result` holds; panics on success.
pub fn kind<T: std::fmt::Debug>(result: promptstack_store::Result<T>) -> ErrorKind {
    result.expect_err("an error was expected").kind()
}

pub fn by(who: &Principal) -> Option<&KeyId> {
    Some(&who.key_id)
}
