//! Where the store lives ([`Location`]) and its bounds ([`StoreConfig`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};

/// The file name of the SQLite database inside a data directory.
pub const DATABASE_FILE: &str = "promptstack.db";

/// Where the store lives: an SQLite file or a PostgreSQL database.
///
/// Parsed from text by [`Location::parse`]: `postgres://…` and `postgresql://…` are
/// PostgreSQL; `sqlite:PATH`, `sqlite://PATH` and a bare path are an SQLite file. `Debug` and
/// `Display` hide a PostgreSQL password.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// An SQLite database file (created if missing, with mode 0600 on Unix).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL.
    Postgres(String),
}

impl Location {
    /// Reads a location from a URL or a path.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid) for an empty location, another URL
    /// scheme, an in-memory SQLite database (it would not be durable), SQLite URL parameters
    /// (the durability settings are fixed), or a PostgreSQL URL that does not parse.
    pub fn parse(text: &str) -> Result<Location> {
        if text.trim().is_empty() {
            return Err(Error::invalid("the database location is empty"));
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            text.parse::<sqlx::postgres::PgConnectOptions>()
                .map_err(|_| Error::invalid("the PostgreSQL URL is malformed"))?;
            return Ok(Location::Postgres(text.to_owned()));
        }
        let path = match text.strip_prefix("sqlite:") {
            Some(rest) => rest.strip_prefix("//").unwrap_or(rest),
            None => {
                if let Some((scheme, _)) = text.split_once("://") {
                    return Err(Error::invalid(format!(
                        "unsupported database scheme {:?}: use postgres://… or an SQLite path",
                        scheme.chars().take(20).collect::<String>()
                    )));
                }
                text
            }
        };
        if path.is_empty() || path == ":memory:" || path.starts_with(":memory:") {
            return Err(Error::invalid(
                "an in-memory SQLite database is not durable: give a file path",
            ));
        }
        if path.contains('?') {
            return Err(Error::invalid(
                "SQLite URL parameters are not accepted: the store sets its own durability settings",
            ));
        }
        Ok(Location::Sqlite(PathBuf::from(path)))
    }

    /// The SQLite file inside a data directory: `DIR/promptstack.db`. Opening it creates the
    /// directory with mode 0700 when missing.
    pub fn data_dir(dir: impl AsRef<Path>) -> Location {
        Location::Sqlite(dir.as_ref().join(DATABASE_FILE))
    }

    /// The backend this location selects.
    pub fn backend(&self) -> Backend {
        match self {
            Location::Sqlite(_) => Backend::Sqlite,
            Location::Postgres(_) => Backend::Postgres,
        }
    }
}

impl std::str::FromStr for Location {
    type Err = Error;

    fn from_str(text: &str) -> Result<Location> {
        Location::parse(text)
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            Location::Postgres(url) => f.write_str(&redact_password(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Location::Postgres(url) => f
                .debug_tuple("Postgres")
                .field(&redact_password(url))
                .finish(),
        }
    }
}

/// `postgres://user:secret@host/db` → `postgres://user:***@host/db`; a `password=` query
/// parameter is hidden too.
fn redact_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_owned(),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                        format!("{key}=***")
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// One SQLite file: nothing to install; one process writes at a time.
    Sqlite,
    /// PostgreSQL: several instances share one database and hear each other's changes.
    Postgres,
}

impl Backend {
    /// `sqlite` or `postgres`.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The store's bounds: sizes, page lengths, pools and timeouts. Every field has a default
/// (see [`StoreConfig::default`]); set the ones to change with the builder methods.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoreConfig {
    /// The largest bundle accepted by `publish`, in bytes (default 8 MiB).
    pub max_bundle_bytes: usize,
    /// The largest warnings document of a version, serialised, in bytes (default 1 MiB).
    pub max_warnings_bytes: usize,
    /// The largest settings document, serialised, in bytes (default 256 KiB).
    pub max_settings_bytes: usize,
    /// The most labels one agent may have (default 256), so listing them stays bounded.
    pub max_labels_per_agent: usize,
    /// The most versions one agent may have (default 1000); publishing one more is refused.
    pub max_versions_per_agent: usize,
    /// The most agents one tenant may have (default 500).
    pub max_agents_per_tenant: usize,
    /// The most keys one tenant may have that are not revoked (default 100).
    pub max_keys_per_tenant: usize,
    /// The most bytes one tenant may store (default 1 GiB): its versions (bundles) and the
    /// result rows of its eval runs together.
    pub max_tenant_bytes: u64,
    /// The most cells (version × model × scenario × repetition) one eval run may have
    /// (default 10000).
    pub max_cells_per_run: usize,
    /// The most eval runs one tenant may have queued or running at once (default 4).
    pub max_active_runs_per_tenant: usize,
    /// The largest result row of one cell, serialised, in bytes (default 256 KiB).
    pub max_result_row_bytes: usize,
    /// The most provider credentials one tenant may hold (default 100).
    pub max_credentials_per_tenant: usize,
    /// The largest secret value of one credential, in bytes (default 8 KiB).
    pub max_credential_bytes: usize,
    /// The page length when a request names none (default 50).
    pub default_page: u32,
    /// The longest page; longer requests are cut to it (default 200).
    pub max_page: u32,
    /// Connections to PostgreSQL, or SQLite readers (default 8; SQLite has one writer more).
    pub max_connections: u32,
    /// How long to wait for a free connection, including connecting (default 5 s).
    pub acquire_timeout: Duration,
    /// The longest any one store operation may take before it fails with `Unavailable`
    /// (default 10 s). Also PostgreSQL's `statement_timeout` and SQLite's busy timeout.
    pub operation_timeout: Duration,
    /// How many changes a slow subscriber may fall behind before it is told of a gap
    /// (default 1024).
    pub notification_buffer: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_bundle_bytes: 8 << 20,
            max_warnings_bytes: 1 << 20,
            max_settings_bytes: 256 << 10,
            max_labels_per_agent: 256,
            max_versions_per_agent: 1000,
            max_agents_per_tenant: 500,
            max_keys_per_tenant: 100,
            max_tenant_bytes: 1 << 30,
            max_cells_per_run: 10_000,
            max_active_runs_per_tenant: 4,
            max_result_row_bytes: 256 << 10,
            max_credentials_per_tenant: 100,
            max_credential_bytes: 8 << 10,
            default_page: 50,
            max_page: 200,
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            operation_timeout: Duration::from_secs(10),
            notification_buffer: 1024,
        }
    }
}

