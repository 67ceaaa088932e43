//! The spec-level invariants the compiler enforces, each as a located error: ids are unique;
//! templates read only known variables, a stable unit reads no volatile variable and every unit
//! declares at least the trust of what it renders; stable blocks come before volatile ones; and no
//! user-controlled text ends the stable half or a target's system text.

use std::collections::{BTreeMap, HashMap};

use super::compile::{Compiler, UnitFacts};
use crate::ir::{Body, CompiledTarget, TargetItem, Unit};
use crate::root::{Root, VolatileInput};
use crate::spec::load::{display_path, suggest};
use crate::spec::span::push_pointer;
use crate::spec::{BlockKind, Placement, Stability, Trust, VariableSpec};

impl Compiler<'_> {
    pub(super) fn check_ids(&mut self, units: &[Unit], facts: &[UnitFacts]) {
        let mut seen: HashMap<&str, &str> = HashMap::new();
        for (unit, fact) in units.iter().zip(facts) {
            let id_pointer = push_pointer(&fact.pointer, "id");
            if unit.id.is_empty()
                || !unit
                    .id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            {
                self.error(
                    "bad-id",
                    &id_pointer,
                    false,
                    format!(
                        "id `{}` must be non-empty and use only letters, digits, `_`, `-` and `.`",
                        unit.id
                    ),
                    None,
                );
            }
            if let Some(first) = seen.insert(&unit.id, &fact.pointer) {
                self.error(
                    "duplicate-id",
                    &id_pointer,
                    false,
                    format!(
                        "id `{}` is already used by `{}`",
                        unit.id,
                        display_path(first)
                    ),
                    Some("block and note ids share one namespace and must be unique".into()),
                );
            }
        }
    }

    /// Every template may read only known variables; stable units only stable ones; a unit must
    /// declare at least the trust of what it renders.
    pub(super) fn check_variables_and_trust(&mut self, units: &mut [Unit], facts: &[UnitFacts]) {
        let declared = &self.spec.variables;
        // A default must fit the variable's own shape.
        for (name, variable) in declared {
            if let Some(default) = &variable.default {
                let base = push_pointer(&push_pointer("/variables", name), "default");
                if let Some(shape) = variable.shape
                    && let Some(inner) = shape.mismatch(default)
                {
                    let found = default.pointer(&inner).unwrap_or(default);
                    self.error(
                        "bad-shape",
                        &format!("{base}{inner}"),
                        false,
                        format!(
                            "the default of `variables.{}` is {}; its shape is {}",
                            crate::diagnostic::quote(name),
                            crate::spec::describe(found),
                            shape.expected_at(&inner)
                        ),
                        Some(format!("give a default of shape `{shape}`")),
                    );
                }
            }
        }
        for (unit, fact) in units.iter_mut().zip(facts) {
            let mut templates: Vec<(String, String, bool)> = Vec::new(); // (template, pointer, renders text)
            if let Body::Template(template) = &unit.body {
                templates.push((
                    template.name().to_owned(),
                    push_pointer(&fact.pointer, "template"),
                    true,
                ));
            }
            if let Some(gate) = &unit.gate {
                templates.push((
                    gate.template.clone(),
                    push_pointer(&fact.pointer, "when"),
                    false,
                ));
            }
            for (j, variant) in unit.variants.iter().enumerate() {
                let vp = format!("{}/variants/{j}", fact.pointer);
                if let Body::Template(template) = &variant.body {
                    templates.push((
                        template.name().to_owned(),
                        push_pointer(&vp, "template"),
                        true,
                    ));
                }
                templates.push((
                    variant.gate.template.clone(),
                    push_pointer(&vp, "when"),
                    false,
                ));
            }
            let mut reads = Vec::new();
            let mut inputs = Vec::new();
            for (template, pointer, renders) in templates {
                let mut paths: Vec<String> =
                    self.templates.variables(&template).into_iter().collect();
                paths.sort();
                for path in paths {
                    let Some(var) = classify(&path, declared) else {
                        let (message, hint) = unknown_variable(&path, declared);
                        self.error("unknown-variable", &pointer, false, message, hint);
                        continue;
                    };
                    if unit.stability == Stability::Stable && var.stability == Stability::Volatile {
                        let what = if renders { "renders" } else { "is gated on" };
                        self.error(
                            "volatile-in-stable",
                            &pointer,
                            false,
                            format!(
                                "stable {} `{}` {what} `{path}`, which changes on every send; the cacheable prefix would change with it",
                                unit_noun(unit), unit.id
                            ),
                            Some("declare the block `stability = \"volatile\"` (and place it after the stable blocks), or move that text into a per-send note".into()),
                        );
                    }
                    if renders && var.trust > unit.trust {
                        self.error(
                            "trust-too-low",
                            &push_pointer(&fact.pointer, "trust"),
                            false,
                            format!(
                                "{} `{}` renders `{path}`, which is {}-controlled, but declares trust = \"{}\"",
                                unit_noun(unit), unit.id, var.trust.as_str(), unit.trust.as_str()
                            ),
                            Some(format!("declare trust = \"{}\"; the trust of a block is the least trusted text it can contain", var.trust.as_str())),
                        );
                    }
                    if renders {
                        reads.push(path.clone());
                    }
                    if var.stability == Stability::Volatile
                        && let Some(input) = VolatileInput::of(&path)
                    {
                        inputs.push(input);
                    }
                }
            }
            reads.sort();
            reads.dedup();
            unit.reads = reads;
            inputs.sort();
            inputs.dedup();
            unit.volatile_inputs = inputs;
        }
    }

    /// Stable body blocks first; no user-controlled text ends the stable half.
    pub(super) fn check_order(&mut self, units: &[Unit], facts: &[UnitFacts]) {
        let body: Vec<(usize, &Unit)> = units
            .iter()
            .enumerate()
            .filter(|(_, u)| {
                u.placement == Placement::Body && u.kind != BlockKind::Note && u.scope.is_none()
            })
            .collect();
        let mut first_volatile: Option<&Unit> = None;
        for &(i, unit) in &body {
            match unit.stability {
                Stability::Volatile => {
                    first_volatile.get_or_insert(unit);
                }
                Stability::Stable => {
                    if let Some(volatile) = first_volatile {
                        self.error(
                            "stable-after-volatile",
                            &push_pointer(&facts[i].pointer, "stability"),
                            false,
                            format!("stable block `{}` comes after volatile block `{}`", unit.id, volatile.id),
                            Some("the stable blocks form the cacheable prefix: move volatile blocks after every stable one".into()),
                        );
                    }
                }
            }
        }
        let stable: Vec<(usize, &Unit)> = body
            .iter()
            .copied()
            .filter(|(_, u)| u.stability == Stability::Stable)
            .collect();
        if let Some((i, unit)) = trailing_user_controlled(&stable) {
            self.error(
                "trailing-user-text",
                &push_pointer(&facts[i].pointer, "trust"),
                false,
                format!(
                    "{}-controlled block `{}` can end the stable half; text there reads to the model as the most recent instruction",
                    unit.trust.as_str(), unit.id
                ),
                Some("add an ungated block of trust \"author\" or \"platform\" after it (e.g. the conversation style)".into()),
            );
        }
    }

    /// No user-controlled item may end a target's system text: after the last one that can be
    /// present there must be an unconditional trusted item.
    pub(super) fn check_target_trailing(
        &mut self,
        target: &CompiledTarget,
        units: &[Unit],
        pointer: &str,
    ) {
        let body_volatile: Vec<&Unit> = units
            .iter()
            .filter(|u| {
                u.placement == Placement::Body
                    && u.kind != BlockKind::Note
                    && u.stability == Stability::Volatile
                    && u.scope.is_none()
            })
            .collect();
        let body_stable_present = units.iter().any(|u| {
            u.placement == Placement::Body
                && u.scope.is_none()
                && u.stability == Stability::Stable
                && u.unconditional
                && !u.trust.is_user_controlled()
        });
        // (user-controlled?, always present and trusted at its end?, name, index in list)
        let mut last_risky: Option<(usize, String, Trust)> = None;
        for (i, item) in target.system.iter().enumerate() {
            match item {
                TargetItem::Stable => {
                    // The stable half is checked on its own; it always ends trusted when present.
                    if body_stable_present {
                        last_risky = None;
                    }
                }
                TargetItem::Volatile => {
                    let flat: Vec<(usize, &Unit)> =
                        body_volatile.iter().copied().enumerate().collect();
                    if let Some((_, unit)) = trailing_user_controlled(&flat) {
                        last_risky = Some((i, unit.id.to_string(), unit.trust));
                    } else if body_volatile
                        .iter()
                        .any(|u| u.unconditional && !u.trust.is_user_controlled())
                    {
                        last_risky = None;
                    }
                }
                TargetItem::Unit(u, _) => {
                    let unit = &units[*u];
                    if unit.trust.is_user_controlled() {
                        last_risky = Some((i, unit.id.to_string(), unit.trust));
                    } else if unit.unconditional {
                        last_risky = None;
                    }
                }
            }
        }
        if let Some((i, name, trust)) = last_risky {
            let item_pointer = format!("{}/{i}", push_pointer(pointer, "system"));
            let is_note = units
                .iter()
                .any(|u| *u.id == *name && u.kind == BlockKind::Note);
            let hint = if is_note {
                format!(
                    "place `{name}` in `user` (the last user message), or follow it with an ungated trusted note"
                )
            } else {
                format!(
                    "follow `{name}` with an ungated block or note of trust \"author\" or \"platform\""
                )
            };
            self.error(
                "trailing-user-text",
                &item_pointer,
                false,
                format!(
                    "{}-controlled `{name}` can end the system text of target `{}`",
                    trust.as_str(),
                    target.id
                ),
                Some(hint),
            );
        }
    }
}

