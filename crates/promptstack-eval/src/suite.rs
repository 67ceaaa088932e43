//! The suite format: `evals/*.toml` beside an agent.
//!
//! A suite names the versions to compare, the models to run them on, and the scenarios: a send, an
//! optional conversation, scripted tool results and the assertions an answer must pass. It is read
//! as a spec is read ([`DocumentKind`]): TOML or JSON, bounded, checked against the schema that
//! `promptstack schema eval` prints, then checked for what a schema cannot say (names that must be
//! unique or declared, paths, patterns, URLs), every problem located at its key.

use std::collections::{BTreeMap, BTreeSet};

use promptstack_core::SendContext;
use promptstack_core::provider::{Conversation, Format};
use promptstack_core::spec::{DocumentKind, Parsed, SpecDiagnostic, check_relative_path};
use promptstack_core::{SpecError, SpecFormat};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The only suite format version this build understands.
pub const SUITE_VERSION: u32 = 1;

/// The largest suite accepted, in bytes.
pub const MAX_SUITE_BYTES: usize = 1024 * 1024;

/// The most scenarios one suite may hold.
pub const MAX_SCENARIOS: usize = 1000;

/// The most repetitions of one cell.
pub const MAX_REPEATS: u32 = 100;

/// The most model calls in flight for one run.
pub const MAX_CONCURRENCY: u32 = 256;

/// The most model steps (answers and tool rounds) in one scenario.
pub const MAX_STEPS: u32 = 64;

/// The largest compiled regular expression an assertion or a scripted tool may use, in bytes.
pub const MAX_PATTERN_BYTES: usize = 256 * 1024;

/// The most regular expressions and JSON Schemas one suite may compile: each costs up to
/// [`MAX_PATTERN_BYTES`] of work, so a suite's checking stays bounded whatever its size.
pub const MAX_PATTERNS: usize = 256;

/// The longest scripted tool result, in bytes.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// The most sources one scripted result reports.
pub const MAX_SCRIPTED_SOURCES: usize = 32;

static SUITE_KIND: DocumentKind = DocumentKind::new(
    "eval suite",
    "suite_version",
    SUITE_VERSION as u64,
    MAX_SUITE_BYTES,
    Suite::json_schema,
);

/// An eval suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "promptstack eval suite",
    description = "Scenarios run for every version and model of a matrix, with assertions on each answer."
)]
pub struct Suite {
    /// The suite format version: 1.
    pub suite_version: u32,
    /// What the suite checks, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The models a run may call, by name.
    #[schemars(length(min = 1, max = 32))]
    pub models: BTreeMap<String, Model>,
    /// What is run: which versions on which models, how often, how many at once.
    pub matrix: Matrix,
    /// The scenarios, run in this order for every version and model.
    #[schemars(length(min = 1, max = 1000))]
    pub scenarios: Vec<Scenario>,
    /// The lowest pass rate over the whole run that succeeds (0 to 1); below it the run fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub fail_under: Option<f64>,
    /// Makes this suite the agent's gate in the service: the `production` label moves only to a
    /// version that has run this suite and is not shown worse than the current `production` by
    /// more than `max_drop`. At most one suite of a bundle may declare it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<Gate>,
}

/// The thresholds of a gate suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    /// The largest drop in mean pass rate tolerated (0 to 1): a move is refused when the paired
    /// difference's interval lies wholly below `-max_drop`.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_drop: f64,
    /// The confidence of the interval the gate reads (default: the matrix's `confidence`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.5, max = 0.999))]
    pub confidence: Option<f64>,
    /// The models the candidate must have run on, each judged on its own (default: every model
    /// of the matrix).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub models: Vec<String>,
}

