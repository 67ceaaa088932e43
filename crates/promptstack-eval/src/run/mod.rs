//! The runner: every version × model × scenario × repetition of a suite, each one Turn against
//! a model endpoint, decided by the scenario's assertions, as a [`Run`] of result rows.
//!
//! ```text
//! Runner::new   (checks and prepares everything once: sends read and assembled per version,
//!                patterns and scripts compiled, endpoints matched; bad input before any call)
//! Runner::run   (at most `matrix.concurrency` scenario runs in flight, on any executor)
//!   one scenario run = one Turn:
//!     render the request as `render --format` does, add the sampling fields ─► Endpoint
//!     ─► wire::Stream ─► tool calls?  execute each through the Turn (scripted results,
//!        sources registered, untrusted results fenced), append the assistant message and the
//!        tool results, render again ─► … at most `matrix.max_steps` steps
//!     ─► the final text through the stream processor ─► assess
//!     ─► each `rubric` scored by its judge model (see `judge`) ─► ResultRow
//! ```
//!
//! The runner speaks no HTTP and reads no clock but [`Instant`] for latencies; its only
//! randomness-like input is the fence's nonce, derived from each run's identity so that a
//! recorded run replays byte for byte (see [`record`](crate::record)).

mod judge;
pub mod sampling;
mod script;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt as _;
use promptstack_core::fence::Fence;
use promptstack_core::provider::{
    CacheState, Conversation, DEFAULT_MAX_TOKENS, Format, Message, RequestOptions, Rules, ToolCall,
    canonical_json,
};
use promptstack_core::spec::ResultFence;
use promptstack_core::stream::{OutputMode, Processor, StreamConfig, WidgetSet};
use promptstack_core::turn::{CallStatus, ResultOrigin, ResultWrapper, ToolExecutor};
use promptstack_core::{Agent, Assembly, SendContext};

pub use sampling::{Sampling, add_sampling};

use crate::assess::{Checks, Observed};
use crate::endpoint::{Call, Endpoint, EndpointError, EndpointErrorKind};
use crate::price::Prices;
use crate::row::{
    AssertionResult, Latency, ResultRow, RowKey, Run, ToolCallRecord, Transcript, Usage,
};
use crate::suite::{Assertion, FenceStyle, Scenario, Suite};
use crate::wire::{Stream, StreamFormat};
use script::{RunNonces, Scripted, Scripts, clip};

/// A version of the suite, its spec loaded.
#[derive(Clone)]
pub struct VersionAgent {
    /// The version's name in the suite.
    pub name: String,
    /// The agent its spec compiles to.
    pub agent: Agent,
}

impl fmt::Debug for VersionAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VersionAgent")
            .field("name", &self.name)
            .field("agent", &self.agent.name())
            .finish()
    }
}

/// What the progress callback is told after each scenario run.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Scenario runs finished.
    pub done: usize,
    /// Scenario runs in the whole run.
    pub total: usize,
    /// Finished runs that did not pass (errors included).
    pub failed: usize,
    /// Finished runs that ended in an error.
    pub errors: usize,
    /// The row just finished.
    pub row: &'a ResultRow,
}

/// The progress callback.
pub type ProgressFn = Arc<dyn Fn(&Progress<'_>) + Send + Sync>;

/// What to run of a suite.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Only these scenarios (none: all).
    pub scenarios: Vec<String>,
    /// Only these versions (none: all).
    pub versions: Vec<String>,
    /// Only these models (none: all of the matrix).
    pub models: Vec<String>,
    /// Repetitions of each cell instead of the suite's `matrix.repeats` (1 to 100).
    pub repeats: Option<u32>,
    /// The target whose composition is sent, for every version (none: the first target the
    /// spec declares, as `render` lists them).
    pub target: Option<String>,
    /// Called after each scenario run, in the order runs finish.
    pub progress: Option<ProgressFn>,
}

impl fmt::Debug for RunOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunOptions")
            .field("scenarios", &self.scenarios)
            .field("versions", &self.versions)
            .field("models", &self.models)
            .field("repeats", &self.repeats)
            .field("target", &self.target)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Why a run could not start, or had to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    kind: RunErrorKind,
    message: String,
}

/// The kind of a [`RunError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunErrorKind {
    /// The suite, a filter, a version, a send or an endpoint does not fit: nothing was called.
    Input,
    /// An endpoint failed in a way no other scenario run would escape (a missing recording, an
    /// unreadable recording, a misconfigured endpoint): the run stopped.
    Endpoint(EndpointErrorKind),
}

