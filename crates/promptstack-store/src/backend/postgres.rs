//! PostgreSQL: a bounded pool with an acquire timeout and a `statement_timeout`, so a database
//! that is down or stuck fails fast; row locks (`FOR UPDATE`) serialise the writes that check a
//! precondition; changes are announced with `NOTIFY` inside the writing transaction. A second,
//! one-connection pool serves the `LISTEN` connection, so the listener never waits behind busy
//! queries. No TLS: connect over localhost, a private network or a local proxy.

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::notify::{CHANNEL, Change};

pub(crate) type Db = sqlx::Postgres;

/// The tenant's row, locked until commit.
pub(crate) const LOCK_TENANT: &str = "SELECT id FROM tenants WHERE slug = $1 FOR UPDATE";

/// The agent's row and its tenant's, the agent's locked until commit.
pub(crate) const LOCK_AGENT: &str = "SELECT a.id, a.tenant_id FROM agents a \
     JOIN tenants t ON t.id = a.tenant_id WHERE t.slug = $1 AND a.name = $2 FOR UPDATE OF a";

/// Claimers skip a cell another transaction is claiming, instead of waiting for it.
pub(crate) const SKIP_LOCKED: &str = " FOR UPDATE SKIP LOCKED";

#[path = "ops.rs"]
pub(crate) mod ops;

#[allow(clippy::duplicate_mod)]
#[path = "eval_ops.rs"]
pub(crate) mod eval_ops;

#[allow(clippy::duplicate_mod)]
#[path = "credential_ops.rs"]
pub(crate) mod credential_ops;

/// The pools of one PostgreSQL database.
pub(crate) struct Handle {
    pool: PgPool,
    listen_pool: PgPool,
}

impl Handle {
    /// Connects to `url` and migrates the database (under PostgreSQL's advisory lock, so
    /// instances starting together migrate once).
    pub(crate) async fn open(url: &str, config: &StoreConfig) -> Result<Handle> {
        let timeout_ms = config.operation_timeout.as_millis().to_string();
        let options = url
            .parse::<PgConnectOptions>()
            .map_err(|_| Error::invalid("the PostgreSQL URL is malformed"))?
            .application_name("promptstack")
            .options([
                ("statement_timeout", timeout_ms.as_str()),
                ("idle_in_transaction_session_timeout", timeout_ms.as_str()),
            ]);
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.acquire_timeout)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("migrations/postgres").run(&pool).await?;
        let listen_pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(config.acquire_timeout)
            .connect_lazy_with(options);
        Ok(Handle { pool, listen_pool })
    }

    /// A write transaction.
    pub(crate) async fn begin(&self) -> sqlx::Result<sqlx::Transaction<'static, Db>> {
        self.pool.begin().await
    }

    pub(crate) fn reader(&self) -> &PgPool {
        &self.pool
    }

    pub(crate) fn listen_pool(&self) -> &PgPool {
        &self.listen_pool
    }

    pub(crate) async fn close(&self) {
        self.listen_pool.close().await;
        self.pool.close().await;
    }
}

/// `NOTIFY` inside the transaction: PostgreSQL delivers it on commit, and never for a rollback.
pub(crate) async fn announce(
    tx: &mut sqlx::Transaction<'static, Db>,
    change: &Change,
) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(change.to_payload())
        .execute(&mut **tx)
        .await?;
    Ok(())
}
