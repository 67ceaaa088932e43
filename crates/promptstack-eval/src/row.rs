//! The result model: one [`ResultRow`] per scenario run (a version, a model, a scenario and a
//! repetition), and the [`Run`] that holds them.
//!
//! Rows are plain serde data: they are the `rows` of the `--json` report and the input of
//! [`crate::stats`]. Every number is an integer or an exact count, so a row cannot carry NaN.

use std::collections::BTreeMap;
use std::fmt;

use promptstack_core::stream::record::TurnRecord;
use serde::{Deserialize, Serialize};

/// One eval run: the suite it ran and every result row, in the order the runner wrote them.
///
/// The statistics and the reports never depend on the order of [`Run::rows`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Run {
    /// The suite's name (its file stem or declared name).
    pub suite: String,
    /// When the run started, as RFC 3339 text supplied by the caller (this crate reads no clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// Every result row.
    pub rows: Vec<ResultRow>,
    /// What each model name of the rows stands for: the request format and the model id the
    /// endpoint was asked for, so a report says which model produced its answers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, RunModel>,
}

/// A model as a run called it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunModel {
    /// The request format (`openai-chat`, `anthropic`, …).
    pub format: String,
    /// The model id sent in each request.
    pub model: String,
}

impl Run {
    /// A run of `suite` holding `rows`.
    pub fn new(suite: impl Into<String>, rows: Vec<ResultRow>) -> Self {
        Self {
            suite: suite.into(),
            started_at: None,
            rows,
            models: BTreeMap::new(),
        }
    }

    /// Records what the model named `name` in the rows is: its request format and model id.
    #[must_use]
    pub fn with_model(
        mut self,
        name: impl Into<String>,
        format: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        self.models.insert(
            name.into(),
            RunModel {
                format: format.into(),
                model: model.into(),
            },
        );
        self
    }

    /// Sets the start time (RFC 3339 text).
    #[must_use]
    pub fn with_started_at(mut self, started_at: impl Into<String>) -> Self {
        self.started_at = Some(started_at.into());
        self
    }
}

/// What identifies a result row: who ran (agent, prompt version), on what (model), and which
/// sample (scenario, repetition).
///
/// A **cell** is version × model × scenario; its repetitions are its samples.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowKey {
    /// The agent's name.
    pub agent: String,
    /// The prompt version: a local spec path or a server version id.
    pub version_id: String,
    /// The assembly's fingerprint for this send (stable half and model descriptor).
    pub fingerprint: String,
    /// The version of the provider rules table the request was planned with.
    pub rules_version: String,
    /// The model's name as the suite declares it.
    pub model: String,
    /// The model's tier label (for example `small`, `frontier`).
    pub tier: String,
    /// The scenario's name.
    pub scenario: String,
    /// The repetition index, from 0.
    pub repetition: u32,
}

/// One scenario run: its identity, what it cost, what each assertion said and whether it passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultRow {
    /// The agent's name.
    pub agent: String,
    /// The prompt version: a local spec path or a server version id.
    pub version_id: String,
    /// The assembly's fingerprint.
    pub fingerprint: String,
    /// The version of the provider rules table.
    pub rules_version: String,
    /// The model's name.
    pub model: String,
    /// The model's tier label.
    pub tier: String,
    /// The scenario's name.
    pub scenario: String,
    /// The repetition index, from 0.
    pub repetition: u32,
    /// Time to the first streamed token and to the end of the turn.
    #[serde(default)]
    pub latency: Latency,
    /// The tokens the provider reported.
    #[serde(default)]
    pub usage: Usage,
    /// The cost from the price table, when the table prices this model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<MicroUsd>,
    /// The input tokens the provider rules table predicted this run's requests would read from
    /// the cache (every request replayed, in the order it was sent to the model, into one
    /// simulated cache per model); absent when no prediction was made. Counted with the
    /// engine's token estimate, so it sits beside the measured `usage.cache_read_tokens`, not
    /// equal to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_cache_read_tokens: Option<u64>,
    /// Each assertion's verdict, in the scenario's order.
    #[serde(default)]
    pub assertions: Vec<AssertionResult>,
    /// Whether the run passed as a whole.
    pub passed: bool,
    /// Why the run could not complete (a connector or turn failure), when it could not; such a
    /// row does not pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What was sent and answered, for the drill-down of the HTML report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<Transcript>,
    /// Every tool call of the turn as the runtime decided it (ran, failed, refused by a budget,
    /// shared with an identical call), in the order the calls finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnRecord>,
}

impl ResultRow {
    /// A row for `key` with its overall verdict; everything else starts empty.
    pub fn new(key: RowKey, passed: bool) -> Self {
        let RowKey {
            agent,
            version_id,
            fingerprint,
            rules_version,
            model,
            tier,
            scenario,
            repetition,
        } = key;
        Self {
            agent,
            version_id,
            fingerprint,
            rules_version,
            model,
            tier,
            scenario,
            repetition,
            latency: Latency::default(),
            usage: Usage::default(),
            cost: None,
            predicted_cache_read_tokens: None,
            assertions: Vec::new(),
            passed,
            error: None,
            transcript: None,
            turn: None,
        }
    }