impl RunError {
    fn input(message: impl Into<String>) -> Self {
        Self {
            kind: RunErrorKind::Input,
            message: message.into(),
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> RunErrorKind {
        self.kind
    }

    /// The message, naming what caused it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}

/// A version, its sends assembled.
struct PreparedVersion {
    name: String,
    agent: Agent,
    fence: FenceStyle,
    /// One per selected scenario, in the same order.
    sends: Vec<PreparedSend>,
}

/// A scenario's send as one version assembles it.
struct PreparedSend {
    /// The assembly of the send, which places the user message.
    assembly: Assembly,
    /// The assembly of the same send without its user message: a tool-call continuation.
    continued: Result<Assembly, String>,
    target: String,
    fingerprint: String,
    /// The send's user message, which a judge reads as the question.
    user_message: Option<String>,
}

struct PreparedModel {
    name: String,
    tier: String,
    model: String,
    format: Format,
    stream: StreamFormat,
    endpoint: Arc<dyn Endpoint>,
}

struct PreparedScenario {
    name: String,
    checks: Checks,
    /// Each `rubric` assertion, by its index.
    rubrics: Vec<(usize, judge::Rubric)>,
    assertions: usize,
    scripts: Arc<Scripts>,
    widgets: WidgetSet,
    conversation: Conversation,
}

#[derive(Debug, Clone, Copy)]
struct Cell {
    version: usize,
    model: usize,
    scenario: usize,
    repetition: u32,
}

/// A suite ready to run: everything that can be checked without a model call has been.
pub struct Runner {
    suite: String,
    versions: Vec<PreparedVersion>,
    models: Vec<PreparedModel>,
    /// The models the selected scenarios' rubric assertions name as judges, by name.
    judges: BTreeMap<String, PreparedModel>,
    /// The judge's agent, compiled once.
    judge: Agent,
    scenarios: Vec<PreparedScenario>,
    repeats: u32,
    concurrency: usize,
    max_steps: u32,
    max_tokens: u32,
    sampling: Sampling,
    rules: Rules,
    prices: Prices,
    /// One simulated provider cache per model, fed every request in the order it is sent, for
    /// the rows' predicted cache reads.
    caches: Vec<Mutex<CacheState>>,
    /// The simulated caches' clock starts here.
    epoch: Instant,
    progress: Option<ProgressFn>,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner")
            .field("suite", &self.suite)
            .field("runs", &self.total())
            .finish_non_exhaustive()
    }
}

/// The most scenario runs one run may hold.
pub const MAX_RUNS: usize = 1_000_000;

/// The most bytes one scenario run adds to its conversation (answers, call arguments, tool
/// results): past it the run ends as an error, so a model that keeps calling tools cannot make a
/// run hold more (at `matrix.concurrency` 256, at most 2 GiB in all).
pub const MAX_TURN_BYTES: usize = 8 * 1024 * 1024;

impl Runner {
    /// Prepares a run of `suite` (named `name` in reports) whose files are relative to `folder`:
    /// `versions` are the suite's versions with their specs loaded (those the options leave out
    /// may be missing), `endpoints` one endpoint per model name.
    ///
    /// Every send is read and assembled for every version here, once; every scenario's patterns
    /// and scripts are compiled once.
    ///
    /// # Errors
    ///
    /// [`RunErrorKind::Input`], naming the cause: a filter naming nothing the suite declares, a
    /// version given no agent or given as a `ref`, a model (a judge included) without an endpoint,
    /// a send that cannot be read or assembled, a target the spec does not have, a conversation that does not hold together, a script pattern that does not
    /// compile, more than [`MAX_RUNS`] runs.
    pub fn new(
        suite: &Suite,
        name: &str,
        folder: &Path,
        versions: Vec<VersionAgent>,
        endpoints: BTreeMap<String, Arc<dyn Endpoint>>,
        options: RunOptions,
    ) -> Result<Self, RunError> {
        Self::with_files(suite, name, &Folder(folder), versions, endpoints, options)
    }

    /// Prepares a run as [`Runner::new`] does, reading the send files from `files` (a published
    /// bundle, for instance) instead of a folder.
    ///
    /// # Errors
    ///
    /// As [`Runner::new`].
    pub fn with_files(
        suite: &Suite,
        name: &str,
        folder: &dyn Files,
        versions: Vec<VersionAgent>,
        endpoints: BTreeMap<String, Arc<dyn Endpoint>>,
        options: RunOptions,
    ) -> Result<Self, RunError> {
        let version_names: Vec<&str> = suite
            .matrix
            .versions
            .iter()
            .map(|v| v.name.as_str())
            .collect();
        let model_names: Vec<&str> = suite.matrix.models.iter().map(String::as_str).collect();
        let scenario_names: Vec<&str> = suite.scenario_names().collect();
        check_filter("version", &options.versions, &version_names)?;
        check_filter("model", &options.models, &model_names)?;
        check_filter("scenario", &options.scenarios, &scenario_names)?;
        let selected =
            |filter: &[String], name: &str| filter.is_empty() || filter.iter().any(|f| f == name);

        let repeats = options.repeats.unwrap_or(suite.matrix.repeats);
        if !(1..=crate::suite::MAX_REPEATS).contains(&repeats) {
            return Err(RunError::input(format!(
                "repeats {repeats} is outside 1 to {}",
                crate::suite::MAX_REPEATS
            )));
        }

        let scenarios: Vec<(&Scenario, PreparedScenario)> = suite
            .scenarios
            .iter()
            .filter(|s| selected(&options.scenarios, &s.name))
            .map(|s| Ok((s, prepare_scenario(s)?)))
            .collect::<Result<_, RunError>>()?;

        let mut models = Vec::new();
        for name in suite
            .matrix
            .models
            .iter()
            .filter(|m| selected(&options.models, m))
        {
            let Some(model) = suite.models.get(name) else {
                return Err(RunError::input(format!(
                    "model `{name}` is not declared under `models`"
                )));
            };
            let format = Format::from(model.format);
            let stream = StreamFormat::from(model.format);
            let Some(endpoint) = endpoints.get(name) else {
                return Err(RunError::input(format!("model `{name}` has no endpoint")));
            };
            models.push(PreparedModel {
                name: name.clone(),
                tier: model.tier.clone().unwrap_or_default(),
                model: model.model.clone(),
                format,
                stream,
                endpoint: Arc::clone(endpoint),
            });
        }

        let mut judges = BTreeMap::new();
        for (_, rubric) in scenarios.iter().flat_map(|(_, s)| &s.rubrics) {
            if judges.contains_key(&rubric.judge) {
                continue;
            }
            let Some(model) = suite.models.get(&rubric.judge) else {
                return Err(RunError::input(format!(
                    "judge `{}` is not declared under `models`",
                    clip(&rubric.judge, 100)
                )));
            };
            let Some(endpoint) = endpoints.get(&rubric.judge) else {
                return Err(RunError::input(format!(
                    "judge model `{}` has no endpoint",
                    clip(&rubric.judge, 100)
                )));
            };
            judges.insert(
                rubric.judge.clone(),
                PreparedModel {
                    name: rubric.judge.clone(),
                    tier: model.tier.clone().unwrap_or_default(),
                    model: model.model.clone(),
                    format: Format::from(model.format),
                    stream: StreamFormat::from(model.format),
                    endpoint: Arc::clone(endpoint),
                },
            );
        }
        let judge = judge::agent().map_err(RunError::input)?;

        let mut given: BTreeMap<String, Agent> =
            versions.into_iter().map(|v| (v.name, v.agent)).collect();
        let mut sends = SendCache::default();
        let mut prepared_versions = Vec::new();
        for version in suite
            .matrix
            .versions
            .iter()
            .filter(|v| selected(&options.versions, &v.name))
        {
            if let Some(reference) = &version.reference {
                return Err(RunError::input(format!(
                    "version `{}` is `ref = \"{}\"`: a reference is resolved by the service, so run it there (or give the version a `spec`)",
                    version.name,
                    clip(reference, 100)
                )));
            }
            let Some(agent) = given.remove(&version.name) else {
                return Err(RunError::input(format!(
                    "version `{}` was given no agent",
                    version.name
                )));
            };
            let prepared = scenarios
                .iter()
                .map(|(scenario, _)| {
                    let target = options.target.as_deref();
                    prepare_send(&agent, &version.name, scenario, target, folder, &mut sends)
                })
                .collect::<Result<_, RunError>>()?;
            prepared_versions.push(PreparedVersion {
                name: version.name.clone(),
                agent,
                fence: version.fence,
                sends: prepared,
            });
        }

        let caches = models.iter().map(|_| Mutex::default()).collect();
        let runner = Self {
            suite: name.to_owned(),
            versions: prepared_versions,
            models,
            judges,
            judge,
            scenarios: scenarios.into_iter().map(|(_, p)| p).collect(),
            repeats,
            concurrency: suite
                .matrix
                .concurrency
                .clamp(1, crate::suite::MAX_CONCURRENCY) as usize,
            max_steps: suite.matrix.max_steps.clamp(1, crate::suite::MAX_STEPS),
            max_tokens: suite.matrix.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            sampling: Sampling {
                temperature: suite.matrix.temperature,
                seed: suite.matrix.seed,
            },
            rules: Rules::bundled().clone(),
            prices: Prices::bundled().clone(),
            caches,
            epoch: Instant::now(),
            progress: options.progress,
        };
        if runner.total() > MAX_RUNS {
            return Err(RunError::input(format!(
                "the run holds {} scenario runs, more than {MAX_RUNS}",
                runner.total()
            )));
        }
        Ok(runner)
    }

    /// Uses `rules` instead of the bundled provider rules table.
    #[must_use]
    pub fn with_rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// Uses `prices` instead of the bundled price table for the rows' costs.
    #[must_use]
    pub fn with_prices(mut self, prices: Prices) -> Self {
        self.prices = prices;
        self
    }

    /// How many scenario runs the run holds.
    pub fn total(&self) -> usize {
        self.versions.len() * self.models.len() * self.scenarios.len() * self.repeats as usize
    }

    fn cells(&self) -> impl Iterator<Item = Cell> + '_ {
        (0..self.versions.len()).flat_map(move |version| {
            (0..self.models.len()).flat_map(move |model| {
                (0..self.scenarios.len()).flat_map(move |scenario| {
                    (0..self.repeats).map(move |repetition| Cell {
                        version,
                        model,
                        scenario,
                        repetition,
                    })
                })
            })
        })
    }

    /// Runs every scenario run, at most `matrix.concurrency` at once, and returns the rows in
    /// matrix order (version, model, scenario, repetition), whatever order they finished in.
    ///
    /// A model that answers with an error status, a stream that cannot be read or a turn that
    /// cannot go on makes that row an `error` row; the run goes on.
    ///
    /// # Errors
    ///
    /// [`RunErrorKind::Endpoint`] when an endpoint fails in a way every run would: a replay
    /// without the recording asked for, a recording that cannot be read or written, an endpoint
    /// that is misconfigured. The runs in flight are dropped.
    pub async fn run(&self) -> Result<Run, RunError> {
        let total = self.total();
        let mut finished = futures::stream::iter(self.cells().enumerate())
            .map(|(index, cell)| async move { (index, self.run_one(cell).await) })
            .buffer_unordered(self.concurrency);
        let mut rows: Vec<(usize, ResultRow)> = Vec::with_capacity(total);
        let (mut failed, mut errors) = (0, 0);
        while let Some((index, row)) = finished.next().await {
            let row = row?;
            failed += usize::from(!row.passed);
            errors += usize::from(row.error.is_some());
            if let Some(progress) = &self.progress {
                progress(&Progress {
                    done: rows.len() + 1,
                    total,
                    failed,
                    errors,
                    row: &row,
                });
            }
            rows.push((index, row));
        }
        rows.sort_unstable_by_key(|(index, _)| *index);
        let run = Run::new(
            self.suite.clone(),
            rows.into_iter().map(|(_, row)| row).collect(),
        );
        Ok(self.models.iter().fold(run, |run, model| {
            run.with_model(&model.name, model.format.as_str(), &model.model)
        }))
    }

    /// Runs one scenario run on its own: `version`, `model` and `scenario` by name (each among
    /// those the runner was prepared with), `repetition` from 0. The row is the one
    /// [`Runner::run`] gives for the same cell, byte for byte against the same answers: the
    /// fence's nonces derive from the same identity. The progress callback is not called.
    ///
    /// # Errors
    ///
    /// [`RunErrorKind::Input`] for a name the runner was not prepared with or a repetition past
    /// its repeats; [`RunErrorKind::Endpoint`] as for [`Runner::run`].
    pub async fn run_cell(
        &self,
        version: &str,
        model: &str,
        scenario: &str,
        repetition: u32,
    ) -> Result<ResultRow, RunError> {
        fn find<'a, T>(
            what: &str,
            items: &'a [T],
            name: &str,
            key: impl Fn(&'a T) -> &'a str,
        ) -> Result<usize, RunError> {
            items
                .iter()
                .position(|item| key(item) == name)
                .ok_or_else(|| {
                    RunError::input(format!("this run has no {what} `{}`", clip(name, 100)))
                })
        }
        let cell = Cell {
            version: find("version", &self.versions, version, |v| v.name.as_str())?,
            model: find("model", &self.models, model, |m| m.name.as_str())?,
            scenario: find("scenario", &self.scenarios, scenario, |s| s.name.as_str())?,
            repetition,
        };
        if repetition >= self.repeats {
            return Err(RunError::input(format!(
                "repetition {repetition} is past the run's {} repeats",
                self.repeats
            )));
        }
        self.run_one(cell).await
    }

    /// One scenario run: one Turn.
    async fn run_one(&self, cell: Cell) -> Result<ResultRow, RunError> {
        let started = Instant::now();
        let version = &self.versions[cell.version];
        let model = &self.models[cell.model];
        let scenario = &self.scenarios[cell.scenario];
        let send = &version.sends[cell.scenario];
        let mut key = RowKey {
            agent: version.agent.name().to_owned(),
            version_id: version.name.clone(),
            fingerprint: send.fingerprint.clone(),
            rules_version: self.rules.version.clone(),
            model: model.name.clone(),
            tier: model.tier.clone(),
            scenario: scenario.name.clone(),
            repetition: cell.repetition,
        };
        let repetition = cell.repetition.to_string();
        let nonces = RunNonces::new(&[&version.name, &model.name, &scenario.name, &repetition]);
        let wrapper: Arc<dyn ResultWrapper> = match version.fence {
            FenceStyle::Markers => Arc::new(Fence::new(nonces)),
            FenceStyle::XmlTags => Arc::new(XmlTags),
        };
        let executor: Arc<dyn ToolExecutor> = Arc::new(Scripted(Arc::clone(&scenario.scripts)));
        let turn = version
            .agent
            .turn_builder(&send.assembly, wrapper, |_| Some(Arc::clone(&executor)))
            .and_then(promptstack_core::turn::TurnBuilder::build);
        let turn = match turn {
            Ok(turn) => turn,
            Err(error) => {
                return Ok(ResultRow::new(key, false)
                    .with_error(format!("the turn could not be built: {error}")));
            }
        };

        let mut options = RequestOptions::new(model.format, send.target.clone());
        options.model = Some(model.model.clone());
        options.max_tokens = self.max_tokens;
        let mut conversation = scenario.conversation.clone();
        let mut usage = Usage::default();
        let mut predicted_read: Option<u64> = None;
        let mut first_token = None;
        let mut calls: Vec<ToolCallRecord> = Vec::new();
        let mut budget_exceeded = false;
        let mut request_text = String::new();
        let mut text = String::new();
        let mut stopped = None;
        let mut row_error = None;
        let mut added = 0usize;

        for step in 0..self.max_steps {
            let assembly = if step == 0 {
                &send.assembly
            } else {
                match &send.continued {
                    Ok(assembly) => assembly,
                    Err(why) => {
                        row_error = Some(why.clone());
                        break;
                    }
                }
            };
            let request =
                match version
                    .agent
                    .request(assembly, &conversation, &self.rules, &options)
                {
                    Ok(request) => request,
                    Err(error) => {
                        row_error = Some(format!(
                            "step {}: the request could not be built: {error}",
                            step + 1
                        ));
                        break;
                    }
                };
            key.rules_version.clone_from(&request.plan.rules_version);
            let now = self.epoch.elapsed().as_secs();
            let predicted = request.replay(&self.rules, &mut lock(&self.caches[cell.model]), now);
            if let Ok(cost) = predicted {
                predicted_read = Some(predicted_read.unwrap_or(0) + u64::from(cost.read));
            }
            let mut body = request.body_value();
            add_sampling(&mut body, model.format, &self.sampling);
            request_text = canonical_json(&body);
            let call = Call {
                repetition: cell.repetition,
                body: &body,
            };
            let reply = match model.endpoint.exchange(call).await {
                Ok(reply) => reply,
                Err(error) if fatal(&error) => {
                    return Err(RunError {
                        kind: RunErrorKind::Endpoint(error.kind()),
                        message: format!(
                            "model `{}`, version `{}`, scenario `{}`, repetition {}: {error}",
                            model.name, version.name, scenario.name, cell.repetition
                        ),
                    });
                }
                Err(error) => {
                    row_error = Some(format!("step {}: {error}", step + 1));
                    break;
                }
            };
            if step == 0 {
                first_token = reply.first_byte;
            }
            if !(200..300).contains(&reply.status) {
                row_error = Some(format!(
                    "step {}: the model answered HTTP {}: {}",
                    step + 1,
                    reply.status,
                    clip(&String::from_utf8_lossy(&reply.body), 500)
                ));
                break;
            }
            let mut stream = Stream::new(model.stream);
            let answer = match stream
                .feed(&reply.body)
                .map(drop)
                .and_then(|()| stream.finish())
            {
                Ok(answer) => answer,
                Err(error) => {
                    row_error = Some(format!("step {}: {error}", step + 1));
                    break;
                }
            };
            add_usage(&mut usage, &answer.usage);
            if step == 0
                && let Some(message) = &request.user_message
            {
                conversation.messages.push(Message::User {
                    text: message.clone(),
                });
            }
            if answer.tool_calls.is_empty() {
                text = answer.text;
                break;
            }
            let mut tool_calls = Vec::with_capacity(answer.tool_calls.len());
            let mut results = Vec::with_capacity(answer.tool_calls.len());
            let last = step + 1 == self.max_steps;
            for (i, call) in answer.tool_calls.iter().enumerate() {
                let (arguments, malformed) = arguments_of(&call.arguments);
                calls.push(ToolCallRecord::new(
                    call.name.clone(),
                    if malformed.is_some() {
                        call.arguments.clone()
                    } else {
                        canonical_json(&arguments)
                    },
                ));
                if last {
                    continue;
                }
                let id = format!("call_{}_{}", step + 1, i + 1);
                let (content, is_error) = match malformed {
                    Some(why) => (
                        format!(
                            "The call did not run: its arguments are not a JSON object ({why})."
                        ),
                        true,
                    ),
                    None => match turn.call(&call.name, &arguments).await {
                        Ok(result) => {
                            budget_exceeded |= result.status == CallStatus::BudgetExhausted;
                            (result.text, result.status == CallStatus::Failed)
                        }
                        Err(error) => (format!("The call did not run: {error}."), true),
                    },
                };
                tool_calls.push(ToolCall {
                    id: id.clone(),
                    name: call.name.clone(),
                    arguments,
                });
                results.push(Message::Tool {
                    call_id: id,
                    content,
                    is_error,
                });
            }
            added = added.saturating_add(
                answer.text.len()
                    + answer
                        .tool_calls
                        .iter()
                        .map(|c| c.arguments.len())
                        .sum::<usize>()
                    + results
                        .iter()
                        .map(|m| match m {
                            Message::Tool { content, .. } => content.len(),
                            _ => 0,
                        })
                        .sum::<usize>(),
            );
            if added > MAX_TURN_BYTES {
                row_error = Some(format!(
                    "step {}: the turn's conversation passed {MAX_TURN_BYTES} bytes",
                    step + 1
                ));
                break;
            }
            if last {
                text = answer.text;
                stopped = Some(format!(
                    "the model was still calling tools after max_steps ({}) steps",
                    self.max_steps
                ));
                break;
            }
            conversation.messages.push(Message::Assistant {
                text: answer.text,
                tool_calls,
            });
            conversation.messages.extend(results);
        }

        let latency = Latency {
            first_token_us: first_token.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX)),
            total_us: 0,
        };
        let mut row = ResultRow::new(key, false).with_usage(usage);
        row.turn = Some(turn.record());
        row.predicted_cache_read_tokens = predicted_read;
        if let Some(price) = self.prices.find(model.format, &model.model) {
            row.cost = Some(price.cost(&usage));
        }
        if let Some(error) = row_error {
            let transcript = Transcript {
                request: request_text,
                answer: String::new(),
                tool_calls: calls,
            };
            return Ok(row
                .with_transcript(transcript)
                .with_error(error)
                .with_latency(finish(latency, started)));
        }

