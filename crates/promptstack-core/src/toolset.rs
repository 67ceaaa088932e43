//! The resolved toolset: which tools the model gets on this send, in canonical order.
//!
//! Tools are declared in the spec behind gates over the send context. Resolution evaluates those
//! gates and orders the result canonically (by name, not by declaration or discovery order), so
//! equal inputs give byte-equal tool lists and provider caches hit. Block gates read the resolved
//! toolset (`'search' in tools`), never the settings that usually produce it.

use std::sync::{Arc, OnceLock};

use minijinja::value::Value;
use serde::Serialize;

use crate::spec::{ResultFence, ResultTrust, ToolRequirements, ToolSpec};
use crate::tools::mcp::{McpServerListing, SkippedMcpServer, merge_mcp_tools};
use crate::tools::naming::{McpToolOrigin, NamespacedTools};

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolOrigin {
    /// Declared in the agent spec (or registered with it).
    Local,
    /// Listed by an MCP server on this send.
    Mcp {
        /// The server's configured name.
        server: String,
        /// The tool's own name on that server (the model calls the namespaced `Tool::name`).
        tool: String,
    },
}

impl ToolOrigin {
    /// Whether the tool is declared in the spec.
    pub fn is_local(&self) -> bool {
        matches!(self, ToolOrigin::Local)
    }
}

/// A tool the model gets on this send.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// The name the model calls.
    pub name: String,
    /// What it does, when to use it, how to recover from failures.
    pub description: String,
    /// JSON Schema of the arguments, shared with where it came from (the spec or an MCP listing).
    pub parameters: Arc<serde_json::Value>,
    /// The UI loading phrase with `{param}` placeholders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verb: Option<String>,
    /// Whether identical calls in a turn may share one execution.
    pub cacheable: bool,
    /// The budget class it draws from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Who controls its results.
    pub results: ResultTrust,
    /// The fence kind of its untrusted results.
    #[serde(skip_serializing_if = "ResultFence::is_tool_result")]
    pub fence: ResultFence,
    /// Its name for people (the UI); MCP tools get one from their server's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The UI's group for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The key of its icon in the UI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Where it comes from.
    pub origin: ToolOrigin,
    /// The tool as templates see it, built once.
    #[serde(skip)]
    view: OnceLock<Value>,
}

impl Tool {
    pub(crate) fn from_spec(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: Arc::new(spec.parameters.clone()),
            verb: spec.verb.clone(),
            cacheable: spec.cacheable,
            budget: spec.budget.clone(),
            results: spec.results,
            fence: spec.fence,
            display_name: spec.display_name.clone(),
            category: spec.category.clone(),
            icon: spec.icon.clone(),
            origin: ToolOrigin::Local,
            view: OnceLock::new(),
        }
    }
}

/// A declared tool left out of this send, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExcludedTool {
    /// The tool's name.
    pub name: String,
    /// Why it is not offered (e.g. the gate that was false).
    pub reason: String,
}

/// The tools offered on one send, in canonical order, plus those left out with their reasons.
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    tools: Vec<Arc<Tool>>,
    excluded: Vec<ExcludedTool>,
    /// The `tools` root as a template value, made when the engine first needs it (the
    /// engine-free evaluators read the toolset itself).
    template_value: OnceLock<Value>,
    /// What MCP discovery added; `None` for a toolset of the agent's own tools only (most of
    /// them: no allocation for it).
    mcp: Option<Arc<McpPart>>,
}

/// The tools of a send's MCP servers, named and built once; shared by every toolset of sends with
/// the same listings.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedMcp {
    tools: Vec<Arc<Tool>>,
    part: Arc<McpPart>,
}

