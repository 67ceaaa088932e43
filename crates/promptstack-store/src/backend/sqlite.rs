//! SQLite: one file in WAL mode with `synchronous=FULL` (a commit is on disk before it is
//! acknowledged), foreign keys on, a busy timeout. One writer connection, so in-process writers
//! queue fairly in the pool; writes start with `BEGIN IMMEDIATE`, so a writer in another process
//! (the `keys` command beside a running server) waits on the busy timeout instead of failing
//! half-way. Readers have their own pool and never wait for the writer.

use std::path::Path;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::notify::Change;

pub(crate) type Db = sqlx::Sqlite;

/// The tenant's row; `BEGIN IMMEDIATE` already holds the write lock.
pub(crate) const LOCK_TENANT: &str = "SELECT id FROM tenants WHERE slug = $1";

/// The agent's row and its tenant's.
pub(crate) const LOCK_AGENT: &str = "SELECT a.id, a.tenant_id FROM agents a \
     JOIN tenants t ON t.id = a.tenant_id WHERE t.slug = $1 AND a.name = $2";

/// Nothing to skip: `BEGIN IMMEDIATE` serialises claimers, and the claim is one `UPDATE`.
pub(crate) const SKIP_LOCKED: &str = "";

#[path = "ops.rs"]
pub(crate) mod ops;

#[allow(clippy::duplicate_mod)]
#[path = "eval_ops.rs"]
pub(crate) mod eval_ops;

#[allow(clippy::duplicate_mod)]
#[path = "credential_ops.rs"]
pub(crate) mod credential_ops;

/// The pools of one SQLite database.
pub(crate) struct Handle {
    writer: SqlitePool,
    reader: SqlitePool,
}

impl Handle {
    /// Opens (creating if missing) the database at `path` and migrates it.
    pub(crate) async fn open(path: &Path, config: &StoreConfig) -> Result<Handle> {
        prepare_file(path)?;
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(false)
            .foreign_keys(true)
            .busy_timeout(config.operation_timeout)
            .synchronous(SqliteSynchronous::Full);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options.clone().journal_mode(SqliteJournalMode::Wal))
            .await?;
        sqlx::migrate!("migrations/sqlite").run(&writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options.read_only(true))
            .await?;
        Ok(Handle { writer, reader })
    }

    /// A write transaction, holding the database's write lock from its first statement.
    pub(crate) async fn begin(&self) -> sqlx::Result<sqlx::Transaction<'static, Db>> {
        self.writer.begin_with("BEGIN IMMEDIATE").await
    }

    pub(crate) fn reader(&self) -> &SqlitePool {
        &self.reader
    }

    pub(crate) async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}

/// Nothing to do inside the transaction: SQLite changes are announced in-process after commit.
pub(crate) async fn announce(
    _tx: &mut sqlx::Transaction<'static, Db>,
    _change: &Change,
) -> Result<()> {
    Ok(())
}

/// Creates missing parent directories (mode 0700) and a missing database file (mode 0600),
/// before SQLite does with the process umask. The WAL and shared-memory files SQLite creates
/// later take the database file's mode.
fn prepare_file(path: &Path) -> Result<()> {
    let io = |what: &str, e: std::io::Error| {
        Error::new(
            crate::ErrorKind::Unavailable,
            format!("cannot {what} {}: {e}", path.display()),
        )
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder
            .create(parent)
            .map_err(|e| io("create the directory of", e))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io("create", e)),
    }
}