        let sources = turn.sources_snapshot();
        let config = StreamConfig::new(OutputMode::Links).with_widgets(scenario.widgets.clone());
        let mut processor = Processor::new(&sources, config);
        let mut answer = String::with_capacity(text.len() + text.len() / 4);
        processor.push_into(&text, &mut answer);
        processor.finish_into(&mut answer);
        let score = processor.score();
        let observed = Observed {
            answer: &answer,
            citations: &score,
            calls: &calls,
            budget_exceeded,
        };
        let decided = scenario.checks.assess(&observed);
        let mut judged = Vec::with_capacity(scenario.rubrics.len());
        let whom = format!(
            "model `{}`, version `{}`, scenario `{}`",
            row.model, row.version_id, row.scenario
        );
        for (index, rubric) in &scenario.rubrics {
            let question = send.user_message.as_deref().unwrap_or_default();
            let verdict = self
                .judge_one(*index, rubric, question, &answer, &whom, cell.repetition)
                .await?;
            judged.push((*index, verdict));
        }
        row.assertions = merge_rubrics(scenario.assertions, decided, judged);
        row.passed = row.assertions.iter().all(|a| a.verdict.is_pass());
        row.transcript = Some(Transcript {
            request: request_text,
            answer,
            tool_calls: calls,
        });
        if let Some(stopped) = stopped {
            row = row.with_error(stopped);
        }
        Ok(row.with_latency(finish(latency, started)))
    }
}

