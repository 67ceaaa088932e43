//! The model-output pipeline: a streaming processor that turns the model's text deltas into
//! display-ready Markdown with resolved citations and one math delimiter style.
//!
//! ```text
//! deltas ─► Markdown context (code spans, fenced and indented code, link text and targets,
//!           blank lines) ─► native 【N†…】 cleanup ─► [N] runs ─► math ─► output mode
//! ```
//!
//! The crate has no template, schema or tokenizer dependency: it is usable alone, and
//! `promptstack-core` re-exports it as `promptstack_core::stream`. The sources it resolves
//! citations against ([`SourceSnapshot`]) are defined here, since the Turn's source registry
//! (in the core) writes them and the processor and the scorer read them.
//!
//! # What it does
//!
//! * **Code is never touched.** Inline code spans, fenced blocks (```` ``` ```` and `~~~`, in
//!   lists and quotes too) and indented code blocks come out byte-identical.
//! * **Native shapes are converted.** `【3】`, `【3†title】`, `【1,2】` and `【1-3】` name our
//!   source numbers, so each becomes a citation of the sources the registry holds, joining any
//!   adjacent `[N]` run; numbers the registry does not hold are dropped. A native shape with
//!   nothing left to cite — including the file-search shape `【4:0†source】`, whose numbers are
//!   the provider's own positions — is removed, together with one space before it when it
//!   stands mid-line, so no provider syntax ever reaches the screen. Digits are required after
//!   `【`: real CJK bracket text passes through untouched. Inside link text native shapes are
//!   removed (a link inside a link is not Markdown).
//! * **`[N]` runs.** Adjacent markers — `[1][2]`, `[1] [2]` (up to three spaces between),
//!   `[1, 2]` — form one run, written as one placeholder plus a [`CitationMap`] entry, or as
//!   Markdown links (see [`OutputMode`]). A marker is a citation when one of its numbers is in
//!   the registry; numbers the registry does not hold are dropped from the run (and counted as
//!   unresolved), so `[1][99][2]` is one run of sources 1 and 2. A marker naming only unknown
//!   numbers joins a run that goes on to cite a known source (`[99][1]`), and otherwise stays
//!   literal (`[2024]`). Markers are left alone inside code, inside link text
//!   (`[see [1]](…)`, anything between an unclosed `[` and its `]` within a paragraph), as link
//!   text (`[1](https://…)`), as a reference label (`[text][1]`), after `!`, and as a
//!   definition (`[1]: https://…` at the start of a line). Runs never span a line break.
//!   Footnotes (`[^1]`) are not citations.
//! * **Math.** `\(…\)` becomes `$…$`; `\[…\]` becomes a `$$` block on its own lines when it
//!   fills its line, and inline `$…$` when it starts or ends mid-line (a `$$` fence in the middle
//!   of a paragraph would break it). `$$…$$` filling its line becomes the same block. A `$`
//!   before a digit is a currency sign, escaped as `\$`, unless the next `$` on its line closes
//!   a formula (it follows a non-space and no digit follows it): `$5 and $10` are prices,
//!   `$2^n$` is math. Formulas are left alone in code and link targets; an unclosed or empty
//!   formula stays literal.
//! * **Widget tags.** With names declared in [`StreamConfig::widgets`] (bare, `chart`, or
//!   namespaced, `widget:map`), a complete `<name attr="…"/>` or `<name …></name>` in prose is
//!   removed and reported as a [`Widget`] (name as declared, attributes, output offset).
//!   Half-streamed tags wait; as soon as a declared name is complete and followed by a space, a
//!   tab or `/`, a [`WidgetEvent::Start`] says a widget is loading, and the widget or a
//!   [`WidgetEvent::Cancel`] follows. Malformed tags and tags longer than [`WIDGET_MAX`] stay
//!   text, and code and links are never parsed.
//!
//! # Streaming guarantees
//!
//! **Chunking invariance:** for every split of a text into deltas, the concatenated output (and
//! the citation map) equals that of the whole text pushed at once. With
//! [`Processor::push_bytes_into`] this holds for splits inside multi-byte characters as well.
//!
//! **Bounded lookahead:** output is released as soon as it is decided. The processor holds back
//! at most [`MAX_LOOKAHEAD`] bytes of input: a formula waiting for its closing delimiter (up to
//! 4000 bytes), a native shape waiting for `】` (up to 256 bytes), a `[N]` marker (up to 64
//! bytes), the markers after one of unknown numbers (up to 512 bytes), the text after a `$`
//! before a digit (up to 256 bytes), a widget tag (up to 4000 bytes), the character after a
//! marker or `]`, the spaces after a citation run, and one trailing space (which a removed native
//! shape would take with it). Code is never held back.
//!
//! **Bounded output:** links written and citation runs held are bounded by [`StreamConfig`];
//! past a bound the output stops and [`Processor::overflow`] says where.
//!
//! **The text so far** is what has been released: it never ends in a half-written construct (a
//! partial widget tag or a prefix of a declared name, a `[1`, a `【`, an open formula), and it
//! is always a prefix of the final output. [`process_partial`] gives it for a text that is still
//! streaming, with the widgets done and the one loading, for a UI that re-renders the whole
//! message on every delta.
//!
//! # Known approximations
//!
//! The Markdown tracking is deliberately lightweight. An unclosed backtick run is treated as a
//! code span until the paragraph ends, and an unclosed `[` as link text until the paragraph ends;
//! both err on the side of leaving text alone. A backtick line is always a fence opener, even
//! with a backtick in its info string. HTML (`<code>…</code>`) and bare URLs are not tracked.
//!
//! # Example
//!
//! ```
//! use promptstack_stream::{Processor, Source, SourceSnapshot, StreamConfig};
//!
//! let sources = SourceSnapshot {
//!     sources: vec![Source { index: 1, url: "https://a.example/".into(), title: None }],
//! };
//! let mut processor = Processor::new(&sources, StreamConfig::default());
//! let mut text = String::new();
//! for delta in ["Rust is fast [", "1]【", "1†a】 and `[1]` is code, \\(x", "^2\\)."] {
//!     text.push_str(&processor.push(delta).text);
//! }
//! text.push_str(&processor.finish().text);
//! assert_eq!(text, "Rust is fast {{cite:1}} and `[1]` is code, $x^2$.");
//! assert_eq!(processor.citations().get(1).unwrap().sources, [1]);
//! ```

