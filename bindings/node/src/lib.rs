//! The native half of the `@promptstack/node` package: the engine's `Agent`, `Assembly`, fence and
//! citation stream as N-API classes and functions.
//!
//! The pipeline is the facade's: load a spec once ([`Agent::from_path`], [`Agent::from_source`]),
//! assemble per send ([`Agent::assemble`]), then compose a target's texts
//! ([`Assembly::compose`]) or build a provider request ([`Assembly::request`]). Everything here
//! converts between JavaScript values and the facade's types and nothing else; no prompt text is
//! decided in this crate. Where the command line has a command, the function here fills in the
//! command's request and calls it (`promptstack::command`: `request`, `explain`, `lint`, `fence`,
//! `cite`), so that both answer alike by construction.
//!
//! The JavaScript half (`index.js`) wraps these classes in the package's public API: it turns a
//! send object into JSON, a failure into an `Error` subclass, and implements the `buildSystemPrompt`
//! drop-in on the pi-compat spec that [`pi_compat_spec`] returns.
//!
//! A failure crosses the boundary as an `Error` whose message is [`ERROR_MARKER`] followed by a
//! JSON object (`kind`, `message`, and the located diagnostics); `index.js` rebuilds the matching
//! `Error` subclass from it, so every diagnostic reaches JavaScript as data, not as text to parse.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::{Buffer, Either, Error, Result, Status};
use napi_derive::napi;
use promptstack::command::{
    self, Assembled, CiteMode, CiteRequest, Env, ExplainRequest, FenceKind, FenceRequest,
    RequestRequest, RequestSettings, read_conversation,
};
use promptstack::compose::UnknownName;
use promptstack::fence::ContentKind;
use promptstack::limits::{InputKind, Limit, Limits};
use promptstack::provider::{Conversation, Format, Rules};
use promptstack::stream::{Processor, SourceSnapshot, Widget, WidgetEvent};
use promptstack::{ErrorKind, SendContext, SpecFormat};
use serde_json::{Value, json};

/// The prefix of a failure's message: the rest is the failure as JSON, for `index.js`.
pub const ERROR_MARKER: &str = "\u{1}promptstack-error:";

/// The pi-compat parity spec (0.73.1), compiled into the addon for `buildSystemPrompt`.
const PI_COMPAT_SPEC: &str = include_str!("../../../examples/pi-compat/agent.toml");

/// The pi-compat parity spec for 1.6.0, compiled into the addon for `buildSystemPrompt`.
const PI_COMPAT_1_6_SPEC: &str = include_str!("../../../examples/pi-compat-1.6/agent.toml");

/// A failure as the JavaScript half receives it: an error class name, a message and data.
fn failure(class: &str, message: impl Into<String>, data: Value) -> Error {
    let mut payload = json!({ "class": class, "message": message.into() });
    if let (Value::Object(payload), Value::Object(data)) = (&mut payload, data) {
        payload.extend(data);
    }
    Error::new(Status::GenericFailure, format!("{ERROR_MARKER}{payload}"))
}

/// A spec or send context that failed to load, with every located diagnostic.
fn spec_failure(class: &str, error: &promptstack::SpecError) -> Error {
    let diagnostics = serde_json::to_value(&error.diagnostics).unwrap_or(Value::Null);
    failure(
        class,
        error.to_string(),
        json!({ "diagnostics": diagnostics, "truncated": error.truncated }),
    )
}

/// An engine failure (render, gate, request, …), named by its kind.
fn engine_failure(error: &promptstack::Error) -> Error {
    let class = match error.kind() {
        ErrorKind::Request | ErrorKind::Rules => "RequestError",
        ErrorKind::NotFound => "NotFoundError",
        _ => "AssemblyError",
    };
    failure(
        class,
        error.to_string(),
        json!({ "kind": error.kind().as_str(), "block": error.block() }),
    )
}

/// A value that cannot be given to the engine (a wrong option, an unknown name).
fn usage_failure(message: impl Into<String>) -> Error {
    failure("UsageError", message, json!({}))
}

/// Content or provenance the fence refuses.
fn fence_failure(error: &promptstack::fence::FenceError) -> Error {
    failure("FenceError", error.to_string(), json!({}))
}

