//! Tenant-instructions sources and the cache in front of them.
//!
//! A tenant's administrator writes instructions (`{enabled, text}`) for every agent the tenant
//! runs. A [`TenantInstructionsSource`] reads them (from a file, from memory; a database-backed
//! source belongs to the server). [`CachedInstructions`] sits in front of a source on the send
//! path and keeps three promises:
//!
//! - **fail open**: a source that errors or does not answer within the timeout yields "no
//!   instructions" with the reason in [`TenantInstructions::unavailable`] (which the assembly
//!   reports as a warning), never a failed send;
//! - **TTL**: an entry is reused for `ttl` (60 s by default), so an administrator's edit lands
//!   within a minute without a restart; a failure is remembered for `error_ttl` (5 s) so a failing
//!   source is not hammered either;
//! - **single flight**: when an entry expires under load, one read goes to the source and every
//!   concurrent caller waits for that one read.
//!
//! The cache reads time from tokio's clock, so tests can pause and advance it.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::{BoxFuture, Shared};
use promptstack_core::context::TenantInstructions;
use tokio::time::Instant;

/// Why a source could not answer.
pub type SourceError = Box<dyn std::error::Error + Send + Sync>;

/// Reads a tenant's instructions.
pub trait TenantInstructionsSource: Send + Sync + 'static {
    /// The tenant's instructions; a tenant without any yields the default (switched off, empty).
    fn fetch(
        &self,
        tenant: &str,
    ) -> impl Future<Output = Result<TenantInstructions, SourceError>> + Send;
}

/// Instructions held in memory, set by the application (tests, single-process deployments).
#[derive(Debug, Default)]
pub struct MemorySource {
    tenants: Mutex<HashMap<String, TenantInstructions>>,
}

impl MemorySource {
    /// An empty source.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets (or replaces) a tenant's instructions.
    pub fn set(&self, tenant: &str, enabled: bool, text: &str) {
        let instructions = TenantInstructions {
            enabled,
            text: text.to_owned(),
            unavailable: None,
        };
        self.lock().insert(tenant.to_owned(), instructions);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, TenantInstructions>> {
        // Entries are replaced whole, so a poisoned lock still holds consistent data.
        self.tenants.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl TenantInstructionsSource for MemorySource {
    fn fetch(
        &self,
        tenant: &str,
    ) -> impl Future<Output = Result<TenantInstructions, SourceError>> + Send {
        let found = self.lock().get(tenant).cloned().unwrap_or_default();
        std::future::ready(Ok(found))
    }
}

/// Instructions in a folder, one JSON file per tenant: `<dir>/<tenant>.json` holding
/// `{"enabled": true, "text": "…"}`. A tenant without a file has no instructions.
///
/// Files are read through the bounded reader: a file that is not a regular file, is larger than
/// [`Limit::TenantBytes`](crate::limits::Limit::TenantBytes) or is a symlink out of `dir` is a
/// failed read (so the tenant gets no instructions, with the reason).
#[derive(Debug, Clone)]
pub struct FileSource {
    dir: PathBuf,
    limits: crate::limits::Limits,
}

impl FileSource {
    /// A source reading from `dir`, with the default limits.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            limits: crate::limits::Limits::default(),
        }
    }

    /// Reads with `limits` instead of the defaults.
    pub fn with_limits(mut self, limits: crate::limits::Limits) -> Self {
        self.limits = limits;
        self
    }
}

impl TenantInstructionsSource for FileSource {
    fn fetch(
        &self,
        tenant: &str,
    ) -> impl Future<Output = Result<TenantInstructions, SourceError>> + Send {
        let dir = self.dir.clone();
        let limits = self.limits.clone();
        let tenant = tenant.to_owned();
        async move {
            if tenant.is_empty()
                || !tenant
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            {
                return Err(format!(
                    "`{}` is not a valid tenant id",
                    promptstack_core::diagnostic::quote(&tenant)
                )
                .into());
            }
            let path = dir.join(format!("{tenant}.json"));
            let read = tokio::task::spawn_blocking(move || {
                if std::fs::symlink_metadata(&path).is_err() {
                    return Ok(None);
                }
                let kind = crate::limits::InputKind::Tenant;
                crate::limits::read_within(&path, &dir, kind, &limits).map(|b| Some((b, path)))
            })
            .await
            .map_err(|e| -> SourceError { Box::new(e) })?;
            let Some((bytes, path)) = read? else {
                return Ok(TenantInstructions::default());
            };
            let mut instructions: TenantInstructions =
                serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            instructions.unavailable = None;
            Ok(instructions)
        }
    }
}

/// How long entries live and how long a read may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// How long a successful read is reused. Default: 60 s.
    pub ttl: Duration,
    /// How long a failed read is remembered before the source is asked again. Default: 5 s.
    pub error_ttl: Duration,
    /// How long a read may take before it counts as failed. Default: 2 s.
    pub timeout: Duration,
}

