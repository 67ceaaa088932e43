//! Resolving a reference to a compiled version, and preparing a send for it: the steps every
//! render-like endpoint shares.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use promptstack::{Agent, SendContext};
use promptstack_store::{AgentName, LabelName, PageRequest, SettingsScope, Tenant, VersionId};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::bundle::{Bundle, spec_problem};
use crate::problem::Problem;
use crate::problem::printable;
use crate::settings::Preview;
use crate::state::{AppState, Cached, Compiled, Cost};

/// The label only admins may move.
pub const PROTECTED_LABEL: &str = "production";

/// The label a reference defaults to.
pub const DEFAULT_LABEL: &str = "production";

/// Which agent version produced an answer, in the body and in `promptstack-*` headers.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Attribution {
    /// The agent's name.
    pub agent: String,
    /// The version id (SHA-256 of the canonical bundle).
    pub version: String,
    /// The label the reference resolved through, when it was a label.
    pub label: Option<String>,
    /// The assembly's fingerprint.
    pub fingerprint: String,
    /// The version of the provider rules table used.
    pub rules_version: String,
    /// True when the request's `settings` were applied in place of the stored ones: the answer
    /// is a preview of unsaved settings, not what a plain render returns (absent otherwise).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
}

impl Attribution {
    /// The same fields as response headers.
    pub fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let mut put = |name: &'static str, value: &str| {
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(HeaderName::from_static(name), value);
            }
        };
        put("promptstack-agent", &self.agent);
        put("promptstack-version", &self.version);
        if let Some(label) = &self.label {
            put("promptstack-label", label);
        }
        put("promptstack-fingerprint", &self.fingerprint);
        put("promptstack-rules-version", &self.rules_version);
        if self.preview {
            put("promptstack-preview", "settings");
        }
        headers
    }
}

/// A reference resolved to a compiled version.
pub struct Resolved {
    /// The agent's name.
    pub name: AgentName,
    /// The compiled version.
    pub agent: Arc<Agent>,
    /// How long its engine work took lately.
    pub cost: Arc<Cost>,
    /// Its id.
    pub version: VersionId,
    /// The label it was reached through.
    pub label: Option<LabelName>,
    /// Why parts of the answer come from the last good value (the store could not be read).
    pub stale: Vec<String>,
}

impl Resolved {
    /// The attribution of an answer with this fingerprint.
    pub fn attribution(&self, fingerprint: String) -> Attribution {
        Attribution {
            agent: self.name.to_string(),
            version: self.version.to_string(),
            label: self.label.as_ref().map(ToString::to_string),
            fingerprint,
            rules_version: promptstack::provider::Rules::bundled().version.clone(),
            preview: false,
        }
    }
}

/// A digest (a fingerprint) as 64 lowercase hex digits, as its `Display` writes it, without
/// formatting each byte.
pub(crate) fn hex(digest: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    out
}

/// Parses an agent name from a path; an impossible name cannot exist, so it is a 404.
pub fn agent_name(name: &str) -> Result<AgentName, Problem> {
    AgentName::parse(name)
        .map_err(|_| Problem::not_found(format!("no agent `{}`", printable(name))))
}

/// The problem of a store error; an unavailable store is counted in the metrics.
pub(crate) fn store_problem(state: &AppState, error: promptstack_store::Error) -> Problem {
    if error.kind() == promptstack_store::ErrorKind::Unavailable {
        state
            .inner
            .metrics
            .store_errors
            .fetch_add(1, Ordering::Relaxed);
    }
    error.into()
}

/// The problem of a failed store lookup: a 404 saying `missing` when the store has no such
/// object, else [`store_problem`].
pub(crate) fn lookup_problem(
    state: &AppState,
    error: promptstack_store::Error,
    missing: String,
) -> Problem {
    match error.kind() {
        promptstack_store::ErrorKind::NotFound => Problem::not_found(missing),
        _ => store_problem(state, error),
    }
}

