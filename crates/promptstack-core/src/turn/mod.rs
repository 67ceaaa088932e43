//! The Turn: the application's tool executors wrapped with dedupe, budgets and the source registry.
//!
//! One [`Turn`] lives for one model turn (one user message and every tool call it leads to,
//! including automatic retries of that same prompt). It owns, with that single lifetime:
//!
//! - **one identity per call**: the tool name and the canonicalised input (the canonical URL,
//!   the normalised query); dedupe and budgets both use it;
//! - **dedupe**: identical calls of a *cacheable* tool share one execution; a failure is handed to
//!   every call that shared it and then evicted, so the next identical call runs again;
//!   non-cacheable tools are never deduped;
//! - **budgets** per class (see [`budget`]): every execution is charged before it runs, so
//!   concurrent calls can never exceed a cap; a call that shares an identical call's execution
//!   costs nothing, and reads that execution's content with the budget line as it is when it is
//!   answered (never the count the first call read); exhaustion is a
//!   [`CallStatus::BudgetExhausted`] *result* the model reads;
//!   every budgeted result ends with a [`remaining_line`], and the result of the call that used
//!   the last allowed call says so first ([`last_call_notice`]); at the floor only that class's
//!   tools are [withdrawn](Turn::withdrawn_tools); a failed call is charged, and so is its retry;
//! - the **source registry** (see [`sources`]): every source a tool reports is numbered per
//!   canonical URL and labelled `[Source N] (cite as [N])` in the result; numbering continues
//!   from the conversation's persisted [`SourceSnapshot`].
//!
//! Results of tools marked untrusted go through the [`ResultWrapper`] (the untrusted-content
//! fence) before the model sees them; the labels and budget lines the Turn adds stay outside it.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use promptstack_core::turn::{FnExecutor, ToolOutput, Turn, TurnConfig, TurnTool, UnfencedForTests};
//! use serde_json::json;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let search = FnExecutor::new(|input: serde_json::Value| async move {
//!     Ok(ToolOutput::new().source("https://example.com/a", Some("A page"), "snippet"))
//! });
//! let turn = Turn::builder(&TurnConfig::default(), Arc::new(UnfencedForTests))
//!     .user_message("what is new in rust?")
//!     .tool(TurnTool::new("search").cacheable().budget_class("web").untrusted(), Arc::new(search))
//!     .build()
//!     .unwrap();
//! let result = turn.call("search", &json!({"query": "rust"})).await.unwrap();
//! assert!(result.text.starts_with("[Source 1] (cite as [1])\n"));
//! assert!(result.text.ends_with("Web calls remaining this turn: 4"));
//! # });
//! ```

pub(crate) mod budget;
mod dedupe;
mod offered;
pub(crate) mod sources;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use crate::spec::ResultFence;
use crate::stream::record::{RecordedCall, RecordedStatus, TurnRecord};
use crate::stream::{Source, SourceSnapshot};
use crate::tools::naming::{ToolNameError, validate_tool_name};

pub use crate::spec::turn_config::{
    BudgetPromotion, BudgetsConfig, ClassBudgetConfig, DEFAULT_SOURCE_CAP, TurnConfig,
};
pub use sources::{Registration, SourceRegistry};

use budget::{ClassLedger, call_key};
use dedupe::{Dedupe, Outcome};

/// What the Turn needs to know about one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnTool {
    /// The provider-facing name (must match `^[a-zA-Z0-9_-]{1,64}$`).
    pub name: String,
    /// Whether identical calls may share one execution. Only for read-only, deterministic tools.
    pub cacheable: bool,
    /// The budget class the tool draws from, if any (e.g. `web`).
    pub budget_class: Option<String>,
    /// Whether the tool's results are untrusted content, to be wrapped by the [`ResultWrapper`].
    pub untrusted_results: bool,
    /// The fence kind of those results (`tool_result` unless the tool reads pages or files).
    pub fence: ResultFence,
}

impl TurnTool {
    /// A trusted, non-cacheable, unbudgeted tool.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            cacheable: false,
            budget_class: None,
            untrusted_results: false,
            fence: ResultFence::ToolResult,
        }
    }

    /// Marks the tool cacheable (read-only and deterministic).
    pub fn cacheable(mut self) -> Self {
        self.cacheable = true;
        self
    }

    /// Draws the tool's calls from the budget `class`.
    pub fn budget_class(mut self, class: impl Into<String>) -> Self {
        self.budget_class = Some(class.into());
        self
    }

    /// Marks the tool's results as untrusted content.
    pub fn untrusted(mut self) -> Self {
        self.untrusted_results = true;
        self
    }

    /// Sets the fence kind of the tool's untrusted results (e.g. `web_content` for a page reader).
    pub fn fence(mut self, fence: ResultFence) -> Self {
        self.fence = fence;
        self
    }
}