impl Default for CacheConfig {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(60),
            error_ttl: Duration::from_secs(5),
            timeout: Duration::from_secs(2),
        }
    }
}

type Read = Shared<BoxFuture<'static, TenantInstructions>>;

#[derive(Default)]
struct Entry {
    value: Option<(TenantInstructions, Instant)>,
    reading: Option<(u64, Read)>,
}

/// A fail-open, single-flight TTL cache in front of a [`TenantInstructionsSource`].
pub struct CachedInstructions<S> {
    source: Arc<S>,
    config: CacheConfig,
    entries: Mutex<HashMap<String, Entry>>,
    reads: std::sync::atomic::AtomicU64,
}

impl<S: TenantInstructionsSource> CachedInstructions<S> {
    /// A cache with the default configuration.
    pub fn new(source: S) -> Self {
        Self::with_config(source, CacheConfig::default())
    }

    /// A cache with this configuration.
    pub fn with_config(source: S, config: CacheConfig) -> Self {
        Self {
            source: Arc::new(source),
            config,
            entries: Mutex::new(HashMap::new()),
            reads: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many reads went to the source so far.
    pub fn source_reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // Entries are replaced whole, so a poisoned lock still holds consistent data.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The tenant's instructions: cached while fresh, else read once for every concurrent caller.
    /// Never fails: a failed or slow read yields no instructions with the reason set in
    /// `unavailable`.
    pub async fn get(&self, tenant: &str) -> TenantInstructions {
        let (generation, read) = {
            let mut entries = self.lock();
            let entry = entries.entry(tenant.to_owned()).or_default();
            if let Some((value, expires)) = &entry.value
                && Instant::now() < *expires
            {
                return value.clone();
            }
            match &entry.reading {
                Some((generation, read)) => (*generation, read.clone()),
                None => {
                    let generation = self
                        .reads
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let read = self.start_read(tenant);
                    entry.reading = Some((generation, read.clone()));
                    (generation, read)
                }
            }
        };
        let value = read.await;
        let mut entries = self.lock();
        if let Some(entry) = entries.get_mut(tenant)
            && entry
                .reading
                .as_ref()
                .is_some_and(|(g, _)| *g == generation)
        {
            let ttl = if value.unavailable.is_some() {
                self.config.error_ttl
            } else {
                self.config.ttl
            };
            entry.reading = None;
            entry.value = Some((value.clone(), Instant::now() + ttl));
        }
        value
    }

    fn start_read(&self, tenant: &str) -> Read {
        let source = Arc::clone(&self.source);
        let tenant = tenant.to_owned();
        let timeout = self.config.timeout;
        async move {
            let failed = |why: String| TenantInstructions {
                enabled: false,
                text: String::new(),
                unavailable: Some(why),
            };
            match tokio::time::timeout(timeout, source.fetch(&tenant)).await {
                Ok(Ok(mut value)) => {
                    value.unavailable = None;
                    value
                }
                Ok(Err(error)) => failed(format!("the source failed: {error}")),
                Err(_) => failed(format!(
                    "the source did not answer within {} ms",
                    timeout.as_millis()
                )),
            }
        }
        .boxed()
        .shared()
    }

    /// Fills a send context's `tenant_instructions` for this tenant.
    pub async fn resolve(&self, tenant: &str, ctx: &mut promptstack_core::SendContext) {
        *ctx.tenant_instructions = Some(self.get(tenant).await);
    }
}

impl<S> std::fmt::Debug for CachedInstructions<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedInstructions")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