mod markdown;
mod marker;
mod math;
mod native;
mod output;
pub mod record;
mod score;
mod source;
mod widget;

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

use std::collections::{BTreeMap, BTreeSet};

pub use output::{Citation, CitationMap, OutputMode};
pub use score::{
    CitationCounts, CitationScore, ClassCallScore, MinCitations, ToolCallScore, min_citations,
    score, score_tool_calls, score_with,
};
pub use source::{Source, SourceSnapshot};
pub use widget::{WIDGET_MAX, Widget, WidgetEvent, WidgetNameError, WidgetSet, WidgetStart};

use output::SourceTable;

/// The most input bytes the processor ever holds back while deciding.
pub const MAX_LOOKAHEAD: usize = 4096;

/// The default of [`StreamConfig::max_link_bytes`]: 16 MiB of Markdown links per text.
pub const DEFAULT_MAX_LINK_BYTES: u64 = 16 * 1024 * 1024;

/// The default of [`StreamConfig::max_citation_runs`]: a million runs held in the citation map.
pub const DEFAULT_MAX_CITATION_RUNS: usize = 1_000_000;

/// How the processor writes its output, and the bounds on what it writes.
///
/// Build one with [`StreamConfig::new`] and the `with_…` methods; [`Default`] gives placeholder
/// mode with the default bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamConfig {
    /// Placeholders plus a citation map, or Markdown links.
    pub mode: OutputMode,
    /// The most bytes of Markdown links written over the whole stream ([`OutputMode::Links`]).
    /// A run of links is a source's URL and title per source, so a long URL cited many times
    /// multiplies the output; past this bound the processor stops (see [`Processor::overflow`]).
    pub max_link_bytes: u64,
    /// The most citation runs the [citation map](Processor::citations) holds at once
    /// ([`OutputMode::Placeholders`]); [`Processor::take_citations`] empties it. Past this
    /// bound the processor stops (see [`Processor::overflow`]).
    pub max_citation_runs: usize,
    /// The widget tags to parse out of the text (none by default); see [`Widget`].
    pub widgets: WidgetSet,
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self::new(OutputMode::default())
    }
}

impl StreamConfig {
    /// A configuration writing citations in `mode`, with the default bounds.
    pub fn new(mode: OutputMode) -> Self {
        Self {
            mode,
            max_link_bytes: DEFAULT_MAX_LINK_BYTES,
            max_citation_runs: DEFAULT_MAX_CITATION_RUNS,
            widgets: WidgetSet::default(),
        }
    }

