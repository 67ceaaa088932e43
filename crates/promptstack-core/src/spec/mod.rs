//! The agent spec: the file an engineer writes once per agent (TOML, or JSON with the same schema).
//!
//! These types are the versioned format (`spec_version = 1`). They derive [`schemars::JsonSchema`], and
//! that generated schema is also what [`load`] validates against, so the schema shipped to editors
//! and the loader can never disagree. Loading reports every problem at once with a location; see
//! [`SpecError`](crate::SpecError).

pub(crate) mod load;
mod path;
pub(crate) mod span;
pub(crate) mod turn_config;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// `SpecError` and `SpecFormat` are public at the crate root only; `crate::spec::…` keeps
// naming them inside the crate.
pub use load::{
    DocumentKind, MAX_EXPRESSION_OPERATORS, MAX_NESTING, MAX_REPORTED_ERRORS, MAX_SPEC_BYTES,
    MAX_TEMPLATE_NESTING, Parsed, ParsedSpec, SpecDiagnostic, parse,
};
pub(crate) use load::{SpecError, SpecFormat};
pub use path::{PathError, check_relative_path};
// The vocabulary the templates are compiled against lives with them (`promptstack-template`);
// this module is its public path.
pub(crate) use promptstack_template::spec::describe;
pub use promptstack_template::spec::{Shape, Stability, Trust, VariableSpec};
pub use span::SourceMap;
pub(crate) use span::push_pointer as span_pointer;

/// The only spec format version this build understands.
pub const SPEC_VERSION: u32 = 1;

/// An agent spec: blocks, per-send notes, targets, tools and variables.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "promptstack agent spec", extend("$id" = "https://promptstack.dev/schema/agent-spec-v1.json"))]
pub struct AgentSpec {
    /// Format version; must be `1`.
    pub spec_version: u32,
    /// The agent's name, for reports.
    pub name: String,
    /// What the agent is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// How rendered blocks are trimmed and joined.
    #[serde(default)]
    pub render: RenderOptions,
    /// Variables the templates may read under `variables.<name>`, with their stability and trust.
    #[serde(default)]
    pub variables: BTreeMap<String, VariableSpec>,
    /// The tools the agent may offer the model, each behind an optional gate.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// The prompt's blocks, in order. Stable blocks must come before volatile ones.
    pub blocks: Vec<BlockSpec>,
    /// Per-send notes, in order. Every target must place or explicitly omit every note.
    #[serde(default)]
    pub notes: Vec<NoteSpec>,
    /// The texts this agent composes for its engines, by id.
    pub targets: BTreeMap<String, TargetSpec>,
    /// How a Turn runs this agent's tools: budget classes with their caps per intent, and the
    /// source cap. Absent: the `web` class (auto 5, search 12, research 30) and 200 sources.
    #[serde(default)]
    pub turn: turn_config::TurnConfig,
    /// A stage of a multi-tenant platform: enabled capabilities, their configuration and subagent
    /// prompts. A spec with a stage gets the platform's injected blocks (see `docs/injections.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<StageSpec>,
    /// Overrides of the injected blocks: `platform_context = false`, `tenant_instructions = false`,
    /// `capabilities.<slug> = { mode, text, main, subagents }`. Read leniently: a malformed entry
    /// falls back to the default text with a diagnostic instead of failing the load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub auto_injections: Option<serde_json::Value>,
    /// Reusable texts authored text includes with `{{COMPONENT:<name>}}`; a multi-line component
    /// is set off by newlines where it is expanded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub components: BTreeMap<String, String>,
}

/// A stage: the capabilities the platform wires into it, their configuration, and the prompts of
/// its subagents.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StageSpec {
    /// Enabled capabilities, in the order their guidance is appended: built-in slugs (`payments`,
    /// `customer_authentication`, `external_consult`, `end_session`) or registry references
    /// (`capability:<slug>`).
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// Each capability's configuration, by slug (registry fragments read it as
    /// `{{capability_config.<key>}}`).
    #[serde(default)]
    pub capability_configs: BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
    /// Subagent prompts by topic. While a topic is active its prompt replaces the main prompt.
    #[serde(default)]
    pub subagents: BTreeMap<String, SubagentSpec>,
}

/// The authored prompt of one subagent.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentSpec {
    /// Literal text. Exactly one of `text` and `template` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A Jinja template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// Whether the prompt may change between sends (e.g. it reads volatile session variables).
    #[serde(default = "default_stable")]
    pub stability: Stability,
}

fn default_stable() -> Stability {
    Stability::Stable
}