/// The `xml-tags` baseline of [`FenceStyle`]: untrusted content between plain XML tags named for
/// its kind, the origin as an attribute (`&`, `<` and `"` escaped there, as any XML writer
/// would), the content itself as it came, so a page can close the tag and speak after it.
struct XmlTags;

impl ResultWrapper for XmlTags {
    fn wrap(&self, content: &str, origin: &ResultOrigin<'_>) -> String {
        let tag = match (origin.fence, origin.url) {
            (ResultFence::WebContent, Some(_)) => "web_content",
            (ResultFence::FileContent, Some(_)) => "file_content",
            _ => "tool_result",
        };
        let mut out = String::with_capacity(content.len() + 64);
        out.push('<');
        out.push_str(tag);
        for (name, value) in [("origin", origin.url), ("tool", Some(origin.tool))] {
            if let Some(value) = value {
                out.push(' ');
                out.push_str(name);
                out.push_str("=\"");
                for c in value.chars() {
                    match c {
                        '&' => out.push_str("&amp;"),
                        '<' => out.push_str("&lt;"),
                        '"' => out.push_str("&quot;"),
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
        }
        out.push_str(">\n");
        out.push_str(content);
        out.push_str("\n</");
        out.push_str(tag);
        out.push('>');
        out
    }
}

/// The lock, whether or not another run panicked while holding it (a cache state stays usable).
fn lock(state: &Mutex<CacheState>) -> std::sync::MutexGuard<'_, CacheState> {
    state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The latency with the total measured from `started`.
fn finish(mut latency: Latency, started: Instant) -> Latency {
    latency.total_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    latency
}

/// Whether an endpoint error would meet every run alike, so the run stops.
fn fatal(error: &EndpointError) -> bool {
    matches!(
        error.kind(),
        EndpointErrorKind::MissingRecording
            | EndpointErrorKind::Recording
            | EndpointErrorKind::Config
    )
}

/// A call's arguments as the JSON object the conversation holds: empty text is `{}`; anything
/// that is not an object is an empty object and the reason.
fn arguments_of(text: &str) -> (serde_json::Value, Option<String>) {
    let empty = || serde_json::Value::Object(serde_json::Map::new());
    if text.trim().is_empty() {
        return (empty(), None);
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value @ serde_json::Value::Object(_)) => (value, None),
        Ok(_) => (empty(), Some("not an object".into())),
        Err(error) => (empty(), Some(error.to_string())),
    }
}

/// Adds one step's usage to the turn's: cache counts stay unknown until a step reports one.
fn add_usage(total: &mut Usage, step: &Usage) {
    total.input_tokens = total.input_tokens.saturating_add(step.input_tokens);
    total.output_tokens = total.output_tokens.saturating_add(step.output_tokens);
    let add = |total: Option<u64>, step: Option<u64>| match (total, step) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    };
    total.cache_read_tokens = add(total.cache_read_tokens, step.cache_read_tokens);
    total.cache_write_tokens = add(total.cache_write_tokens, step.cache_write_tokens);
}

/// The decided results with each judged `rubric` assertion in its place.
fn merge_rubrics(
    assertions: usize,
    decided: Vec<AssertionResult>,
    judged: Vec<(usize, AssertionResult)>,
) -> Vec<AssertionResult> {
    if judged.is_empty() {
        return decided;
    }
    let mut decided = decided.into_iter();
    let mut judged = judged.into_iter().peekable();
    (0..assertions)
        .filter_map(|i| match judged.next_if(|(index, _)| *index == i) {
            Some((_, result)) => Some(result),
            None => decided.next(),
        })
        .collect()
}

fn check_filter(what: &str, filter: &[String], known: &[&str]) -> Result<(), RunError> {
    for name in filter {
        if !known.contains(&name.as_str()) {
            return Err(RunError::input(format!(
                "the suite has no {what} `{}` (it has: {})",
                clip(name, 100),
                known.join(", ")
            )));
        }
    }
    Ok(())
}

fn prepare_scenario(scenario: &Scenario) -> Result<PreparedScenario, RunError> {
    let scripts = Scripts::new(&scenario.tools)
        .map_err(|why| RunError::input(format!("scenario `{}`: {why}", scenario.name)))?;
    let conversation = scenario.conversation.clone().unwrap_or_default();
    conversation
        .check()
        .map_err(|e| RunError::input(format!("scenario `{}`: conversation: {e}", scenario.name)))?;
    // The widget tags the processor parses out: those the scenario's assertions name (a spec
    // declares none), each kept only if it is a valid widget name.
    let widget_names: Vec<&str> = scenario
        .assertions
        .iter()
        .filter_map(|a| match a {
            Assertion::WidgetUsed { widget, .. } => Some(widget.as_str()),
            _ => None,
        })
        .filter(|name| WidgetSet::new([*name]).is_ok())
        .collect();
    let widgets = WidgetSet::new(widget_names).unwrap_or_default();
    let rubrics = scenario
        .assertions
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            Assertion::Rubric {
                judge,
                rubric,
                threshold,
            } => Some((
                i,
                judge::Rubric {
                    judge: judge.clone(),
                    rubric: rubric.clone(),
                    threshold: *threshold,
                },
            )),
            _ => None,
        })
        .collect();
    Ok(PreparedScenario {
        name: scenario.name.clone(),
        checks: Checks::new(scenario),
        rubrics,
        assertions: scenario.assertions.len(),
        scripts: Arc::new(scripts),
        widgets,
        conversation,
    })
}

