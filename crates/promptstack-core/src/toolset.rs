//! The resolved toolset: which tools the model gets on this send, in canonical order.
//!
//! Tools are declared in the spec behind gates over the send context. Resolution evaluates those
//! gates and orders the result canonically (by name, not by declaration or discovery order), so
//! equal inputs give byte-equal tool lists and provider caches hit. Block gates read the resolved
//! toolset (`'search' in tools`), never the settings that usually produce it.

use std::sync::Arc;

use minijinja::value::Value;
use serde::Serialize;

use crate::spec::{ResultTrust, ToolSpec};

/// Where a tool comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolOrigin {
    /// Declared in the agent spec.
    Local,
}

/// A tool the model gets on this send.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// The name the model calls.
    pub name: String,
    /// What it does, when to use it, how to recover from failures.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
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
    /// Where it comes from.
    pub origin: ToolOrigin,
    /// The tool as templates see it, built once.
    #[serde(skip)]
    view: std::sync::OnceLock<Value>,
}

impl Tool {
    pub(crate) fn from_spec(spec: &ToolSpec) -> Self {
        Self {
            name: spec.name.clone(),
            description: spec.description.clone(),
            parameters: spec.parameters.clone(),
            verb: spec.verb.clone(),
            cacheable: spec.cacheable,
            budget: spec.budget.clone(),
            results: spec.results,
            origin: ToolOrigin::Local,
            view: std::sync::OnceLock::new(),
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
    template_value: Value,
}

impl Toolset {
    /// Builds a toolset from included tools (in any order) and excluded ones.
    pub fn new(mut tools: Vec<Arc<Tool>>, excluded: Vec<ExcludedTool>) -> Self {
        // Canonical order: by name, bytewise. Names are unique, so the order is total.
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let template_value = Value::from_pairs(tools.iter().map(|t| {
            (
                t.name.clone(),
                t.view
                    .get_or_init(|| {
                        crate::template::to_value(ToolView {
                            name: &t.name,
                            description: &t.description,
                            budget: t.budget.as_deref(),
                            cacheable: t.cacheable,
                        })
                    })
                    .clone(),
            )
        }));
        Self {
            tools,
            excluded,
            template_value,
        }
    }

    /// The offered tools, in canonical order.
    pub fn tools(&self) -> &[Arc<Tool>] {
        &self.tools
    }

    /// The declared tools left out, with reasons, in declaration order.
    pub fn excluded(&self) -> &[ExcludedTool] {
        &self.excluded
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

    /// The `tools` template root: a map from name to `{name, description, budget, cacheable}`.
    pub(crate) fn template_value(&self) -> Value {
        self.template_value.clone()
    }
}

#[derive(Serialize)]
struct ToolView<'a> {
    name: &'a str,
    description: &'a str,
    budget: Option<&'a str>,
    cacheable: bool,
}

/// Whether a tool name is accepted by every provider: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// What is wrong with a tool's parameter schema, if anything: it must be a valid JSON Schema whose
/// top level describes an object.
pub(crate) fn parameters_problem(parameters: &serde_json::Value) -> Option<String> {
    if let Err(error) = jsonschema::meta::validate(parameters) {
        return Some(crate::spec::load::lowercase_first(&error.to_string()));
    }
    match parameters.get("type") {
        Some(serde_json::Value::String(t)) if t == "object" => None,
        _ => Some("the top level must have `type = \"object\"`".into()),
    }
}