/// The value of a cache read; a stale one is counted in the metrics and said in `notes`, as
/// `{what}: {why}`.
fn noted<V>(
    state: &AppState,
    cached: Cached<V>,
    what: impl std::fmt::Display,
    notes: &mut Vec<String>,
) -> V {
    if let Some(why) = cached.stale {
        state
            .inner
            .metrics
            .stale_answers
            .fetch_add(1, Ordering::Relaxed);
        notes.push(format!("{what}: {why}"));
    }
    cached.value
}

/// 404 unless the tenant has an agent of this name (with at least one version).
pub async fn require_agent(
    state: &AppState,
    tenant: &Tenant,
    agent: &AgentName,
) -> Result<(), Problem> {
    let page = state
        .inner
        .store
        .versions(tenant, agent, &PageRequest::first().limit(1))
        .await
        .map_err(|e| store_problem(state, e))?;
    if page.items.is_empty() {
        return Err(Problem::not_found(format!("no agent `{agent}`")));
    }
    Ok(())
}

/// Resolves `reference` (a version id or a label; default `production`) of `name` to a
/// compiled version.
pub async fn resolve(
    state: &AppState,
    tenant: &Tenant,
    name: &str,
    reference: Option<&str>,
) -> Result<Resolved, Problem> {
    let name = agent_name(name)?;
    let reference = reference.unwrap_or(DEFAULT_LABEL);
    let mut stale = Vec::new();
    let (version, label) = if let Ok(version) = VersionId::parse(reference) {
        (version, None)
    } else {
        let label = LabelName::parse(reference).map_err(|_| {
            Problem::unprocessable(
                "invalid-ref",
                format!(
                    "`{}` is neither a version id (64 hex digits) nor a label name",
                    printable(reference)
                ),
            )
        })?;
        let key = (tenant.clone(), name.clone(), label.clone());
        let store = &state.inner.store;
        let cached = state
            .inner
            .labels
            .get(&key, async {
                Ok(store.label(tenant, &name, &label).await?.version)
            })
            .await
            .map_err(|e| {
                lookup_problem(state, e, format!("agent `{name}` has no label `{label}`"))
            })?;
        let version = noted(state, cached, format_args!("label `{label}`"), &mut stale);
        (version, Some(label))
    };
    let Compiled { agent, cost } = compiled(state, tenant, &name, &version).await?;
    Ok(Resolved {
        name,
        agent,
        cost,
        version,
        label,
        stale,
    })
}

/// The compiled version, from memory or from the store (compiled on the blocking pool).
pub async fn compiled(
    state: &AppState,
    tenant: &Tenant,
    name: &AgentName,
    version: &VersionId,
) -> Result<Compiled, Problem> {
    let key = (tenant.clone(), name.clone(), version.clone());
    if let Some(found) = state.inner.compiled.get(&key) {
        return Ok(found);
    }
    let stored = state
        .inner
        .store
        .version(tenant, name, version)
        .await
        .map_err(|e| lookup_problem(state, e, format!("agent `{name}` has no such version")))?;
    let limits = state.inner.config.limits.clone();
    let agent = blocking(state, move || {
        Bundle::from_stored(&stored.bundle)?.compile(&limits)
    })
    .await??;
    let found = Compiled::new(Arc::new(agent));
    state.inner.compiled.insert(key, found.clone());
    Ok(found)
}

/// Reads a send context for `agent` (synchronous: call it on the blocking pool for large input).
/// `what` names it in the located diagnostics.
pub fn read_send(agent: &Agent, bytes: &[u8], what: &str) -> Result<SendContext, Problem> {
    SendContext::from_json_for(bytes, what, agent.spec())
        .map_err(|e| spec_problem("invalid-send", &e))
}

/// Sends up to this size in all are read on the request's own thread (tens of microseconds);
/// larger ones on the blocking pool.
const INLINE_SEND_BYTES: usize = 8 * 1024;

