//! The commands themselves: one typed request, one typed result and one function per command,
//! run over a send already read and assembled.
//!
//! A front end reads its input its own way, assembles the send ([`Agent::assemble`]), calls the
//! command with an [`Assembled`] and the request, and prints the result its own way. A command
//! refuses with an [`Error`], whose variants a front end words in its own terms (`--target` on
//! the command line, `target` in a JSON body).

use promptstack_core::compose::{Composition, FullPrompt, SeveralTargets, Slot, choose_target};
use promptstack_core::diagnostic::Diagnostic;
use promptstack_core::provider::sim::{SimCancel, SimConfig, SimReport};
use promptstack_core::provider::{Conversation, Format, Request, RequestOptions, Rules};
use promptstack_core::{Agent, Assembly, SendContext};
use serde::{Deserialize, Serialize};

use super::{RenderFormat, RequestSettings, SendsDiff};
use crate::limits::{Limit, Limits, SIM_GAP_MAX_SECONDS};
use crate::report::{BreakpointFormat, Explanation, Finding, ToolsReport};

/// A send read for an agent and assembled: what every command but `lint` runs over.
#[derive(Debug, Clone, Copy)]
pub struct Assembled<'a> {
    /// The agent (the compiled spec).
    pub agent: &'a Agent,
    /// The send context, as read.
    pub send: &'a SendContext,
    /// The send's assembly ([`Agent::assemble`]).
    pub assembly: &'a Assembly,
}

/// What the commands read besides their request: the bounds of what is read from outside (the
/// conversation), and the provider rules table requests are planned with.
#[derive(Debug, Clone, Copy)]
pub struct Env<'a> {
    /// The bounds of inputs.
    pub limits: &'a Limits,
    /// The provider rules table ([`Rules::bundled`] unless the caller has its own).
    pub rules: &'a Rules,
}

impl<'a> Env<'a> {
    /// The bundled rules table, within `limits`.
    pub fn bundled(limits: &'a Limits) -> Env<'a> {
        Env {
            limits,
            rules: Rules::bundled(),
        }
    }
}

/// Why a command could not answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No target was named and the spec does not have exactly one.
    #[error("{}", .0.message("choose one"))]
    TargetRequired(SeveralTargets),
    /// The conversation given is not a conversation, or passes its bounds.
    #[error("{0}")]
    Conversation(#[source] crate::Error),
    /// `full` was asked in a provider format: the full prompt is text (or JSON).
    #[error("the full prompt renders as text or JSON, not as a provider request")]
    FullInProviderFormat,
    /// An option of the request is outside its range (`cache_sim`'s turns, gap or failure
    /// rate).
    #[error("{}", .0.message(.0.option.as_str()))]
    OutOfRange(OutOfRange),
    /// `fence` was asked to wrap without saying what the text is.
    #[error("the kind of content is required to wrap")]
    FenceKindRequired,
    /// The origin or tool given does not suit the kind of content.
    #[error("{0}")]
    Provenance(#[source] promptstack_core::fence::FenceError),
    /// The text could not be fenced.
    #[error(transparent)]
    Fence(promptstack_core::fence::FenceError),
    /// A widget name given to `cite` is not one.
    #[error("{0}")]
    Widgets(#[source] promptstack_core::stream::WidgetNameError),
    /// The engine refused: assembling, composing or building a request.
    #[error(transparent)]
    Engine(#[from] crate::Error),
}

/// An option outside its range: which one, the range it must be in, and the value given.
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfRange {
    /// The option.
    pub option: SimOption,
    /// The range, in words (`between 1 and 1000 (the \`sim-turns\` limit)`).
    pub range: String,
    /// The value given.
    pub got: String,
}

impl OutOfRange {
    /// The message, naming the option as a front end names it (`--turns`, `` `turns` ``).
    pub fn message(&self, name: &str) -> String {
        format!("{name} must be {}, got {}", self.range, self.got)
    }
}

/// An option of [`CacheSimRequest`] with a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SimOption {
    /// [`CacheSimRequest::turns`].
    Turns,
    /// [`CacheSimRequest::gap_seconds`].
    GapSeconds,
    /// [`CacheSimRequest::mcp_failure_rate`].
    McpFailureRate,
}

impl SimOption {
    /// The option's name in a request (`turns`, `gap_seconds`, `mcp_failure_rate`).
    pub fn as_str(self) -> &'static str {
        match self {
            SimOption::Turns => "turns",
            SimOption::GapSeconds => "gap_seconds",
            SimOption::McpFailureRate => "mcp_failure_rate",
        }
    }
}

/// The request of `render`: which target, in which format.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RenderRequest {
    /// The target (default: the only one; required when there are several, except for `json`,
    /// which composes every target).
    pub target: Option<String>,
    /// The answer's format.
    #[serde(default)]
    pub format: RenderFormat,
    /// Which text of the target, for `text`.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(value_type = super::SlotSchema))]
    pub slot: Slot,
    /// The full prompt (authored text plus every platform append), in `text` or `json`.
    #[serde(default)]
    pub full: bool,
    /// Options of provider requests.
    #[serde(default)]
    pub options: RequestSettings,
}

impl RenderRequest {
    /// Reads the conversation of the options, if one is given, whatever the format: a request
    /// that gives a conversation it cannot read is refused even when its format sends none.
    /// [`render`] does not read it for `text` and `json`; a front end that refuses such a
    /// request calls this first, before assembling, so that the conversation is the first
    /// thing refused.
    ///
    /// # Errors
    ///
    /// [`Error::Conversation`].
    pub fn check(&self, limits: &Limits) -> Result<(), Error> {
        if self.format.provider().is_none() && self.options.conversation.is_some() {
            self.options
                .conversation(limits)
                .map_err(Error::Conversation)?;
        }
        Ok(())
    }
}

/// What `render` rendered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rendered {
    /// The full prompt of one target (`full`).
    Full(FullPrompt),
    /// A provider request (a provider format).
    Request(Box<Request>),
    /// Every composition asked for (`json`).
    Compositions(Vec<Composition>),
    /// One text of one target (`text`), byte for byte as sent.
    Text(String),
}