/// The last user-controlled unit of a list that is not followed by an unconditional trusted unit.
fn trailing_user_controlled<'u>(units: &[(usize, &'u Unit)]) -> Option<(usize, &'u Unit)> {
    let mut risky = None;
    for &(i, unit) in units {
        if unit.trust.is_user_controlled() {
            risky = Some((i, unit));
        } else if unit.unconditional {
            risky = None;
        }
    }
    risky
}

fn unit_noun(unit: &Unit) -> &'static str {
    if unit.kind == BlockKind::Note {
        "note"
    } else {
        "block"
    }
}

/// The stability and trust of a variable path, or `None` if it names nothing known.
fn classify(path: &str, declared: &BTreeMap<String, VariableSpec>) -> Option<VariableSpec> {
    let mut parts = path.split('.');
    let root = parts.next()?;
    if root == crate::root::VARIABLES {
        return match parts.next() {
            Some(name) => declared.get(name).cloned(),
            // `variables` as a whole (e.g. `variables[name]`): as volatile and untrusted as any.
            None => Some(VariableSpec {
                stability: if declared
                    .values()
                    .any(|v| v.stability == Stability::Volatile)
                {
                    Stability::Volatile
                } else {
                    Stability::Stable
                },
                trust: declared
                    .values()
                    .map(|v| v.trust)
                    .max()
                    .unwrap_or(Trust::Platform),
                shape: None,
                default: None,
                description: None,
            }),
        };
    }
    Root::from_name(root).map(|r| VariableSpec {
        stability: r.stability(),
        trust: r.trust(),
        shape: None,
        default: None,
        description: None,
    })
}

fn unknown_variable(
    path: &str,
    declared: &BTreeMap<String, VariableSpec>,
) -> (String, Option<String>) {
    let mut parts = path.split('.');
    let root = parts.next().unwrap_or(path);
    if root == crate::root::VARIABLES {
        let name = parts.next().unwrap_or_default();
        let names: Vec<String> = declared.keys().cloned().collect();
        let hint = suggest(name, &names).or_else(|| {
            Some(format!(
                "declare it under [variables.{name}] with its stability and trust"
            ))
        });
        return (format!("unknown variable `variables.{name}`"), hint);
    }
    let mut roots: Vec<String> = Root::ALL.iter().map(|r| r.name().to_owned()).collect();
    roots.push(crate::root::VARIABLES.into());
    (format!("unknown variable `{root}`"), suggest(root, &roots))
}