/// A send read, shared with the kept sends, and the name its problems are located in.
pub(crate) type NamedSend = (Cow<'static, str>, Arc<SendContext>);

/// Reads each send for `agent`, located by its name (`send`, `sends[i]`): on the request's own
/// thread up to [`INLINE_SEND_BYTES`] in all, else on the blocking pool.
pub(crate) async fn read_sends(
    state: &AppState,
    agent: &Arc<Agent>,
    sends: &[(Cow<'static, str>, &RawValue)],
) -> Result<Vec<NamedSend>, Problem> {
    fn read_all<'a>(
        agent: &Agent,
        sends: impl Iterator<Item = (&'a Cow<'static, str>, &'a RawValue)>,
    ) -> Result<Vec<NamedSend>, Problem> {
        sends
            .map(|(what, send)| {
                let read = read_send(agent, send.get().as_bytes(), what)?;
                Ok((what.clone(), Arc::new(read)))
            })
            .collect()
    }
    let bytes: usize = sends.iter().map(|(_, send)| send.get().len()).sum();
    if bytes <= INLINE_SEND_BYTES {
        return read_all(agent, sends.iter().map(|(what, send)| (what, *send)));
    }
    let agent = Arc::clone(agent);
    let owned: Vec<_> = (sends.iter())
        .map(|(what, send)| (what.clone(), (*send).to_owned()))
        .collect();
    blocking(state, move || {
        read_all(&agent, owned.iter().map(|(what, send)| (what, &**send)))
    })
    .await?
}

/// Reads `send` (located as `send`) for the version `resolved` in `tenant`'s request: the send
/// kept from an earlier request with the same text for the same version, or read now (see
/// [`read_sends`]) and kept when it is small enough to keep.
pub(crate) async fn read_kept_send(
    state: &AppState,
    tenant: &Tenant,
    resolved: &Resolved,
    send: &RawValue,
) -> Result<Arc<SendContext>, Problem> {
    let text = send.get().as_bytes();
    let kept = &state.inner.sends;
    let key = (text.len() <= crate::state::KEPT_SEND_BYTES)
        .then(|| kept.key(tenant, &resolved.version, text));
    if let Some(found) = key.and_then(|key| kept.get(key, tenant, &resolved.version, text)) {
        return Ok(found);
    }
    let named = [(Cow::Borrowed("send"), send)];
    let (_, read) = (read_sends(state, &resolved.agent, &named).await?)
        .pop()
        .ok_or_else(|| {
            let status = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
            Problem::new(status, "internal", "the send was not read")
        })?;
    if let Some(key) = key {
        kept.insert(key, tenant, &resolved.version, text, &read);
    }
    Ok(read)
}

/// The tenant's settings a stage agent's sends are rendered with: the tenant's instructions and
/// the agent's `[auto_injections]` overrides replace the send's when they are set. A tenant
/// without settings, and an agent that is not a stage, leave the send as given.
#[derive(Default)]
pub struct Overrides {
    instructions: Option<promptstack::context::TenantInstructions>,
    auto_injections: Option<serde_json::Value>,
}

impl Overrides {
    /// Reads the settings `resolved` is rendered with (none, without a store read, unless it is a
    /// stage agent). `preview` holds unsaved settings that take the place of the stored ones for
    /// this answer (the store read is skipped for each one previewed); previewing on an agent
    /// without a `[stage]` is a 422, since settings do nothing there. `warnings` receives why a
    /// setting came from the last good value.
    pub async fn read(
        state: &AppState,
        tenant: &Tenant,
        resolved: &Resolved,
        preview: &Preview,
        warnings: &mut Vec<String>,
    ) -> Result<Overrides, Problem> {
        if resolved.agent.spec().stage.is_none() {
            if !preview.is_empty() {
                let diagnostic = promptstack::diagnostic::Diagnostic::error(
                    "invalid-settings",
                    "settings apply to agents with a `[stage]` only",
                )
                .subject("settings");
                return Err(Problem::unprocessable(
                    "invalid-settings",
                    format!(
                        "settings: agent `{}` declares no `[stage]`, so settings do nothing to its \
                         renders; leave `settings` out",
                        resolved.name
                    ),
                )
                .with_diagnostics(serde_json::to_value(&diagnostic).into_iter().collect()));
            }
            return Ok(Overrides::default());
        }
        let instructions = match &preview.instructions {
            Some(previewed) => Some(previewed.clone()),
            None => stored_instructions(state, tenant, warnings).await?,
        };
        let auto_injections = match &preview.auto_injections {
            Some(previewed) => Some(previewed.clone()),
            None => settings(state, tenant, Some(&resolved.name), warnings)
                .await?
                .and_then(|d| d.get("auto_injections").cloned()),
        };
        Ok(Overrides {
            instructions,
            auto_injections,
        })
    }

    /// Applies the settings to a shared send: a copy of it is made only when a setting applies.
    pub fn apply_shared(&self, send: &mut Arc<SendContext>) {
        if self.instructions.is_some() || self.auto_injections.is_some() {
            self.apply(Arc::make_mut(send));
        }
    }

    /// Applies the settings to a send.
    pub fn apply(&self, send: &mut SendContext) {
        if let Some(instructions) = &self.instructions {
            *send.tenant_instructions = Some(instructions.clone());
        }
        if let Some(overrides) = &self.auto_injections {
            *send.auto_injections = Some(overrides.clone());
        }
    }
}

/// The tenant's stored instructions, if any. The stored value wins or nothing is rendered:
/// unreadable instructions are a 500, never the send's own.
async fn stored_instructions(
    state: &AppState,
    tenant: &Tenant,
    warnings: &mut Vec<String>,
) -> Result<Option<promptstack::context::TenantInstructions>, Problem> {
    let tenant_doc = settings(state, tenant, None, warnings).await?;
    let Some(instructions) = tenant_doc.as_ref().and_then(|d| d.get("instructions")) else {
        return Ok(None);
    };
    match serde_json::from_value::<promptstack::context::TenantInstructions>(instructions.clone()) {
        Ok(mut value) => {
            value.unavailable = None;
            Ok(Some(value))
        }
        Err(e) => Err(Problem::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "settings-unreadable",
            format!("the tenant's stored instructions are unreadable: {e}"),
        )),
    }
}

/// A settings document through the TTL cache (the last good one, with a warning, while the store
/// is unreachable). With no value at all the answer is 503: the send's own instructions and
/// overrides must never stand in for settings an admin may have written.
async fn settings(
    state: &AppState,
    tenant: &Tenant,
    agent: Option<&AgentName>,
    warnings: &mut Vec<String>,
) -> Result<Option<serde_json::Value>, Problem> {
    let key = (tenant.clone(), agent.cloned());
    let scope = match agent {
        Some(agent) => SettingsScope::Agent(agent.clone()),
        None => SettingsScope::Tenant,
    };
    let store = &state.inner.store;
    let whose = match agent {
        Some(agent) => format!("agent `{agent}`'s settings"),
        None => "the tenant's settings".to_owned(),
    };
    match state
        .inner
        .settings
        .get(&key, async {
            Ok(store.settings(tenant, &scope).await?.map(|s| s.document))
        })
        .await
    {
        Ok(cached) => Ok(noted(state, cached, &whose, warnings)),
        Err(error) => {
            state
                .inner
                .metrics
                .store_errors
                .fetch_add(1, Ordering::Relaxed);
            Err(Problem::unavailable(format!(
                "{whose} could not be read ({error}) and no earlier value is known; the send is \
                 not rendered without them"
            )))
        }
    }
}

/// An engine error as a problem: unknown targets and bad request options are 422.
pub fn engine_problem(error: promptstack::Error) -> Problem {
    use promptstack::ErrorKind as K;
    match error.kind() {
        K::NotFound => Problem::unprocessable("unknown-target", error.to_string()),
        K::Request | K::Rules => Problem::unprocessable("invalid-request", error.to_string()),
        _ => Problem::unprocessable("render-failed", error.to_string()),
    }
}

/// Runs the engine work of one request over a version whose cost is `cost`: on the request's
/// own thread when its recent runs were short (below 100 µs), else on the blocking pool as
/// [`blocking`] does; either way the run is timed into `cost`.
pub(crate) async fn engine<T: Send + 'static>(
    state: &AppState,
    cost: &Arc<Cost>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Problem> {
    let timed = {
        let cost = Arc::clone(cost);
        move || {
            let started = std::time::Instant::now();
            let out = work();
            cost.record(started.elapsed());
            out
        }
    };
    if cost.is_cheap() {
        return Ok(timed());
    }
    blocking(state, timed).await
}

tokio::task_local! {
    /// The tenant whose request is being answered, once its key is authenticated: the
    /// `around` middleware opens the slot for every request and [`crate::auth::Auth`] fills it.
    static TENANT: Arc<std::sync::OnceLock<Tenant>>;
}

/// Runs `request` with an empty slot for its tenant (see [`note_tenant`]).
pub(crate) async fn with_tenant_slot<F: Future>(request: F) -> F::Output {
    TENANT
        .scope(Arc::new(std::sync::OnceLock::new()), request)
        .await
}

/// Records whose request this is, for the fair share of [`blocking`].
pub(crate) fn note_tenant(tenant: &Tenant) {
    let _ = TENANT.try_with(|slot| slot.set(tenant.clone()));
}

fn current_tenant() -> Option<Tenant> {
    TENANT.try_with(|slot| slot.get().cloned()).ok().flatten()
}

/// Runs synchronous engine work on the blocking pool, at most twice the cores at once (the wait
/// for a turn counts against the request timeout). Work cut off by the request timeout still
/// holds its turn until it ends, so timed-out work cannot pile up.
///
/// A tenant's work first takes a turn within the tenant's share of the pool (half of it unless
/// `--tenant-engine-share` says otherwise), so a tenant that saturates the engine queues behind
/// itself, and every other tenant still finds free turns. Work that waits longer than
/// `--tenant-engine-wait-ms` for a turn within its share is answered 429 with `Retry-After`.
/// Work done for no tenant (the operator's publishes at start) takes no share.
pub(crate) async fn blocking<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Problem> {
    let stopped = || {
        Problem::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the engine work stopped",
        )
    };
    let share = match current_tenant() {
        Some(tenant) => {
            let semaphore = state.inner.shares.of(&tenant);
            let wait = state.inner.config.tenant_engine_wait;
            match tokio::time::timeout(wait, semaphore.acquire_owned()).await {
                Ok(Ok(permit)) => Some(permit),
                Ok(Err(_)) => return Err(stopped()),
                Err(_) => {
                    state
                        .inner
                        .metrics
                        .tenant_busy
                        .fetch_add(1, Ordering::Relaxed);
                    let mut problem = Problem::new(
                        axum::http::StatusCode::TOO_MANY_REQUESTS,
                        "tenant-busy",
                        format!(
                            "this tenant's share of the engine ({} runs at once) stayed taken for \
                             {} ms; its other requests go first, retry later",
                            state.inner.shares.runs(),
                            wait.as_millis()
                        ),
                    );
                    problem.retry_after = Some(1);
                    return Err(problem);
                }
            }
        }
        None => None,
    };
    let permit = Arc::clone(&state.inner.engine)
        .acquire_owned()
        .await
        .map_err(|_| stopped())?;
    tokio::task::spawn_blocking(move || {
        let _permits = (permit, share);
        work()
    })
    .await
    .map_err(|_| stopped())
}