/// The result of `render`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct RenderResult {
    /// The target rendered, when one was chosen (`text` and provider formats).
    pub target: Option<String>,
    /// What was rendered.
    #[cfg_attr(feature = "schema", schema(value_type = Object))]
    pub rendered: Rendered,
    /// The warnings of the assembly and of what was rendered from it (for `full`, the full
    /// prompt's own warnings), located.
    #[cfg_attr(feature = "schema", schema(value_type = Vec<Object>))]
    pub diagnostics: Vec<Diagnostic>,
}

/// Renders `on` as `request` asks: the full prompt, a provider request, every composition, or
/// one text of one target.
///
/// # Errors
///
/// [`Error::FullInProviderFormat`] for `full` in a provider format; [`Error::TargetRequired`]
/// when a target must be chosen and none can be; [`Error::Conversation`] for a provider format
/// whose conversation cannot be read; [`Error::Engine`] when composing or building fails (an
/// unknown target is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound)).
pub fn render(
    on: &Assembled<'_>,
    request: &RenderRequest,
    env: &Env<'_>,
) -> Result<RenderResult, Error> {
    let assembly = on.assembly;
    if request.full {
        let full = render_full(on.agent, on.send, request)?;
        return Ok(RenderResult {
            target: None,
            diagnostics: full.warnings.clone(),
            rendered: Rendered::Full(full),
        });
    }
    if let Some(format) = request.format.provider() {
        let target = target(assembly, request.target.as_deref())?;
        let built = build(on, format, &target, &request.options, env)?;
        return Ok(RenderResult {
            target: Some(target),
            diagnostics: diagnostics(assembly, built.diagnostics.iter()),
            rendered: Rendered::Request(Box::new(built)),
        });
    }
    if request.format == RenderFormat::Json {
        let compositions = match &request.target {
            Some(target) => vec![assembly.compose(target)?],
            None => assembly
                .target_ids()
                .map(|target| assembly.compose(target))
                .collect::<Result<Vec<_>, _>>()?,
        };
        return Ok(RenderResult {
            target: None,
            diagnostics: diagnostics(
                assembly,
                compositions.iter().flat_map(|c| c.diagnostics.iter()),
            ),
            rendered: Rendered::Compositions(compositions),
        });
    }
    let target = target(assembly, request.target.as_deref())?;
    let composition = assembly.compose(&target)?;
    Ok(RenderResult {
        target: Some(target),
        diagnostics: diagnostics(assembly, composition.diagnostics.iter()),
        rendered: Rendered::Text(composition.text(request.slot).to_owned()),
    })
}