    /// Sets the latency.
    #[must_use]
    pub fn with_latency(mut self, latency: Latency) -> Self {
        self.latency = latency;
        self
    }

    /// Sets the token usage.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Sets the cost.
    #[must_use]
    pub fn with_cost(mut self, cost: MicroUsd) -> Self {
        self.cost = Some(cost);
        self
    }

    /// Sets the predicted cache reads.
    #[must_use]
    pub fn with_predicted_cache_read_tokens(mut self, tokens: u64) -> Self {
        self.predicted_cache_read_tokens = Some(tokens);
        self
    }

    /// Appends an assertion's verdict.
    #[must_use]
    pub fn with_assertion(mut self, assertion: AssertionResult) -> Self {
        self.assertions.push(assertion);
        self
    }

    /// Records why the run could not complete; a run that could not complete did not pass.
    #[must_use]
    pub fn with_error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self.passed = false;
        self
    }

    /// Sets the transcript.
    #[must_use]
    pub fn with_transcript(mut self, transcript: Transcript) -> Self {
        self.transcript = Some(transcript);
        self
    }

    /// Sets the turn's record of its tool calls.
    #[must_use]
    pub fn with_turn(mut self, turn: TurnRecord) -> Self {
        self.turn = Some(turn);
        self
    }

    /// The assertion with this id, if the row has it.
    pub fn assertion(&self, id: &str) -> Option<&AssertionResult> {
        self.assertions.iter().find(|a| a.id == id)
    }
}

/// Wall-clock latency of one scenario run, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    /// From the request to the first streamed token; none when nothing was streamed (or the run
    /// was replayed without timings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_us: Option<u64>,
    /// From the request to the end of the turn.
    #[serde(default)]
    pub total_us: u64,
}

/// Tokens the provider reported for one scenario run (every step of the turn added up).
///
/// Cache reads and writes are `None` when the provider reported nothing about them, which is not
/// the same as reporting zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token, those read from or written to the provider's cache included (the
    /// connectors add Anthropic's separately reported cache tokens in, so all providers agree).
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens.
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

/// An exact amount of money in millionths of a US dollar.
///
/// Costs are added as integers, so a run's total is exact whatever the number of rows; it is
/// serialised as the integer and displayed as dollars (`$0.001234`).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct MicroUsd(pub u64);

impl MicroUsd {
    /// The sum, saturating at `u64::MAX` micro-dollars (18 trillion dollars).
    #[must_use]
    pub fn saturating_add(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_add(other.0))
    }
}

impl fmt::Display for MicroUsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}.{:06}", self.0 / 1_000_000, self.0 % 1_000_000)
    }
}

/// One assertion's verdict on one scenario run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssertionResult {
    /// The assertion's id, unique within its scenario (the paired tests match assertions by it).
    pub id: String,
    /// What kind of assertion it is (`contains`, `citations.min`, `rubric`, …).
    pub kind: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// Why: what was expected and what was found, or the judge's reason.
    pub reason: String,
}

impl AssertionResult {
    /// An assertion result.
    pub fn new(
        id: impl Into<String>,
        kind: impl Into<String>,
        verdict: Verdict,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: kind.into(),
            verdict,
            reason: reason.into(),
        }
    }
}

/// An assertion's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The assertion held.
    Pass,
    /// The assertion did not hold.
    Fail,
    /// The assertion could not be decided (a judge model failed, a schema did not compile); it
    /// counts as not passing.
    Error,
}

impl Verdict {
    /// Whether this verdict is a pass.
    pub fn is_pass(self) -> bool {
        self == Verdict::Pass
    }

    /// The verdict's name as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Error => "error",
        }
    }
}

/// What was sent and answered in one scenario run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Transcript {
    /// The request body as sent (the text `render --format` prints).
    #[serde(default)]
    pub request: String,
    /// The answer after the stream processor (citations resolved, math normalised).
    #[serde(default)]
    pub answer: String,
    /// The model's tool calls, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCallRecord>,
}

impl Transcript {
    /// A transcript of a request and its processed answer, without tool calls.
    pub fn new(request: impl Into<String>, answer: impl Into<String>) -> Self {
        Self {
            request: request.into(),
            answer: answer.into(),
            tool_calls: Vec::new(),
        }
    }

    /// Appends a tool call.
    #[must_use]
    pub fn with_tool_call(mut self, call: ToolCallRecord) -> Self {
        self.tool_calls.push(call);
        self
    }
}

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The tool's name.
    pub name: String,
    /// Its arguments as JSON text.
    pub arguments: String,
}

impl ToolCallRecord {
    /// A tool call.
    pub fn new(name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}
