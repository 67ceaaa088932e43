//! `promptstack serve`: the HTTP API over the store.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use promptstack_server::{AppState, Bundle, EvalConfig, ServerConfig};
use promptstack_store::{AgentName, CREDENTIALS_KEY_ENV, CredentialKey, StoreConfig, Tenant};

use crate::cmd::keys::StoreArgs;
use crate::exit::bad_input;

/// Serve the HTTP API: versioned agents, labels, tenant settings and every engine operation.
///
/// The store is an SQLite file under `--data` (default `promptstack-data/`), or the PostgreSQL
/// database given with `--database` (several instances may share one). Requests authenticate
/// with `Authorization: Bearer KEY`; make keys with `promptstack keys create`. SIGTERM or
/// SIGINT stops accepting connections and lets requests in flight finish. Provider credentials
/// are stored sealed under the key in `PROMPTSTACK_CREDENTIALS_KEY` (32 bytes in base64); without
/// it, the credentials routes answer 503. See docs/server.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7411")]
    listen: String,
    #[command(flatten)]
    store: StoreArgs,
    /// Publish every agent folder under DIR (default: ./examples) into tenant `default` and
    /// point its `production` label at it when that label is not set yet.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "examples")]
    examples: Option<PathBuf>,
    /// The largest request body, in bytes (larger bodies get 413).
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
    max_body_bytes: usize,
    /// How long a request may take, in milliseconds, before it is answered with 503.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    request_timeout_ms: u64,
    /// Requests per second each key may make (429 with Retry-After above); 0 turns it off.
    #[arg(long, value_name = "N", default_value_t = 100)]
    rate_limit: u32,
    /// Requests a key may make in a burst above the rate.
    #[arg(long, value_name = "N", default_value_t = 200)]
    rate_burst: u32,
    /// How long labels, settings and keys are reused without reading the store, in seconds
    /// (change notifications drop them sooner).
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    ttl_seconds: u64,
    /// The largest stored bundle (a version in its canonical form), in bytes (413 above).
    #[arg(long, value_name = "BYTES", default_value_t = 8 << 20)]
    max_bundle_bytes: usize,
    /// The largest settings document, in bytes (413 above).
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 10)]
    max_settings_bytes: usize,
    /// The most versions one agent may have (422 `quota-exceeded` above).
    #[arg(long, value_name = "N", default_value_t = 1000)]
    max_versions_per_agent: usize,
    /// The most agents one tenant may have (422 `quota-exceeded` above).
    #[arg(long, value_name = "N", default_value_t = 500)]
    max_agents_per_tenant: usize,
    /// The most bytes of versions one tenant may store (413 above).
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30)]
    max_tenant_bytes: u64,
    /// How many runs of engine work one tenant may have at once on the blocking pool (which
    /// holds twice the cores); 0 is half the pool.
    #[arg(long, value_name = "N", default_value_t = 0)]
    tenant_engine_share: usize,
    /// How long a tenant's engine work waits for a turn within its share, in milliseconds,
    /// before it is answered 429 with Retry-After.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    tenant_engine_wait_ms: u64,
    /// How many eval cells this instance runs at once (0: it runs none, and only serves).
    #[arg(long, value_name = "N", default_value_t = 2)]
    eval_workers: usize,
    /// How long, in seconds, an instance's claim on an eval cell lasts without renewal: a cell
    /// whose instance died is taken over by another after it.
    #[arg(long, value_name = "SECONDS", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
    eval_lease_seconds: u64,
    /// A base URL eval suites' models may call, besides the providers' own
    /// (https://api.openai.com, https://api.anthropic.com,
    /// https://generativelanguage.googleapis.com); repeat it for more.
    #[arg(long = "eval-endpoint", value_name = "URL")]
    eval_endpoints: Vec<String>,
    /// NAME=URL: the base URL every eval suite model named NAME is called at on this server,
    /// whatever its suite says (always allowed); repeat it for more.
    #[arg(long = "eval-model-url", value_name = "NAME=URL", value_parser = model_url)]
    eval_model_urls: Vec<(String, String)>,
    /// The most cells one eval run may have (422 `quota-exceeded` above).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    max_cells_per_run: usize,
    /// The most eval runs one tenant may have queued or running at once (422 above).
    #[arg(long, value_name = "N", default_value_t = 4)]
    max_active_runs: usize,
}

