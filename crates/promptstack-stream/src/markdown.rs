//! The Markdown context tracker and the scanning loop that drives the whole pipeline.
//!
//! The tracker follows just enough block and inline structure to know, at every byte, whether it
//! is code (fenced, indented or a code span), a link destination, link text, or plain prose.
//! Every piece of state changes only for input that has been decided, which is what makes the
//! output independent of how the input was split into deltas: a scan that runs out of input in
//! the middle of a construct stops *before* it, and the next push scans it again from the start.

use crate::{Parse, Processor, Widget, WidgetEvent, WidgetStart, marker, math, native, widget};

/// Where the current line stands in the block structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// Paragraphs, lists, quotes, headings.
    Normal,
    /// Inside a fenced code block opened by `len` copies of `ch` at column `indent`.
    Fenced { ch: u8, len: u32, indent: u32 },
    /// Inside an indented code block.
    Indented,
}

/// Where the scan stands within the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Reading the line's prefix: indentation, quote and list markers, a fence.
    Prefix(Prefix),
    /// Reading inline content.
    Content,
    /// At the start of a line inside a fenced block, deciding whether it closes the block.
    InFence(FenceClose),
    /// The rest of a code line, passed through until the newline.
    Verbatim,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prefix {
    Indent,
    /// After `>`: an optional space belongs to the marker.
    Quote,
    /// After `-`, `*` or `+`: a list marker if a space follows.
    Bullet,
    /// After the digits of a possible ordered-list marker.
    Ordered {
        digits: u8,
    },
    /// After `1.` or `1)`: a list marker if a space follows.
    OrderedDelim {
        digits: u8,
    },
    /// Counting a run of backticks or tildes at the start of the content.
    Fence {
        ch: u8,
        count: u32,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FenceClose {
    Indent { cols: u32 },
    Run { count: u32 },
    Trail,
}

/// Inline context within a paragraph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Inline {
    Text,
    /// Counting the backticks that open a code span.
    Ticks {
        count: u32,
    },
    /// Inside a code span opened by `k` backticks; `run` counts the current backtick run.
    Code {
        k: u32,
        run: u32,
    },
    /// Inside a link destination `(…)`, `depth` parentheses deep.
    LinkDest {
        depth: u32,
    },
}

/// The tracker's state between pushes.
#[derive(Debug, Clone)]
pub(crate) struct State {
    block: Block,
    line: Line,
    inline: Inline,
    /// Column reached in the line prefix.
    cols: u32,
    /// The line's container prefix with markers turned into spaces, to indent lines that a math
    /// block adds (capped, since only the first columns matter).
    prefix: String,
    /// The line holds a list item marker (its content column sets the container indent).
    list_item: bool,
    /// The line starts a new block (list item, quote, heading, fence): inline state restarts.
    block_start: bool,
    heading: bool,
    /// Nothing but the line prefix precedes the current position.
    content_start: bool,
    prev_blank: bool,
    paragraph: bool,
    /// Content column of the innermost list item, for telling indented code from continuation.
    container: u32,
    /// Open `[` brackets that are not citation markers (possible link text).
    depth: u32,
}

impl Default for State {
    fn default() -> Self {
        Self {
            block: Block::Normal,
            line: Line::Prefix(Prefix::Indent),
            inline: Inline::Text,
            cols: 0,
            prefix: String::new(),
            list_item: false,
            block_start: false,
            heading: false,
            content_start: false,
            prev_blank: true,
            paragraph: false,
            container: 0,
            depth: 0,
        }
    }
}

/// Nesting beyond this depth is counted no further (CommonMark parsers cap it as well).
const MAX_DEPTH: u32 = 32;
const PREFIX_MAX: usize = 64;

/// How far past a marker naming only unknown numbers the processor looks for a known citation
/// in the same run.
const CHAIN_MAX: usize = 512;

/// Bytes that need a decision in prose; everything else is copied through in bulk.
static SPECIAL: [bool; 256] = {
    let mut table = [false; 256];
    table[b'\n' as usize] = true;
    table[b'`' as usize] = true;
    table[b'[' as usize] = true;
    table[b']' as usize] = true;
    table[b'\\' as usize] = true;
    table[b'$' as usize] = true;
    // The lead byte of `【` (E3 80 90) and of other CJK punctuation.
    table[0xE3] = true;
    table
};

/// The position of the first byte that [`SPECIAL`] marks or of the first `<` (with `LT`), or the
/// length.
///
/// Eight bytes at a time: for each special value `v`, a byte of `w ^ v` is zero exactly where
/// `w` holds `v`, and the classic zero-byte test finds the first such byte. The test can flag a
/// byte *after* a real match (a borrow), never before one, so the lowest flag is exact.
#[inline]
fn find_stop_byte<const LT: bool>(bytes: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    #[inline(always)]
    fn zero_bytes(x: u64) -> u64 {
        x.wrapping_sub(ONES) & !x & HIGHS
    }
    let mut at = 0;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        let hits = zero_bytes(w ^ (ONES * u64::from(b'\n')))
            | zero_bytes(w ^ (ONES * u64::from(b'`')))
            | zero_bytes(w ^ (ONES * u64::from(b'[')))
            | zero_bytes(w ^ (ONES * u64::from(b']')))
            | zero_bytes(w ^ (ONES * u64::from(b'\\')))
            | zero_bytes(w ^ (ONES * u64::from(b'$')))
            | zero_bytes(w ^ (ONES * 0xE3))
            | if LT {
                zero_bytes(w ^ (ONES * u64::from(b'<')))
            } else {
                0
            };
        if hits != 0 {
            return at + (hits.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let tail = words.remainder();
    at + tail
        .iter()
        .position(|&b| SPECIAL[b as usize] || (LT && b == b'<'))
        .unwrap_or(tail.len())
}

fn is_space(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The input of one scan, the position reached and the start of the text not yet copied out.
struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    copied: usize,
    eof: bool,
}

impl Cursor<'_> {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Copies the input up to `upto` to the output.
    fn copy(&mut self, upto: usize, out: &mut String) {
        out.push_str(&self.text[self.copied..upto]);
        self.copied = upto;
    }

    /// The byte at `at`: `Ok(None)` past the end of a finished text, `Err` if more may come.
    fn byte(&self, at: usize) -> Result<Option<u8>, Held> {
        match self.bytes.get(at) {
            Some(&b) => Ok(Some(b)),
            None if self.eof => Ok(None),
            None => Err(Held),
        }
    }
}

/// The scan stopped at the current position until more input arrives.
struct Held;

type Step = Result<(), Held>;

impl Processor {
    /// Scans `text` (held-back input followed by the new delta), writes what is decided to `out`
    /// and returns where the undecided rest starts.
    pub(super) fn scan(&mut self, text: &str, eof: bool, out: &mut String) -> usize {
        self.scan_from(text, 0, eof, out)
    }

    /// Like [`scan`](Self::scan), with the first `plain` bytes known to be prose without a
    /// special byte (so they are consumed without looking at them again).
    pub(super) fn scan_from(
        &mut self,
        text: &str,
        plain: usize,
        eof: bool,
        out: &mut String,
    ) -> usize {
        if plain > 0 {
            self.state.content_start = false;
        }
        let mut c = Cursor {
            text,
            bytes: text.as_bytes(),
            pos: plain,
            copied: 0,
            eof,
        };
        let mut held = false;
        while c.pos < c.len() {
            let step = match self.state.line {
                Line::Prefix(prefix) => {
                    self.prefix_step(&mut c, prefix);
                    Ok(())
                }
                Line::InFence(close) => {
                    self.fence_line_step(&mut c, close);
                    Ok(())
                }
                Line::Verbatim => {
                    match memchr::memchr(b'\n', &c.bytes[c.pos..]) {
                        Some(at) => {
                            c.pos += at + 1;
                            self.end_line(false);
                        }
                        None => c.pos = c.len(),
                    }
                    Ok(())
                }
                Line::Content => self.content_step(&mut c, out),
            };
            if step.is_err() {
                held = true;
                break;
            }
        }
        let mut stop = c.pos;
        if eof {
            debug_assert!(!held);
            self.flush_run(&mut c, out);
        } else if !held && self.run_open {
            // The scan reached the end with a run open: it waits for what follows.
        } else if self.state.line == Line::Content
            && self.state.inline == Inline::Text
            && !self.run_open
            && !self.state.content_start
            && stop > c.copied
            && is_space(c.bytes[stop - 1])
        {
            // Hold one trailing space: a native shape that follows and is removed takes it along.
            stop -= 1;
        }
        c.copy(stop, out);
        if stop > 0 {
            self.prev_byte = c.bytes[stop - 1];
        }
        stop
    }

    /// The fast path for a delta arriving with nothing held back: plain prose with nothing
    /// special in it (and no trailing space to hold), or the middle of a code line, goes straight
    /// out, and `None` says the delta is done. Otherwise returns how many leading bytes are plain
    /// prose, which the full scan may skip over. Either way the output is what the full scan
    /// would have produced.
    #[inline]
    pub(super) fn pass_through(&mut self, delta: &str, out: &mut String) -> Option<usize> {
        let bytes = delta.as_bytes();
        let &last = bytes.last()?;
        let plain = match (self.state.line, self.state.inline) {
            (Line::Content, Inline::Text) if !self.run_open => {
                let plain = self.find_stop(bytes);
                if plain < bytes.len() || is_space(last) {
                    return Some(plain);
                }
                true
            }
            (Line::Verbatim, _) => memchr::memchr(b'\n', bytes).is_none(),
            _ => false,
        };
        if !plain {
            return Some(0);
        }
        out.push_str(delta);
        self.prev_byte = last;
        self.state.content_start = false;
        None
    }

    /// Copies the text before the open run, then writes and closes the run.
    fn flush_run(&mut self, c: &mut Cursor<'_>, out: &mut String) {
        if self.run_open {
            c.copy(c.pos, out);
            self.close_run(c.pos, out);
        }
    }

    /// Ends the current line (the newline has been consumed).
    fn end_line(&mut self, blank: bool) {
        let s = &mut self.state;
        if blank {
            s.prev_blank = true;
            s.paragraph = false;
            s.inline = Inline::Text;
            s.depth = 0;
        } else {
            s.prev_blank = false;
            if s.heading {
                s.paragraph = false;
            }
        }
        if let Inline::LinkDest { .. } = s.inline {
            s.inline = Inline::Text;
        }
        s.cols = 0;
        s.prefix.clear();
        s.list_item = false;
        s.block_start = false;
        s.heading = false;
        s.content_start = false;
        s.line = match s.block {
            Block::Fenced { .. } => Line::InFence(FenceClose::Indent { cols: 0 }),
            _ => Line::Prefix(Prefix::Indent),
        };
    }

    fn push_prefix(&mut self, b: u8) {
        if self.state.prefix.len() < PREFIX_MAX {
            self.state.prefix.push(if b == b'>' || b == b'\t' {
                b as char
            } else {
                ' '
            });
        }
    }

    /// One byte of the line prefix. Prefix bytes are never rewritten, so nothing is held back.
    fn prefix_step(&mut self, c: &mut Cursor<'_>, prefix: Prefix) {
        let b = c.bytes[c.pos];
        match prefix {
            Prefix::Indent => match b {
                b' ' => {
                    self.state.cols += 1;
                    self.push_prefix(b);
                    c.pos += 1;
                }
                b'\t' => {
                    self.state.cols = (self.state.cols / 4 + 1) * 4;
                    self.push_prefix(b);
                    c.pos += 1;
                }
                b'\r' => c.pos += 1,
                b'\n' => {
                    c.pos += 1;
                    // A line holding only a list marker is an empty item, not a paragraph break.
                    let blank = !self.state.list_item;
                    self.end_line(blank);
                }
                _ => self.classify(c, b),
            },
            Prefix::Quote => {
                if b == b' ' {
                    self.push_prefix(b);
                    c.pos += 1;
                }
                self.state.cols = 0;
                self.state.line = Line::Prefix(Prefix::Indent);
            }
            Prefix::Bullet => {
                if is_space(b) || b == b'\n' || b == b'\r' {
                    self.list_marker(1);
                } else {
                    self.begin_content(false);
                }
            }
            Prefix::Ordered { digits } => match b {
                b'0'..=b'9' if digits < 9 => {
                    self.push_prefix(b);
                    c.pos += 1;
                    self.state.line = Line::Prefix(Prefix::Ordered { digits: digits + 1 });
                }
                b'.' | b')' => {
                    self.push_prefix(b);
                    c.pos += 1;
                    self.state.line = Line::Prefix(Prefix::OrderedDelim { digits });
                }
                _ => self.begin_content(false),
            },
            Prefix::OrderedDelim { digits } => {
                if is_space(b) || b == b'\n' || b == b'\r' {
                    self.list_marker(u32::from(digits) + 1);
                } else {
                    self.begin_content(false);
                }
            }
            Prefix::Fence { ch, count } => {
                if b == ch {
                    self.push_prefix(b);
                    c.pos += 1;
                    self.state.line = Line::Prefix(Prefix::Fence {
                        ch,
                        count: count + 1,
                    });
                } else if count >= 3 {
                    let indent = self.state.cols;
                    let s = &mut self.state;
                    s.block = Block::Fenced {
                        ch,
                        len: count,
                        indent,
                    };
                    s.paragraph = false;
                    s.inline = Inline::Text;
                    s.depth = 0;
                    s.line = Line::Verbatim;
                } else if ch == b'`' {
                    // One or two backticks: a code span opens (or an open one closes).
                    self.begin_content(false);
                    self.state.inline = match self.state.inline {
                        Inline::Code { k, .. } if k == count => Inline::Text,
                        Inline::Code { k, .. } => Inline::Code { k, run: 0 },
                        _ => Inline::Code { k: count, run: 0 },
                    };
                } else {
                    self.begin_content(false);
                }
            }
        }
    }

    /// A list marker `width` columns wide has been read; the spaces after it come next.
    fn list_marker(&mut self, width: u32) {
        let s = &mut self.state;
        s.cols += width;
        s.list_item = true;
        s.block_start = true;
        s.line = Line::Prefix(Prefix::Indent);
    }

    /// The first byte after the line's indentation decides what the line is.
    fn classify(&mut self, c: &mut Cursor<'_>, b: u8) {
        let code_at = self.state.container + 4;
        if self.state.block == Block::Indented {
            if self.state.cols >= code_at {
                self.state.line = Line::Verbatim;
                return;
            }
            self.state.block = Block::Normal;
        } else if !self.state.list_item
            && !self.state.paragraph
            && !self.state.block_start
            && self.state.cols >= code_at
        {
            // Indented code cannot interrupt a paragraph, hence the paragraph check.
            self.state.block = Block::Indented;
            self.state.inline = Inline::Text;
            self.state.depth = 0;
            self.state.line = Line::Verbatim;
            return;
        }
        match b {
            b'>' => {
                self.push_prefix(b);
                c.pos += 1;
                self.state.block_start = true;
                self.state.line = Line::Prefix(Prefix::Quote);
            }
            b'-' | b'*' | b'+' => {
                self.push_prefix(b);
                c.pos += 1;
                self.state.line = Line::Prefix(Prefix::Bullet);
            }
            b'0'..=b'9' => {
                self.push_prefix(b);
                c.pos += 1;
                self.state.line = Line::Prefix(Prefix::Ordered { digits: 1 });
            }
            b'`' | b'~' => self.state.line = Line::Prefix(Prefix::Fence { ch: b, count: 0 }),
            b'#' => {
                self.state.heading = true;
                self.state.block_start = true;
                self.begin_content(true);
            }
            _ => self.begin_content(true),
        }
    }

    /// The line's content starts at the current byte (or, when `at_start` is false, started a
    /// few bytes earlier with text that looked like a marker but was not).
    fn begin_content(&mut self, at_start: bool) {
        let s = &mut self.state;
        if s.list_item {
            s.container = s.cols;
        } else if s.prev_blank && s.cols < s.container {
            // A line less indented than the list's content after a blank line ends the list.
            s.container = 0;
        }
        if s.block_start {
            s.inline = Inline::Text;
            s.depth = 0;
        }
        s.paragraph = true;
        s.content_start = at_start;
        s.line = Line::Content;
    }

    /// One step of a line inside a fenced block: does it close the block?
    fn fence_line_step(&mut self, c: &mut Cursor<'_>, close: FenceClose) {
        let Block::Fenced { ch, len, indent } = self.state.block else {
            unreachable!("fence line outside a fenced block")
        };
        let b = c.bytes[c.pos];
        c.pos += 1;
        let next = match (close, b) {
            (_, b'\n') => {
                let closes = match close {
                    FenceClose::Run { count } => count >= len,
                    FenceClose::Trail => true,
                    FenceClose::Indent { .. } => false,
                };
                if closes {
                    self.state.block = Block::Normal;
                    self.state.paragraph = false;
                }
                self.end_line(false);
                return;
            }
            (FenceClose::Indent { cols }, b' ' | b'>') => FenceClose::Indent { cols: cols + 1 },
            (FenceClose::Indent { cols }, b'\t') => FenceClose::Indent {
                cols: (cols / 4 + 1) * 4,
            },
            (FenceClose::Indent { cols }, b) if b == ch && cols <= indent + 3 => {
                FenceClose::Run { count: 1 }
            }
            (FenceClose::Run { count }, b) if b == ch => FenceClose::Run { count: count + 1 },
            (FenceClose::Run { count }, b' ' | b'\t' | b'\r') if count >= len => FenceClose::Trail,
            (FenceClose::Indent { cols }, b'\r') => FenceClose::Indent { cols },
            (FenceClose::Trail, b' ' | b'\t' | b'\r') => FenceClose::Trail,
            _ => {
                self.state.line = Line::Verbatim;
                return;
            }
        };
        self.state.line = Line::InFence(next);
    }

    /// Inline content: the prose fast path and every decision in it.
    fn content_step(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        match self.state.inline {
            Inline::Text if self.run_open => self.run_step(c, out),
            Inline::Text => self.text_step(c, out),
            Inline::Ticks { count } => {
                let mut count = count;
                while c.pos < c.len() && c.bytes[c.pos] == b'`' {
                    count += 1;
                    c.pos += 1;
                }
                self.state.inline = if c.pos < c.len() {
                    Inline::Code { k: count, run: 0 }
                } else {
                    Inline::Ticks { count }
                };
                Ok(())
            }
            Inline::Code { k, run } => {
                let mut run = run;
                while c.pos < c.len() {
                    let b = c.bytes[c.pos];
                    if b == b'`' {
                        run += 1;
                        c.pos += 1;
                        continue;
                    }
                    if run == k {
                        self.state.inline = Inline::Text;
                        return Ok(());
                    }
                    run = 0;
                    if b == b'\n' {
                        c.pos += 1;
                        self.state.inline = Inline::Code { k, run };
                        self.end_line(false);
                        return Ok(());
                    }
                    c.pos = memchr::memchr2(b'`', b'\n', &c.bytes[c.pos..])
                        .map_or(c.len(), |at| c.pos + at);
                }
                self.state.inline = Inline::Code { k, run };
                Ok(())
            }
            Inline::LinkDest { depth } => {
                let mut depth = depth;
                while c.pos < c.len() {
                    match c.bytes[c.pos] {
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                c.pos += 1;
                                self.state.inline = Inline::Text;
                                return Ok(());
                            }
                        }
                        b'\n' => {
                            self.state.inline = Inline::Text;
                            return Ok(());
                        }
                        _ => {}
                    }
                    c.pos += 1;
                }
                self.state.inline = Inline::LinkDest { depth };
                Ok(())
            }
        }
    }

    /// The first byte of prose that needs a decision: a [`SPECIAL`] byte, or `<` when widgets
    /// are declared.
    fn find_stop(&self, bytes: &[u8]) -> usize {
        if self.widgets.is_empty() {
            find_stop_byte::<false>(bytes)
        } else {
            find_stop_byte::<true>(bytes)
        }
    }

    fn text_step(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        let start = c.pos;
        let skip = self.find_stop(&c.bytes[start..]);
        c.pos += skip;
        if skip > 0 {
            self.state.content_start = false;
        }
        let Some(&b) = c.bytes.get(c.pos) else {
            return Ok(());
        };
        match b {
            b'\n' => {
                c.pos += 1;
                self.end_line(false);
            }
            b'`' => {
                c.pos += 1;
                self.state.inline = Inline::Ticks { count: 1 };
            }
            b'[' => self.open_bracket(c, out)?,
            b']' => self.close_bracket(c)?,
            b'\\' => self.backslash(c, out)?,
            b'$' => self.dollar(c, out)?,
            b'<' => self.widget(c, out)?,
            _ => self.lenticular(c, out)?,
        }
        self.state.content_start = false;
        Ok(())
    }

    fn byte_before(&self, c: &Cursor<'_>, at: usize) -> u8 {
        if at > 0 {
            c.bytes[at - 1]
        } else {
            self.prev_byte
        }
    }

    fn open_bracket(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        if self.state.depth > 0 {
            self.state.depth = (self.state.depth + 1).min(MAX_DEPTH);
            c.pos += 1;
            return Ok(());
        }
        let at = c.pos;
        let m = match marker::parse(&c.bytes[at..], c.eof) {
            Parse::Incomplete => return Err(Held),
            Parse::No => {
                self.state.depth = 1;
                c.pos += 1;
                return Ok(());
            }
            Parse::Yes(m) => m,
        };
        let after = at + m.len;
        let next = c.byte(after)?;
        if next == Some(b'(') {
            // `[1](https://…)` is a link whose text happens to be a number.
            c.pos = after + 1;
            self.state.inline = Inline::LinkDest { depth: 1 };
        } else if (next == Some(b':') && self.state.content_start)
            || self.byte_before(c, at) == b'!'
        {
            // A link reference definition `[1]: …`, or an image `![1]`.
            c.pos = after;
        } else if self.any_known(m.indices.as_slice()) || self.run_follows(c, after)? {
            // A citation: its known numbers join the run, unknown ones are dropped (and
            // counted). A marker naming only unknown numbers is dropped the same way when a
            // citation of a known source follows in the same run.
            self.count_ascii(m.indices.as_slice());
            c.copy(at, out);
            self.extend_run(m.indices.as_slice());
            c.pos = after;
            c.copied = after;
        } else {
            self.count_ascii(m.indices.as_slice());
            c.pos = after;
        }
        Ok(())
    }

    /// Counts an ASCII marker: resolved when one of its numbers is known.
    fn count_ascii(&mut self, indices: &[u32]) {
        if self.any_known(indices) {
            self.tally.ascii.resolved += 1;
        } else {
            self.tally.ascii.unresolved += 1;
        }
        self.note_unresolved(indices);
    }

    /// Whether the markers that follow `from` (joined as [`run_step`](Self::run_step) joins
    /// them) name a known source before the run ends. Reads at most [`CHAIN_MAX`] bytes; a
    /// longer chain of unknown numbers is plain text.
    fn run_follows(&self, c: &Cursor<'_>, mut from: usize) -> Result<bool, Held> {
        let start = from;
        loop {
            if from - start > CHAIN_MAX {
                return Ok(false);
            }
            let mut at = from;
            while at < c.len() && at - from < 4 && is_space(c.bytes[at]) {
                at += 1;
            }
            if at - from > 3 {
                return Ok(false);
            }
            match c.byte(at)? {
                Some(b'[') => match marker::parse(&c.bytes[at..], c.eof) {
                    Parse::Incomplete => return Err(Held),
                    Parse::No => return Ok(false),
                    Parse::Yes(m) => {
                        let after = at + m.len;
                        if c.byte(after)? == Some(b'(') {
                            return Ok(false);
                        }
                        if self.any_known(m.indices.as_slice()) {
                            return Ok(true);
                        }
                        from = after;
                    }
                },
                Some(0xE3) if native::starts(&c.bytes[at..]) => {
                    match native::parse(&c.bytes[at..], c.eof) {
                        Parse::Incomplete => return Err(Held),
                        Parse::No => return Ok(false),
                        Parse::Yes(n) => {
                            if self.any_known(n.indices.as_slice()) {
                                return Ok(true);
                            }
                            from = at + n.len;
                        }
                    }
                }
                _ => return Ok(false),
            }
        }
    }

    fn any_known(&self, indices: &[u32]) -> bool {
        indices.iter().any(|&i| self.table.contains(i))
    }

    fn note_unresolved(&mut self, indices: &[u32]) {
        for &i in indices {
            if !self.table.contains(i) {
                self.tally.unresolved.insert(i);
            }
        }
    }

    fn close_bracket(&mut self, c: &mut Cursor<'_>) -> Step {
        match self.state.depth {
            0 => c.pos += 1,
            1 => match c.byte(c.pos + 1)? {
                Some(b'(') => {
                    self.state.depth = 0;
                    c.pos += 2;
                    self.state.inline = Inline::LinkDest { depth: 1 };
                }
                // `[text][label]`: the label is a reference, not a citation.
                Some(b'[') => c.pos += 2,
                _ => {
                    self.state.depth = 0;
                    c.pos += 1;
                }
            },
            _ => {
                self.state.depth -= 1;
                c.pos += 1;
            }
        }
        Ok(())
    }

    fn backslash(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        let at = c.pos;
        match c.byte(at + 1)? {
            Some(b'(' | b'[') => {
                let line_start = self.state.content_start;
                match math::parse(&c.bytes[at..], line_start, c.eof) {
                    Parse::Incomplete => return Err(Held),
                    Parse::No => c.pos += 2,
                    Parse::Yes(m) => {
                        c.copy(at, out);
                        math::write(&c.text[at..at + m.len], &m, &self.state.prefix, out);
                        c.pos = at + m.len;
                        c.copied = c.pos;
                    }
                }
            }
            // A backslash escape: the escaped character is literal (`\`` opens no code span).
            Some(b) if b.is_ascii_punctuation() => c.pos += 2,
            _ => c.pos += 1,
        }
        Ok(())
    }

    /// A dollar sign: `$$` may open a display block on its own line, and a `$` before a digit
    /// that no formula closes is a currency sign, escaped as `\$` so that a `$`-math renderer
    /// shows it as text.
    fn dollar(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        let at = c.pos;
        match c.byte(at + 1)? {
            Some(b'$') => {
                if self.state.content_start {
                    match math::parse_dollars(&c.bytes[at..], c.eof) {
                        Parse::Incomplete => return Err(Held),
                        Parse::Yes(m) if !m.block => {
                            // A formula that goes on into text: left as written, closer too.
                            c.pos = at + m.len;
                            return Ok(());
                        }
                        Parse::Yes(m) => {
                            c.copy(at, out);
                            math::write(&c.text[at..at + m.len], &m, &self.state.prefix, out);
                            c.pos = at + m.len;
                            c.copied = c.pos;
                            return Ok(());
                        }
                        Parse::No => {}
                    }
                }
                // A `$$` delimiter is never a currency sign.
                c.pos = at + 2;
            }
            // After a letter (`US$5`, `C$20`) a `$` is a currency prefix, never an opener.
            Some(b'0'..=b'9') if self.byte_before(c, at).is_ascii_alphabetic() => {
                c.copy(at, out);
                out.push('\\');
                c.pos = at + 1;
            }
            Some(b'0'..=b'9') => match math::dollar(&c.bytes[at..], c.eof) {
                Parse::Incomplete => return Err(Held),
                Parse::Yes(math::Dollar::Currency) | Parse::No => {
                    c.copy(at, out);
                    out.push('\\');
                    c.pos = at + 1;
                }
                // A formula is left alone, like `\(…\)`: nothing inside it is a citation.
                Parse::Yes(math::Dollar::Formula { len }) => c.pos = at + len,
            },
            _ => c.pos = at + 1,
        }
        Ok(())
    }

    /// A `<` in prose with widgets declared: a complete widget tag is removed and recorded, a
    /// half-streamed one waits, anything else is text. Link text is left alone.
    ///
    /// A tag is announced (a start event) as soon as its declared name is complete and followed
    /// by a space, a tab or `/`, whether the tag is decided in this scan or not, so the events
    /// depend on the input alone; the text before it is released then, so the start's offset is
    /// where the released text ends. The tag's outcome (a widget or a cancel) follows.
    fn widget(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        let at = c.pos;
        if self.state.depth > 0 {
            c.pos += 1;
            return Ok(());
        }
        let parsed = widget::parse(&c.bytes[at..], &self.widgets, c.eof);
        if self.loading.is_none()
            && self.overflow.is_none()
            && let Some(name) = widget::announced(&c.bytes[at..], &self.widgets)
        {
            c.copy(at, out);
            let start = WidgetStart {
                name: name.to_owned(),
                offset: self.output_offset(out),
            };
            self.events.push(WidgetEvent::Start(start.clone()));
            self.loading = Some(start);
        }
        debug_assert!(
            self.loading.is_none()
                || self.overflow.is_some()
                || (c.copied == at
                    && self.loading.as_ref().map(|l| l.offset) == Some(self.output_offset(out))),
            "a loading widget is always the next thing decided"
        );
        match parsed {
            Parse::Incomplete => return Err(Held),
            Parse::No => {
                if let Some(start) = self.loading.take() {
                    self.events.push(WidgetEvent::Cancel(start));
                }
                c.pos += 1;
            }
            Parse::Yes(tag) => {
                c.copy(at, out);
                c.pos = at + tag.len;
                c.copied = c.pos;
                self.loading = None;
                if self.overflow.is_none() {
                    let offset = self.output_offset(out);
                    *self.tally.widgets.entry(tag.name.clone()).or_default() += 1;
                    self.events.push(WidgetEvent::Widget(Widget {
                        name: tag.name,
                        attributes: tag.attributes,
                        offset,
                    }));
                }
            }
        }
        Ok(())
    }

    /// The offset in the whole output of what `out` holds at its end.
    fn output_offset(&self, out: &str) -> u64 {
        self.output_bytes + (out.len() - self.push_start) as u64
    }

    fn lenticular(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        let at = c.pos;
        if !native::starts(&c.bytes[at..]) {
            // Another character led by 0xE3 (kana, CJK punctuation): three bytes, all plain.
            c.pos += 3;
            return Ok(());
        }
        let n = match native::parse(&c.bytes[at..], c.eof) {
            Parse::Incomplete => return Err(Held),
            Parse::No => {
                c.pos += 3;
                return Ok(());
            }
            Parse::Yes(n) => n,
        };
        let indices = n.indices.as_slice();
        // Inside link text a citation would nest a link in a link, so it is removed instead.
        let cites = self.state.depth == 0 && self.any_known(indices);
        let mut end = at + n.len;
        if !cites && self.state.content_start && c.byte(end)? == Some(b' ') {
            // Removed at the start of a line, it takes the space after it instead of before it.
            end += 1;
        }
        self.count_native(indices, cites);
        if !cites {
            // Removed, with one space before it unless it starts the line.
            let mut cut = at;
            if !self.state.content_start && cut > c.copied && is_space(c.bytes[cut - 1]) {
                cut -= 1;
            }
            c.copy(cut, out);
        } else {
            c.copy(at, out);
            self.extend_run(indices);
        }
        c.pos = end;
        c.copied = end;
        Ok(())
    }

    fn count_native(&mut self, indices: &[u32], resolved: bool) {
        if resolved {
            self.tally.native.resolved += 1;
        } else {
            self.tally.native.unresolved += 1;
        }
        self.note_unresolved(indices);
    }

    /// After a citation: the run goes on if another citation follows after at most three spaces.
    fn run_step(&mut self, c: &mut Cursor<'_>, out: &mut String) -> Step {
        let mut at = c.pos;
        while at < c.len() && at - c.pos < 4 && is_space(c.bytes[at]) {
            at += 1;
        }
        let gap = at - c.pos;
        let joined = if gap > 3 {
            false
        } else {
            match c.byte(at)? {
                Some(b'[') => match marker::parse(&c.bytes[at..], c.eof) {
                    Parse::Incomplete => return Err(Held),
                    Parse::No => false,
                    Parse::Yes(m) => {
                        let after = at + m.len;
                        let next = c.byte(after)?;
                        if next != Some(b'(') {
                            // Unknown numbers in a run are dropped, never shown.
                            self.count_ascii(m.indices.as_slice());
                            self.extend_run(m.indices.as_slice());
                            c.pos = after;
                            true
                        } else {
                            false
                        }
                    }
                },
                Some(0xE3) if native::starts(&c.bytes[at..]) => {
                    match native::parse(&c.bytes[at..], c.eof) {
                        Parse::Incomplete => return Err(Held),
                        Parse::No => false,
                        Parse::Yes(n) => {
                            let indices = n.indices.as_slice();
                            self.count_native(indices, self.any_known(indices));
                            self.extend_run(indices);
                            c.pos = at + n.len;
                            true
                        }
                    }
                }
                _ => false,
            }
        };
        if joined {
            c.copied = c.pos;
        } else {
            self.flush_run(c, out);
        }
        Ok(())
    }
}