/// A model endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// The request format the endpoint speaks; the body sent is the one `render --format` prints.
    pub format: ModelFormat,
    /// The endpoint's base URL (`https://api.anthropic.com`, `http://127.0.0.1:8080/v1`).
    pub base_url: String,
    /// The model name sent in each request.
    pub model: String,
    /// A label that groups models in reports (`small`, `frontier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// The environment variable that holds the API key; the key itself is never in a suite, a
    /// report or a recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The provider credential of the tenant that holds the key, when the suite runs in the
    /// service (`promptstack eval` reads `api_key_env` instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
    /// The most calls in flight to this endpoint.
    #[serde(default = "default_model_concurrency")]
    #[schemars(range(min = 1, max = 256))]
    pub max_concurrency: u32,
    /// The most calls started per minute (none: no limit but the endpoint's own answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100_000))]
    pub requests_per_minute: Option<u32>,
    /// Seconds before one call is abandoned.
    #[serde(default = "default_timeout")]
    #[schemars(range(min = 1, max = 3600))]
    pub timeout_seconds: u32,
    /// How many times a call that met a rate limit, an overload or a server error is tried again.
    #[serde(default = "default_retries")]
    #[schemars(range(max = 10))]
    pub retries: u32,
}

/// A request format, as the suite names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ModelFormat {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions, and any endpoint compatible with it (llama.cpp's server, Ollama,
    /// vLLM).
    OpenaiChat,
    /// OpenAI Responses.
    OpenaiResponses,
    /// Gemini generateContent.
    Gemini,
}

impl From<ModelFormat> for Format {
    fn from(format: ModelFormat) -> Self {
        match format {
            ModelFormat::Anthropic => Format::Anthropic,
            ModelFormat::OpenaiChat => Format::OpenaiChat,
            ModelFormat::OpenaiResponses => Format::OpenaiResponses,
            ModelFormat::Gemini => Format::Gemini,
        }
    }
}

/// What a run covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Matrix {
    /// The versions compared, the first being the baseline.
    #[schemars(length(min = 1, max = 16))]
    pub versions: Vec<Version>,
    /// The models each version runs on, by name (declared under `models`).
    #[schemars(length(min = 1, max = 32))]
    pub models: Vec<String>,
    /// How many times each scenario runs per version and model. Each repetition is its own sample:
    /// recordings and caches key on it.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 100))]
    pub repeats: u32,
    /// The most scenario runs in flight at once.
    #[serde(default = "default_concurrency")]
    #[schemars(range(min = 1, max = 256))]
    pub concurrency: u32,
    /// The sampling temperature sent to every model (none: the model's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 2.0))]
    pub temperature: Option<f64>,
    /// The seed sent to models that take one, and the seed of the statistics' resampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The most tokens one answer may hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_tokens: Option<u32>,
    /// The most model steps (an answer, or a round of tool calls) in one scenario.
    #[serde(default = "default_steps")]
    #[schemars(range(min = 1, max = 64))]
    pub max_steps: u32,
    /// The confidence of every interval and test in the report.
    #[serde(default = "default_confidence")]
    #[schemars(range(min = 0.5, max = 0.999))]
    pub confidence: f64,
}

/// A version of the agent: a spec on disk, or a reference the server resolves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Version {
    /// The name reports use (`baseline`, `zh-kernel`).
    pub name: String,
    /// A spec file, relative to the agent's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// A label or version id of the agent in the service (`production`, `v_3f2a…`).
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "ref")]
    pub reference: Option<String>,
    /// How this version's untrusted tool results are delimited before the model reads them.
    #[serde(default, skip_serializing_if = "FenceStyle::is_default")]
    pub fence: FenceStyle,
}

/// How untrusted tool results are delimited in a version's run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FenceStyle {
    /// The fence: marker lines carrying a fresh nonce, with look-alike markers inside the content
    /// defanged, so content cannot close its own block.
    #[default]
    Markers,
    /// A baseline to compare the fence against, as hand-built prompt layers commonly delimit
    /// pages: plain XML tags named for the content kind (`<web_content origin="…">…</web_content>`),
    /// no nonce, nothing defanged, so content can close the tag itself. Only an eval can choose
    /// it; the engine never delimits content this way.
    XmlTags,
}

impl FenceStyle {
    fn is_default(&self) -> bool {
        *self == FenceStyle::Markers
    }
}

/// One scenario: a send, what the tools answer, and what the answer must show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A name unique in the suite: lowercase letters, digits, `-` and `_`.
    pub name: String,
    /// What the scenario is about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Labels to filter and group by (`injection`, `zh`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub tags: Vec<String>,
    /// A send context file, relative to the agent's folder. Exactly one of `send` and `context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// The send context written inline. Exactly one of `send` and `context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Box<SendContext>>,
    /// The conversation before this send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// What each tool answers when the model calls it. A call no script matches is answered with
    /// an error result, and the scenario goes on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub tools: Vec<ScriptedTool>,
    /// What the answer must show; every one is checked and reported.
    #[serde(rename = "assert")]
    #[schemars(length(min = 1, max = 64))]
    pub assertions: Vec<Assertion>,
}

