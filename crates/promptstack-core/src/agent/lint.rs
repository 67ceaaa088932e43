//! Lint: rules a spec can break without being unusable, found once at compile time.
//!
//! - `unplaced-note` (error): a target neither places nor omits a note — the note would silently
//!   vanish from that engine.
//! - `unplaced-block` (warning): a target-placed block that no target places.
//! - `tool-mention` (warning): text names a tool that some sends do not offer, without a gate on
//!   that tool — the prompt would describe a tool the model does not have.
//! - `gate-on-settings` (warning): a block is gated on a setting or integration that decides a
//!   tool's availability; gate on the resolved toolset instead, which is the fact.
//!
//! Send-dependent findings (empty variables, token limits) are produced by the assembler.

use std::collections::HashSet;

use promptstack_template::TemplateSet;

use crate::diagnostic::Diagnostic;
use crate::ir::{AgentInner, CompiledTool, Unit};
use crate::root::root_of;
use crate::spec::{AgentSpec, BlockKind, Placement};

pub(crate) fn static_checks(
    spec: &AgentSpec,
    units: &[Unit],
    tools: &[CompiledTool],
    templates: &TemplateSet,
    out: &mut Vec<Diagnostic>,
) {
    unplaced(spec, units, out);
    tool_mentions(spec, units, tools, out);
    gates_on_settings(units, tools, templates, out);
}

fn location(unit: &Unit) -> Option<crate::diagnostic::Location> {
    match &*unit.origin {
        crate::block::Origin::Spec { location, .. } => location.clone(),
        _ => None,
    }
}

fn unplaced(spec: &AgentSpec, units: &[Unit], out: &mut Vec<Diagnostic>) {
    for unit in units {
        let is_note = unit.kind == BlockKind::Note;
        if !is_note && unit.placement != Placement::Target {
            continue;
        }
        let mut placed_anywhere = false;
        for (id, target) in &spec.targets {
            let placed = target
                .system
                .iter()
                .chain(&target.user)
                .any(|x| *x == *unit.id);
            placed_anywhere |= placed;
            if is_note && !placed && !target.omit.contains_key(&*unit.id) {
                out.push(
                    Diagnostic::error("unplaced-note", format!("target `{id}` does not place note `{}`", unit.id))
                        .subject(&*unit.id)
                        .at(location(unit))
                        .hint(format!(
                            "add `{}` to targets.{id}.system or targets.{id}.user, or to targets.{id}.omit with the reason",
                            unit.id
                        )),
                );
            }
        }
        if !is_note && !placed_anywhere {
            out.push(
                Diagnostic::warning(
                    "unplaced-block",
                    format!("no target places block `{}`", unit.id),
                )
                .subject(&*unit.id)
                .at(location(unit))
                .hint("name it in a target's `system` list, or make it a body block"),
            );
        }
    }
}

/// Whether `text` refers to the tool `name`.
///
/// Tool names are often plain words (`search`, `skill`), so a bare word in prose is not a mention.
/// A mention is the name as an identifier: a name with `_` or `-` on word boundaries, or any name
/// in backticks, called like a function (`search(`), or followed by the word "tool".
fn mentions(text: &str, name: &str) -> bool {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let identifier_like = name.contains(['_', '-']);
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let rest = &text[i + name.len()..];
        let after = rest.chars().next();
        if before.is_some_and(is_ident) || after.is_some_and(is_ident) {
            return false;
        }
        identifier_like
            || (before == Some('`') && after == Some('`'))
            || after == Some('(')
            || rest.starts_with(" tool")
    })
}

/// Whether a gate or template source tests for the tool in the resolved toolset.
fn tests_tool(source: &str, tool: &str) -> bool {
    source.contains(&format!("'{tool}' in tools"))
        || source.contains(&format!("\"{tool}\" in tools"))
        || source.contains(&format!("tools.{tool}"))
        || source.contains(&format!("tools['{tool}']"))
        || source.contains(&format!("tools[\"{tool}\"]"))
}

fn tool_mentions(
    spec: &AgentSpec,
    units: &[Unit],
    tools: &[CompiledTool],
    out: &mut Vec<Diagnostic>,
) {
    let gated: Vec<&CompiledTool> = tools
        .iter()
        .filter(|t| t.gate.is_some() || !t.spec.requires.is_empty())
        .collect();
    if gated.is_empty() {
        return;
    }
    // The texts of each unit: its own text or template, and its variants'.
    let mut texts: Vec<(&Unit, Vec<&str>)> = Vec::new();
    for unit in units {
        let mut sources = Vec::new();
        if let Some(block) = spec
            .blocks
            .iter()
            .find(|b| *b.id == *unit.id && unit.kind != BlockKind::Note)
        {
            sources.extend(block.text.as_deref().or(block.template.as_deref()));
            for variant in &block.variants {
                sources.extend(variant.text.as_deref().or(variant.template.as_deref()));
                sources.push(&variant.when);
            }
        } else if let Some(note) = spec.notes.iter().find(|n| *n.id == *unit.id) {
            sources.extend(note.text.as_deref().or(note.template.as_deref()));
        }
        texts.push((unit, sources));
    }
    for (unit, sources) in texts {
        let gate = unit
            .gate
            .as_ref()
            .map(|g| g.expression.as_str())
            .unwrap_or_default();
        for tool in &gated {
            let name = &tool.spec.name;
            let mentioned = sources.iter().any(|s| mentions(s, name));
            let guarded = tests_tool(gate, name) || sources.iter().any(|s| tests_tool(s, name));
            if mentioned && !guarded {
                let tool_gate = match &tool.gate {
                    Some(g) => g.expression.clone(),
                    None => "declared requirements".to_owned(),
                };
                out.push(
                    Diagnostic::warning(
                        "tool-mention",
                        format!("`{}` names tool `{name}`, which is not offered on every send (gate: {tool_gate})", unit.id),
                    )
                    .subject(&*unit.id)
                    .at(location(unit))
                    .hint(format!("gate the text on the resolved toolset, e.g. when = \"'{name}' in tools\"")),
                );
            }
        }
    }
}