/// A command's refusal, worded as this package words it.
fn command_failure(error: command::Error) -> Error {
    match error {
        command::Error::TargetRequired(several) => {
            usage_failure(several.message("choose one with `target`"))
        }
        command::Error::Conversation(error) | command::Error::Engine(error) => {
            engine_failure(&error)
        }
        command::Error::Provenance(error) | command::Error::Fence(error) => fence_failure(&error),
        command::Error::Widgets(error) => usage_failure(format!("invalid widgets: {error}")),
        // The other refusals are of options this package does not pass.
        other => usage_failure(other.to_string()),
    }
}

/// The bounds of everything the package reads: the command line's defaults.
fn limits() -> &'static Limits {
    static LIMITS: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();
    LIMITS.get_or_init(Limits::default)
}

/// Serialises engine data for JavaScript.
fn to_value(value: &impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::from_reason(e.to_string()))
}

/// Bytes from a string or a buffer.
fn bytes_of(input: &Either<String, Buffer>) -> &[u8] {
    match input {
        Either::A(text) => text.as_bytes(),
        Either::B(buffer) => buffer.as_ref(),
    }
}

/// A compiled agent spec: load it once, then assemble per send.
///
/// One `Agent` serves every send of a process; its caches (the stable half, token counts) are
/// shared by all its assemblies.
#[napi]
pub struct Agent {
    inner: promptstack::Agent,
    /// The sends [`Agent::system_text_at`] has read, by their JSON text: each distinct send is
    /// read and checked once (see [`PreparedSends`]).
    prepared: Mutex<PreparedSends>,
}

/// Sends already read and checked, by their exact JSON text. Bounded: past
/// [`PreparedSends::MAX_ENTRIES`] sends or [`PreparedSends::MAX_BYTES`] of keys it starts afresh,
/// so a process that never repeats a send keeps at most that much.
#[derive(Default)]
struct PreparedSends {
    sends: HashMap<String, SendContext>,
    bytes: usize,
}

impl PreparedSends {
    const MAX_ENTRIES: usize = 256;
    const MAX_BYTES: usize = 8 << 20;

    fn insert(&mut self, key: String, ctx: SendContext) -> &mut SendContext {
        if self.sends.len() >= Self::MAX_ENTRIES || self.bytes + key.len() > Self::MAX_BYTES {
            self.sends.clear();
            self.bytes = 0;
        }
        self.bytes += key.len();
        self.sends.entry(key).or_insert(ctx)
    }
}

#[napi]
impl Agent {
    /// Reads and compiles a spec file (`.json` is JSON, anything else TOML), with the registry
    /// manifests in `capabilities/` next to it, exactly as the command line does.
    #[napi(factory, catch_unwind)]
    pub fn from_path(path: String) -> Result<Agent> {
        let limits = Limits::default();
        let path = Path::new(&path);
        let bytes = promptstack::limits::read(path, InputKind::Spec, &limits)
            .map_err(|e| failure("InputError", e.to_string(), json!({ "path": path })))?;
        let format = SpecFormat::from_name(&path.display().to_string());
        match promptstack::registry::compile(&bytes, path, format, &limits) {
            Ok(inner) => Ok(Agent::new(inner)),
            Err(promptstack::registry::LoadError::Spec(error)) => {
                Err(spec_failure("SpecError", &error))
            }
            Err(promptstack::registry::LoadError::Input(error)) => Err(failure(
                "InputError",
                error.to_string(),
                json!({ "path": path }),
            )),
            Err(other) => Err(failure("SpecError", other.to_string(), json!({}))),
        }
    }

    /// Compiles a spec from its text; `format` is `"toml"` (the default) or `"json"`, `name` the
    /// name diagnostics give the source (default `agent.toml` / `agent.json`).
    #[napi(factory, catch_unwind)]
    pub fn from_source(
        text: Either<String, Buffer>,
        format: Option<String>,
        name: Option<String>,
    ) -> Result<Agent> {
        let format = match format.as_deref() {
            None | Some("toml") => SpecFormat::Toml,
            Some("json") => SpecFormat::Json,
            Some(other) => {
                return Err(usage_failure(format!(
                    "format {other:?} is not one of toml, json"
                )));
            }
        };
        let name = name.unwrap_or_else(|| match format {
            SpecFormat::Json => "agent.json".to_owned(),
            _ => "agent.toml".to_owned(),
        });
        let inner = promptstack::Agent::from_source(bytes_of(&text), &name, format)
            .map_err(|e| spec_failure("SpecError", &e))?
            .with_template_memory(Limits::default().get(Limit::TemplateMemory));
        Ok(Agent::new(inner))
    }