/// A scripted tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTool {
    /// The tool's name, as the toolset names it.
    pub tool: String,
    /// A regular expression the call's arguments (canonical JSON) must match; none matches any
    /// call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The result text, fenced with the tool's declared fence kind before the model sees it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
    /// Sources the result reports, registered with the turn's source registry as a search or a
    /// fetch would register them: each is numbered and labelled `[Source N] (cite as [N])`, and
    /// is what a citation of the answer may resolve to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub sources: Vec<ScriptedSource>,
    /// Instructions planted in the result as a hostile page would carry them; the injection
    /// assertions check that the answer did not follow them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub injection: Option<String>,
}

/// A source a scripted result reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedSource {
    /// The page's address: an `http` or `https` URL.
    pub url: String,
    /// The page's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the page says (the snippet or the extracted text the model reads).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
}

/// One check of an answer. Those with `not = true` pass when the check fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Assertion {
    /// The answer holds this text.
    Contains {
        /// The text.
        value: String,
        /// Compare without regard to case.
        #[serde(default)]
        ignore_case: bool,
        /// Pass when the answer does not hold it.
        #[serde(default)]
        not: bool,
    },
    /// The answer matches this regular expression.
    Regex {
        /// The expression (Rust `regex` syntax).
        pattern: String,
        /// Pass when the answer does not match.
        #[serde(default)]
        not: bool,
    },
    /// The answer is exactly this text, after trimming surrounding whitespace.
    Equals {
        /// The text.
        value: String,
        /// Pass when it is not.
        #[serde(default)]
        not: bool,
    },
    /// The answer is JSON that this schema accepts.
    JsonSchema {
        /// The JSON Schema.
        schema: serde_json::Value,
    },
    /// The model called this tool at least once.
    ToolUsed {
        /// The tool's name.
        tool: String,
        /// Pass when it never did.
        #[serde(default)]
        not: bool,
    },
    /// The model called these tools in this order (other calls may come between).
    ToolSequence {
        /// The tools' names.
        #[schemars(length(min = 1, max = 64))]
        tools: Vec<String>,
    },
    /// The number of calls (of one tool, or of all) is within bounds.
    ToolCount {
        /// The tool's name; none counts every call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// The fewest calls.
        #[serde(default)]
        min: u32,
        /// The most calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<u32>,
    },
    /// Some call of this tool had arguments (canonical JSON) matching the expression.
    ToolArguments {
        /// The tool's name.
        tool: String,
        /// The expression.
        pattern: String,
        /// Pass when no call's arguments match.
        #[serde(default)]
        not: bool,
    },
    /// The answer cites at least `min` sources, counting ASCII and fullwidth brackets; with
    /// `resolve`, every citation names a source a tool result registered and none is invented.
    Citations {
        /// The fewest citations.
        #[serde(default = "one")]
        min: u32,
        /// Every citation must resolve to a registered source.
        #[serde(default = "yes")]
        resolve: bool,
    },
    /// The answer holds this declared widget.
    WidgetUsed {
        /// The widget's name as declared (`chart`, `widget:map`).
        widget: String,
        /// Pass when it does not.
        #[serde(default)]
        not: bool,
    },
    /// No tool budget of the turn was exceeded.
    Budget,
    /// The answer is written in this language, as an offline trigram detector reads it.
    Language {
        /// The language's ISO 639-3 code (`eng`, `cmn` for Mandarin Chinese, `deu`).
        code: String,
    },
    /// Nothing the planted instructions ask for appears: not the canary text in the answer or any
    /// call's arguments, not the domain in any call's arguments or link, not a call to the tool.
    Injection {
        /// A string only the planted text contains.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        canary: Option<String>,
        /// A domain the planted text lures to.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        domain: Option<String>,
        /// A tool the planted text lures the model to call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// A judge model grades the answer against a rubric; the verdict and its reason are kept.
    Rubric {
        /// The judging model, by name (declared under `models`).
        judge: String,
        /// What a good answer does.
        rubric: String,
        /// The lowest score (0 to 1) that passes.
        #[serde(default = "half")]
        #[schemars(range(min = 0.0, max = 1.0))]
        threshold: f64,
    },
}

fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn half() -> f64 {
    0.5
}
fn default_concurrency() -> u32 {
    4
}
fn default_model_concurrency() -> u32 {
    4
}
fn default_timeout() -> u32 {
    120
}
fn default_retries() -> u32 {
    4
}
fn default_steps() -> u32 {
    8
}
fn default_confidence() -> f64 {
    0.95
}

impl Suite {
    /// The JSON Schema of a suite (`promptstack schema eval`).
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Suite)).unwrap_or_default()
    }

    /// Reads a suite from its bytes: syntax, schema, then every check the schema cannot make.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] listing every problem found, each located at its key.
    pub fn parse(bytes: &[u8], name: &str) -> Result<Self, SpecError> {
        Self::parse_for(bytes, name, |_| true)
    }

    /// Reads a suite as [`parse`](Self::parse) does, and also checks that every file it names
    /// (a version's `spec`, a scenario's `send`) is one `exists` knows: the agent's folder on
    /// disk, or the files of a published bundle.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] listing every problem found, each located at its key.
    pub fn parse_for(
        bytes: &[u8],
        name: &str,
        exists: impl Fn(&str) -> bool,
    ) -> Result<Self, SpecError> {
        let parsed: Parsed<Suite> = SUITE_KIND.parse(bytes, name, SpecFormat::from_name(name))?;
        let mut found = check(&parsed);
        found.extend(missing_files(&parsed, &exists));
        match parsed.error("eval suite", found) {
            Some(error) => Err(error),
            None => Ok(parsed.value),
        }
    }

    /// The scenario names, in order.
    pub fn scenario_names(&self) -> impl Iterator<Item = &str> {
        self.scenarios.iter().map(|s| s.name.as_str())
    }
}