/// How rendered blocks are trimmed and joined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RenderOptions {
    /// Text placed between two included blocks. Default: a blank line (`"\n\n"`).
    pub separator: String,
    /// Strip leading and trailing whitespace (space, tab, CR, LF) from every rendered block, so that
    /// TOML multi-line strings and template tags do not leave stray blank lines. Default: true.
    pub trim: bool,
    /// Jinja `trim_blocks`: remove the first newline after a block tag. Default: true.
    pub trim_blocks: bool,
    /// Jinja `lstrip_blocks`: strip whitespace before a block tag at the start of a line. Default: true.
    pub lstrip_blocks: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            separator: "\n\n".into(),
            trim: true,
            trim_blocks: true,
            lstrip_blocks: true,
        }
    }
}

/// What a block is, for reports and tooling. It does not change how the block renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum BlockKind {
    /// A titled part of the prompt body.
    #[default]
    Section,
    /// A conditional piece of text inside the body.
    Fragment,
    /// Guidance for a capability the agent has.
    Guidance,
    /// Text the platform injects into every prompt.
    Injection,
    /// A per-send note.
    Note,
    /// The listing of skills the model can load.
    SkillIndex,
    /// A description of the environment the model runs in.
    Environment,
    /// The identity of the client application.
    Identity,
    /// Untrusted content inside a fence.
    Fenced,
}

impl BlockKind {
    /// The snake_case name used in specs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Section => "section",
            BlockKind::Fragment => "fragment",
            BlockKind::Guidance => "guidance",
            BlockKind::Injection => "injection",
            BlockKind::Note => "note",
            BlockKind::SkillIndex => "skill_index",
            BlockKind::Environment => "environment",
            BlockKind::Identity => "identity",
            BlockKind::Fenced => "fenced",
        }
    }
}

/// Where a block goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// In the shared prompt body (the stable and volatile halves every target can use).
    #[default]
    Body,
    /// Only where a target names it in its `system` list (e.g. a client identity for one engine).
    Target,
}

/// A tool the agent may offer the model.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The name the model calls; must match `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// What the tool does, when to use it, and what to do after a failure.
    pub description: String,
    /// The JSON Schema of the tool's arguments (an object schema).
    #[serde(default = "empty_object_schema")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub parameters: serde_json::Value,
    /// The loading phrase shown in the UI while the call runs, with `{param}` placeholders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// Whether identical calls within one turn may share one execution. Only for read-only,
    /// deterministic tools: a cacheable tool must also declare `read_only = true`.
    #[serde(default)]
    pub cacheable: bool,
    /// The budget class the tool draws from (e.g. `web`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Who controls the tool's results. Untrusted results are fenced before the model reads them.
    #[serde(default = "default_results_trust")]
    pub results: ResultTrust,
    /// The tool's name for people (the UI), e.g. `Web search`. Never sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The UI's group for the tool, a key such as `web` or `files`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The key of the icon the UI shows for the tool, such as `globe`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// The fence kind of the tool's untrusted results: `tool_result` (the default),
    /// `web_content` for a tool that reads pages, `file_content` for one that reads files.
    #[serde(default, skip_serializing_if = "ResultFence::is_tool_result")]
    pub fence: ResultFence,
    /// A gate expression over the send context (not over other tools); absent means always offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// The tool only reads: calling it changes nothing for the user or anyone else. Required for
    /// `cacheable`.
    #[serde(default)]
    pub read_only: bool,
    /// Facts of the send the tool needs (an enabled integration, a setting, skills, a project
    /// with other threads). Checked before `when`; an unmet requirement is the reason the tool is
    /// left out.
    #[serde(default, skip_serializing_if = "ToolRequirements::is_empty")]
    pub requires: ToolRequirements,
}

/// What a tool needs from the send to be offered. Every requirement given must hold.
///
/// Declared requirements, unlike gate expressions, say *why* a tool is missing (`explain`,
/// `promptstack tools`), and they can not be misspelled into a gate that is always false.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRequirements {
    /// An integration that must be connected **and** enabled. A connected but switched-off
    /// integration offers no tools; templates still see it as `integrations.<name>.status ==
    /// "disabled"`, so the prompt can say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integration: Option<String>,
    /// A setting that must be on: its name (absent counts as off), or `{ name, default }`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<SettingRequirement>,
    /// At least one enabled skill the model may see (hidden skills do not count).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skills: bool,
    /// The thread belongs to a project that has other threads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub project_siblings: bool,
}

impl ToolRequirements {
    /// Whether nothing is required.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// A setting a tool needs to be on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SettingRequirement {
    /// The setting's name; a send without it counts as off.
    Name(String),
    /// The setting's name and the value assumed when the send does not set it.
    WithDefault {
        /// The setting's name.
        name: String,
        /// Whether the setting counts as on when the send does not set it.
        default: bool,
    },
}

impl SettingRequirement {
    /// The setting's name.
    pub fn name(&self) -> &str {
        match self {
            SettingRequirement::Name(name) | SettingRequirement::WithDefault { name, .. } => name,
        }
    }