    /// The agent's name.
    #[napi(getter)]
    pub fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// The ids of the spec's targets, in spec order.
    #[napi(getter)]
    pub fn targets(&self) -> Vec<String> {
        self.inner.target_ids().map(str::to_owned).collect()
    }

    /// Assembles one send, given as send-context JSON (a string or UTF-8 bytes).
    #[napi(catch_unwind)]
    pub fn assemble(&self, send: Either<String, Buffer>) -> Result<Assembly> {
        let ctx = self.send(&send)?;
        self.assemble_context(&ctx)
    }

    /// Assembles one send given as JSON that `index.js` wrote with `JSON.stringify` (a send
    /// object, or the `buildSystemPrompt` drop-in's send).
    ///
    /// Such JSON has no duplicate keys, so it is read straight into a send context, without
    /// the located parse that [`Agent::assemble`] does for JSON text from a caller (most of a
    /// warm send's time). The outcome is the located path's: a send that does not
    /// deserialise, or whose variables do not fit the spec, is read again through that path
    /// for its located diagnostics.
    #[napi(catch_unwind)]
    pub fn assemble_stringified(&self, send: String) -> Result<Assembly> {
        let assembly = self.assemble_stringified_inner(send)?;
        Ok(Assembly {
            agent: self.inner.clone(),
            inner: Arc::new(assembly),
        })
    }

    /// [`Agent::assemble_stringified`], then one target's system text: the drop-in's path.
    #[napi(catch_unwind)]
    pub fn system_text(&self, send: String, target: String) -> Result<String> {
        let assembly = self.assemble_stringified_inner(send)?;
        let composition = assembly.compose(&target).map_err(|e| engine_failure(&e))?;
        Ok(composition.system)
    }

    /// [`Agent::system_text`] for a send that is read once and kept: `send` is its JSON text with
    /// a placeholder `now`, `now` the moment of this call (RFC 3339). The first call with a given
    /// text reads and checks it exactly as [`Agent::system_text`] does (a refused send is not
    /// kept, so it is refused again with the same diagnostics); later calls find it by the text
    /// and only read `now`. The `buildSystemPrompt` drop-in's path.
    #[napi(catch_unwind)]
    pub fn system_text_at(&self, send: String, now: String, target: String) -> Result<String> {
        let now: promptstack::context::Now =
            now.parse().map_err(|e: promptstack::context::NowError| {
                failure(
                    "SendError",
                    format!("send: now: {e}"),
                    json!({ "diagnostics": [] }),
                )
            })?;
        let mut prepared = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        let ctx = match prepared.sends.get_mut(&send) {
            Some(ctx) => ctx,
            None => {
                let ctx = self.send(&Either::A(send.clone()))?;
                prepared.insert(send, ctx)
            }
        };
        ctx.now = now;
        let assembly = self.inner.assemble(ctx).map_err(|e| engine_failure(&e))?;
        drop(prepared);
        let composition = assembly.compose(&target).map_err(|e| engine_failure(&e))?;
        Ok(composition.system)
    }

    /// The spec's own lint findings, then for each send (JSON) those of assembling it and
    /// composing every target: a list of diagnostics, each with `send` (its index) when it is
    /// about one.
    #[napi(catch_unwind)]
    pub fn lint(&self, sends: Vec<Either<String, Buffer>>) -> Result<Value> {
        let contexts = sends
            .iter()
            .map(|send| self.send(send))
            .collect::<Result<Vec<_>>>()?;
        let names: Vec<String> = (0..contexts.len()).map(|i| i.to_string()).collect();
        let linted = command::lint(
            &self.inner,
            names.iter().map(String::as_str).zip(contexts.iter()),
        );
        to_value(&linted.findings)
    }

    /// What `promptstack explain --json` reports for one send: the assembly, each target
    /// composed with its token counts, injections and, with a provider format, each target's
    /// cache breakpoints.
    #[napi(catch_unwind)]
    pub fn explain(
        &self,
        send: Either<String, Buffer>,
        target: Option<String>,
        format: Option<String>,
    ) -> Result<Value> {
        let ctx = self.send(&send)?;
        let assembly = self.inner.assemble(&ctx).map_err(|e| engine_failure(&e))?;
        let format = format.as_deref().map(provider_format).transpose()?;
        let on = Assembled {
            agent: &self.inner,
            send: &ctx,
            assembly: &assembly,
        };
        let request = ExplainRequest { target, format };
        let explanation =
            command::explain(&on, &request, &Env::bundled(limits())).map_err(command_failure)?;
        to_value(&explanation)
    }
}