/// One call as an executor receives it.
#[derive(Debug, Clone, Copy)]
pub struct ToolInvocation<'a> {
    /// The tool's provider-facing name.
    pub name: &'a str,
    /// The call's input, as the model wrote it.
    pub input: &'a Value,
}

/// A piece of a tool's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputPart {
    /// Plain text.
    Text(String),
    /// Text that comes from a citable page.
    Source {
        /// The page's URL, as the tool reports it.
        url: String,
        /// The page's title, if known.
        title: Option<String>,
        /// Whether `title` is the page's own title (from fetching it), which may replace a
        /// title learned earlier (e.g. from a search result).
        authoritative_title: bool,
        /// The text for the model (snippet, extract, page content).
        text: String,
    },
}

/// What an executor returns: text parts, some of them from citable sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolOutput {
    /// The parts, in order.
    pub parts: Vec<OutputPart>,
}

impl ToolOutput {
    /// An empty output.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a text part.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(OutputPart::Text(text.into()));
        self
    }

    /// Appends a part from a page, with a non-authoritative title (e.g. a search result).
    pub fn source(
        mut self,
        url: impl Into<String>,
        title: Option<&str>,
        text: impl Into<String>,
    ) -> Self {
        self.parts.push(OutputPart::Source {
            url: url.into(),
            title: title.map(str::to_owned),
            authoritative_title: false,
            text: text.into(),
        });
        self
    }

    /// Appends a part from a page whose title is authoritative (e.g. a fetch of the page).
    pub fn fetched_source(
        mut self,
        url: impl Into<String>,
        title: Option<&str>,
        text: impl Into<String>,
    ) -> Self {
        self.parts.push(OutputPart::Source {
            url: url.into(),
            title: title.map(str::to_owned),
            authoritative_title: true,
            text: text.into(),
        });
        self
    }
}

/// A tool execution that failed; the message is shown to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolFailure {
    /// What went wrong, for the model.
    pub message: String,
}

impl ToolFailure {
    /// A failure with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// The future an executor returns.
pub type ExecuteFuture<'a> =
    Pin<Box<dyn Future<Output = Result<ToolOutput, ToolFailure>> + Send + 'a>>;

/// Runs a tool. The application implements it; the Turn wraps it.
pub trait ToolExecutor: Send + Sync {
    /// Executes one call.
    fn execute<'a>(&'a self, call: ToolInvocation<'a>) -> ExecuteFuture<'a>;
}

/// A [`ToolExecutor`] from an async closure over the (cloned) call input.
pub struct FnExecutor<F>(F);

impl<F> FnExecutor<F> {
    /// Wraps `f`.
    pub fn new(f: F) -> Self {
        Self(f)
    }
}

impl<F, Fut> ToolExecutor for FnExecutor<F>
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ToolOutput, ToolFailure>> + Send + 'static,
{
    fn execute<'a>(&'a self, call: ToolInvocation<'a>) -> ExecuteFuture<'a> {
        Box::pin((self.0)(call.input.clone()))
    }
}

/// Where an untrusted piece of a result comes from, for the fence's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultOrigin<'a> {
    /// The tool that returned it.
    pub tool: &'a str,
    /// The page (or file) it comes from, if it is a source.
    pub url: Option<&'a str>,
    /// The fence kind the tool declares for its results. A kind that needs an origin applies
    /// only to parts that have one (`url`); the wrapper fences the others as `tool_result`.
    pub fence: ResultFence,
}