    /// Sets the [widget tags](Self::widgets) to parse.
    pub fn with_widgets(mut self, widgets: WidgetSet) -> Self {
        self.widgets = widgets;
        self
    }

    /// Sets [`max_link_bytes`](Self::max_link_bytes).
    pub fn with_max_link_bytes(mut self, bytes: u64) -> Self {
        self.max_link_bytes = bytes;
        self
    }

    /// Sets [`max_citation_runs`](Self::max_citation_runs).
    pub fn with_max_citation_runs(mut self, runs: usize) -> Self {
        self.max_citation_runs = runs;
        self
    }
}

/// A bound of [`StreamConfig`] that the output reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OverflowKind {
    /// [`StreamConfig::max_link_bytes`].
    LinkBytes,
    /// [`StreamConfig::max_citation_runs`].
    CitationRuns,
}

/// Where the processor stopped because its output would have passed a bound.
///
/// The output ends just before the citation run that would have passed it; nothing after it is
/// written, whatever is pushed later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overflow {
    /// Which bound.
    pub kind: OverflowKind,
    /// The bound's value.
    pub limit: u64,
    /// The input byte (counted in the UTF-8 text after repairs) where the run that passed it
    /// ends.
    pub at: u64,
}

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.kind {
            OverflowKind::LinkBytes => write!(
                f,
                "at input byte {}: the Markdown links would pass {} bytes",
                self.at, self.limit
            ),
            OverflowKind::CitationRuns => write!(
                f,
                "at input byte {}: the citation map would pass {} runs",
                self.at, self.limit
            ),
        }
    }
}

impl std::error::Error for Overflow {}

/// The output released by one [`Processor::push`] or [`Processor::finish`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Segment {
    /// Display-ready text, to append to what was released before.
    pub text: String,
    /// The citation runs whose placeholders appear in `text` (placeholder mode only).
    pub citations: CitationMap,
    /// What the input that produced `text` decided about widget tags, in order: starts, widgets
    /// removed, cancels.
    pub widget_events: Vec<WidgetEvent>,
}

/// The source numbers named by one marker, stored inline: markers are short (at most 16 numbers),
/// and allocating per marker would dominate the cost of citation-dense text.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Indices {
    len: u8,
    items: [u32; Indices::CAP],
}

impl Indices {
    pub(crate) const CAP: usize = 16;

    pub(crate) fn new() -> Self {
        Self {
            len: 0,
            items: [0; Self::CAP],
        }
    }

    /// Appends `index`; false when full.
    pub(crate) fn push(&mut self, index: u32) -> bool {
        if usize::from(self.len) == Self::CAP {
            return false;
        }
        self.items[usize::from(self.len)] = index;
        self.len += 1;
        true
    }

    pub(crate) fn as_slice(&self) -> &[u32] {
        &self.items[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for Indices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// The result of a parse step that may need more input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parse<T> {
    /// The buffer ended before the construct could be decided.
    Incomplete,
    /// The text is not this construct.
    No,
    /// The construct, recognised.
    Yes(T),
}

/// The streaming processor: push text deltas, take output, [`finish`](Processor::finish) at the
/// end. Pure and deterministic; see the [module docs](self) for the rules and guarantees.
#[derive(Debug, Clone)]
pub struct Processor {
    table: SourceTable,
    mode: OutputMode,
    /// Input received but not yet decided (at most [`MAX_LOOKAHEAD`] bytes).
    pending: String,
    /// The first bytes of a character split across [`push_bytes_into`](Self::push_bytes_into) calls.
    carry: Vec<u8>,
    /// The last input byte before `pending` (0 at the start).
    prev_byte: u8,
    state: markdown::State,
    /// Whether a citation run is being collected.
    run_open: bool,
    /// The sources of the open run (the buffer is reused from run to run).
    run: Vec<u32>,
    /// Which table positions have been cited (for the scorer), indexed like the source table.
    cited: Vec<bool>,
    map: CitationMap,
    tally: Tally,
    max_link_bytes: u64,
    max_citation_runs: usize,
    /// Bytes of Markdown links written so far.
    link_bytes: u64,
    /// The input offset of the first byte of `pending` (of the scanned text, during a scan).
    consumed: u64,
    /// Set when a bound was reached; nothing is written afterwards.
    overflow: Option<Overflow>,
    /// During a scan that reached a bound: the length `out` had when it did.
    overflow_mark: Option<usize>,
    widgets: WidgetSet,
    /// Widget events decided and not yet taken.
    events: Vec<WidgetEvent>,
    /// The widget announced by the last start event, while its tag streams.
    loading: Option<WidgetStart>,
    /// Bytes of output released by earlier pushes (for widget offsets).
    output_bytes: u64,
    /// The length of the caller's `out` when the current push began.
    push_start: usize,
}

/// Running citation counts, kept by the processor and read by the scorer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub ascii: CitationCounts,
    pub native: CitationCounts,
    pub runs: u32,
    pub unresolved: BTreeSet<u32>,
    /// Widget tags removed from the text, by declared name.
    pub widgets: BTreeMap<String, u32>,
}

impl Processor {
    /// Creates a processor that resolves citations against `sources` (by number, never by
    /// position; for a number listed twice the first entry wins).
    pub fn new(sources: &SourceSnapshot, config: StreamConfig) -> Self {
        let table = SourceTable::new(sources);
        Self {
            cited: vec![false; table.len()],
            table,
            mode: config.mode,
            pending: String::new(),
            carry: Vec::new(),
            prev_byte: 0,
            state: markdown::State::default(),
            run_open: false,
            run: Vec::new(),
            map: CitationMap::default(),
            tally: Tally::default(),
            max_link_bytes: config.max_link_bytes,
            max_citation_runs: config.max_citation_runs,
            link_bytes: 0,
            consumed: 0,
            overflow: None,
            overflow_mark: None,
            widgets: config.widgets,
            events: Vec::new(),
            loading: None,
            output_bytes: 0,
            push_start: 0,
        }
    }