impl Agent {
    fn new(inner: promptstack::Agent) -> Self {
        Agent {
            inner,
            prepared: Mutex::default(),
        }
    }

    fn assemble_stringified_inner(&self, send: String) -> Result<promptstack::Assembly> {
        // The same reading as every other entry point (and the CLI): schema, site patterns and
        // variable shapes are checked, so no send is accepted here that the CLI refuses.
        let ctx = self.send(&Either::A(send))?;
        self.inner.assemble(&ctx).map_err(|e| engine_failure(&e))
    }

    /// Parses a send context for this agent (its variables must have the declared shapes).
    fn send(&self, send: &Either<String, Buffer>) -> Result<SendContext> {
        SendContext::from_json_for(bytes_of(send), "send", self.inner.spec())
            .map_err(|e| spec_failure("SendError", &e))
    }

    fn assemble_context(&self, ctx: &SendContext) -> Result<Assembly> {
        let assembly = self.inner.assemble(ctx).map_err(|e| engine_failure(&e))?;
        Ok(Assembly {
            agent: self.inner.clone(),
            inner: Arc::new(assembly),
        })
    }
}

/// The provider format named as on the command line.
fn provider_format(name: &str) -> Result<Format> {
    name.parse()
        .map_err(|e: UnknownName| usage_failure(e.to_string()))
}

/// One send's assembly: every block with its provenance, the two halves, the diagnostics.
#[napi]
pub struct Assembly {
    agent: promptstack::Agent,
    // No send: keeping it was measured to slow `assemble` by about a third, and a request is
    // built without it (`command::request_with`).
    inner: Arc<promptstack::Assembly>,
}

/// The texts one target sends.
#[napi(object)]
pub struct ComposedText {
    /// The target.
    pub target: String,
    /// The system text.
    pub system: String,
    /// The text for the user slot (the notes placed with the last user message).
    pub user: String,
    /// Where the user-slot text goes relative to the user's message (`before`, `after`).
    pub user_position: String,
    /// The byte length of the system text's cacheable prefix.
    pub stable_prefix: u32,
}

/// How one target's texts were made: asked for separately, because most sends need only the
/// texts and converting every part to JavaScript costs more than composing.
#[napi(object)]
pub struct CompositionDetails {
    /// The parts of both texts, each naming its block.
    pub parts: Value,
    /// The findings of composing (blocks shed by a token budget, …).
    pub diagnostics: Value,
    /// The blocks the target's token budget shed, with the reason.
    pub shed: Value,
}

/// Options of a provider request.
#[napi(object)]
pub struct RequestInput {
    /// The conversation so far, as JSON (`{"messages": [...]}`).
    pub conversation: Option<String>,
    /// The target (default: the spec's only target).
    pub target: Option<String>,
    /// The model id sent (default: the send's model id).
    pub model: Option<String>,
    /// The output token limit (default 4096).
    pub max_tokens: Option<u32>,
    /// The expected seconds until the thread's next request (chooses cache lifetimes).
    pub gap_seconds: Option<u32>,
    /// OpenAI `prompt_cache_key`.
    pub cache_key: Option<String>,
    /// Gemini: an explicit cached content holding the system text and tools.
    pub cached_content: Option<String>,
    /// A provider rules table (TOML) replacing the bundled one.
    pub rules: Option<String>,
}

/// A provider request: the exact body and its cache plan.
#[napi(object)]
pub struct RequestOutput {
    /// The format.
    pub format: String,
    /// The model id sent.
    pub model: String,
    /// The target built for.
    pub target: String,
    /// The body, byte for byte as it is sent.
    pub body: String,
    /// The cache plan: breakpoints, skipped boundaries, expected costs.
    pub plan: Value,
    /// The units the plan was computed over.
    pub units: Value,
    /// Findings of building the request.
    pub diagnostics: Value,
}

impl Assembly {
    fn composition(&self, target: &str) -> Result<promptstack::compose::Composition> {
        self.inner.compose(target).map_err(|e| engine_failure(&e))
    }
}

