//! Local tool descriptors: what makes one complete and valid, and a registry that refuses the rest.
//!
//! One set of rules serves both ways of declaring tools. Loading a spec reports every
//! [`DescriptorProblem`] of its `[[tools]]` as a located error; an application that registers
//! tools in Rust gets them from [`ToolRegistry::register`] as a [`RegistrationError`]. A
//! descriptor is valid when:
//!
//! - its name matches `^[a-zA-Z0-9_-]{1,64}$` (`bad-tool-name`);
//! - its description is not blank (`incomplete-tool`);
//! - its parameters are a JSON Schema (checked against the meta-schema) for an object, and every
//!   name under `required` is one of its `properties` (`bad-tool-parameters`);
//! - every `{param}` of its verb is one of those properties (`bad-tool-verb`), so a label never
//!   falls back for a value the model cannot give;
//! - its `display_name` is one line of 1 to 80 characters, its `category` and `icon` are keys
//!   (`bad-tool-display`);
//! - it declares a `fence` kind only if its results are untrusted (`fence-on-trusted-results`):
//!   trusted results are never fenced, so the kind would silently do nothing;
//! - it is `cacheable` only if it is also `read_only` (`cacheable-not-read-only`): sharing one
//!   execution between calls is only correct for a tool that changes nothing.
//!
//! Names are unique: the registry refuses a second tool of the same name (`duplicate-tool`).

use std::collections::BTreeMap;
use std::fmt;

use crate::spec::{ParsedSpec, ToolSpec};
use crate::tools::naming::validate_tool_name;

/// One thing wrong with a tool descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptorProblem {
    /// The error code (`bad-tool-name`, `incomplete-tool`, …), as spec errors use it.
    pub code: &'static str,
    /// The descriptor field at fault (`name`, `description`, `parameters`, `verb`, `cacheable`).
    pub field: &'static str,
    /// A lowercase explanation.
    pub message: String,
    /// How to fix it.
    pub hint: Option<String>,
}

impl fmt::Display for DescriptorProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (`{}`): {}", self.code, self.field, self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

