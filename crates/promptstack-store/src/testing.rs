//! Test support (feature `testing`): throwaway PostgreSQL databases and the controls an outage
//! test needs. Used by this crate's conformance suite and by its consumers' tests.
//!
//! The server is found at `$PROMPTSTACK_TEST_POSTGRES` (default
//! `postgres://postgres@127.0.0.1:5432/postgres`). A test that needs it and cannot reach it
//! fails; it does not skip.

use std::sync::atomic::{AtomicU32, Ordering};

use sqlx::Connection;
use sqlx::postgres::PgConnection;

use crate::config::Location;
use crate::error::{Error, ErrorKind, Result};

/// The environment variable naming the PostgreSQL server tests use.
pub const POSTGRES_ENV: &str = "PROMPTSTACK_TEST_POSTGRES";

/// The PostgreSQL server tests use: `$PROMPTSTACK_TEST_POSTGRES`, or the local default.
pub fn postgres_server() -> String {
    std::env::var(POSTGRES_ENV)
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_owned())
}

/// A uniquely named database on the test server, dropped (with its connections) when this
/// value is dropped, also when the test panics.
#[derive(Debug)]
pub struct TempDatabase {
    name: String,
    server: String,
    url: String,
}

impl TempDatabase {
    /// Creates a fresh, empty database.
    ///
    /// # Errors
    ///
    /// `Unavailable` when the server cannot be reached.
    pub async fn create() -> Result<TempDatabase> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let mut random = [0u8; 4];
        getrandom::fill(&mut random).map_err(|e| Error::internal(e.to_string()))?;
        let name = format!(
            "promptstack_test_{}_{}_{:08x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            u32::from_le_bytes(random)
        );
        let server = postgres_server();
        let mut admin = connect(&server).await?;
        sqlx::query(&format!("CREATE DATABASE \"{name}\""))
            .execute(&mut admin)
            .await?;
        let url = with_database(&server, &name);
        Ok(TempDatabase { name, server, url })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database as a store location.
    pub fn location(&self) -> Location {
        Location::Postgres(self.url.clone())
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Ends every connection to the database, as a server restart or a network cut would.
    ///
    /// # Errors
    ///
    /// `Unavailable` when the server cannot be reached.
    pub async fn terminate_connections(&self) -> Result<u64> {
        let mut admin = connect(&self.server).await?;
        let ended = sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(&self.name)
        .fetch_all(&mut admin)
        .await?;
        Ok(ended.len() as u64)
    }

    /// Refuses (`false`) or accepts again (`true`) new connections to the database: with
    /// [`TempDatabase::terminate_connections`], an outage the test controls.
    ///
    /// # Errors
    ///
    /// `Unavailable` when the server cannot be reached.
    pub async fn allow_connections(&self, allow: bool) -> Result<()> {
        let mut admin = connect(&self.server).await?;
        sqlx::query(&format!(
            "ALTER DATABASE \"{}\" WITH ALLOW_CONNECTIONS {allow}",
            self.name
        ))
        .execute(&mut admin)
        .await?;
        Ok(())
    }
}

impl Drop for TempDatabase {
    fn drop(&mut self) {
        let server = self.server.clone();
        let name = self.name.clone();
        // Drop may run inside a runtime (a test body) or outside one: a thread with its own
        // runtime works in both.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let mut admin = connect(&server).await.ok()?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .execute(&mut admin)
                    .await
                    .ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("warning: could not drop test database {}", self.name);
        }
    }
}

async fn connect(url: &str) -> Result<PgConnection> {
    PgConnection::connect(url).await.map_err(|e| {
        Error::new(
            ErrorKind::Unavailable,
            format!(
                "cannot reach the test PostgreSQL server (set {POSTGRES_ENV}): {}",
                Error::from(e)
            ),
        )
    })
}

/// `scheme://authority/old?query` → `scheme://authority/name?query`.
fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.split_once('?').map(|(_, q)| q);
    match query {
        Some(query) => format!("{scheme}://{authority}/{name}?{query}"),
        None => format!("{scheme}://{authority}/{name}"),
    }
}