impl ResolvedMcp {
    pub(crate) fn new<'a>(
        listings: &'a [McpServerListing],
        local_names: impl IntoIterator<Item = &'a str>,
        can_use_tools: bool,
    ) -> Self {
        let merged = merge_mcp_tools(listings, local_names);
        let mut tools = Vec::new();
        let mut withheld = Vec::new();
        for found in merged.tools() {
            if can_use_tools {
                tools.push(Arc::new(Tool {
                    name: found.name.to_owned(),
                    description: found.tool.description.clone().unwrap_or_default(),
                    parameters: found.tool.input_schema.clone(),
                    verb: None,
                    cacheable: false,
                    budget: None,
                    results: ResultTrust::Untrusted,
                    fence: ResultFence::ToolResult,
                    display_name: found
                        .title
                        .map(|title| format!("{title}: {}", found.origin.tool)),
                    category: None,
                    icon: None,
                    origin: ToolOrigin::Mcp {
                        server: found.origin.server.clone(),
                        tool: found.origin.tool.clone(),
                    },
                    view: OnceLock::new(),
                }));
            } else {
                withheld.push(ExcludedTool {
                    name: found.name.to_owned(),
                    reason: "the model cannot call tools".into(),
                });
            }
        }
        Self {
            tools,
            part: Arc::new(McpPart {
                names: merged.names,
                skipped: merged.skipped,
                withheld,
            }),
        }
    }
}

/// What MCP discovery added to a toolset.
#[derive(Debug, Clone, Default)]
struct McpPart {
    names: NamespacedTools,
    skipped: Vec<SkippedMcpServer>,
    withheld: Vec<ExcludedTool>,
}

impl Toolset {
    /// Builds a toolset from included tools (in any order) and excluded ones.
    pub fn new(mut tools: Vec<Arc<Tool>>, excluded: Vec<ExcludedTool>) -> Self {
        // Canonical order: by name, bytewise. Names are unique, so the order is total.
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        Self {
            tools,
            excluded,
            template_value: OnceLock::new(),
            mcp: None,
        }
    }

    /// This toolset plus the tools of MCP servers, merged in canonical order.
    ///
    /// MCP tools are named by [`merge_mcp_tools`] with every local tool name of the agent taken
    /// (`local_names`, offered or not, so a name does not change when a local gate flips). Their
    /// results are untrusted, they are neither cacheable nor budgeted, and a model that cannot
    /// call tools gets none of them. The `tools` template root keeps only the local tools: the
    /// stable half can never depend on which MCP servers answered.
    pub fn with_mcp<'a>(
        &self,
        listings: &'a [McpServerListing],
        local_names: impl IntoIterator<Item = &'a str>,
        can_use_tools: bool,
    ) -> Self {
        let resolved = ResolvedMcp::new(listings, local_names, can_use_tools);
        self.joined(&resolved)
    }

    /// This toolset plus already resolved MCP tools.
    pub(crate) fn joined(&self, mcp: &ResolvedMcp) -> Self {
        let mut tools = Vec::with_capacity(self.tools.len() + mcp.tools.len());
        tools.extend(self.tools.iter().cloned());
        tools.extend(mcp.tools.iter().cloned());
        tools.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Self {
            tools,
            excluded: self.excluded.clone(),
            // The root keeps the local tools only, so it is made from them, here.
            template_value: OnceLock::from(self.template_value()),
            mcp: Some(mcp.part.clone()),
        }
    }

    /// What MCP discovery added (nothing, for a toolset of the agent's own tools).
    fn mcp_part(&self) -> &McpPart {
        static NONE: std::sync::LazyLock<McpPart> = std::sync::LazyLock::new(McpPart::default);
        self.mcp.as_deref().unwrap_or(&NONE)
    }

    /// The server and original name behind an MCP tool's provider-facing name.
    pub fn mcp_origin(&self, name: &str) -> Option<&McpToolOrigin> {
        self.mcp_part().names.origin(name)
    }

    /// Every MCP tool name of this send with its server and original name (for history and UI),
    /// including tools withheld from a model that cannot call tools.
    pub fn mcp_names(&self) -> &NamespacedTools {
        &self.mcp_part().names
    }

    /// MCP servers whose discovery failed: they contribute no tools to this send.
    pub fn skipped_servers(&self) -> &[SkippedMcpServer] {
        &self.mcp_part().skipped
    }

    /// MCP tools left out of this send (a model that cannot call tools), with the reason.
    pub fn withheld_mcp_tools(&self) -> &[ExcludedTool] {
        &self.mcp_part().withheld
    }

    /// The offered tools, in canonical order.
    pub fn tools(&self) -> &[Arc<Tool>] {
        &self.tools
    }

    /// The declared tools left out, with reasons, in declaration order.
    pub fn excluded(&self) -> &[ExcludedTool] {
        &self.excluded
    }

    /// Whether two toolsets of an agent's own tools offer the very same tools (the same
    /// shared definitions, in the same order) and leave out the same ones for the same reasons.
    pub(crate) fn same_tools(&self, other: &Toolset) -> bool {
        self.mcp.is_none()
            && other.mcp.is_none()
            && self.tools.len() == other.tools.len()
            && self
                .tools
                .iter()
                .zip(&other.tools)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && self.excluded == other.excluded
    }

    /// Whether a tool of this name is offered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .is_ok()
    }

    /// The names of the offered tools, in canonical order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// The `tools` template root: a map from name to `{name, description, budget, cacheable}`,
    /// of the local tools only.
    pub(crate) fn template_value(&self) -> Value {
        self.template_value
            .get_or_init(|| {
                Value::from_pairs(self.tools.iter().map(|t| (t.name.clone(), tool_value(t))))
            })
            .clone()
    }

    /// One tool of the `tools` root, as [`Toolset::template_value`] holds it; `None` for a name
    /// the root does not hold.
    pub(crate) fn template_tool(&self, name: &str) -> Option<Value> {
        let at = self
            .tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()?;
        self.tools.get(at).map(|tool| tool_value(tool))
    }

    /// Whether every tool is the agent's own (no MCP tool joined): the `tools` root then holds
    /// exactly the offered tools.
    pub(crate) fn is_local(&self) -> bool {
        self.tools.iter().all(|t| t.origin.is_local())
    }
}