/// Every problem of one descriptor, in field order (empty when it is valid).
pub fn descriptor_problems(tool: &ToolSpec) -> Vec<DescriptorProblem> {
    let mut problems = Vec::new();
    let mut push = |code, field, message: String, hint: Option<&str>| {
        problems.push(DescriptorProblem {
            code,
            field,
            message,
            hint: hint.map(str::to_owned),
        });
    };
    if let Err(error) = validate_tool_name(&tool.name) {
        push(
            "bad-tool-name",
            "name",
            error.to_string(),
            Some("tool names must match ^[a-zA-Z0-9_-]{1,64}$"),
        );
    }
    if tool.description.trim().is_empty() {
        push(
            "incomplete-tool",
            "description",
            format!("tool `{}` has an empty description", tool.name),
            Some("say what the tool does, when to use it, and what to do after a failure"),
        );
    }
    let parameters_ok = match parameters_problem(&tool.parameters) {
        Some(problem) => {
            push(
                "bad-tool-parameters",
                "parameters",
                format!(
                    "the parameters of tool `{}` are not a valid JSON Schema: {problem}",
                    tool.name
                ),
                Some(
                    "parameters must be a JSON Schema object, e.g. { type = \"object\", properties = { … } }",
                ),
            );
            false
        }
        None => true,
    };
    let properties = tool
        .parameters
        .get("properties")
        .and_then(|p| p.as_object());
    // Composed schemas (`allOf`, `$ref`, …) may declare properties elsewhere: only a plain object
    // schema is checked for the names it uses.
    let plain = parameters_ok
        && [
            "allOf",
            "anyOf",
            "oneOf",
            "$ref",
            "patternProperties",
            "additionalProperties",
        ]
        .iter()
        .all(|k| {
            tool.parameters
                .get(k)
                .is_none_or(|v| v == &serde_json::Value::Bool(false))
        });
    if plain {
        let declared = |name: &str| properties.is_some_and(|p| p.contains_key(name));
        if let Some(required) = tool.parameters.get("required").and_then(|r| r.as_array()) {
            for name in required.iter().filter_map(|r| r.as_str()) {
                if !declared(name) {
                    push(
                        "bad-tool-parameters",
                        "parameters",
                        format!(
                            "tool `{}` requires `{name}`, which its parameters do not declare under `properties`",
                            tool.name
                        ),
                        Some("declare it under `properties`, or remove it from `required`"),
                    );
                }
            }
        }
        if let Some(verb) = &tool.verb {
            for name in verb_placeholders(verb) {
                if !declared(name) {
                    push(
                        "bad-tool-verb",
                        "verb",
                        format!(
                            "the verb of tool `{}` shows `{{{name}}}`, which is not one of its parameters",
                            tool.name
                        ),
                        Some("use a parameter name from `properties`, or plain text"),
                    );
                }
            }
        }
    }
    if let Some(name) = &tool.display_name
        && let Some(problem) = display_name_problem(name)
    {
        push(
            "bad-tool-display",
            "display_name",
            format!("the display name of tool `{}` {problem}", tool.name),
            Some("a display name is one line of 1 to 80 characters, e.g. \"Web search\""),
        );
    }
    for (field, value) in [("category", &tool.category), ("icon", &tool.icon)] {
        if let Some(value) = value
            && !is_display_key(value)
        {
            push(
                "bad-tool-display",
                field,
                format!(
                    "the {field} of tool `{}` is {value:?}, which is not a key",
                    tool.name
                ),
                Some(
                    "a key is 1 to 64 lowercase letters, digits, `_`, `-` or `.`, starting with a letter or digit, e.g. \"web\"",
                ),
            );
        }
    }
    if !tool.fence.is_tool_result() && tool.results == crate::spec::ResultTrust::Trusted {
        push(
            "fence-on-trusted-results",
            "fence",
            format!(
                "tool `{}` declares `fence = \"{}\"`, but its results are trusted and never fenced",
                tool.name,
                tool.fence.as_str()
            ),
            Some(
                "add `results = \"untrusted\"` if the results carry outside content, or remove `fence`",
            ),
        );
    }
    if tool.cacheable && !tool.read_only {
        push(
            "cacheable-not-read-only",
            "cacheable",
            format!(
                "tool `{}` is cacheable but not declared read-only; identical calls would share one execution of a tool that changes something",
                tool.name
            ),
            Some("add `read_only = true` if the tool only reads, or remove `cacheable`"),
        );
    }
    problems
}

/// What is wrong with a display name, if anything: it must be one line of 1 to 80 characters
/// that is not blank and holds no control character.
fn display_name_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("is blank")
    } else if name.chars().count() > 80 {
        Some("is longer than 80 characters")
    } else if name.chars().any(char::is_control) {
        Some("holds a control character or a line break")
    } else {
        None
    }
}

/// Whether `value` is a UI key: 1 to 64 of `[a-z0-9_.-]`, starting with a letter or digit.
fn is_display_key(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_lowercase() | bytes[0].is_ascii_digit()
        && bytes.iter().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-' | b'.')
        })
}

/// The `{param}` placeholders of a verb, in order (the names [`label`](super::label) substitutes).
pub fn verb_placeholders(verb: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = verb;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let len = after
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count();
        if len > 0 && after.as_bytes().get(len) == Some(&b'}') {
            names.push(&after[..len]);
            rest = &after[len + 1..];
        } else {
            rest = after;
        }
    }
    names
}

/// Why a tool was not registered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistrationErrorKind {
    /// A tool of this name is already registered.
    Conflict,
    /// The descriptor is incomplete or invalid; every problem is listed.
    Invalid(Vec<DescriptorProblem>),
}

/// A tool the registry refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationError {
    name: String,
    kind: RegistrationErrorKind,
}

