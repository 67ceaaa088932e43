//! How a server behaves: its limits, caches, streams and shares, and how it runs evals. Every
//! field has a default.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use promptstack::limits::Limits;
use promptstack_eval::suite::Model;
use promptstack_store::CredentialKey;

use crate::problem::printable;

/// How the server behaves; every field has a default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The largest request body, in bytes (413 above). Default: 1 MiB.
    pub max_body_bytes: usize,
    /// How long a request may take before it is answered with 503. Default: 10 s.
    pub request_timeout: Duration,
    /// Requests per second each key may make (sustained); `0` turns the limit off. Default: 100.
    pub rate_per_second: u32,
    /// Requests a key may make in a burst above the sustained rate. Default: 200.
    pub rate_burst: u32,
    /// How long labels, settings and keys are reused without asking the store. Default: 60 s.
    pub ttl: Duration,
    /// How many compiled versions are kept in memory. Default: 100.
    pub compiled_versions: usize,
    /// The limits of the engine (template fuel and memory, manifest sizes).
    pub limits: Limits,
    /// The longest wait for the next chunk of a streamed body (`/v1/cite`). Default: 30 s.
    pub stream_idle_timeout: Duration,
    /// The most bytes a streamed body may carry. Default: 16 MiB.
    pub max_stream_bytes: u64,
    /// The longest a streamed body may last. Default: 10 min.
    pub max_stream_duration: Duration,
    /// How many streams (`/v1/cite`) may run at once; more get 503. Default: 64.
    pub max_streams: usize,
    /// How long a graceful shutdown waits for requests in flight before dropping them.
    /// Default: 30 s.
    pub shutdown_grace: Duration,
    /// How many runs of engine work one tenant may have on the blocking pool at once; `0` is
    /// half the pool (which holds twice the cores), at least 1. Default: 0.
    pub tenant_engine_share: usize,
    /// How long a tenant's engine work waits for a turn within its share before it is answered
    /// 429 with `Retry-After`. Default: 2 s.
    pub tenant_engine_wait: Duration,
    /// The key provider credentials are sealed with (from `PROMPTSTACK_CREDENTIALS_KEY`);
    /// without one, the credentials routes answer 503 `credentials-not-configured` and nothing
    /// else changes. Default: none.
    pub credentials_key: Option<Arc<CredentialKey>>,
    /// How this instance runs eval cells.
    pub eval: EvalConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            max_body_bytes: 1024 * 1024,
            request_timeout: Duration::from_secs(10),
            rate_per_second: 100,
            rate_burst: 200,
            ttl: Duration::from_secs(60),
            compiled_versions: 100,
            limits: Limits::default(),
            stream_idle_timeout: Duration::from_secs(30),
            max_stream_bytes: 16 * 1024 * 1024,
            max_stream_duration: Duration::from_secs(600),
            max_streams: 64,
            shutdown_grace: Duration::from_secs(30),
            tenant_engine_share: 0,
            tenant_engine_wait: Duration::from_secs(2),
            credentials_key: None,
            eval: EvalConfig::default(),
        }
    }
}

impl ServerConfig {
    /// Sets how this instance runs eval cells.
    pub fn eval(mut self, eval: EvalConfig) -> Self {
        self.eval = eval;
        self
    }