#[napi]
impl Assembly {
    /// The stable half of the body text.
    #[napi(getter)]
    pub fn stable(&self) -> String {
        self.inner.stable().to_owned()
    }

    /// The volatile half of the body text.
    #[napi(getter)]
    pub fn volatile(&self) -> String {
        self.inner.volatile().to_owned()
    }

    /// The whole body text (both halves joined).
    #[napi(getter)]
    pub fn full(&self) -> String {
        self.inner.full().to_owned()
    }

    /// The fingerprint of the stable inputs and text, as hex.
    #[napi(getter)]
    pub fn fingerprint(&self) -> String {
        self.inner.fingerprint().to_string()
    }

    /// The ids of the targets this assembly can compose.
    #[napi(getter)]
    pub fn targets(&self) -> Vec<String> {
        self.inner.target_ids().map(str::to_owned).collect()
    }

    /// Every block, included or not, with kind, trust, stability, state, reason, tokens and text.
    #[napi(getter)]
    pub fn blocks(&self) -> Result<Value> {
        to_value(&self.inner.blocks().collect::<Vec<_>>())
    }

    /// The findings of assembling (empty variables, excluded tools, …).
    #[napi(getter)]
    pub fn diagnostics(&self) -> Result<Value> {
        to_value(&self.inner.diagnostics().collect::<Vec<_>>())
    }

    /// The assembly in the versioned assembly JSON format (`promptstack.assembly/v1`).
    #[napi(catch_unwind)]
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(&*self.inner).map_err(|e| Error::from_reason(e.to_string()))
    }

    /// The texts `target` sends.
    #[napi(catch_unwind)]
    pub fn compose(&self, target: String) -> Result<ComposedText> {
        let composition = self.composition(&target)?;
        let user_position = to_value(&composition.user_position)?
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok(ComposedText {
            stable_prefix: u32::try_from(composition.stable_prefix).unwrap_or(u32::MAX),
            user_position,
            target: composition.target,
            system: composition.system,
            user: composition.user,
        })
    }

    /// The parts, findings and shed blocks of composing `target`.
    #[napi(catch_unwind)]
    pub fn compose_details(&self, target: String) -> Result<CompositionDetails> {
        let composition = self.composition(&target)?;
        Ok(CompositionDetails {
            parts: to_value(&composition.parts)?,
            diagnostics: to_value(&composition.diagnostics)?,
            shed: to_value(&composition.shed)?,
        })
    }

    /// The provider request for this send in `format` (`anthropic`, `openai-chat`,
    /// `openai-responses`, `gemini`), with cache breakpoints placed by the planner.
    #[napi(catch_unwind)]
    pub fn request(&self, format: String, options: Option<RequestInput>) -> Result<RequestOutput> {
        let format = provider_format(&format)?;
        let options = options.unwrap_or(RequestInput {
            conversation: None,
            target: None,
            model: None,
            max_tokens: None,
            gap_seconds: None,
            cache_key: None,
            cached_content: None,
            rules: None,
        });
        // The conversation arrives as JSON text: read once, under the name the errors give it.
        let conversation = match &options.conversation {
            Some(json) => read_conversation(json.as_bytes(), "conversation", limits())
                .map_err(|e| engine_failure(&e))?,
            None => Conversation::default(),
        };
        let custom_rules = match &options.rules {
            Some(text) => Some(Rules::from_toml(text, "rules").map_err(|e| engine_failure(&e))?),
            None => None,
        };
        let env = Env {
            limits: limits(),
            rules: custom_rules.as_ref().unwrap_or_else(|| Rules::bundled()),
        };
        let request = RequestRequest {
            target: options.target,
            format,
            options: RequestSettings {
                conversation: None,
                model: options.model,
                max_tokens: options.max_tokens,
                gap_seconds: options.gap_seconds,
                cache_key: options.cache_key,
                cached_content: options.cached_content,
            },
        };
        // The command's result also lists the assembly's warnings; `diagnostics` here are the
        // request's own, as `assembly.diagnostics` lists the others.
        let request =
            command::request_with(&self.agent, &self.inner, &request, &conversation, &env)
                .map_err(command_failure)?
                .value;
        Ok(RequestOutput {
            format: request.format.as_str().to_owned(),
            plan: to_value(&request.plan)?,
            units: to_value(&request.units)?,
            diagnostics: to_value(&request.diagnostics)?,
            model: request.model,
            target: request.target,
            body: request.body,
        })
    }
}