/// Wraps untrusted tool results before the model reads them (the untrusted-content fence).
///
/// The Turn calls it for every text part, source part and failure message of a tool whose
/// results are untrusted, and never for the text it adds itself (labels, budget lines).
pub trait ResultWrapper: Send + Sync {
    /// Returns `content` made safe to place in front of the model.
    fn wrap(&self, content: &str, provenance: &ResultOrigin<'_>) -> String;
}

/// A [`ResultWrapper`] that returns content unchanged. **For tests only**: with it, untrusted
/// content reaches the model unfenced.
#[derive(Debug, Clone, Copy, Default)]
pub struct UnfencedForTests;

impl ResultWrapper for UnfencedForTests {
    fn wrap(&self, content: &str, _provenance: &ResultOrigin<'_>) -> String {
        content.to_owned()
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    /// The tool ran (or an identical call's output was reused).
    Completed,
    /// The tool failed; the text says why.
    Failed,
    /// The tool's budget was used up: it did not run.
    BudgetExhausted,
}

/// A source reported by a call, and the number it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedSource {
    /// The URL as the tool reported it.
    pub url: String,
    /// The citation number, or `None` past the conversation's cap.
    pub index: Option<u32>,
}

/// The state of a call's budget class after the call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetReport {
    /// The budget class.
    pub class: String,
    /// Calls left this turn.
    pub remaining: u32,
    /// Whether this call was charged (false for a repeat of an earlier call, or when refused).
    pub charged: bool,
    /// Whether this call used the last call the cap allowed: its result carries the
    /// [`last_call_notice`].
    pub last_allowed: bool,
}

/// How charging one execution went.
enum Charge {
    /// The tool has no budget class.
    Unbudgeted,
    /// Charged; `remaining` calls are left after it.
    Charged { remaining: u32 },
    /// The cap is reached: the call must not run.
    Refused,
}

/// What the model reads for one call, with the facts the application needs about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// How the call ended.
    pub status: CallStatus,
    /// The text for the model: labelled, wrapped where untrusted, with the budget line last.
    pub text: String,
    /// The sources the output reported, in order.
    pub sources: Vec<CitedSource>,
    /// The budget, for a budgeted tool.
    pub budget: Option<BudgetReport>,
    /// Whether the output came from an identical call's execution.
    pub deduplicated: bool,
}

/// The line every budgeted result ends with: `Web calls remaining this turn: 3` for class `web`.
pub fn remaining_line(class: &str, remaining: u32) -> String {
    let mut chars = class.chars();
    let capitalized: String = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    };
    format!("{capitalized} calls remaining this turn: {remaining}")
}

/// What the result of the call that used a class's last allowed call says before its
/// [`remaining_line`], so the model stops calling and answers: for class `web`,
/// `That was the last web call allowed this turn: no further web calls will run. Answer from the
/// information you already have.`
pub fn last_call_notice(class: &str) -> String {
    format!(
        "That was the last {class} call allowed this turn: no further {class} calls will run. \
         Answer from the information you already have."
    )
}

/// The label of a numbered source in a result.
pub fn source_label(index: u32) -> String {
    format!("[Source {index}] (cite as [{index}])")
}

/// What kind of misuse of the Turn API an error reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TurnErrorKind {
    /// A tool's name is not provider-safe.
    InvalidToolName(ToolNameError),
    /// Two tools share a name.
    DuplicateTool(String),
    /// A tool draws from a budget class that the configuration does not declare.
    UnknownBudgetClass {
        /// The tool.
        tool: String,
        /// The undeclared class.
        class: String,
    },
    /// A class's promotion names an intent that the class does not declare.
    UnknownPromotionIntent {
        /// The class.
        class: String,
        /// The undeclared intent.
        intent: String,
    },
    /// A call named a tool that the Turn does not know.
    UnknownTool(String),
    /// An offered tool was given no executor.
    MissingExecutor(String),
}

/// A misuse of the Turn API (never a tool failure, never budget exhaustion: those are results).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnError {
    kind: TurnErrorKind,
}

impl TurnError {
    /// What went wrong.
    pub fn kind(&self) -> &TurnErrorKind {
        &self.kind
    }
}

impl fmt::Display for TurnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            TurnErrorKind::InvalidToolName(e) => e.fmt(f),
            TurnErrorKind::DuplicateTool(name) => write!(f, "tool `{name}` is registered twice"),
            TurnErrorKind::UnknownBudgetClass { tool, class } => write!(
                f,
                "tool `{tool}` draws from budget class `{class}`, which the configuration does not declare"
            ),
            TurnErrorKind::UnknownPromotionIntent { class, intent } => write!(
                f,
                "budget class `{class}` is promoted to intent `{intent}`, which it does not declare"
            ),
            TurnErrorKind::UnknownTool(name) => write!(f, "no tool named `{name}` in this turn"),
            TurnErrorKind::MissingExecutor(name) => write!(
                f,
                "tool `{name}` is offered to the model but has no executor"
            ),
        }
    }
}