    /// Takes the widget events decided so far and not yet taken, in order: starts, widgets and
    /// cancels (see [`WidgetEvent`]). [`push`](Self::push) and [`finish`](Self::finish) return
    /// them in their [`Segment`]; callers of the `_into` methods take them here, as they go:
    /// events not taken accumulate.
    pub fn take_widget_events(&mut self) -> Vec<WidgetEvent> {
        std::mem::take(&mut self.events)
    }

    /// Takes the widget events decided so far and not yet taken, and returns the widgets among
    /// them, in order: for callers that draw no placeholder while a tag streams. It empties the
    /// same queue as [`take_widget_events`](Self::take_widget_events); use one or the other.
    pub fn take_widgets(&mut self) -> Vec<Widget> {
        self.events
            .drain(..)
            .filter_map(|event| match event {
                WidgetEvent::Widget(widget) => Some(widget),
                _ => None,
            })
            .collect()
    }

    /// The widget whose tag is streaming right now: announced by a [`WidgetEvent::Start`], not
    /// yet closed nor cancelled. Its offset is where the released text ends.
    pub fn loading_widget(&self) -> Option<&WidgetStart> {
        self.loading.as_ref()
    }

    /// The bound the output reached, if any: the processor has stopped there, and pushing more
    /// writes nothing.
    pub fn overflow(&self) -> Option<Overflow> {
        self.overflow
    }

    /// Replaces the sources that citations resolve against, for everything decided from now on.
    ///
    /// A Turn's registry grows while the model streams (a tool result lands between two steps
    /// of one answer). Text already released keeps its resolution; held-back text is decided
    /// against the new sources. Numbers are never renumbered, so growing the registry only
    /// turns would-be literal markers into citations.
    pub fn set_sources(&mut self, sources: &SourceSnapshot) {
        let cited = self.cited();
        self.table = SourceTable::new(sources);
        self.cited = vec![false; self.table.len()];
        for index in cited {
            if let Some(at) = self.table.position(index) {
                self.cited[at] = true;
            }
        }
    }

    /// Pushes one delta and returns what can be released now.
    pub fn push(&mut self, delta: &str) -> Segment {
        let first = self.map.len();
        let mut text = String::with_capacity(delta.len() + 16);
        self.push_into(delta, &mut text);
        Segment {
            text,
            citations: self.map.tail(first),
            widget_events: self.take_widget_events(),
        }
    }

    /// Pushes one delta and appends what can be released now to `out`; the fast path.
    ///
    /// New citation runs are added to [`citations`](Self::citations) as their placeholders are
    /// written.
    pub fn push_into(&mut self, delta: &str, out: &mut String) {
        if !self.carry.is_empty() {
            // A character split in `push_bytes_into` can never be completed now.
            self.carry.clear();
            self.push_str(char::REPLACEMENT_CHARACTER.encode_utf8(&mut [0; 4]), out);
        }
        self.push_str(delta, out);
    }

