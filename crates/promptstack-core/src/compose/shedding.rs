//! Token budgets: shedding blocks so that a target's composed text fits its budget.
//!
//! A target may declare a total `budget` in tokens (its system text and user-slot notes, counted
//! as the sum of their blocks' token counts). When a composition is over it, blocks are shed in
//! a fixed order — volatile before stable (so the cached prefix survives), lower `priority`
//! first, later before earlier — until it fits; `pinned` blocks are never shed, nor is the trusted
//! block that closes a system text after user-controlled text (shedding it would let user text
//! trail). Each shed block is named in a diagnostic with its tokens. Without a budget nothing
//! here runs.

use std::ops::Range;

use serde::Serialize;

use crate::assemble::Assembly;
use crate::compose::{Composition, Part, Slot};
use crate::diagnostic::Diagnostic;
use crate::ir::CompiledTarget;
use crate::spec::Stability;

/// A block as the shedding order sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its tokens.
    pub tokens: u32,
    /// Its priority (lower is shed first).
    pub priority: i32,
    /// Never shed.
    pub pinned: bool,
    /// Volatile blocks are shed before stable ones.
    pub volatile: bool,
}

/// The indices of the candidates to shed, in shedding order, so that the rest fits `budget`.
///
/// Deterministic. If the pinned candidates alone exceed the budget, every other candidate is
/// shed and the result still does not fit; otherwise it always fits.
pub fn choose(candidates: &[Candidate], budget: u32) -> Vec<usize> {
    let mut total: u64 = candidates.iter().map(|c| u64::from(c.tokens)).sum();
    let mut order: Vec<usize> = (0..candidates.len())
        .filter(|&i| !candidates[i].pinned)
        .collect();
    order.sort_by_key(|&i| {
        let c = candidates[i];
        (!c.volatile, c.priority, std::cmp::Reverse(i))
    });
    let mut shed = Vec::new();
    for i in order {
        if total <= u64::from(budget) {
            break;
        }
        total -= u64::from(candidates[i].tokens);
        shed.push(i);
    }
    shed
}

/// A block shed from a composition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shed {
    /// The block or note id.
    pub id: std::sync::Arc<str>,
    /// Its tokens.
    pub tokens: u32,
    /// Why it was shed: the budget it did not fit and its place in the shedding order, e.g.
    /// `shed to fit the budget of 40 tokens (volatile, priority 0)`.
    pub reason: String,
}

/// Sheds blocks from a composition over its target's budget.
pub(crate) fn fit(
    assembly: &Assembly,
    plan: &CompiledTarget,
    mut composition: Composition,
) -> Composition {
    let Some(budget) = plan.budget else {
        return composition;
    };
    let tokens = |part: &Part| assembly.block(&part.id).map_or(0, |b| b.tokens.count);
    let shedding = |part: &Part| {
        plan.shedding
            .iter()
            .find(|(id, _, _)| *id == part.id)
            .map_or((0, false), |&(_, priority, pinned)| (priority, pinned))
    };
    // The trusted closer after the last user-controlled system part stays.
    let system: Vec<usize> = (0..composition.parts.len())
        .filter(|&i| composition.parts[i].slot == Slot::System)
        .collect();
    let closer = system.last().copied().filter(|&last| {
        system
            .iter()
            .any(|&i| i < last && composition.parts[i].trust.is_user_controlled())
    });
    let candidates: Vec<Candidate> = composition
        .parts
        .iter()
        .enumerate()
        .map(|(i, part)| {
            let (priority, pinned) = shedding(part);
            Candidate {
                tokens: tokens(part),
                priority,
                pinned: pinned || Some(i) == closer,
                volatile: part.stability == Stability::Volatile,
            }
        })
        .collect();
    let total: u64 = candidates.iter().map(|c| u64::from(c.tokens)).sum();
    if total <= u64::from(budget) {
        return composition;
    }
    let shed = choose(&candidates, budget);
    let mut remaining = total;
    for &i in &shed {
        let part = &composition.parts[i];
        remaining -= u64::from(candidates[i].tokens);
        composition.diagnostics.push(
            Diagnostic::warning(
                "shed-block",
                format!(
                    "`{}` ({} tokens) was shed to fit the budget of {budget} tokens of target `{}`",
                    part.id, candidates[i].tokens, composition.target
                ),
            )
            .subject(&*part.id)
            .hint("raise the target's `budget`, or give the block a higher `priority` or `pinned = true`"),
        );
        composition.shed.push(Shed {
            id: part.id.clone(),
            tokens: candidates[i].tokens,
            reason: format!(
                "shed to fit the budget of {budget} tokens ({}, priority {})",
                if candidates[i].volatile {
                    "volatile"
                } else {
                    "stable"
                },
                candidates[i].priority
            ),
        });
    }
    if remaining > u64::from(budget) {
        composition.diagnostics.push(
            Diagnostic::error(
                "over-budget",
                format!(
                    "target `{}` needs {remaining} tokens for pinned blocks alone; its budget is {budget}",
                    composition.target
                ),
            )
            .hint("raise the budget or unpin blocks"),
        );
    }
    let keep = |i: usize| !shed.contains(&i);
    let (system, system_parts, stable_prefix) = rejoin(&composition, Slot::System, &keep);
    let (user, user_parts, _) = rejoin(&composition, Slot::User, &keep);
    composition.system = system;
    composition.user = user;
    composition.stable_prefix = stable_prefix;
    composition.parts = system_parts.into_iter().chain(user_parts).collect();
    composition
}