impl std::error::Error for TurnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            TurnErrorKind::InvalidToolName(e) => Some(e),
            _ => None,
        }
    }
}

impl From<TurnErrorKind> for TurnError {
    fn from(kind: TurnErrorKind) -> Self {
        Self { kind }
    }
}

/// Builds a [`Turn`].
pub struct TurnBuilder<'c> {
    config: &'c TurnConfig,
    wrapper: Arc<dyn ResultWrapper>,
    slugs: Vec<String>,
    seed: Option<SourceSnapshot>,
    tools: Vec<(TurnTool, Arc<dyn ToolExecutor>)>,
}

impl TurnBuilder<'_> {
    /// Sets the user message whose `/slug` tokens select the budget intent (the tokens of
    /// [`message_slugs`](crate::context::message_slugs), the same ones templates see; intents
    /// match them case-insensitively). Without it, every class gets its `auto` cap.
    pub fn user_message(mut self, message: &str) -> Self {
        self.slugs = crate::context::message_slugs(message)
            .into_iter()
            .map(str::to_owned)
            .collect();
        self
    }

    /// Continues the numbering of the conversation's persisted sources.
    pub fn sources(mut self, snapshot: SourceSnapshot) -> Self {
        self.seed = Some(snapshot);
        self
    }

    /// Adds a tool and its executor.
    pub fn tool(mut self, tool: TurnTool, executor: Arc<dyn ToolExecutor>) -> Self {
        self.tools.push((tool, executor));
        self
    }

    /// Builds the Turn.
    ///
    /// # Errors
    ///
    /// A [`TurnError`] for an invalid or duplicate tool name, a tool whose budget class is not
    /// configured, or a promotion to an undeclared intent.
    pub fn build(self) -> Result<Turn, TurnError> {
        let mut ledgers = BTreeMap::new();
        for (class, config) in &self.config.budgets.classes {
            let ledger = ClassLedger::new(config, &self.slugs).map_err(|intent| {
                TurnErrorKind::UnknownPromotionIntent {
                    class: class.clone(),
                    intent,
                }
            })?;
            ledgers.insert(class.clone(), ledger);
        }
        let mut tools = HashMap::with_capacity(self.tools.len());
        for (tool, executor) in self.tools {
            validate_tool_name(&tool.name).map_err(TurnErrorKind::InvalidToolName)?;
            if let Some(class) = &tool.budget_class
                && !ledgers.contains_key(class)
            {
                return Err(TurnErrorKind::UnknownBudgetClass {
                    tool: tool.name.clone(),
                    class: class.clone(),
                }
                .into());
            }
            if tools.contains_key(&tool.name) {
                return Err(TurnErrorKind::DuplicateTool(tool.name.clone()).into());
            }
            tools.insert(tool.name.clone(), Registered { tool, executor });
        }
        let sources = match &self.seed {
            Some(snapshot) => SourceRegistry::seeded(snapshot, self.config.source_cap),
            None => SourceRegistry::new(self.config.source_cap),
        };
        Ok(Turn {
            tools,
            wrapper: self.wrapper,
            state: Mutex::new(State {
                ledgers,
                sources,
                seen: HashSet::new(),
                record: Vec::new(),
            }),
            dedupe: Dedupe::default(),
        })
    }
}

struct Registered {
    tool: TurnTool,
    executor: Arc<dyn ToolExecutor>,
}

struct State {
    ledgers: BTreeMap<String, ClassLedger>,
    sources: SourceRegistry,
    /// The identities of the calls so far, to tell a duplicate call.
    seen: HashSet<String>,
    /// Every finished call, for [`Turn::record`].
    record: Vec<RecordedCall>,
}

/// One model turn's tool runtime. Share it by reference (or in an `Arc`) between concurrent calls.
pub struct Turn {
    tools: HashMap<String, Registered>,
    wrapper: Arc<dyn ResultWrapper>,
    state: Mutex<State>,
    dedupe: Dedupe,
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.tools.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("Turn")
            .field("tools", &names)
            .finish_non_exhaustive()
    }
}

