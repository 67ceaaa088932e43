//! The block: one piece of text the model may read, with full provenance.
//!
//! Rendering, `explain`, lint, fingerprints and (later) the cache planner all read the same
//! [`Block`]s, so what is reported is always what was sent.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::diagnostic::Location;
use crate::spec::{BlockKind, Placement, Stability, Trust};
use crate::tokens::{Counting, TokenCount, TokenCounter};

/// One block of an assembly.
///
/// Its token count is made when first asked for ([`Block::tokens`], or serialising the block),
/// through the agent's memoised counter: an assembly that nobody asks about tokens tokenises
/// nothing.
#[derive(Debug, Clone)]
pub struct Block {
    /// The id from the spec.
    pub id: Arc<str>,
    /// What the block is.
    pub kind: BlockKind,
    /// Who controls its text.
    pub trust: Trust,
    /// Whether it may change between the sends of a thread.
    pub stability: Stability,
    /// Whether it is part of the body or placed by targets (notes and target-only blocks).
    pub placement: Placement,
    /// Where its text came from.
    pub origin: Arc<Origin>,
    /// Included, or excluded with the reason.
    pub state: BlockState,
    /// Whether its text is the default, replaced, or switched off.
    pub override_state: OverrideState,
    /// The variant whose text was used, if a variant's gate matched.
    pub variant: Option<String>,
    /// The rendered text (empty when excluded).
    pub text: String,
    /// The byte range of the text in the assembly's `full` body text (body blocks only).
    pub range: Option<Range<usize>>,
    /// The token count of the text, made on first request.
    pub(crate) tokens: LazyTokens,
}

impl Block {
    /// Whether the block's text is part of the output.
    pub fn is_included(&self) -> bool {
        matches!(self.state, BlockState::Included)
    }

    /// The token count of the text (zero when excluded), counted on first request and memoised
    /// by text in the agent's counter.
    pub fn tokens(&self) -> TokenCount {
        self.tokens.get(&self.text)
    }
}

impl Serialize for Block {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("Block", 12)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("kind", &self.kind)?;
        out.serialize_field("trust", &self.trust)?;
        out.serialize_field("stability", &self.stability)?;
        out.serialize_field("placement", &self.placement)?;
        out.serialize_field("origin", &self.origin)?;
        out.serialize_field("state", &self.state)?;
        out.serialize_field("override", &self.override_state)?;
        match &self.variant {
            Some(variant) => out.serialize_field("variant", variant)?,
            None => out.skip_field("variant")?,
        }
        out.serialize_field("text", &self.text)?;
        match &self.range {
            Some(range) => out.serialize_field("range", range)?,
            None => out.skip_field("range")?,
        }
        out.serialize_field("tokens", &self.tokens())?;
        out.end()
    }
}

/// What one assembly decided for one block: whether it is in, the variant, and where its text
/// lies. The public [`Block`] is made from it, its unit and that text only when first asked for
/// (`Assembly::blocks`), so an assembly that is only composed copies no id, origin or text per
/// block and counts nothing.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// Where the block comes from.
    pub source: Source,
    /// In, or why not.
    pub status: Status,
    /// The variant whose text was used, by its place among the unit's variants.
    pub variant: Option<usize>,
    /// Where the text lies.
    pub span: Span,
    /// The token count, when a limit made it known.
    pub tokens: Option<TokenCount>,
}

/// Where a block comes from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// A unit of the agent, by its place among the units.
    Unit(usize),
    /// An injected block of a stage, whole but for its text, range and count.
    Injected(Box<Block>),
}

/// Whether a block is in the output; the reasons a unit's block is left out most often are kept
/// without text, the others as the public [`Exclusion`] says them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    Included,
    /// Its unit's gate was false.
    GateFalse,
    /// It rendered empty.
    Empty,
    /// Another reason.
    Excluded(Exclusion),
}

/// Where a block's text lies in the texts of its half.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Span {
    /// No text (an excluded block).
    None,
    /// This byte range of the half's body text.
    Body(Range<usize>),
    /// This byte range of the half's text of target-placed blocks and notes, which are not
    /// joined into the body.
    Placed(Range<usize>),
}

impl Verdict {
    /// A block left out, with no text.
    pub(crate) fn excluded(source: Source, status: Status) -> Self {
        Self {
            source,
            status,
            variant: None,
            span: Span::None,
            tokens: None,
        }
    }

    /// Whether the block's text is part of the output.
    pub(crate) fn is_included(&self) -> bool {
        self.status == Status::Included
    }

    /// The block's text, from the half's body text and its placed text.
    pub(crate) fn text<'t>(&self, body: &'t str, placed: &'t str) -> &'t str {
        match &self.span {
            Span::None => "",
            Span::Body(range) => &body[range.clone()],
            Span::Placed(range) => &placed[range.clone()],
        }
    }
}

/// A block's token count: known, or made from its text on first request.
#[derive(Clone)]
pub(crate) enum LazyTokens {
    /// A count already known (an excluded block's zero, a count a limit needed).
    Known(TokenCount),
    /// A count `counter` makes from the block's text when first asked for, then kept.
    Counted {
        value: OnceLock<TokenCount>,
        counter: Arc<TokenCounter>,
        counting: Counting,
    },
}

impl LazyTokens {
    /// A count already known.
    pub(crate) fn known(count: TokenCount) -> Self {
        LazyTokens::Known(count)
    }

    /// A count `counter` makes from the block's text when first asked for.
    pub(crate) fn counted_by(counter: Arc<TokenCounter>, counting: Counting) -> Self {
        LazyTokens::Counted {
            value: OnceLock::new(),
            counter,
            counting,
        }
    }

    fn get(&self, text: &str) -> TokenCount {
        match self {
            LazyTokens::Known(count) => *count,
            LazyTokens::Counted {
                value,
                counter,
                counting,
            } => *value.get_or_init(|| counter.count(*counting, text)),
        }
    }
}

impl std::fmt::Debug for LazyTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = match self {
            LazyTokens::Known(count) => Some(count),
            LazyTokens::Counted { value, .. } => value.get(),
        };
        match count {
            Some(count) => count.fmt(f),
            None => f.write_str("(not counted yet)"),
        }
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