/// Renders the full prompt of the target `request` names (or of the only one) for `send`, with
/// its warnings: what [`render`] renders with `full`, for a front end that has not assembled the
/// send (the full prompt assembles it itself). `request.full` is taken as set.
///
/// # Errors
///
/// [`Error::FullInProviderFormat`] in a provider format; [`Error::Engine`] when no target is
/// named and the spec has several ([`ErrorKind::NotFound`](crate::ErrorKind::NotFound)), or
/// assembling or composing fails.
pub fn render_full(
    agent: &Agent,
    send: &SendContext,
    request: &RenderRequest,
) -> Result<FullPrompt, Error> {
    if request.format.provider().is_some() {
        return Err(Error::FullInProviderFormat);
    }
    Ok(agent.render_full(send, request.target.as_deref())?)
}

/// The request of `request`: which target, in which provider format, with which options.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RequestRequest {
    /// The target (default: the only one).
    pub target: Option<String>,
    /// The provider format (default `anthropic`).
    #[serde(default)]
    #[cfg_attr(feature = "schema", schema(value_type = super::ProviderFormatSchema))]
    pub format: Format,
    /// Options of the request.
    #[serde(default)]
    pub options: RequestSettings,
}

/// A command's result with the warnings met on the way.
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosed<T> {
    /// The result.
    pub value: T,
    /// The warnings of the assembly and of what the command made from it, located.
    pub diagnostics: Vec<Diagnostic>,
}

/// The result of `request`: the provider request (its `target` is the target chosen), with its
/// cache plan and units.
pub type RequestResult = Diagnosed<Request>;

/// Builds the provider request of `on` that `request` asks for.
///
/// # Errors
///
/// [`Error::TargetRequired`], [`Error::Conversation`], or [`Error::Engine`] when the request
/// cannot be built.
pub fn request(
    on: &Assembled<'_>,
    request: &RequestRequest,
    env: &Env<'_>,
) -> Result<RequestResult, Error> {
    build_request(on.agent, on.assembly, request, None, env)
}

/// [`request`] over a conversation the front end has read itself rather than one given as a
/// JSON value in `request.options` (which is not read): a conversation read from a file or a
/// string with [`read_conversation`](super::read_conversation), under the name the front end
/// gives it, without writing it as JSON again. The Node and Python packages build their requests
/// here.
///
/// It takes the agent and the assembly rather than an [`Assembled`]: a request is built without
/// the send, and the Node package's assemblies do not keep theirs (keeping it slowed
/// `agent.assemble` by about a third, BENCHMARKS.md).
///
/// # Errors
///
/// [`Error::TargetRequired`], or [`Error::Engine`] when the request cannot be built.
pub fn request_with(
    agent: &Agent,
    assembly: &Assembly,
    request: &RequestRequest,
    conversation: &Conversation,
    env: &Env<'_>,
) -> Result<RequestResult, Error> {
    build_request(agent, assembly, request, Some(conversation), env)
}

/// [`request`], over `conversation` when one is given (else the one in the options, read after
/// the target is chosen).
fn build_request(
    agent: &Agent,
    assembly: &Assembly,
    request: &RequestRequest,
    conversation: Option<&Conversation>,
    env: &Env<'_>,
) -> Result<RequestResult, Error> {
    let target = target(assembly, request.target.as_deref())?;
    let read;
    let conversation = match conversation {
        Some(conversation) => conversation,
        None => {
            read = request
                .options
                .conversation(env.limits)
                .map_err(Error::Conversation)?;
            &read
        }
    };
    let options = request.options.options(request.format, target);
    let built = agent.request(assembly, conversation, env.rules, &options)?;
    Ok(Diagnosed {
        diagnostics: diagnostics(assembly, built.diagnostics.iter()),
        value: built,
    })
}

/// The request of `explain`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    /// Only this target (default: every target).
    pub target: Option<String>,
    /// Also plan the breakpoints of each target's request in this provider format.
    #[cfg_attr(feature = "schema", schema(value_type = Option<super::ProviderFormatSchema>))]
    pub format: Option<Format>,
}

/// Explains `on`: every block, why it is in or out, and what each target (or the one asked)
/// composes, with the breakpoints of the format asked.
///
/// # Errors
///
/// [`Error::Engine`] when a target is unknown or cannot be composed.
pub fn explain<'a>(
    on: &Assembled<'a>,
    request: &ExplainRequest,
    env: &Env<'_>,
) -> Result<Explanation<'a>, Error> {
    let format = request.format.map(|format| BreakpointFormat {
        format,
        rules: env.rules,
    });
    Ok(crate::report::explain(
        on.agent,
        on.send,
        on.assembly,
        request.target.as_deref(),
        format,
    )?)
}

