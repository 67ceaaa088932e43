//! Composing a target: the exact system text (and last-user-message notes) one engine sends.
//!
//! A target lists what its system text holds, in order: the stable half, the volatile half,
//! target-placed blocks and per-send notes. User-authored notes go to the user slot, which the
//! application prepends (or appends) to the last user message — never to the end of the system
//! text. Every preview (`render`, `explain`, "copy full prompt") is this function's output, so
//! preview and wire cannot differ.

pub(crate) mod full;
pub mod shedding;

use std::ops::Range;

use serde::{Deserialize, Serialize};

pub use full::FullPrompt;

use crate::assemble::{Assembly, Placed};
use crate::error::{Error, ErrorKind};
use crate::inject::CAPABILITY_PREFIX;
use crate::inject::manifests::is_ambient;
use crate::ir::TargetItem;
use crate::spec::{Stability, Trust, UserPosition};

/// Which text of a composition a part lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// The system text.
    #[default]
    System,
    /// The notes for the last user message.
    User,
}

impl Slot {
    /// Both slots.
    pub const ALL: [Slot; 2] = [Slot::System, Slot::User];

    /// The slot's name (`system`, `user`).
    pub fn as_str(self) -> &'static str {
        match self {
            Slot::System => "system",
            Slot::User => "user",
        }
    }

    /// What the slot holds, in a few words.
    pub fn summary(self) -> &'static str {
        match self {
            Slot::System => "The system text",
            Slot::User => "The notes for the last user message",
        }
    }
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Slot {
    type Err = UnknownName;

    fn from_str(name: &str) -> Result<Slot, UnknownName> {
        Slot::ALL
            .into_iter()
            .find(|slot| slot.as_str() == name)
            .ok_or_else(|| UnknownName::new("slot", name, Slot::ALL.map(Slot::as_str)))
    }
}

/// A name that is none of the ones a value may take (a format, a slot, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What was being named (`format`, `slot`).
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// Every name accepted.
    pub accepted: Vec<&'static str>,
}

impl UnknownName {
    /// `given` is not one of `accepted` names of a `what`.
    pub fn new(
        what: &'static str,
        given: &str,
        accepted: impl IntoIterator<Item = &'static str>,
    ) -> UnknownName {
        UnknownName {
            what,
            given: given.to_owned(),
            accepted: accepted.into_iter().collect(),
        }
    }
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} is not one of {}",
            self.what,
            self.given,
            self.accepted.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// The target to compose: the one `named`, or the only one of `ids`.
///
/// # Errors
///
/// [`SeveralTargets`] when none is named and there is not exactly one.
pub fn choose_target<'a>(
    ids: impl IntoIterator<Item = &'a str>,
    named: Option<&str>,
) -> Result<String, SeveralTargets> {
    if let Some(target) = named {
        return Ok(target.to_owned());
    }
    let ids: Vec<&str> = ids.into_iter().collect();
    match ids.as_slice() {
        [one] => Ok((*one).to_owned()),
        _ => Err(SeveralTargets {
            ids: ids.into_iter().map(str::to_owned).collect(),
        }),
    }
}

/// No target was named and the spec does not have exactly one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeveralTargets {
    /// The spec's targets.
    pub ids: Vec<String>,
}

impl SeveralTargets {
    /// The message, ending with how to name one (`choose one with --target`).
    pub fn message(&self, how: &str) -> String {
        format!(
            "this spec has several targets ({}); {how}",
            self.ids.join(", ")
        )
    }
}

/// One block's place in a composed text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Part {
    /// The block or note id.
    pub id: std::sync::Arc<str>,
    /// The text it is in.
    pub slot: Slot,
    /// Its byte range in that text.
    pub range: Range<usize>,
    /// Its stability.
    pub stability: Stability,
    /// Its trust.
    pub trust: Trust,
}

/// The texts one target sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Composition {
    /// The target's id.
    pub target: String,
    /// The system text, exactly as sent.
    pub system: String,
    /// Notes for the last user message (empty when there are none).
    pub user: String,
    /// Whether `user` goes before or after the user's own text.
    pub user_position: UserPosition,
    /// Every block's place, in order.
    pub parts: Vec<Part>,
    /// The length in bytes of the system text's leading stable run: the part a provider can cache
    /// across the sends of a thread.
    pub stable_prefix: usize,
    /// Blocks shed to fit the target's token budget, in shedding order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shed: Vec<shedding::Shed>,
    /// Findings of this composition (shed blocks, a budget pinned blocks exceed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<crate::diagnostic::Diagnostic>,
}

impl Composition {
    /// The authored text of the prompt: the system text up to its first injected part (a
    /// capability's guidance, the tenant instructions or the platform context).
    pub(crate) fn authored(&self) -> &str {
        let end = self
            .parts
            .iter()
            .take_while(|p| !p.id.starts_with(CAPABILITY_PREFIX) && !is_ambient(&p.id))
            .last()
            .map_or(0, |p| p.range.end);
        &self.system[..end]
    }

