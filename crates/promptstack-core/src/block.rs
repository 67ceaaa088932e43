//! The block: one piece of text the model may read, with full provenance.
//!
//! Rendering, `explain`, lint, fingerprints and (later) the cache planner all read the same
//! [`Block`]s, so what is reported is always what was sent.

use std::ops::Range;

use serde::Serialize;

use crate::spec::{BlockKind, Location, Placement, Stability, Trust};
use crate::tokens::TokenCount;

/// One block of an assembly.
#[derive(Debug, Clone, Serialize)]
pub struct Block {
    /// The id from the spec.
    pub id: std::sync::Arc<str>,
    /// What the block is.
    pub kind: BlockKind,
    /// Who controls its text.
    pub trust: Trust,
    /// Whether it may change between the sends of a thread.
    pub stability: Stability,
    /// Whether it is part of the body or placed by targets (notes and target-only blocks).
    pub placement: Placement,
    /// Where its text came from.
    pub origin: std::sync::Arc<Origin>,
    /// Included, or excluded with the reason.
    pub state: BlockState,
    /// Whether its text is the default, replaced, or switched off.
    #[serde(rename = "override")]
    pub override_state: OverrideState,
    /// The variant whose text was used, if a variant's gate matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The rendered text (empty when excluded).
    pub text: String,
    /// The byte range of the text in the assembly's `full` body text (body blocks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range<usize>>,
    /// The token count of the text.
    pub tokens: TokenCount,
}

impl Block {
    /// Whether the block's text is part of the output.
    pub fn is_included(&self) -> bool {
        matches!(self.state, BlockState::Included)
    }
}

/// Where a block's text came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// Declared in the agent spec.
    Spec {
        /// The key path in the spec, e.g. `blocks[3]`.
        path: String,
        /// The position of the declaration.
        #[serde(skip_serializing_if = "Option::is_none")]
        location: Option<Location>,
    },
    /// Built by the platform (the date and time preamble, the closer after tenant text).
    Platform {
        /// The builder's name.
        builder: &'static str,
    },
    /// The tenant's settings (its instructions).
    Tenant,
    /// A capability's guidance: a built-in text, or a registry manifest's fragment.
    Capability {
        /// The capability's slug.
        slug: String,
        /// Whether it came from a registry manifest.
        registry: bool,
    },
}

impl Origin {
    /// `file:line` (or the key path when the position is unknown), for tables.
    pub fn short(&self) -> String {
        match self {
            Origin::Spec {
                location: Some(l), ..
            } => format!("{}:{}", l.file, l.line),
            Origin::Spec {
                path,
                location: None,
            } => path.clone(),
            Origin::Platform { builder } => format!("platform: {builder}"),
            Origin::Tenant => "tenant settings".to_owned(),
            Origin::Capability {
                slug,
                registry: false,
            } => format!("capability {slug} (built-in)"),
            Origin::Capability {
                slug,
                registry: true,
            } => format!("capability {slug} (registry)"),
        }
    }
}

/// Whether a block is in the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BlockState {
    /// The text is part of the output.
    Included,
    /// The text is not part of the output.
    Excluded {
        /// Why.
        reason: Exclusion,
    },
}

/// Why a block is not in the output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "cause", rename_all = "snake_case")]
pub enum Exclusion {
    /// Its gate evaluated to false.
    Gate {
        /// The gate expression.
        when: String,
    },
    /// Its text rendered empty (or only whitespace).
    Empty,
    /// An override switched it off.
    Override {
        /// The configuration key that did.
        key: String,
    },
    /// Hidden in the active prompt by a per-prompt switch.
    Scope {
        /// The active prompt (`main` or a subagent).
        prompt: String,
    },
    /// It belongs to a prompt that is not active on this send.
    OtherPrompt {
        /// The active prompt.
        active: String,
    },
    /// Not shipped for a reason outside the spec (e.g. the tenant switched its instructions off).
    Disabled {
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for Exclusion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exclusion::Gate { when } => write!(f, "gate false: {when}"),
            Exclusion::Empty => f.write_str("rendered empty"),
            Exclusion::Override { key } => write!(f, "switched off by {key}"),
            Exclusion::Scope { prompt } => write!(f, "hidden in the {prompt} prompt"),
            Exclusion::OtherPrompt { active } => write!(f, "the active prompt is {active}"),
            Exclusion::Disabled { reason } => f.write_str(reason),
        }
    }
}

/// Whether a block's text is the default or was overridden.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OverrideState {
    /// The text the spec (or the platform) ships.
    #[default]
    Default,
    /// Replaced by configuration.
    Custom,
    /// Switched off by configuration.
    Off,
    /// The override was malformed, so the default text ships.
    FallbackAfterMalformed,
}

impl OverrideState {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            OverrideState::Default => "default",
            OverrideState::Custom => "custom",
            OverrideState::Off => "off",
            OverrideState::FallbackAfterMalformed => "fallback",
        }
    }
}