/// The pi-compat parity spec (`examples/pi-compat/agent.toml`) the `buildSystemPrompt` drop-in
/// runs on.
#[napi(catch_unwind)]
pub fn pi_compat_spec() -> &'static str {
    PI_COMPAT_SPEC
}

/// The pi-compat parity spec for 1.6.0 (`examples/pi-compat-1.6/agent.toml`) the
/// `buildSystemPrompt` drop-in runs on when it serves that version.
#[napi(catch_unwind)]
pub fn pi_compat_1_6_spec() -> &'static str {
    PI_COMPAT_1_6_SPEC
}

/// Untrusted content wrapped in a fence.
#[napi(object)]
pub struct Fenced {
    /// The fenced text.
    pub text: String,
    /// The nonce of the markers.
    pub nonce: String,
    /// The content kind's marker name.
    pub kind: String,
    /// How many marker look-alikes and control tokens were defanged.
    pub defanged: u32,
    /// When the body was cut: bytes kept and bytes given.
    pub truncated: Option<Truncated>,
}

/// How much of a fenced body was kept.
#[napi(object)]
pub struct Truncated {
    /// Bytes of content kept.
    pub kept_bytes: f64,
    /// Bytes of content given.
    pub total_bytes: f64,
}

/// Wraps untrusted content in a fence with a fresh nonce from the operating system.
#[napi(catch_unwind)]
pub fn fence(
    content: String,
    kind: String,
    origin: Option<String>,
    tool: Option<String>,
    max_bytes: Option<u32>,
) -> Result<Fenced> {
    let kind = FenceKind::parse(&kind).map_err(|e| fence_failure(&e))?;
    let request = FenceRequest::wrap(
        content,
        kind,
        origin,
        tool,
        max_bytes.map(|max| max as usize),
    );
    // Wrapping answers with the text, the nonce and the count of defanged markers.
    let fenced = command::fence(&request).map_err(command_failure)?;
    Ok(Fenced {
        nonce: fenced
            .nonce
            .map(|nonce| nonce.to_string())
            .unwrap_or_default(),
        kind: ContentKind::from(kind).marker_name().to_owned(),
        defanged: fenced
            .defanged
            .map_or(0, |defanged| u32::try_from(defanged).unwrap_or(u32::MAX)),
        truncated: fenced.truncated.map(|[kept, total]| Truncated {
            kept_bytes: kept as f64,
            total_bytes: total as f64,
        }),
        text: fenced.text.unwrap_or_default(),
    })
}

/// Checks that `text` is exactly one valid fence: `{ valid, fence, problems }`.
#[napi(catch_unwind)]
pub fn check_fence(text: String) -> Value {
    let report = promptstack::fence::check(&text);
    let fence = report.fence.as_ref().map(|info| {
        json!({
            "kind": info.kind.marker_name(),
            "nonce": info.nonce.to_string(),
            "origin": info.origin,
            "tool": info.tool,
            "body": text.get(info.body.clone()).unwrap_or_default(),
        })
    });
    let problems: Vec<Value> = report
        .problems
        .iter()
        .map(|p| {
            json!({
                "kind": p.kind.as_str(),
                "offset": p.offset,
                "message": p.message,
            })
        })
        .collect();
    json!({ "valid": report.is_valid(), "fence": fence, "problems": problems })
}

/// The most widget events a stream holds untaken before it refuses more input (10 000 widgets
/// with their start events): once it holds that many, `feed` throws `CiteError` without taking
/// the delta.
const MAX_WIDGET_EVENTS: usize = 20_000;

/// The model's streamed text through the citation and math processor.
#[napi]
pub struct CiteStream {
    processor: Processor,
    out: String,
    /// Widget events decided and not yet taken: fewer than [`MAX_WIDGET_EVENTS`] before a
    /// delta, and that delta's own events after it.
    events: Vec<WidgetEvent>,
}

