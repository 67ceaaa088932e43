//! The one decision point for overrides of injected blocks.
//!
//! Every injected block — the platform context, the tenant instructions, each capability's
//! guidance — asks [`Overrides::decide`] whether it ships, with which text, and in which prompts.
//! The rules, in the order they matter:
//!
//! 1. Absent configuration means the default: everything ships, visible in every prompt. A spec
//!    written before overrides existed renders byte-identical.
//! 2. Only a literal `false` (`platform_context`, `tenant_instructions`, `main`,
//!    `subagents.<topic>`) or `mode = "off"` suppresses anything.
//! 3. A malformed override falls back to the default text, never to silence, and says so in a
//!    diagnostic. Losing a customisation is recoverable; a payments stage without its first rule
//!    is not.
//! 4. Any non-default state of a compliance-flagged capability is a warning (warn, don't lock).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::block::OverrideState;
use crate::diagnostic::Diagnostic;

/// The keys `[auto_injections]` understands.
const TOP_KEYS: &[&str] = &["platform_context", "tenant_instructions", "capabilities"];

/// The keys one capability override understands.
const CAPABILITY_KEYS: &[&str] = &["mode", "text", "main", "subagents"];

/// Which prompt of a stage is being built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Prompt<'a> {
    /// The stage's main prompt.
    Main,
    /// The prompt of the subagent for this topic.
    Subagent(&'a str),
}

impl std::fmt::Display for Prompt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Prompt::Main => f.write_str("main"),
            Prompt::Subagent(topic) => write!(f, "subagent `{topic}`"),
        }
    }
}

/// A block whose shipping an override can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injectable<'a> {
    /// The platform's date and time preamble.
    PlatformContext,
    /// The tenant's instructions.
    TenantInstructions,
    /// One capability's guidance.
    Capability {
        /// The capability's slug.
        slug: &'a str,
        /// Whether the guidance carries a compliance rule (e.g. keeping card numbers away from the
        /// model): any non-default state is then a warning.
        compliance: bool,
    },
}

/// What the decision point decided for one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Default, custom, off, or the default after a malformed override.
    pub state: OverrideState,
    /// The replacement text (`custom` only).
    pub custom_text: Option<String>,
    /// Visible in the main prompt.
    pub main: bool,
    /// Visibility per subagent topic; an absent topic is visible.
    pub subagents: BTreeMap<String, bool>,
    /// The configuration key that switched the block off, for reports.
    pub off_key: Option<String>,
    /// Findings: malformed entries, unknown keys, compliance warnings.
    pub diagnostics: Vec<Diagnostic>,
}

impl Decision {
    fn default_for() -> Self {
        Self {
            state: OverrideState::Default,
            custom_text: None,
            main: true,
            subagents: BTreeMap::new(),
            off_key: None,
            diagnostics: Vec::new(),
        }
    }

    /// Whether the block's text ships at all (only `off` removes it).
    pub fn ships(&self) -> bool {
        self.state != OverrideState::Off
    }

    /// Whether the block is visible in this prompt (absent switches mean visible).
    pub fn visible_in(&self, prompt: Prompt<'_>) -> bool {
        match prompt {
            Prompt::Main => self.main,
            Prompt::Subagent(topic) => self.subagents.get(topic).copied().unwrap_or(true),
        }
    }

    /// Whether visibility differs from the default anywhere.
    pub fn is_scoped(&self) -> bool {
        !self.main || self.subagents.values().any(|v| !v)
    }
}

/// A stage's overrides, read leniently from `[auto_injections]` (or the send's stored copy).
#[derive(Debug, Clone, Default)]
pub struct Overrides<'a> {
    root: Option<&'a Map<String, Value>>,
    capabilities: Option<&'a Map<String, Value>>,
    diagnostics: Vec<Diagnostic>,
}

fn malformed(key: &str, why: impl std::fmt::Display) -> Diagnostic {
    Diagnostic::warning(
        "malformed-override",
        format!("`{key}` {why}; the default applies"),
    )
    .subject(key.to_owned())
    .hint("see docs/injections.md for the shape of auto_injections")
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "a table",
    }
}

fn unknown_keys(map: &Map<String, Value>, known: &[&str], prefix: &str, out: &mut Vec<Diagnostic>) {
    for key in map.keys() {
        if known.contains(&key.as_str()) {
            continue;
        }
        let mut diagnostic = Diagnostic::warning(
            "unknown-override-key",
            format!("`{prefix}.{key}` is not an override setting and is ignored"),
        )
        .subject(format!("{prefix}.{key}"));
        if let Some(best) = known
            .iter()
            .map(|k| (strsim::jaro_winkler(k, key), k))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
        {
            diagnostic = diagnostic.hint(format!("did you mean `{}`?", best.1));
        }
        out.push(diagnostic);
    }
}

impl<'a> Overrides<'a> {
    /// Reads the configuration. Problems with its overall shape become diagnostics (see
    /// [`Overrides::diagnostics`]); problems with one block's entry are reported by
    /// [`Overrides::decide`] for that block.
    pub fn read(value: Option<&'a Value>) -> Self {
        let mut out = Self::default();
        let Some(value) = value else {
            return out;
        };
        let Value::Object(root) = value else {
            out.diagnostics.push(malformed(
                "auto_injections",
                format_args!("is {}, not a table", kind_of(value)),
            ));
            return out;
        };
        unknown_keys(root, TOP_KEYS, "auto_injections", &mut out.diagnostics);
        out.root = Some(root);
        match root.get("capabilities") {
            None => {}
            Some(Value::Object(map)) => out.capabilities = Some(map),
            Some(other) => out.diagnostics.push(malformed(
                "auto_injections.capabilities",
                format_args!("is {}, not a table", kind_of(other)),
            )),
        }
        out
    }