    fn push_str(&mut self, delta: &str, out: &mut String) {
        if self.overflow.is_some() {
            return;
        }
        let start = out.len();
        self.push_start = start;
        if self.pending.is_empty() {
            // Prose before the first special byte needs no decision; the fast path may take it all.
            let Some(plain) = self.pass_through(delta, out) else {
                self.consumed += delta.len() as u64;
                self.output_bytes += (out.len() - start) as u64;
                return;
            };
            let keep = self.scan_from(delta, plain, false, out);
            self.consumed += keep as u64;
            self.pending.push_str(&delta[keep..]);
        } else {
            let mut buf = std::mem::take(&mut self.pending);
            buf.push_str(delta);
            let keep = self.scan(&buf, false, out);
            self.consumed += keep as u64;
            buf.drain(..keep);
            self.pending = buf;
        }
        self.cut_at_overflow(start, out);
        self.output_bytes += (out.len() - start) as u64;
        debug_assert!(
            self.pending.len() <= MAX_LOOKAHEAD,
            "held {} bytes",
            self.pending.len()
        );
    }

    /// Pushes raw bytes, which may split a UTF-8 character anywhere; appends output to `out`.
    ///
    /// Invalid UTF-8 is replaced by U+FFFD exactly as [`String::from_utf8_lossy`] would replace it
    /// in the whole input, so splits never change the result.
    pub fn push_bytes_into(&mut self, delta: &[u8], out: &mut String) {
        if self.carry.is_empty() {
            self.push_utf8(delta, out);
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(delta);
            self.push_utf8(&joined, out);
        }
    }