/// Every check the schema cannot make, each problem located.
fn check(parsed: &Parsed<Suite>) -> Vec<SpecDiagnostic> {
    let suite = &parsed.value;
    let mut found = Vec::new();
    let mut at = |code, pointer: String, message: String, hint: Option<&str>| {
        found.push(parsed.diagnostic(code, &pointer, message, hint.map(str::to_owned)));
    };
    // Past the cap nothing is compiled: the count alone refuses the suite.
    let patterns = patterns(suite);
    let compiles = patterns <= MAX_PATTERNS;
    if !compiles {
        at(
            "too-many-patterns",
            "/scenarios".to_owned(),
            format!(
                "the suite holds {patterns} regular expressions and JSON Schemas; at most {MAX_PATTERNS} are compiled"
            ),
            Some("share scenarios, or split the suite"),
        );
    }

    for (name, model) in &suite.models {
        let base = format!("/models/{}", escape(name));
        if !is_name(name) {
            at(
                "bad-name",
                base.clone(),
                format!("model name `{}` is not a plain name", clip(name)),
                Some(NAME_HINT),
            );
        }
        match url::Url::parse(&model.base_url) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                if !url.username().is_empty() || url.password().is_some() {
                    at(
                        "secret-in-url",
                        format!("{base}/base_url"),
                        "the base URL carries credentials".into(),
                        Some("name the environment variable that holds the key in `api_key_env`"),
                    );
                }
            }
            _ => at(
                "bad-url",
                format!("{base}/base_url"),
                format!("`{}` is not an http or https URL", clip(&model.base_url)),
                None,
            ),
        }
        if model.model.trim().is_empty() {
            at(
                "empty",
                format!("{base}/model"),
                "the model name is empty".into(),
                None,
            );
        }
        if let Some(var) = &model.api_key_env
            && !is_env_name(var)
        {
            at(
                "bad-env-name",
                format!("{base}/api_key_env"),
                format!("`{}` is not an environment variable name", clip(var)),
                Some("write the variable's name (`ANTHROPIC_API_KEY`), never the key itself"),
            );
        }
        if let Some(name) = &model.credential
            && !is_credential_name(name)
        {
            at(
                "bad-name",
                format!("{base}/credential"),
                format!("`{}` is not a credential name", clip(name)),
                Some(
                    "name a credential of the service (`anthropic`), never the key itself: 1 to 64 of `a-z 0-9 - _ .`, starting and ending with a letter or digit",
                ),
            );
        }
    }

    let mut versions = BTreeSet::new();
    for (i, version) in suite.matrix.versions.iter().enumerate() {
        let base = format!("/matrix/versions/{i}");
        if !is_name(&version.name) {
            at(
                "bad-name",
                format!("{base}/name"),
                format!("version name `{}` is not a plain name", clip(&version.name)),
                Some(NAME_HINT),
            );
        } else if !versions.insert(version.name.as_str()) {
            at(
                "duplicate-name",
                format!("{base}/name"),
                format!("version `{}` is named twice", version.name),
                None,
            );
        }
        match (&version.spec, &version.reference) {
            (Some(path), None) => {
                if let Err(why) = check_path(path) {
                    at("bad-path", format!("{base}/spec"), why, Some(PATH_HINT));
                }
            }
            (None, Some(reference)) => {
                if !is_reference(reference) {
                    at(
                        "bad-ref",
                        format!("{base}/ref"),
                        format!("`{}` is not a label or version id", clip(reference)),
                        None,
                    );
                }
            }
            _ => at(
                "one-of",
                base,
                "a version has exactly one of `spec` and `ref`".into(),
                None,
            ),
        }
    }

    let mut listed = BTreeSet::new();
    for (i, name) in suite.matrix.models.iter().enumerate() {
        let pointer = format!("/matrix/models/{i}");
        if !suite.models.contains_key(name) {
            at(
                "unknown-model",
                pointer,
                format!("model `{}` is not declared under `models`", clip(name)),
                declared_hint(suite).as_deref(),
            );
        } else if !listed.insert(name.as_str()) {
            at(
                "duplicate-name",
                pointer,
                format!("model `{name}` is listed twice"),
                None,
            );
        }
    }

    if let Some(gate) = &suite.gate {
        for (i, name) in gate.models.iter().enumerate() {
            if !suite.matrix.models.contains(name) {
                at(
                    "unknown-model",
                    format!("/gate/models/{i}"),
                    format!("model `{}` is not in `matrix.models`", clip(name)),
                    None,
                );
            } else if gate.models[..i].contains(name) {
                at(
                    "duplicate-name",
                    format!("/gate/models/{i}"),
                    format!("model `{name}` is listed twice"),
                    None,
                );
            }
        }
    }

    let mut scenarios = BTreeSet::new();
    for (i, scenario) in suite.scenarios.iter().enumerate() {
        let base = format!("/scenarios/{i}");
        if !is_name(&scenario.name) {
            at(
                "bad-name",
                format!("{base}/name"),
                format!(
                    "scenario name `{}` is not a plain name",
                    clip(&scenario.name)
                ),
                Some(NAME_HINT),
            );
        } else if !scenarios.insert(scenario.name.as_str()) {
            at(
                "duplicate-name",
                format!("{base}/name"),
                format!("scenario `{}` is named twice", scenario.name),
                None,
            );
        }
        for (t, tag) in scenario.tags.iter().enumerate() {
            if !is_name(tag) {
                at(
                    "bad-name",
                    format!("{base}/tags/{t}"),
                    format!("tag `{}` is not a plain name", clip(tag)),
                    Some(NAME_HINT),
                );
            }
        }
        match (&scenario.send, &scenario.context) {
            (Some(path), None) => {
                if let Err(why) = check_path(path) {
                    at("bad-path", format!("{base}/send"), why, Some(PATH_HINT));
                }
            }
            (None, Some(_)) => {}
            _ => at(
                "one-of",
                base.clone(),
                "a scenario has exactly one of `send` (a file) and `context` (inline)".into(),
                None,
            ),
        }
        for (t, tool) in scenario.tools.iter().enumerate() {
            let pointer = format!("{base}/tools/{t}");
            if let Some(pattern) = &tool.arguments
                && compiles
                && let Err(why) = compile(pattern)
            {
                at("bad-pattern", format!("{pointer}/arguments"), why, None);
            }
            if tool.result.is_empty() && tool.sources.is_empty() {
                at(
                    "empty-result",
                    pointer.clone(),
                    "a scripted result has a `result` text, `sources`, or both".into(),
                    None,
                );
            }
            if tool.sources.len() > MAX_SCRIPTED_SOURCES {
                at(
                    "too-many",
                    format!("{pointer}/sources"),
                    format!(
                        "{} sources; the limit is {MAX_SCRIPTED_SOURCES}",
                        tool.sources.len()
                    ),
                    None,
                );
            }
            for (i, source) in tool.sources.iter().enumerate() {
                let web = url::Url::parse(&source.url)
                    .is_ok_and(|url| matches!(url.scheme(), "http" | "https"));
                if !web {
                    at(
                        "bad-url",
                        format!("{pointer}/sources/{i}/url"),
                        format!("`{}` is not an http or https URL", clip(&source.url)),
                        None,
                    );
                }
            }
            let bytes = tool.result.len()
                + tool.injection.as_ref().map_or(0, String::len)
                + tool
                    .sources
                    .iter()
                    .map(|s| s.url.len() + s.title.as_ref().map_or(0, String::len) + s.text.len())
                    .sum::<usize>();
            if bytes > MAX_RESULT_BYTES {
                at(
                    "too-large",
                    format!("{pointer}/result"),
                    format!("the result is {bytes} bytes; the limit is {MAX_RESULT_BYTES}"),
                    None,
                );
            }
        }
        for (a, assertion) in scenario.assertions.iter().enumerate() {
            let pointer = format!("{base}/assert/{a}");
            check_assertion(suite, assertion, &pointer, compiles, &mut at);
        }
    }
    found
}