    /// The text of `slot`: the system text or the user-slot notes.
    pub fn text(&self, slot: Slot) -> &str {
        match slot {
            Slot::System => &self.system,
            Slot::User => &self.user,
        }
    }

    /// The user's message with this target's user-slot notes placed around it.
    pub fn user_message(&self, message: &str, separator: &str) -> String {
        if self.user.is_empty() {
            return message.to_owned();
        }
        match self.user_position {
            UserPosition::Before => format!("{}{separator}{message}", self.user),
            UserPosition::After => format!("{message}{separator}{}", self.user),
        }
    }
}

struct Builder<'a> {
    text: String,
    parts: Vec<Part>,
    separator: &'a str,
    slot: Slot,
    pending_separator: bool,
}

impl Builder<'_> {
    fn push_block(&mut self, block: Placed<'_>) {
        self.push_text(block.id, block.text, block.stability, block.trust);
    }

    fn push_text(
        &mut self,
        id: &std::sync::Arc<str>,
        text: &str,
        stability: Stability,
        trust: Trust,
    ) {
        if self.pending_separator {
            self.text.push_str(self.separator);
        }
        let start = self.text.len();
        self.text.push_str(text);
        self.parts.push(Part {
            id: std::sync::Arc::clone(id),
            slot: self.slot,
            range: start..self.text.len(),
            stability,
            trust,
        });
        self.pending_separator = true;
    }
}

impl Assembly {
    /// Composes the texts of one target.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::NotFound`] for an unknown target; [`ErrorKind::TrailingUserText`] if, on this
    /// send, a user-controlled part would end the system text (validation rules this out for
    /// ungated trusted closers; this check holds even if a closer rendered empty).
    pub fn compose(&self, target: &str) -> Result<Composition, Error> {
        let Some(plan) = self.agent.targets.iter().find(|t| t.id == target) else {
            let known = self
                .agent
                .targets
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            return Err(Error::new(
                ErrorKind::NotFound,
                format!("unknown target `{target}`; this spec has: {known}"),
            ));
        };
        let mut system = Builder {
            text: String::with_capacity(self.stable.text.len() + self.volatile_text.len() + 256),
            // Every block has at most one part.
            parts: Vec::with_capacity(self.stable.verdicts.len() + self.volatile.len()),
            separator: &plan.separator,
            slot: Slot::System,
            pending_separator: false,
        };
        for item in &plan.system {
            match item {
                TargetItem::Stable => {
                    if self.stable().is_empty() {
                        continue;
                    }
                    // The stable half goes in verbatim, so its bytes equal `Assembly::stable`.
                    if system.pending_separator {
                        system.text.push_str(system.separator);
                    }
                    let base = system.text.len();
                    system.text.push_str(self.stable());
                    for block in self.body(Stability::Stable) {
                        let range = block.body.unwrap_or_default();
                        system.parts.push(Part {
                            id: std::sync::Arc::clone(block.id),
                            slot: Slot::System,
                            range: base + range.start..base + range.end,
                            stability: block.stability,
                            trust: block.trust,
                        });
                    }
                    system.pending_separator = true;
                }
                TargetItem::Volatile => {
                    for block in self.body(Stability::Volatile) {
                        system.push_block(block);
                    }
                }
                TargetItem::Unit(index, _) => {
                    if let Some(block) = self.unit(*index) {
                        system.push_block(block);
                    }
                }
            }
        }
        if let Some(last) = system.parts.last()
            && last.trust.is_user_controlled()
        {
            return Err(Error::new(
                    ErrorKind::TrailingUserText,
                    format!(
                        "{}-controlled `{}` would end the system text of target `{target}` on this send",
                        last.trust.as_str(),
                        last.id
                    ),
                )
                .with_block(&*last.id));
        }
        let stable_prefix = system
            .parts
            .iter()
            .find(|p| p.stability == Stability::Volatile)
            .map_or(system.text.len(), |p| p.range.start);
        let mut user = Builder {
            text: String::new(),
            parts: Vec::new(),
            separator: &plan.separator,
            slot: Slot::User,
            pending_separator: false,
        };
        for (index, _) in &plan.user {
            if let Some(block) = self.unit(*index) {
                user.push_block(block);
            }
        }
        let mut parts = system.parts;
        parts.extend(user.parts);
        let composition = Composition {
            target: plan.id.clone(),
            system: system.text,
            user: user.text,
            user_position: plan.user_position,
            parts,
            stable_prefix,
            shed: Vec::new(),
            diagnostics: Vec::new(),
        };
        if plan.budget.is_none() {
            return Ok(composition);
        }
        Ok(shedding::fit(self, plan, composition))
    }
}