impl RegistrationError {
    /// The refused tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Why it was refused.
    pub fn kind(&self) -> &RegistrationErrorKind {
        &self.kind
    }
}

impl fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            RegistrationErrorKind::Conflict => write!(
                f,
                "tool `{}` is already registered; tool names must be unique",
                self.name
            ),
            RegistrationErrorKind::Invalid(problems) => {
                write!(f, "tool `{}` was refused:", self.name)?;
                for problem in problems {
                    write!(f, "\n- {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RegistrationError {}

/// Local tools registered from Rust, each checked when it is registered.
///
/// Add the registered tools to a spec before compiling it with [`ParsedSpec::with_tools`]
/// (`crate::spec::load::ParsedSpec`); compiling refuses a registered tool whose name a `[[tools]]`
/// entry already uses.
///
/// # Example
///
/// ```
/// use promptstack_core::spec::ToolSpec;
/// use promptstack_core::tools::registration::{RegistrationErrorKind, ToolRegistry};
/// use serde_json::json;
///
/// let tool: ToolSpec = serde_json::from_value(json!({
///     "name": "lookup_order",
///     "description": "Look up an order by id. Use it when the user names an order. If none matches, ask for the id again.",
///     "parameters": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
///     "verb": "looking up order {id}",
///     "cacheable": true,
///     "read_only": true
/// })).unwrap();
/// let mut registry = ToolRegistry::new();
/// registry.register(tool.clone()).unwrap();
/// let again = registry.register(tool).unwrap_err();
/// assert_eq!(again.kind(), &RegistrationErrorKind::Conflict);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, ToolSpec>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a tool.
    ///
    /// # Errors
    ///
    /// [`RegistrationErrorKind::Invalid`] with every problem of the descriptor (checked first),
    /// or [`RegistrationErrorKind::Conflict`] when a tool of that name is already registered.
    /// Nothing is registered on error.
    pub fn register(&mut self, tool: ToolSpec) -> Result<&mut Self, RegistrationError> {
        let problems = descriptor_problems(&tool);
        if !problems.is_empty() {
            return Err(RegistrationError {
                name: tool.name,
                kind: RegistrationErrorKind::Invalid(problems),
            });
        }
        if self.tools.contains_key(&tool.name) {
            return Err(RegistrationError {
                name: tool.name,
                kind: RegistrationErrorKind::Conflict,
            });
        }
        self.tools.insert(tool.name.clone(), tool);
        Ok(self)
    }

    /// A registered tool by name.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name)
    }

    /// The registered tools, by name.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &ToolSpec> {
        self.tools.values()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The registered tools, by name.
    pub fn into_tools(self) -> Vec<ToolSpec> {
        self.tools.into_values().collect()
    }
}

/// What is wrong with a tool's parameter schema, if anything: it must be a valid JSON Schema whose
/// top level describes an object.
pub(crate) fn parameters_problem(parameters: &serde_json::Value) -> Option<String> {
    if let Err(error) = jsonschema::meta::validate(parameters) {
        return Some(crate::diagnostic::lowercase_first(&error.to_string()));
    }
    match parameters.get("type") {
        Some(serde_json::Value::String(t)) if t == "object" => None,
        _ => Some("the top level must have `type = \"object\"`".into()),
    }
}

impl ParsedSpec {
    /// Adds tools registered in Rust to the spec's own `[[tools]]`, to be compiled with them.
    ///
    /// The registry has already checked each descriptor; compiling still refuses a registered
    /// tool whose name the spec's `[[tools]]` already uses (`duplicate-tool`).
    pub fn with_tools(mut self, registry: ToolRegistry) -> Self {
        self.spec.tools.extend(registry.into_tools());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_whole_brace_names() {
        assert_eq!(
            verb_placeholders("reading {url} in {a-b} {not a name} {x"),
            ["url", "a-b"]
        );
        assert!(verb_placeholders("{}").is_empty());
    }
}
