//! The eval scorer: counts citations with the very parser the runtime uses.
//!
//! [`score`] runs a [`Processor`] over the text and reads the counts it kept while deciding, so a
//! marker counts here exactly when the runtime would have treated it as a citation: code, link
//! text, link targets and definitions never count, and a marker is resolved exactly when the
//! runtime rendered it.

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
    let mut processor = Processor::new(sources, StreamConfig::default());
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