    fn push_utf8(&mut self, mut delta: &[u8], out: &mut String) {
        loop {
            match std::str::from_utf8(delta) {
                Ok(text) => {
                    self.push_str(text, out);
                    return;
                }
                Err(error) => {
                    let (valid, rest) = delta.split_at(error.valid_up_to());
                    // `valid_up_to` marks a prefix that is valid UTF-8, so this never falls back.
                    self.push_str(std::str::from_utf8(valid).unwrap_or_default(), out);
                    match error.error_len() {
                        Some(bad) => {
                            self.push_str("\u{FFFD}", out);
                            delta = &rest[bad..];
                        }
                        None => {
                            self.carry = rest.to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Ends the text: decides everything still held back and returns it.
    ///
    /// Afterwards the processor starts a new text at the beginning of a line; the citation map
    /// and its key numbering carry on.
    pub fn finish(&mut self) -> Segment {
        let first = self.map.len();
        let mut text = String::new();
        self.finish_into(&mut text);
        Segment {
            text,
            citations: self.map.tail(first),
            widget_events: self.take_widget_events(),
        }
    }

    /// Like [`finish`](Self::finish), appending the output to `out`.
    pub fn finish_into(&mut self, out: &mut String) {
        if !self.carry.is_empty() {
            self.carry.clear();
            self.push_str("\u{FFFD}", out);
        }
        if self.overflow.is_some() {
            return;
        }
        let start = out.len();
        self.push_start = start;
        let buf = std::mem::take(&mut self.pending);
        let keep = self.scan(&buf, true, out);
        debug_assert_eq!(keep, buf.len());
        self.consumed += keep as u64;
        self.cut_at_overflow(start, out);
        self.output_bytes += (out.len() - start) as u64;
        debug_assert!(
            self.loading.is_none(),
            "the end of the text decides every tag"
        );
        self.loading = None;
        self.state = markdown::State::default();
        self.prev_byte = 0;
    }

    /// After a scan that reached a bound: drops what the scan wrote after that point, and
    /// everything held back.
    fn cut_at_overflow(&mut self, start: usize, out: &mut String) {
        if let Some(mark) = self.overflow_mark.take() {
            out.truncate(mark.max(start));
            self.pending.clear();
            self.carry.clear();
        }
    }

    /// Records that the run ending at `at` (an offset in the scanned text) would pass a bound.
    fn stop(&mut self, kind: OverflowKind, limit: u64, at: usize, out: &str) {
        self.overflow = Some(Overflow {
            kind,
            limit,
            at: self.consumed + at as u64,
        });
        self.overflow_mark = Some(out.len());
    }

    /// The citation map so far (placeholder mode).
    pub fn citations(&self) -> &CitationMap {
        &self.map
    }

    /// Takes the citation map, leaving an empty one (keys keep counting).
    pub fn take_citations(&mut self) -> CitationMap {
        std::mem::take(&mut self.map)
    }

    /// How many input bytes are held back right now, undecided.
    pub fn held(&self) -> usize {
        self.pending.len() + self.carry.len()
    }

    /// Writes the open citation run, if any, and closes it; `at` is where the run ends in the
    /// scanned text. A run left without a known source (its markers all named unknown numbers)
    /// writes nothing.
    fn close_run(&mut self, at: usize, out: &mut String) {
        if !std::mem::take(&mut self.run_open) {
            return;
        }
        if self.overflow.is_some() || self.run.is_empty() {
            self.run.clear();
            return;
        }
        match self.mode {
            OutputMode::Placeholders => {
                if self.map.len() >= self.max_citation_runs {
                    let limit = self.max_citation_runs as u64;
                    self.stop(OverflowKind::CitationRuns, limit, at, out);
                    self.run.clear();
                    return;
                }
                self.tally.runs += 1;
                let key = self.tally.runs;
                output::write_placeholder(key, out);
                self.map.push(key, &self.run);
            }
            OutputMode::Links => {
                let bytes = output::links_len(&self.table, &self.run);
                if self.link_bytes.saturating_add(bytes) > self.max_link_bytes {
                    self.stop(OverflowKind::LinkBytes, self.max_link_bytes, at, out);
                    self.run.clear();
                    return;
                }
                self.link_bytes += bytes;
                self.tally.runs += 1;
                output::write_links(&self.table, &self.run, out);
            }
        }
        self.run.clear();
    }

    /// Adds resolved source numbers to the open run (opening one if needed), each once.
    fn extend_run(&mut self, indices: &[u32]) {
        self.run_open = true;
        for &index in indices {
            if let Some(at) = self.table.position(index) {
                if !self.run.contains(&index) {
                    self.run.push(index);
                }
                self.cited[at] = true;
            }
        }
    }

    /// The distinct source numbers cited so far, ascending.
    fn cited(&self) -> Vec<u32> {
        self.table
            .indices()
            .zip(&self.cited)
            .filter(|&(_, &c)| c)
            .map(|(i, _)| i)
            .collect()
    }
}

/// What a text that is still streaming shows so far: see [`process_partial`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Partial {
    /// The text decided so far: a prefix of the final output, without a trailing half-written
    /// construct.
    pub text: String,
    /// The citation runs whose placeholders appear in `text` (placeholder mode only).
    pub citations: CitationMap,
    /// The widget tags removed from `text`, in order.
    pub widgets: Vec<Widget>,
    /// The declared widget whose tag is still streaming at the end of `text`, if any: a UI
    /// draws its placeholder there.
    pub loading: Option<WidgetStart>,
}

/// Processes the text a model has streamed so far, as if more may follow: what a UI that
/// re-renders the whole message on every delta shows.
///
/// Everything the processor holds back while it decides is left out: a half-written widget tag
/// or a prefix of a declared name (`Some text <widget:weath` shows `Some text`), a `[1`, a
/// `【`, an open formula, the one trailing space a removed native shape may take. A declared
/// widget whose name is complete is reported in [`Partial::loading`]. The result is what a
/// [`Processor`] fed the same text in any deltas has released, so it is always a prefix of
/// [`process`] on the finished text.
pub fn process_partial(text: &str, sources: &SourceSnapshot, config: StreamConfig) -> Partial {
    let mut processor = Processor::new(sources, config);
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    processor.push_into(text, &mut out);
    Partial {
        text: out,
        citations: processor.take_citations(),
        widgets: processor.take_widgets(),
        loading: processor.loading.take(),
    }
}

/// Processes a whole text at once: the output and the citation map.
pub fn process(
    text: &str,
    sources: &SourceSnapshot,
    config: StreamConfig,
) -> (String, CitationMap) {
    let mut processor = Processor::new(sources, config);
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    processor.push_into(text, &mut out);
    processor.finish_into(&mut out);
    (out, processor.take_citations())
}

// A processor belongs to one stream but may move between threads (one per request, handed to a
// worker); sources and outputs are plain data. Keep them so.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Processor>();
    assert_send_sync::<SourceSnapshot>();
    assert_send_sync::<Segment>();
    assert_send_sync::<Partial>();
    assert_send_sync::<CitationMap>();
    assert_send_sync::<CitationScore>();
};