    /// Sets the body limit.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }
    /// Sets the request timeout.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }
    /// Sets the per-key rate limit (`0` turns it off) and burst.
    pub fn rate_limit(mut self, per_second: u32, burst: u32) -> Self {
        self.rate_per_second = per_second;
        self.rate_burst = burst.max(1);
        self
    }
    /// Sets the TTL of cached labels, settings and keys.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }
    /// Sets how many compiled versions are kept.
    pub fn compiled_versions(mut self, versions: usize) -> Self {
        self.compiled_versions = versions.max(1);
        self
    }
    /// Sets the bounds of a streamed body: the idle wait per chunk, the total bytes and the total
    /// duration.
    pub fn stream_limits(mut self, idle: Duration, bytes: u64, duration: Duration) -> Self {
        self.stream_idle_timeout = idle;
        self.max_stream_bytes = bytes;
        self.max_stream_duration = duration;
        self
    }
    /// Sets how many streams may run at once.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams.max(1);
        self
    }
    /// Sets a tenant's share of the engine's blocking pool (`0`: half the pool) and how long its
    /// work waits for a turn within that share before a 429.
    pub fn tenant_engine_share(mut self, runs: usize, wait: Duration) -> Self {
        self.tenant_engine_share = runs;
        self.tenant_engine_wait = wait;
        self
    }
    /// Sets the key provider credentials are sealed with.
    pub fn credentials_key(mut self, key: CredentialKey) -> Self {
        self.credentials_key = Some(Arc::new(key));
        self
    }
    /// Sets how long a graceful shutdown waits before dropping requests in flight.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }
}

/// How the service runs evals; every field has a default.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EvalConfig {
    /// Cells this instance runs at once; 0 runs none (the instance only serves). Default: 2.
    pub workers: usize,
    /// How long a claim holds a cell before another instance may take it over; renewed every
    /// third of it while the cell runs. Default: 60 s.
    pub lease: Duration,
    /// How often an idle worker looks for cells. Default: 1 s.
    pub poll: Duration,
    /// Base URLs a suite's model may call besides the providers' own (`https://api.openai.com`,
    /// `https://api.anthropic.com`, `https://generativelanguage.googleapis.com`): a URL is
    /// allowed when its scheme, host and port are one of these and its path starts with that
    /// one's path. Default: none.
    pub endpoints: Vec<String>,
    /// The operator's base URL for every suite model of a name, replacing the suite's
    /// `base_url` (and always allowed). Default: none.
    pub model_urls: BTreeMap<String, String>,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            workers: 2,
            lease: Duration::from_secs(60),
            poll: Duration::from_secs(1),
            endpoints: Vec::new(),
            model_urls: BTreeMap::new(),
        }
    }
}

/// The providers' own base URLs, allowed without configuration.
const PROVIDERS: [&str; 3] = [
    "https://api.openai.com",
    "https://api.anthropic.com",
    "https://generativelanguage.googleapis.com",
];

impl EvalConfig {
    /// Whether `base_url` may be called: one of the providers' URLs or of
    /// [`EvalConfig::endpoints`], compared parsed (scheme, host, port, then path prefix), so
    /// `https://api.openai.com.example` does not pass as `https://api.openai.com`.
    pub fn allows(&self, base_url: &str) -> bool {
        let Ok(url) = url::Url::parse(base_url) else {
            return false;
        };
        PROVIDERS
            .iter()
            .copied()
            .chain(self.endpoints.iter().map(String::as_str))
            .filter_map(|allowed| url::Url::parse(allowed).ok())
            .any(|allowed| {
                let prefix = allowed.path().trim_end_matches('/');
                allowed.scheme() == url.scheme()
                    && allowed.host_str() == url.host_str()
                    && allowed.port_or_known_default() == url.port_or_known_default()
                    && url
                        .path()
                        .strip_prefix(prefix)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            })
    }

    /// The model as this instance calls it: the operator's base URL for its name when there is
    /// one, else its own when allowed. `Err` says why it may not be called.
    pub(crate) fn model(&self, name: &str, model: &Model) -> Result<Model, String> {
        let mut model = model.clone();
        if let Some(url) = self.model_urls.get(name) {
            model.base_url.clone_from(url);
        } else if !self.allows(&model.base_url) {
            return Err(format!(
                "model `{name}` calls `{}`, which this server does not allow (`--eval-endpoint`)",
                printable(&model.base_url)
            ));
        }
        if model.credential.is_none() && model.api_key_env.is_some() {
            return Err(format!(
                "model `{name}` reads its key from an environment variable (`api_key_env`); in \
                 the service a model names a stored credential instead (`credential = \"NAME\"`)"
            ));
        }
        Ok(model)
    }
}