/// Send files read once for the whole run, by path.
#[derive(Default)]
struct SendCache {
    read: BTreeMap<String, Arc<[u8]>>,
}

impl SendCache {
    fn get(&mut self, files: &dyn Files, path: &str) -> Result<Arc<[u8]>, String> {
        if let Some(bytes) = self.read.get(path) {
            return Ok(Arc::clone(bytes));
        }
        crate::suite::check_path(path)?;
        let bytes = files.read(path)?;
        if bytes.len() > promptstack_core::context::MAX_SEND_BYTES {
            return Err(format!(
                "{path}: larger than {} bytes",
                promptstack_core::context::MAX_SEND_BYTES
            ));
        }
        self.read.insert(path.to_owned(), Arc::clone(&bytes));
        Ok(bytes)
    }
}

/// Where a runner reads the send files its scenarios name, by the path the suite gives (checked
/// by [`check_path`](crate::suite::check_path) before it is asked for).
pub trait Files: Sync {
    /// The file's bytes, or why they cannot be read, naming the file.
    ///
    /// # Errors
    ///
    /// The file is missing or unreadable; the message names it.
    fn read(&self, path: &str) -> Result<Arc<[u8]>, String>;
}

/// A folder on disk: each path is read below it, a regular file of at most
/// [`MAX_SEND_BYTES`](promptstack_core::context::MAX_SEND_BYTES).
struct Folder<'a>(&'a Path);

