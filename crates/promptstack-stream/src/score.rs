//! The eval scorer: counts citations with the very parser the runtime uses.
//!
//! [`score`] runs a [`Processor`] over the text and reads the counts it kept while deciding, so a
//! marker counts here exactly when the runtime would have treated it as a citation: code, link
//! text, link targets and definitions never count, and a marker is resolved exactly when the
//! runtime rendered it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::SourceSnapshot;
use crate::{Processor, StreamConfig};

/// Counts of one citation form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CitationCounts {
    /// Markers rendered as citations.
    pub resolved: u32,
    /// Markers that named no number the registry holds: removed when part of a run (and all
    /// native ones), literal otherwise.
    pub unresolved: u32,
}

/// How a text cites its sources.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CitationScore {
    /// ASCII markers `[N]` and `[N, M]`; resolved when at least one of its numbers resolved.
    pub ascii: CitationCounts,
    /// Provider-native (fullwidth bracket) shapes `【N】`, `【N†title】`, `【N:M†source】`. A
    /// native shape counts as resolved when at least one of its numbers resolved.
    pub native: CitationCounts,
    /// Citation runs written (one placeholder each).
    pub runs: u32,
    /// The distinct source numbers cited, ascending.
    pub sources: Vec<u32>,
    /// The distinct numbers cited that the registry does not hold, ascending.
    pub unresolved_sources: Vec<u32>,
    /// Widget tags removed from the text, by declared name (only with a declared
    /// [`WidgetSet`](crate::WidgetSet); omitted from JSON when none was found).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub widgets: BTreeMap<String, u32>,
}

impl CitationScore {
    /// All resolved markers, both forms.
    pub fn resolved(&self) -> u32 {
        self.ascii.resolved + self.native.resolved
    }

    /// All unresolved markers, both forms.
    pub fn unresolved(&self) -> u32 {
        self.ascii.unresolved + self.native.unresolved
    }
}

/// Scores `text` against `sources`.
pub fn score(text: &str, sources: &SourceSnapshot) -> CitationScore {
    score_with(text, sources, StreamConfig::default())
}

/// Scores `text` against `sources` as a processor with `config` reads it: with a declared
/// [`WidgetSet`](crate::WidgetSet), the score also counts the widget tags used, by name.
pub fn score_with(text: &str, sources: &SourceSnapshot, config: StreamConfig) -> CitationScore {
    let mut processor = Processor::new(sources, config);
    let mut sink = String::with_capacity(text.len());
    processor.push_into(text, &mut sink);
    processor.finish_into(&mut sink);
    processor.score()
}

impl Processor {
    /// The citations decided so far, counted the way [`score`] counts them.
    pub fn score(&self) -> CitationScore {
        let tally = &self.tally;
        CitationScore {
            ascii: tally.ascii,
            native: tally.native,
            runs: tally.runs,
            sources: self.cited(),
            unresolved_sources: tally.unresolved.iter().copied().collect(),
            widgets: tally.widgets.clone(),
        }
    }
}

/// The outcome of a `min_citations` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MinCitations {
    /// Whether the text cited at least `required` times.
    pub passed: bool,
    /// Resolved citation markers found (both forms).
    pub found: u32,
    /// The minimum asked for.
    pub required: u32,
}

/// Checks that `text` holds at least `required` resolved citation markers.
///
/// Unresolved markers do not count: a citation the reader cannot follow is not a citation.
pub fn min_citations(text: &str, sources: &SourceSnapshot, required: u32) -> MinCitations {
    let found = score(text, sources).resolved();
    MinCitations {
        passed: found >= required,
        found,
        required,
    }
}

/// The tool calls of one budget class in a recorded turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ClassCallScore {
    /// Calls of the class's tools.
    pub calls: u32,
    /// Calls that ran (each charged to the class).
    pub executed: u32,
    /// Calls that reused an identical call's execution.
    pub deduplicated: u32,
    /// Calls refused because the budget was used up.
    pub refused: u32,
    /// Whether the budget ran out this turn (a call used the last allowed call, or was refused).
    pub exhausted: bool,
}

/// How a turn used its tools, counted from the runtime's own record of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ToolCallScore {
    /// Every call.
    pub calls: u32,
    /// Calls per tool name.
    pub per_tool: BTreeMap<String, u32>,
    /// Calls per budget class (budgeted tools only).
    pub per_class: BTreeMap<String, ClassCallScore>,
    /// Calls identical (same tool, same canonical input) to an earlier call of the turn.
    pub duplicates: u32,
    /// Calls whose tool failed.
    pub failed: u32,
    /// Calls refused by an exhausted budget, all classes.
    pub refused: u32,
}

/// Scores the tool calls of a recorded turn (see [`record`](crate::record)).
pub fn score_tool_calls(record: &crate::record::TurnRecord) -> ToolCallScore {
    use crate::record::RecordedStatus;
    let mut score = ToolCallScore::default();
    for call in &record.calls {
        score.calls += 1;
        *score.per_tool.entry(call.tool.clone()).or_default() += 1;
        score.duplicates += u32::from(call.duplicate);
        score.failed += u32::from(call.status == RecordedStatus::Failed);
        let refused = call.status == RecordedStatus::BudgetExhausted;
        score.refused += u32::from(refused);
        if let Some(class) = &call.class {
            let entry = score.per_class.entry(class.clone()).or_default();
            entry.calls += 1;
            entry.executed += u32::from(call.charged);
            entry.deduplicated += u32::from(call.deduplicated);
            entry.refused += u32::from(refused);
            entry.exhausted |= refused || call.last_allowed;
        }
    }
    score
}