/// Reads `NAME=URL`, the URL an http(s) one.
fn model_url(text: &str) -> Result<(String, String), String> {
    let (name, url) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=URL"))?;
    match url::Url::parse(url) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() => {
            Ok((name.to_owned(), url.to_owned()))
        }
        _ => Err(format!("`{url}` is not an http or https URL")),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let location = args.store.location()?;
    let credentials_key = credentials_key()?;
    let listen: std::net::SocketAddr = args
        .listen
        .parse()
        .map_err(|e| bad_input(anyhow::anyhow!("invalid --listen: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async move {
        // A request waits for the store at most a few seconds: past that, reads are answered
        // from the last good value and writes with 503, well inside the request timeout.
        let store_config = StoreConfig::default()
            .acquire_timeout(Duration::from_secs(2))
            .operation_timeout(Duration::from_secs(5))
            .max_bundle_bytes(args.max_bundle_bytes)
            .max_settings_bytes(args.max_settings_bytes);
        let defaults = StoreConfig::default();
        let store_config = store_config
            .quotas(
                args.max_versions_per_agent,
                args.max_agents_per_tenant,
                defaults.max_keys_per_tenant,
                args.max_tenant_bytes,
            )
            .eval_quotas(
                args.max_cells_per_run,
                args.max_active_runs,
                defaults.max_result_row_bytes,
            );
        let store = StoreArgs::open_with(location, store_config).await?;
        let mut config = ServerConfig::default()
            .max_body_bytes(args.max_body_bytes)
            .request_timeout(Duration::from_millis(args.request_timeout_ms.max(1)))
            .rate_limit(args.rate_limit, args.rate_burst)
            .ttl(Duration::from_secs(args.ttl_seconds))
            .tenant_engine_share(
                args.tenant_engine_share,
                Duration::from_millis(args.tenant_engine_wait_ms),
            );
        config.limits = crate::input::limits().clone();
        let mut eval = EvalConfig::default();
        eval.workers = args.eval_workers;
        eval.lease = Duration::from_secs(args.eval_lease_seconds);
        eval.endpoints = args.eval_endpoints;
        eval.model_urls = args.eval_model_urls.into_iter().collect();
        config = config.eval(eval);
        match credentials_key {
            Some(key) => config = config.credentials_key(key),
            None => eprintln!(
                "note: {CREDENTIALS_KEY_ENV} is not set: the credentials routes answer 503 \
                 and nothing else changes"
            ),
        }
        let state = AppState::new(store.clone(), config);
        if let Err(error) = state.watch().await {
            eprintln!(
                "warning: change notifications are off ({error}); cached entries live for their TTL"
            );
        }
        if let Some(dir) = &args.examples {
            publish_examples(&state, dir).await?;
        }
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        let bound = listener
            .local_addr()
            .context("cannot read the bound address")?;
        eprintln!("listening on http://{bound}");
        promptstack_server::serve(listener, state, shutdown_signal())
            .await
            .context("the server failed")?;
        store.close().await;
        eprintln!("stopped");
        Ok(ExitCode::SUCCESS)
    })
}

/// The credentials key from the environment: `None` when unset; a malformed key refuses to
/// start (exit 2), without quoting it.
fn credentials_key() -> anyhow::Result<Option<CredentialKey>> {
    match std::env::var(CREDENTIALS_KEY_ENV) {
        Ok(text) => CredentialKey::from_base64(&text)
            .map(Some)
            .map_err(|e| bad_input(anyhow::anyhow!("{CREDENTIALS_KEY_ENV}: {e}"))),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(bad_input(anyhow::anyhow!(
            "{CREDENTIALS_KEY_ENV}: the credentials key is not valid base64"
        ))),
    }
}

async fn publish_examples(state: &AppState, dir: &std::path::Path) -> anyhow::Result<()> {
    let tenant = Tenant::parse("default").map_err(anyhow::Error::new)?;
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the examples folder {}", dir.display()))
        .map_err(bad_input)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("agent.toml").is_file())
        .collect();
    folders.sort();
    for folder in folders {
        let name = folder
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let agent = AgentName::parse(&name)
            .map_err(|e| bad_input(anyhow::anyhow!("example folder `{name}`: {e}")))?;
        let bundle = Bundle::from_dir(&folder, crate::input::limits())
            .map_err(|e| bad_input(anyhow::anyhow!("example `{name}`: {e}")))?;
        let (id, moved) =
            promptstack_server::publish_to_production(state, &tenant, &agent, &bundle)
                .await
                .map_err(|problem| {
                    anyhow::anyhow!(
                        "example `{name}` was not published: {}{}",
                        problem.detail,
                        problem
                            .diagnostics
                            .iter()
                            .map(|d| format!("\n  {d}"))
                            .collect::<String>()
                    )
                })?;
        if moved {
            eprintln!("published {name} {id} as production of tenant default");
        } else {
            eprintln!(
                "published {name} {id}; production of tenant default was already set and is left \
                 where it is"
            );
        }
    }
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    eprintln!("shutting down: finishing requests in flight");
}