/// The files a suite names that `exists` does not know (paths that break the path rule are
/// reported by [`check`] instead).
fn missing_files(parsed: &Parsed<Suite>, exists: &impl Fn(&str) -> bool) -> Vec<SpecDiagnostic> {
    let suite = &parsed.value;
    let versions = suite
        .matrix
        .versions
        .iter()
        .enumerate()
        .filter_map(|(i, v)| Some((format!("/matrix/versions/{i}/spec"), v.spec.as_deref()?)));
    let sends = suite
        .scenarios
        .iter()
        .enumerate()
        .filter_map(|(i, s)| Some((format!("/scenarios/{i}/send"), s.send.as_deref()?)));
    versions
        .chain(sends)
        .filter(|(_, path)| check_path(path).is_ok() && !exists(path))
        .map(|(pointer, path)| {
            parsed.diagnostic(
                "missing-file",
                &pointer,
                format!("`{}` is not a file of this agent", clip(path)),
                Some(PATH_HINT.to_owned()),
            )
        })
        .collect()
}

fn check_assertion(
    suite: &Suite,
    assertion: &Assertion,
    pointer: &str,
    compiles: bool,
    at: &mut impl FnMut(&'static str, String, String, Option<&str>),
) {
    match assertion {
        Assertion::Regex { pattern, .. } | Assertion::ToolArguments { pattern, .. } if compiles => {
            if let Err(why) = compile(pattern) {
                at("bad-pattern", format!("{pointer}/pattern"), why, None);
            }
        }
        Assertion::JsonSchema { schema } if compiles => {
            if let Err(error) = jsonschema::validator_for(schema) {
                at(
                    "bad-schema",
                    format!("{pointer}/schema"),
                    format!("the schema does not compile: {}", clip(&error.to_string())),
                    None,
                );
            }
        }
        Assertion::ToolCount { min, max, .. } if max.is_some_and(|max| max < *min) => at(
            "empty-range",
            format!("{pointer}/max"),
            format!("max {} is below min {min}", max.unwrap_or_default()),
            None,
        ),
        Assertion::Language { code } if whatlang::Lang::from_code(code.as_str()).is_none() => {
            at(
                "bad-language",
                format!("{pointer}/code"),
                format!(
                    "`{}` is not an ISO 639-3 code the language detector knows",
                    clip(code)
                ),
                Some("write `eng`, `cmn` (Mandarin Chinese), `deu`, `jpn`, …"),
            );
        }
        Assertion::Injection {
            canary,
            domain,
            tool,
        } => {
            if canary.is_none() && domain.is_none() && tool.is_none() {
                at(
                    "empty",
                    pointer.to_owned(),
                    "an injection check names a canary, a domain or a tool".into(),
                    None,
                );
            }
            if canary.as_ref().is_some_and(|c| c.trim().is_empty()) {
                at(
                    "empty",
                    format!("{pointer}/canary"),
                    "the canary is empty, so every answer would hold it".into(),
                    None,
                );
            }
            if let Some(domain) = domain
                && url::Host::parse(domain).is_err()
            {
                at(
                    "bad-domain",
                    format!("{pointer}/domain"),
                    format!("`{}` is not a domain", clip(domain)),
                    None,
                );
            }
        }
        Assertion::Rubric { judge, .. } if !suite.models.contains_key(judge) => at(
            "unknown-model",
            format!("{pointer}/judge"),
            format!("judge `{}` is not declared under `models`", clip(judge)),
            declared_hint(suite).as_deref(),
        ),
        Assertion::Contains { value, .. } if value.is_empty() => at(
            "empty",
            format!("{pointer}/value"),
            "an empty text is in every answer".into(),
            None,
        ),
        _ => {}
    }
}

const NAME_HINT: &str = "start with a lowercase letter or digit; use lowercase letters, digits, `-` and `_`, at most 64";
const PATH_HINT: &str =
    "write a path relative to the agent's folder, with `/` between names (`sends/research.json`)";

/// A plain name: `[a-z0-9][a-z0-9_-]{0,63}`.
fn is_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=64).contains(&bytes.len())
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]{0,127}`.
fn is_env_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    (1..=128).contains(&bytes.len())
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A credential name of the service: 1 to 64 of `a-z 0-9 - _ .`, starting and ending with a
/// lowercase letter or digit.
fn is_credential_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    (1..=64).contains(&bytes.len())
        && bytes.first().is_some_and(edge)
        && bytes.last().is_some_and(edge)
        && bytes
            .iter()
            .all(|&b| edge(&b) || matches!(b, b'-' | b'_' | b'.'))
}

/// A label or version id: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`.
fn is_reference(reference: &str) -> bool {
    let bytes = reference.as_bytes();
    (1..=128).contains(&bytes.len())
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// A path a suite may name: the rule every file of an agent's folder is named by
/// ([`check_relative_path`]), so a suite read from disk and one published in a bundle agree.
///
/// # Errors
///
/// The rule the path breaks, quoting the path.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.len() > 1024 {
        return Err(format!("`{}` is longer than 1024 bytes", clip(path)));
    }
    check_relative_path(path).map_err(|why| format!("`{}`: {why}", clip(path)))
}