/// One slot's text without the shed parts. Each kept part keeps the separator that preceded it.
fn rejoin(
    composition: &Composition,
    slot: Slot,
    keep: &dyn Fn(usize) -> bool,
) -> (String, Vec<Part>, usize) {
    let source = match slot {
        Slot::System => &composition.system,
        Slot::User => &composition.user,
    };
    let mut text = String::with_capacity(source.len());
    let mut parts = Vec::new();
    let mut previous_end: Option<usize> = None;
    for (i, part) in composition.parts.iter().enumerate() {
        if part.slot != slot {
            continue;
        }
        let gap: Range<usize> = previous_end.unwrap_or(part.range.start)..part.range.start;
        previous_end = Some(part.range.end);
        if !keep(i) {
            continue;
        }
        if !parts.is_empty() {
            text.push_str(&source[gap]);
        }
        let start = text.len();
        text.push_str(&source[part.range.clone()]);
        parts.push(Part {
            range: start..text.len(),
            ..part.clone()
        });
    }
    let stable_prefix = parts
        .iter()
        .find(|p| p.stability == Stability::Volatile)
        .map_or(text.len(), |p| p.range.start);
    (text, parts, stable_prefix)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn candidate() -> impl Strategy<Value = Candidate> {
        (0u32..500, -3i32..3, any::<bool>(), any::<bool>()).prop_map(
            |(tokens, priority, pinned, volatile)| Candidate {
                tokens,
                priority,
                pinned,
                volatile,
            },
        )
    }

    proptest! {
        /// Shedding never drops a pinned block, fits whenever the pinned blocks fit, and is
        /// deterministic.
        #[test]
        fn shedding_fits_when_possible(
            candidates in prop::collection::vec(candidate(), 0..30),
            budget in 0u32..4000,
        ) {
            let shed = choose(&candidates, budget);
            prop_assert_eq!(&shed, &choose(&candidates, budget));
            for &i in &shed {
                prop_assert!(!candidates[i].pinned);
            }
            let kept: u64 = (0..candidates.len())
                .filter(|i| !shed.contains(i))
                .map(|i| u64::from(candidates[i].tokens))
                .sum();
            let pinned: u64 = candidates.iter().filter(|c| c.pinned).map(|c| u64::from(c.tokens)).sum();
            if pinned <= u64::from(budget) {
                prop_assert!(kept <= u64::from(budget));
            }
            // Nothing is shed from a composition that already fits.
            let total: u64 = candidates.iter().map(|c| u64::from(c.tokens)).sum();
            if total <= u64::from(budget) {
                prop_assert!(shed.is_empty());
            }
            // A stable block is shed only once every unpinned volatile block is.
            if let Some(first_stable) = shed.iter().position(|&i| !candidates[i].volatile) {
                let volatile_left = (0..candidates.len()).any(|i| {
                    candidates[i].volatile && !candidates[i].pinned && !shed[..first_stable].contains(&i)
                });
                prop_assert!(!volatile_left);
            }
        }
    }
}