fn gates_on_settings(
    units: &[Unit],
    tools: &[CompiledTool],
    templates: &TemplateSet,
    out: &mut Vec<Diagnostic>,
) {
    let tool_paths: HashSet<String> = tools
        .iter()
        .filter_map(|t| t.gate.as_ref())
        .flat_map(|g| templates.variables(&g.template))
        .filter(|p| matches!(root_of(p), "settings" | "integrations"))
        .collect();
    // Declared requirements decide availability as much as gates do.
    let required: Vec<String> = tools
        .iter()
        .flat_map(|t| {
            let r = &t.spec.requires;
            r.integration
                .iter()
                .map(|i| format!("integrations.{i}"))
                .chain(r.setting.iter().map(|s| format!("settings.{}", s.name())))
        })
        .collect();
    let decides = |path: &str| {
        tool_paths.contains(path)
            || required.iter().any(|r| {
                path.strip_prefix(r.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
            })
    };
    if tool_paths.is_empty() && required.is_empty() {
        return;
    }
    for unit in units {
        let Some(gate) = &unit.gate else { continue };
        let mut reads: Vec<String> = templates
            .variables(&gate.template)
            .into_iter()
            .filter(|p| decides(p))
            .collect();
        reads.sort();
        for path in reads {
            out.push(
                Diagnostic::warning(
                    "gate-on-settings",
                    format!("`{}` is gated on `{path}`, which decides whether tools are offered", unit.id),
                )
                .subject(&*unit.id)
                .at(location(unit))
                .hint("gate on the resolved toolset instead (e.g. `'search' in tools`): it is the fact the text depends on"),
            );
        }
    }
}

impl AgentInner {
    /// The implementation of [`Agent::pinned_over_budget`](crate::Agent::pinned_over_budget).
    pub(crate) fn pinned_over_budget(&self, counting: crate::tokens::Counting) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for target in self.targets.iter() {
            let Some(budget) = target.budget else {
                continue;
            };
            let mut pinned: Vec<&str> = Vec::new();
            let mut total: u64 = 0;
            for (id, _, is_pinned) in &target.shedding {
                if !is_pinned {
                    continue;
                }
                let Some(unit) = self.units.iter().find(|u| u.id == *id) else {
                    continue;
                };
                let crate::ir::Body::Text(text) = &unit.body else {
                    continue;
                };
                if unit.gate.is_some() || !unit.variants.is_empty() {
                    continue;
                }
                let text = if self.spec.render.trim {
                    text.trim_matches([' ', '\t', '\r', '\n'])
                } else {
                    text.as_str()
                };
                total += u64::from(self.caches.counter.count(counting, text).count);
                pinned.push(id);
            }
            if total > u64::from(budget) {
                out.push(
                    Diagnostic::error(
                        "over-budget",
                        format!(
                            "target `{}` needs about {total} tokens ({}) for its pinned blocks alone ({}); its budget is {budget}",
                            target.id,
                            counting.encoding.as_str(),
                            pinned.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
                        ),
                    )
                    .subject(target.id.as_str())
                    .hint("raise the budget or unpin blocks"),
                );
            }
        }
        out
    }

    /// The implementation of [`Agent::literal_token_limits`](crate::Agent::literal_token_limits).
    pub(crate) fn literal_token_limits(
        &self,
        counting: crate::tokens::Counting,
    ) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for unit in &self.units {
            let Some(limit) = unit.max_tokens else {
                continue;
            };
            let own = std::iter::once((None, &unit.body));
            let variants = unit.variants.iter().map(|v| (Some(v.id.as_str()), &v.body));
            for (variant, body) in own.chain(variants) {
                let crate::ir::Body::Text(text) = body else {
                    continue;
                };
                let text = if self.spec.render.trim {
                    text.trim_matches([' ', '\t', '\r', '\n'])
                } else {
                    text.as_str()
                };
                let tokens = self.caches.counter.count(counting, text);
                if tokens.count > limit {
                    let what = match variant {
                        Some(v) => format!("variant `{v}` of `{}`", unit.id),
                        None => format!("`{}`", unit.id),
                    };
                    out.push(
                        Diagnostic::error(
                            "over-token-limit",
                            format!(
                                "{what} is {} tokens ({}); its limit is {limit}",
                                tokens.display(),
                                counting.encoding.as_str()
                            ),
                        )
                        .subject(&*unit.id)
                        .at(location(unit))
                        .hint("shorten the text or raise `max_tokens`"),
                    );
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_identifiers_not_words() {
        assert!(mentions("call `search` first", "search"));
        assert!(mentions("use the search tool", "search"));
        assert!(mentions("search(query)", "search"));
        assert!(!mentions("the search engine", "search"));
        assert!(!mentions("research it", "search"));
        assert!(!mentions("search_project_chats", "search"));
        assert!(mentions(
            "try search_project_chats.",
            "search_project_chats"
        ));
        assert!(!mentions("a skill's instructions", "skill"));
    }
}