#[napi]
impl CiteStream {
    /// A stream over a sources snapshot (JSON: `{"sources": [{"index", "url", "title"}]}`),
    /// writing `placeholders` (`{{cite:K}}` plus a citation map) or Markdown `links`.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        sources: String,
        mode: Option<String>,
        widgets: Option<Vec<String>>,
    ) -> Result<Self> {
        let sources: SourceSnapshot = serde_json::from_str(&sources)
            .map_err(|e| usage_failure(format!("invalid sources: {e}")))?;
        let mode = match mode.as_deref() {
            None => CiteMode::default(),
            Some(name) => name.parse().map_err(|_: UnknownName| {
                usage_failure(format!("mode {name:?} is not one of placeholders, links"))
            })?,
        };
        // The citation map is kept for `citations`, within the `cite-runs` limit.
        let request = CiteRequest {
            sources,
            mode,
            widgets: widgets.unwrap_or_default(),
            map: true,
        };
        Ok(CiteStream {
            processor: command::cite(&request, limits()).map_err(command_failure)?,
            out: String::new(),
            events: Vec::new(),
        })
    }

    /// Feeds a delta of the model's text; returns the display-ready text decided so far.
    ///
    /// A stream holding [`MAX_WIDGET_EVENTS`] widget events untaken refuses the delta (before
    /// reading any of it) until they are taken, so neither text nor events are ever lost.
    #[napi(catch_unwind)]
    pub fn feed(&mut self, delta: String) -> Result<String> {
        self.check_room()?;
        self.out.clear();
        self.processor.push_into(&delta, &mut self.out);
        self.events.extend(self.processor.take_widget_events());
        self.check_overflow()?;
        Ok(std::mem::take(&mut self.out))
    }

    /// Ends the stream; returns the rest of the text. It never refuses for untaken widget
    /// events: the rest is at most the processor's lookahead.
    #[napi(catch_unwind)]
    pub fn finish(&mut self) -> Result<String> {
        self.out.clear();
        self.processor.finish_into(&mut self.out);
        self.events.extend(self.processor.take_widget_events());
        self.check_overflow()?;
        Ok(std::mem::take(&mut self.out))
    }

    /// The citation map: one entry per citation run, `{ key, placeholder, sources }`.
    #[napi(getter)]
    pub fn citations(&self) -> Result<Value> {
        let runs: Vec<Value> = self
            .processor
            .citations()
            .iter()
            .map(|c| json!({ "key": c.key, "placeholder": c.placeholder(), "sources": c.sources }))
            .collect();
        Ok(Value::Array(runs))
    }

    /// The widget tags removed from the text since the last call (it empties the queue
    /// `take_widget_events` reads too).
    #[napi(catch_unwind)]
    pub fn take_widgets(&mut self) -> Result<Value> {
        let widgets: Vec<Widget> = self
            .events
            .drain(..)
            .filter_map(|event| match event {
                WidgetEvent::Widget(widget) => Some(widget),
                _ => None,
            })
            .collect();
        to_value(&widgets)
    }

    /// The widget events decided since the last call, as `promptstack cite --json` prints them:
    /// `widget_start`, `widget` and `widget_cancel`.
    #[napi(catch_unwind)]
    pub fn take_widget_events(&mut self) -> Result<Value> {
        to_value(&std::mem::take(&mut self.events))
    }

    /// The widget whose tag is streaming now (`{ name, offset }`), or null.
    #[napi(getter)]
    pub fn loading(&self) -> Result<Value> {
        to_value(&self.processor.loading_widget())
    }

    /// Counts of resolved and unresolved citations so far.
    #[napi(getter)]
    pub fn score(&self) -> Result<Value> {
        to_value(&self.processor.score())
    }
}

impl CiteStream {
    /// Refuses a delta while [`MAX_WIDGET_EVENTS`] or more widget events wait to be taken.
    fn check_room(&self) -> Result<()> {
        if self.events.len() < MAX_WIDGET_EVENTS {
            return Ok(());
        }
        Err(failure(
            "CiteError",
            format!(
                "the stream holds {} widget events not taken (it takes no more input past \
                 {MAX_WIDGET_EVENTS}); take them with takeWidgetEvents() or takeWidgets(), then \
                 feed this delta again",
                self.events.len()
            ),
            json!({ "limit": MAX_WIDGET_EVENTS }),
        ))
    }

    fn check_overflow(&self) -> Result<()> {
        match self.processor.overflow() {
            Some(overflow) => Err(failure(
                "CiteError",
                format!(
                    "input byte {}: the output would pass its limit of {}",
                    overflow.at, overflow.limit
                ),
                json!({ "at": overflow.at, "limit": overflow.limit }),
            )),
            None => Ok(()),
        }
    }
}