    /// Whether the setting counts as on when absent.
    pub fn default(&self) -> bool {
        match self {
            SettingRequirement::Name(_) => false,
            SettingRequirement::WithDefault { default, .. } => *default,
        }
    }
}

fn empty_object_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

fn default_results_trust() -> ResultTrust {
    ResultTrust::Trusted
}

/// Who controls a tool's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultTrust {
    /// Results come from the application itself.
    Trusted,
    /// Results carry outside content (pages, files, third-party data) and are fenced.
    Untrusted,
}

/// The fence kind a tool's untrusted results are wrapped in, so the model reads what they are.
///
/// A page or file kind needs the page's URL or the file's path as its origin: a result part
/// without one (plain text, a failure message) is fenced as `tool_result`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResultFence {
    /// The result of a tool: `tool_result`.
    #[default]
    ToolResult,
    /// A web page (or part of one) the tool read: `web_content`.
    WebContent,
    /// A file the tool read: `file_content`.
    FileContent,
}

impl ResultFence {
    /// Every kind, in declaration order.
    pub const ALL: [ResultFence; 3] = [
        ResultFence::ToolResult,
        ResultFence::WebContent,
        ResultFence::FileContent,
    ];

    /// The spec's word for the kind, which is also the fence's marker name.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultFence::ToolResult => "tool_result",
            ResultFence::WebContent => "web_content",
            ResultFence::FileContent => "file_content",
        }
    }

    /// Whether this is the default kind, `tool_result`.
    pub fn is_tool_result(&self) -> bool {
        *self == ResultFence::ToolResult
    }
}

/// One block of the prompt.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BlockSpec {
    /// A stable identifier, unique among blocks and notes.
    pub id: String,
    /// What the block is, for reports.
    #[serde(default)]
    pub kind: BlockKind,
    /// Who controls the block's text.
    pub trust: Trust,
    /// Whether the text may change between sends of a thread.
    pub stability: Stability,
    /// Where the block goes: the shared body (default) or only the targets that name it.
    #[serde(default)]
    pub placement: Placement,
    /// Literal text, used as is. Exactly one of `text` and `template` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A Jinja template rendered against the send context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// A gate expression; the block is included only when it is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// A lint limit on the block's rendered size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Alternative texts for particular models or situations; the first whose gate is true
    /// replaces the block's own text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<VariantSpec>,
    /// Shedding order under a target's token budget: blocks of lower priority are dropped first
    /// (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// Never dropped to fit a token budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

/// An alternative text for a block, chosen by a gate (e.g. a model profile).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    /// A name for the variant, unique within its block, shown in reports.
    pub id: String,
    /// The gate that selects this variant.
    pub when: String,
    /// Literal text. Exactly one of `text` and `template` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A Jinja template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// A per-send note: text that changes every send and that each target places explicitly.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteSpec {
    /// A stable identifier, unique among blocks and notes.
    pub id: String,
    /// Who controls the note's text. User-controlled notes may not end a system text.
    pub trust: Trust,
    /// Literal text. Exactly one of `text` and `template` is required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A Jinja template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// A gate expression; the note is included only when it is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<String>,
    /// A lint limit on the note's rendered size in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Shedding order under a target's token budget: blocks of lower priority are dropped first
    /// (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// Never dropped to fit a token budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

/// One composed text for one engine: a system string and, optionally, notes for the last user message.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// What the target is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The system text, in order: `@stable` (the stable body blocks), `@volatile` (the volatile body
    /// blocks), `@body` (both), block ids with `placement = "target"`, and note ids.
    pub system: Vec<String>,
    /// Notes placed in the last user message, in order (for user-authored per-send text).
    #[serde(default)]
    pub user: Vec<String>,
    /// Where the `user` notes go relative to the user's own text. Default: before it, so the
    /// user's request stays last.
    #[serde(default)]
    pub user_position: UserPosition,
    /// Notes this target deliberately does not place, each with the reason.
    #[serde(default)]
    pub omit: BTreeMap<String, String>,
    /// Overrides the spec-wide separator between the parts of this target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<String>,
    /// A total token budget for this target's composed text (system text and user-slot notes,
    /// counted as the sum of their blocks' tokens). Over it, blocks are shed: volatile before
    /// stable, lower `priority` first, later before earlier; `pinned` blocks never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub budget: Option<u32>,
}

/// Where a target's user-slot notes go relative to the user's own message text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum UserPosition {
    /// Before the user's text.
    #[default]
    Before,
    /// After the user's text.
    After,
}

impl AgentSpec {
    /// The JSON Schema of the spec format, generated from these types.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(AgentSpec)).unwrap_or_default()
    }
}