/// The result of `tools`: the toolset the send resolves to (as `promptstack tools --json`
/// prints it), and the assembly's warnings.
pub type ToolsResult = Diagnosed<ToolsReport>;

/// The toolset `on` resolves to: every tool offered or left out and why, and the send's MCP
/// servers. `tools` takes no request.
pub fn tools(on: &Assembled<'_>) -> ToolsResult {
    Diagnosed {
        value: crate::report::tools(on.agent, on.send, on.assembly),
        diagnostics: on.assembly.diagnostics().cloned().collect(),
    }
}

/// The request of `diff`: the request of `request`, whose target (default: the only one of the
/// first side), provider format and options serve both sides.
pub type DiffRequest = RequestRequest;

/// What changes for the cache between side `a` and side `b` (two sends, or two versions): the
/// target is chosen on side `a`.
///
/// # Errors
///
/// [`Error::TargetRequired`], [`Error::Conversation`], or [`Error::Engine`] when a side cannot
/// be composed or its request built.
pub fn diff(
    a: &Assembled<'_>,
    b: &Assembled<'_>,
    request: &DiffRequest,
    env: &Env<'_>,
) -> Result<SendsDiff, Error> {
    let target = target(a.assembly, request.target.as_deref())?;
    SendsDiff::compare(a, b, &target, request.format, &request.options, env)
}

impl SendsDiff {
    /// Compares the compositions of `target` on the two sides and their requests in `format`,
    /// built with `options`.
    ///
    /// # Errors
    ///
    /// [`Error::Conversation`], or [`Error::Engine`] when a side cannot be composed or its
    /// request built.
    pub fn compare(
        a: &Assembled<'_>,
        b: &Assembled<'_>,
        target: &str,
        format: Format,
        options: &RequestSettings,
        env: &Env<'_>,
    ) -> Result<SendsDiff, Error> {
        let composed_a = a.assembly.compose(target)?;
        let composed_b = b.assembly.compose(target)?;
        let request_a = build(a, format, target, options, env)?;
        let request_b = build(b, format, target, options, env)?;
        Ok(SendsDiff::new(
            (&composed_a, &request_a),
            (&composed_b, &request_b),
        ))
    }
}

/// The result of `lint`: the spec's findings, then each send's.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct LintResult {
    /// Every finding, the spec's first.
    #[cfg_attr(feature = "schema", schema(value_type = Vec<Object>))]
    pub findings: Vec<Finding>,
}

/// Lints `agent`'s spec, and its sends against it, each named for its findings. `lint` takes no
/// request beyond its sends.
pub fn lint<'a>(
    agent: &Agent,
    sends: impl IntoIterator<Item = (&'a str, &'a SendContext)>,
) -> LintResult {
    LintResult {
        findings: crate::report::lint(agent, sends),
    }
}

/// The request of `cache_sim`: the thread simulated, each absent option taking its default.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheSimRequest {
    /// The target composed (default: the only one; required when there are several).
    pub target: Option<String>,
    /// The request format (default `anthropic`).
    pub format: Format,
    /// The model id (default: the first send's).
    pub model: Option<String>,
    /// User turns: from 1 to the `sim-turns` limit.
    pub turns: u32,
    /// Seconds between turns, at most [`SIM_GAP_MAX_SECONDS`] (30 days).
    pub gap_seconds: u32,
    /// The chance per turn that one synthetic MCP server fails, from 0 to 1.
    pub mcp_failure_rate: f64,
    /// The seed of the generator that reorders and fails MCP servers.
    pub seed: u64,
}

impl CacheSimRequest {
    /// The default of [`turns`](Self::turns).
    pub const DEFAULT_TURNS: u32 = 100;
    /// The default of [`gap_seconds`](Self::gap_seconds).
    pub const DEFAULT_GAP_SECONDS: u32 = 60;
    /// The default of [`mcp_failure_rate`](Self::mcp_failure_rate).
    pub const DEFAULT_MCP_FAILURE_RATE: f64 = 0.05;
    /// The default of [`seed`](Self::seed).
    pub const DEFAULT_SEED: u64 = 1;