impl Turn {
    /// Starts building a Turn. `wrapper` fences the results of untrusted tools.
    pub fn builder(config: &TurnConfig, wrapper: Arc<dyn ResultWrapper>) -> TurnBuilder<'_> {
        TurnBuilder {
            config,
            wrapper,
            slugs: Vec::new(),
            seed: None,
            tools: Vec::new(),
        }
    }

    /// Charges one execution to `class`.
    fn charge(&self, class: Option<&str>) -> Charge {
        let Some(class) = class else {
            return Charge::Unbudgeted;
        };
        match self
            .state()
            .ledgers
            .get_mut(class)
            .and_then(ClassLedger::charge)
        {
            Some(remaining) => Charge::Charged { remaining },
            None => Charge::Refused,
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // The state is only mutated in short sections that cannot panic half-way, so a poisoned
        // lock still guards consistent data.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs one call through dedupe, budget and source registry.
    ///
    /// Budget exhaustion and tool failures are results ([`CallStatus`]), not errors.
    ///
    /// # Errors
    ///
    /// [`TurnErrorKind::UnknownTool`] when no tool of that name was registered.
    pub async fn call(&self, name: &str, input: &Value) -> Result<CallResult, TurnError> {
        let Some(registered) = self.tools.get(name) else {
            return Err(TurnErrorKind::UnknownTool(name.to_owned()).into());
        };
        let tool = &registered.tool;
        let key = call_key(name, input);
        let duplicate = !self.state().seen.insert(key.clone());

        // Charge before running, under the lock: concurrent calls can never exceed a cap. A call
        // of a cacheable tool is charged only when it drives an execution (under the dedupe
        // cache's lock), so one identity decides both whether a call runs and whether it pays.
        let class = tool.budget_class.as_deref();
        let mut charged = false;
        let mut last_allowed = false;
        let mut admit = || match self.charge(class) {
            Charge::Unbudgeted => true,
            Charge::Charged { remaining } => {
                charged = true;
                last_allowed = remaining == 0;
                true
            }
            Charge::Refused => false,
        };
        let call = ToolInvocation { name, input };
        let outcome = if tool.cacheable {
            self.dedupe
                .run(key, &mut admit, || registered.executor.execute(call))
                .await
        } else if admit() {
            Outcome::Ran(registered.executor.execute(call).await.map(Arc::new))
        } else {
            Outcome::Refused
        };
        let (outcome, deduplicated) = match outcome {
            Outcome::Ran(shared) => (shared, false),
            Outcome::Reused(shared) => (shared, true),
            Outcome::Refused => {
                let class = class.expect("only a budgeted call can be refused");
                let result = exhausted(class, self.remaining(class).unwrap_or(0));
                self.log(name, &result, duplicate);
                return Ok(result);
            }
        };

        let mut state = self.state();
        let budget = class.map(|class| BudgetReport {
            class: class.to_owned(),
            remaining: state.ledgers.get(class).map_or(0, ClassLedger::remaining),
            charged,
            last_allowed,
        });
        let mut pieces: Vec<Piece<'_>> = Vec::new();
        let mut sources = Vec::new();
        let status = match &outcome {
            Ok(output) => {
                for part in &output.parts {
                    match part {
                        OutputPart::Text(text) => pieces.push(Piece::Content(text, None)),
                        OutputPart::Source {
                            url,
                            title,
                            authoritative_title,
                            text,
                        } => {
                            let registration =
                                state
                                    .sources
                                    .register(url, title.as_deref(), *authoritative_title);
                            pieces.push(Piece::Label(registration));
                            pieces.push(Piece::Content(text, Some(url)));
                            sources.push(CitedSource {
                                url: url.clone(),
                                index: registration.index(),
                            });
                        }
                    }
                }
                CallStatus::Completed
            }
            Err(_) => CallStatus::Failed,
        };
        drop(state);

        // Rendering (and the fence, which may be costly) runs outside the lock.
        let mut text = String::new();
        let failure_text;
        if let Err(failure) = &outcome {
            failure_text = format!("The tool failed: {}", failure.message);
            pieces.push(Piece::Content(&failure_text, None));
        }
        for piece in pieces {
            match piece {
                Piece::Label(registration) => {
                    separate(&mut text);
                    match registration {
                        Registration::Numbered { index, .. } => text.push_str(&source_label(index)),
                        Registration::CapReached { cap } => text.push_str(&format!(
                            "[Source not numbered] (this conversation reached its limit of {cap} sources: do not cite this result)"
                        )),
                    }
                    text.push('\n');
                }
                Piece::Content(content, url) => {
                    if !text.is_empty() && !text.ends_with('\n') {
                        text.push_str("\n\n");
                    }
                    if tool.untrusted_results {
                        let provenance = ResultOrigin {
                            tool: name,
                            url,
                            fence: tool.fence,
                        };
                        text.push_str(&self.wrapper.wrap(content, &provenance));
                    } else {
                        text.push_str(content);
                    }
                }
            }
        }
        if let Some(report) = &budget {
            if report.last_allowed {
                separate(&mut text);
                text.push_str(&last_call_notice(&report.class));
            }
            separate(&mut text);
            text.push_str(&remaining_line(&report.class, report.remaining));
        }
        let result = CallResult {
            status,
            text,
            sources,
            budget,
            deduplicated,
        };
        self.log(name, &result, duplicate);
        Ok(result)
    }

    /// Adds a finished call to the turn's record.
    fn log(&self, tool: &str, result: &CallResult, duplicate: bool) {
        let budget = result.budget.as_ref();
        let call = RecordedCall {
            tool: tool.to_owned(),
            class: budget.map(|b| b.class.clone()),
            status: match result.status {
                CallStatus::Completed => RecordedStatus::Completed,
                CallStatus::Failed => RecordedStatus::Failed,
                CallStatus::BudgetExhausted => RecordedStatus::BudgetExhausted,
            },
            charged: budget.is_some_and(|b| b.charged),
            deduplicated: result.deduplicated,
            duplicate,
            last_allowed: budget.is_some_and(|b| b.last_allowed),
        };
        self.state().record.push(call);
    }

    /// Every call of the turn so far, as the runtime decided it, in the order the calls finished:
    /// the input of [`score_tool_calls`](crate::stream::score_tool_calls) for evals. Persist it
    /// with the transcript (it serialises to the JSON described in [`crate::stream::record`]).
    pub fn record(&self) -> TurnRecord {
        TurnRecord {
            calls: self.state().record.clone(),
        }
    }

    /// Applies the budget promotion of every class promoted by `skill` (once per class and turn).
    /// Returns whether any cap grew, which may bring withdrawn tools back.
    pub fn skill_loaded(&self, skill: &str) -> bool {
        let mut state = self.state();
        let mut grew = false;
        for ledger in state.ledgers.values_mut() {
            grew |= ledger.promote(skill);
        }
        grew
    }

    /// Calls left this turn in `class`, or `None` for an undeclared class.
    pub fn remaining(&self, class: &str) -> Option<u32> {
        self.state().ledgers.get(class).map(ClassLedger::remaining)
    }

    /// The cap of `class` this turn (after any promotion), or `None` for an undeclared class.
    pub fn cap(&self, class: &str) -> Option<u32> {
        self.state().ledgers.get(class).map(|l| l.cap)
    }

    /// The tools to withdraw from the model now, sorted: those whose budget class is used up.
    /// Every other tool stays available.
    pub fn withdrawn_tools(&self) -> Vec<String> {
        let state = self.state();
        let mut names: Vec<String> = self
            .tools
            .values()
            .filter(|r| {
                r.tool
                    .budget_class
                    .as_ref()
                    .and_then(|class| state.ledgers.get(class))
                    .is_some_and(|ledger| ledger.remaining() == 0)
            })
            .map(|r| r.tool.name.clone())
            .collect();
        names.sort_unstable();
        names
    }

    /// The source cited as `[index]` in this conversation.
    pub fn source(&self, index: u32) -> Option<Source> {
        self.state().sources.get(index).cloned()
    }

    /// Every source of the conversation so far, for the assistant message's metadata.
    pub fn sources_snapshot(&self) -> SourceSnapshot {
        self.state().sources.snapshot()
    }
}

enum Piece<'a> {
    Label(Registration),
    Content(&'a str, Option<&'a str>),
}

/// Starts a new paragraph unless the text is empty or already ends a line.
fn separate(text: &mut String) {
    if !text.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
    }
}

fn exhausted(class: &str, remaining: u32) -> CallResult {
    let text = format!(
        "The {class} budget for this turn is used up, so this call did not run. \
         Answer with the information you already have.\n\n{}",
        remaining_line(class, remaining)
    );
    CallResult {
        status: CallStatus::BudgetExhausted,
        text,
        sources: Vec::new(),
        budget: Some(BudgetReport {
            class: class.to_owned(),
            remaining,
            charged: false,
            last_allowed: false,
        }),
        deduplicated: false,
    }
}