    /// Findings about the configuration's overall shape.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The slugs the configuration mentions under `capabilities`, in key order.
    pub fn configured_capabilities(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.capabilities
            .into_iter()
            .flat_map(|m| m.keys().map(String::as_str))
    }

    /// Decides one block: whether it ships, with which text, and where it is visible.
    pub fn decide(&self, injectable: Injectable<'_>) -> Decision {
        let mut decision = Decision::default_for();
        match injectable {
            Injectable::PlatformContext => {
                self.switch("platform_context", &mut decision);
            }
            Injectable::TenantInstructions => {
                self.switch("tenant_instructions", &mut decision);
            }
            Injectable::Capability { slug, compliance } => {
                self.capability(slug, &mut decision);
                if compliance && (decision.state != OverrideState::Default || decision.is_scoped())
                {
                    let what = match decision.state {
                        OverrideState::Off => "is switched off".to_owned(),
                        OverrideState::Custom => "is replaced by custom text".to_owned(),
                        OverrideState::FallbackAfterMalformed => {
                            "has a malformed override (the default text ships)".to_owned()
                        }
                        OverrideState::Default => "is hidden in some prompts".to_owned(),
                    };
                    decision.diagnostics.push(
                        Diagnostic::warning(
                            "compliance-override",
                            format!(
                                "the `{slug}` guidance carries a compliance rule and {what}"
                            ),
                        )
                        .subject(format!("auto_injections.capabilities.{slug}"))
                        .hint("the default text keeps sensitive data away from the model; keep it unless compliance has reviewed the change"),
                    );
                }
            }
        }
        decision
    }

    /// `platform_context` / `tenant_instructions`: absent or `true` ships; `false` removes; anything
    /// else is malformed.
    fn switch(&self, key: &str, decision: &mut Decision) {
        let Some(value) = self.root.and_then(|r| r.get(key)) else {
            return;
        };
        match value {
            Value::Bool(true) => {}
            Value::Bool(false) => {
                decision.state = OverrideState::Off;
                decision.off_key = Some(format!("auto_injections.{key}"));
            }
            other => {
                decision.state = OverrideState::FallbackAfterMalformed;
                decision.diagnostics.push(malformed(
                    &format!("auto_injections.{key}"),
                    format_args!("is {}, not true or false", kind_of(other)),
                ));
            }
        }
    }

    fn capability(&self, slug: &str, decision: &mut Decision) {
        let prefix = format!("auto_injections.capabilities.{slug}");
        let Some(value) = self.capabilities.and_then(|c| c.get(slug)) else {
            return;
        };
        let Value::Object(entry) = value else {
            decision.state = OverrideState::FallbackAfterMalformed;
            decision.diagnostics.push(malformed(
                &prefix,
                format_args!("is {}, not a table", kind_of(value)),
            ));
            return;
        };
        unknown_keys(entry, CAPABILITY_KEYS, &prefix, &mut decision.diagnostics);
        let text = entry.get("text");
        match entry.get("mode") {
            // Text kept next to `default` or `off` is what an editor leaves behind after a reset
            // or a removal; without any mode it most likely lacks `mode = "custom"`.
            None if text.is_some() => {
                decision.state = OverrideState::FallbackAfterMalformed;
                decision.diagnostics.push(malformed(
                    &format!("{prefix}.text"),
                    "is set without mode = \"custom\"",
                ));
            }
            None => {}
            Some(Value::String(mode)) => match mode.as_str() {
                "default" => {}
                "off" => {
                    decision.state = OverrideState::Off;
                    decision.off_key = Some(format!("{prefix}.mode"));
                }
                "custom" => Self::custom(&prefix, text, decision),
                other => {
                    decision.state = OverrideState::FallbackAfterMalformed;
                    decision.diagnostics.push(malformed(
                        &format!("{prefix}.mode"),
                        format_args!("is \"{other}\", not \"default\", \"off\" or \"custom\""),
                    ));
                }
            },
            Some(other) => {
                decision.state = OverrideState::FallbackAfterMalformed;
                decision.diagnostics.push(malformed(
                    &format!("{prefix}.mode"),
                    format_args!("is {}, not a string", kind_of(other)),
                ));
            }
        }
        match entry.get("main") {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => decision.main = false,
            Some(other) => decision.diagnostics.push(malformed(
                &format!("{prefix}.main"),
                format_args!("is {}, not true or false", kind_of(other)),
            )),
        }
        match entry.get("subagents") {
            None => {}
            Some(Value::Object(topics)) => {
                for (topic, visible) in topics {
                    match visible {
                        Value::Bool(v) => {
                            decision.subagents.insert(topic.clone(), *v);
                        }
                        other => decision.diagnostics.push(malformed(
                            &format!("{prefix}.subagents.{topic}"),
                            format_args!("is {}, not true or false", kind_of(other)),
                        )),
                    }
                }
            }
            Some(other) => decision.diagnostics.push(malformed(
                &format!("{prefix}.subagents"),
                format_args!("is {}, not a table of topics", kind_of(other)),
            )),
        }
    }

    fn custom(prefix: &str, text: Option<&Value>, decision: &mut Decision) {
        let why = match text {
            Some(Value::String(t)) if !t.trim().is_empty() => {
                decision.state = OverrideState::Custom;
                decision.custom_text = Some(t.clone());
                return;
            }
            Some(Value::String(_)) => {
                "is empty (to remove the guidance, use mode = \"off\")".to_owned()
            }
            Some(other) => format!("is {}, not a string", kind_of(other)),
            None => "is missing although mode is \"custom\"".to_owned(),
        };
        decision.state = OverrideState::FallbackAfterMalformed;
        decision
            .diagnostics
            .push(malformed(&format!("{prefix}.text"), why));
    }
}