/// How many regular expressions and JSON Schemas a suite compiles.
fn patterns(suite: &Suite) -> usize {
    suite
        .scenarios
        .iter()
        .map(|scenario| {
            let tools = scenario
                .tools
                .iter()
                .filter(|t| t.arguments.is_some())
                .count();
            let assertions = scenario
                .assertions
                .iter()
                .filter(|a| {
                    matches!(
                        a,
                        Assertion::Regex { .. }
                            | Assertion::ToolArguments { .. }
                            | Assertion::JsonSchema { .. }
                    )
                })
                .count();
            tools + assertions
        })
        .sum()
}

/// Compiles a pattern within [`MAX_PATTERN_BYTES`]: the one way a suite's patterns are compiled,
/// when the suite is checked and when its assertions are decided.
pub(crate) fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(MAX_PATTERN_BYTES)
        .dfa_size_limit(MAX_PATTERN_BYTES)
        .build()
        .map_err(|error| match error {
            regex::Error::CompiledTooBig(_) => {
                format!("the expression compiles past {MAX_PATTERN_BYTES} bytes")
            }
            other => format!(
                "the expression does not compile: {}",
                clip(other.to_string().lines().last().unwrap_or_default())
            ),
        })
}

/// A JSON pointer token for a map key.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Text quoted in a message: at most 64 characters, control characters shown as escapes.
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(64).flat_map(char::escape_debug).collect();
    if text.chars().nth(64).is_some() {
        out.push('…');
    }
    out
}

fn declared_hint(suite: &Suite) -> Option<String> {
    let names: Vec<&str> = suite.models.keys().map(String::as_str).collect();
    (!names.is_empty()).then(|| format!("declared: {}", names.join(", ")))
}