impl Files for Folder<'_> {
    fn read(&self, path: &str) -> Result<Arc<[u8]>, String> {
        let full: PathBuf = self.0.join(path);
        Ok(read_bounded(&full, promptstack_core::context::MAX_SEND_BYTES)?.into())
    }
}

/// Reads a regular file of at most `max` bytes.
fn read_bounded(path: &Path, max: usize) -> Result<Vec<u8>, String> {
    use std::io::Read as _;
    let shown = path.display();
    let metadata = std::fs::metadata(path).map_err(|e| format!("{shown}: {e}"))?;
    if !metadata.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{shown}: {e}"))?;
    if bytes.len() > max {
        return Err(format!("{shown}: larger than {max} bytes"));
    }
    Ok(bytes)
}

fn prepare_send(
    agent: &Agent,
    version: &str,
    scenario: &Scenario,
    target: Option<&str>,
    folder: &dyn Files,
    files: &mut SendCache,
) -> Result<PreparedSend, RunError> {
    let at = |why: String| {
        RunError::input(format!(
            "version `{version}`, scenario `{}`: {why}",
            scenario.name
        ))
    };
    let mut send = match (&scenario.send, &scenario.context) {
        (Some(path), _) => {
            let bytes = files.get(folder, path).map_err(at)?;
            SendContext::from_json_for(&bytes, path, agent.spec()).map_err(|e| at(e.to_string()))?
        }
        (None, Some(context)) => {
            // Written inline, the send is still checked against the spec's variable shapes.
            let bytes = serde_json::to_vec(context).map_err(|e| at(e.to_string()))?;
            SendContext::from_json_for(
                &bytes,
                &format!("scenario `{}` context", scenario.name),
                agent.spec(),
            )
            .map_err(|e| at(e.to_string()))?
        }
        (None, None) => return Err(at("the scenario has neither `send` nor `context`".into())),
    };
    let assembly = agent
        .assemble(&send)
        .map_err(|e| at(format!("the send does not assemble: {e}")))?;
    let target = match target {
        Some(target) if assembly.target_ids().any(|t| t == target) => target.to_owned(),
        Some(target) => {
            let known: Vec<&str> = assembly.target_ids().collect();
            return Err(at(format!(
                "the spec has no target `{}` (it has: {})",
                clip(target, 100),
                known.join(", ")
            )));
        }
        None => match assembly.target_ids().next() {
            Some(first) => first.to_owned(),
            None => return Err(at("the spec has no target".into())),
        },
    };
    let user_message = send.user_message.take();
    let continued = agent
        .assemble(&send)
        .map_err(|e| format!("the send does not assemble without its user message: {e}"));
    let fingerprint = assembly.fingerprint().to_string();
    Ok(PreparedSend {
        assembly,
        continued,
        target,
        fingerprint,
        user_message,
    })
}