/// The `tools` root as the template layer reads it where it lies.
impl promptstack_template::ToolsRoot for Toolset {
    #[inline]
    fn value(&self) -> Value {
        self.template_value()
    }

    #[inline]
    fn tool(&self, name: &str) -> Option<Value> {
        self.template_tool(name)
    }

    #[inline]
    fn count(&self) -> usize {
        self.tools.len()
    }

    #[inline]
    fn contains(&self, name: &str) -> bool {
        Toolset::contains(self, name)
    }
}

/// A tool as the `tools` root shows it, made once per tool and shared by every toolset.
fn tool_value(tool: &Tool) -> Value {
    tool.view
        .get_or_init(|| {
            Value::from(minijinja::value::Serde(ToolView {
                name: &tool.name,
                description: &tool.description,
                budget: tool.budget.as_deref(),
                cacheable: tool.cacheable,
            }))
        })
        .clone()
}

#[derive(Serialize)]
struct ToolView<'a> {
    name: &'a str,
    description: &'a str,
    budget: Option<&'a str>,
    cacheable: bool,
}

/// Why a tool's declared requirements are not met on this send, or `None` when they all hold.
///
/// Requirements are checked in a fixed order (integration, setting, skills, project), and the
/// first unmet one is the reason.
pub(crate) fn unmet_requirement(
    requires: &ToolRequirements,
    ctx: &crate::context::SendContext,
) -> Option<String> {
    if let Some(name) = &requires.integration {
        match ctx.integrations.get(name) {
            Some(i) if i.connected && i.enabled => {}
            Some(i) if i.connected => {
                return Some(format!(
                    "integration `{name}` is connected but switched off"
                ));
            }
            _ => return Some(format!("integration `{name}` is not connected")),
        }
    }
    if let Some(setting) = &requires.setting {
        let on = ctx
            .settings
            .get(setting.name())
            .map_or(setting.default(), truthy);
        if !on {
            return Some(format!("setting `{}` is off", setting.name()));
        }
    }
    if requires.skills && !ctx.skills.iter().any(|s| !s.disable_model_invocation) {
        return Some("no skill is enabled".into());
    }
    if requires.project_siblings && !ctx.project.as_ref().is_some_and(|p| p.has_sibling_threads) {
        return Some("the thread is not in a project with other threads".into());
    }
    None
}

/// Whether a setting's value counts as on: like a template's truth test (`false`, `null`, `0`,
/// `""`, `[]` and `{}` are off).
fn truthy(value: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    match value {
        J::Null => false,
        J::Bool(b) => *b,
        J::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        J::String(s) => !s.is_empty(),
        J::Array(a) => !a.is_empty(),
        J::Object(o) => !o.is_empty(),
    }
}

/// Whether a tool name is accepted by every provider: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