    /// Refuses options out of their ranges, before any work: turns beyond the `sim-turns` limit
    /// of `limits` (or none), a gap beyond 30 days, a failure rate outside 0–1. [`cache_sim`]
    /// checks them first; a front end calls this itself to refuse them before reading anything.
    ///
    /// # Errors
    ///
    /// [`Error::OutOfRange`], for the first option out of its range.
    pub fn check(&self, limits: &Limits) -> Result<(), Error> {
        let max_turns = limits.get(Limit::SimTurns);
        if self.turns == 0 || u64::from(self.turns) > max_turns {
            return Err(Error::OutOfRange(OutOfRange {
                option: SimOption::Turns,
                range: format!("between 1 and {max_turns} (the `sim-turns` limit)"),
                got: self.turns.to_string(),
            }));
        }
        if self.gap_seconds > SIM_GAP_MAX_SECONDS {
            return Err(Error::OutOfRange(OutOfRange {
                option: SimOption::GapSeconds,
                range: format!("at most {SIM_GAP_MAX_SECONDS} (30 days)"),
                got: self.gap_seconds.to_string(),
            }));
        }
        if !(0.0..=1.0).contains(&self.mcp_failure_rate) {
            return Err(Error::OutOfRange(OutOfRange {
                option: SimOption::McpFailureRate,
                range: "between 0 and 1".to_owned(),
                got: self.mcp_failure_rate.to_string(),
            }));
        }
        Ok(())
    }
}

impl Default for CacheSimRequest {
    fn default() -> Self {
        CacheSimRequest {
            target: None,
            format: Format::default(),
            model: None,
            turns: Self::DEFAULT_TURNS,
            gap_seconds: Self::DEFAULT_GAP_SECONDS,
            mcp_failure_rate: Self::DEFAULT_MCP_FAILURE_RATE,
            seed: Self::DEFAULT_SEED,
        }
    }
}

/// The result of `cache_sim`: per turn and in total, the tokens read from the cache, written
/// and uncached, ours next to the naive baseline.
pub type CacheSimResult = SimReport;

/// Simulates the provider's prompt cache over a thread of `agent` made from `sends` (the first
/// send's stable inputs, each turn the next send's user message and volatile variables), for
/// our requests and a naive baseline. The target is the one named, else the only one of the
/// first send's assembly. `cancel` stops the simulation before its next turn once set.
///
/// # Errors
///
/// [`Error::OutOfRange`] for an option out of its range; [`Error::TargetRequired`];
/// [`Error::Engine`] when the first send cannot be assembled, the rules have no row for the
/// model, or a turn cannot be composed or built (or `cancel` was set).
pub fn cache_sim(
    agent: &Agent,
    sends: &[SendContext],
    request: &CacheSimRequest,
    env: &Env<'_>,
    cancel: SimCancel,
) -> Result<CacheSimResult, Error> {
    request.check(env.limits)?;
    let target = match &request.target {
        Some(target) => target.clone(),
        None => match sends.first() {
            Some(first) => target(&agent.assemble(first)?, None)?,
            // The simulation refuses an empty thread itself.
            None => String::new(),
        },
    };
    let mut options = RequestOptions::new(request.format, target);
    options.model = request.model.clone();
    let config = SimConfig {
        turns: request.turns,
        gap_seconds: request.gap_seconds,
        request: options,
        mcp_failure_rate: request.mcp_failure_rate,
        seed: request.seed,
        cancel,
    };
    Ok(agent.simulate_cache(sends, env.rules, &config)?)
}

/// The target to work on: the one named, or the only one.
fn target(assembly: &Assembly, named: Option<&str>) -> Result<String, Error> {
    choose_target(assembly.target_ids(), named).map_err(Error::TargetRequired)
}

/// Builds the request of `on` for `target` in `format` with `options`.
fn build(
    on: &Assembled<'_>,
    format: Format,
    target: &str,
    options: &RequestSettings,
    env: &Env<'_>,
) -> Result<Request, Error> {
    let conversation = options
        .conversation(env.limits)
        .map_err(Error::Conversation)?;
    Ok(on.agent.request(
        on.assembly,
        &conversation,
        env.rules,
        &options.options(format, target),
    )?)
}

/// The assembly's diagnostics, then `more`.
fn diagnostics<'a>(
    assembly: &'a Assembly,
    more: impl Iterator<Item = &'a Diagnostic>,
) -> Vec<Diagnostic> {
    assembly.diagnostics().chain(more).cloned().collect()
}