impl StoreConfig {
    /// Sets [`StoreConfig::max_bundle_bytes`].
    pub fn max_bundle_bytes(mut self, bytes: usize) -> Self {
        self.max_bundle_bytes = bytes;
        self
    }

    /// Sets [`StoreConfig::max_warnings_bytes`].
    pub fn max_warnings_bytes(mut self, bytes: usize) -> Self {
        self.max_warnings_bytes = bytes;
        self
    }

    /// Sets [`StoreConfig::max_settings_bytes`].
    pub fn max_settings_bytes(mut self, bytes: usize) -> Self {
        self.max_settings_bytes = bytes;
        self
    }

    /// Sets [`StoreConfig::max_labels_per_agent`].
    pub fn max_labels_per_agent(mut self, labels: usize) -> Self {
        self.max_labels_per_agent = labels;
        self
    }

    /// Sets the tenant quotas: [`StoreConfig::max_versions_per_agent`],
    /// [`StoreConfig::max_agents_per_tenant`], [`StoreConfig::max_keys_per_tenant`] and
    /// [`StoreConfig::max_tenant_bytes`].
    pub fn quotas(mut self, versions: usize, agents: usize, keys: usize, bytes: u64) -> Self {
        self.max_versions_per_agent = versions;
        self.max_agents_per_tenant = agents;
        self.max_keys_per_tenant = keys;
        self.max_tenant_bytes = bytes;
        self
    }

    /// Sets the eval run quotas: [`StoreConfig::max_cells_per_run`],
    /// [`StoreConfig::max_active_runs_per_tenant`] and [`StoreConfig::max_result_row_bytes`].
    pub fn eval_quotas(mut self, cells: usize, active_runs: usize, row_bytes: usize) -> Self {
        self.max_cells_per_run = cells;
        self.max_active_runs_per_tenant = active_runs;
        self.max_result_row_bytes = row_bytes;
        self
    }

    /// Sets the credential quotas: [`StoreConfig::max_credentials_per_tenant`] and
    /// [`StoreConfig::max_credential_bytes`].
    pub fn credential_quotas(mut self, credentials: usize, bytes: usize) -> Self {
        self.max_credentials_per_tenant = credentials;
        self.max_credential_bytes = bytes;
        self
    }

    /// Sets [`StoreConfig::default_page`] and [`StoreConfig::max_page`] (at least 1 each; the
    /// default is cut to the maximum).
    pub fn pages(mut self, default: u32, max: u32) -> Self {
        self.max_page = max.max(1);
        self.default_page = default.clamp(1, self.max_page);
        self
    }

    /// Sets [`StoreConfig::max_connections`] (at least 1).
    pub fn max_connections(mut self, connections: u32) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// Sets [`StoreConfig::acquire_timeout`].
    pub fn acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Sets [`StoreConfig::operation_timeout`].
    pub fn operation_timeout(mut self, timeout: Duration) -> Self {
        self.operation_timeout = timeout;
        self
    }

    /// Sets [`StoreConfig::notification_buffer`] (at least 1).
    pub fn notification_buffer(mut self, changes: usize) -> Self {
        self.notification_buffer = changes.max(1);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        assert_eq!(
            Location::parse("sqlite:data/x.db").unwrap(),
            Location::Sqlite("data/x.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:///tmp/x.db").unwrap(),
            Location::Sqlite("/tmp/x.db".into())
        );
        assert_eq!(
            Location::parse("x.db").unwrap(),
            Location::Sqlite("x.db".into())
        );
        assert_eq!(
            Location::parse("postgres://u@localhost/db")
                .unwrap()
                .backend(),
            Backend::Postgres
        );
        for bad in [
            "",
            "sqlite::memory:",
            ":memory:",
            "sqlite:x.db?mode=ro",
            "mysql://x/y",
        ] {
            assert!(Location::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_are_hidden() {
        let location =
            Location::parse("postgres://u:hunter2@h:5432/db?password=hunter2&x=1").unwrap();
        for shown in [location.to_string(), format!("{location:?}")] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains("u:***@h:5432/db"), "{shown}");
        }
    }
}
