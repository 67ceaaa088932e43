//! What a citation run becomes: a placeholder plus a citation-map entry, or Markdown links.

use serde::Serialize;

use crate::{Source, SourceSnapshot};

/// How citation runs are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutputMode {
    /// Each run becomes one `{{cite:K}}` placeholder, and [`CitationMap`] gets an entry for key `K`
    /// listing the run's source numbers. For UI frameworks that swap placeholders for badges.
    #[default]
    Placeholders,
    /// Each cited source becomes a Markdown link `[[N]](url "title")`, rendered as a linked `[N]`.
    /// For renderers that only understand Markdown. The citation map stays empty.
    Links,
}

/// One citation run: the key of the placeholder written in the text and the sources it stands for.
///
/// Serialised as `{"key":1,"placeholder":"{{cite:1}}","sources":[1,2]}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Citation<'a> {
    /// The run's key, counting from 1 in the order runs were written.
    pub key: u32,
    /// The source numbers of the run, each once, in order of first mention.
    pub sources: &'a [u32],
}

impl Citation<'_> {
    /// The exact placeholder text written for this run: `{{cite:K}}`.
    pub fn placeholder(&self) -> String {
        let mut out = String::new();
        write_placeholder(self.key, &mut out);
        out
    }
}

impl Serialize for Citation<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("Citation", 3)?;
        s.serialize_field("key", &self.key)?;
        s.serialize_field("placeholder", &self.placeholder())?;
        s.serialize_field("sources", self.sources)?;
        s.end()
    }
}

/// Citation runs in the order their placeholders appear in the text.
///
/// Serialised as `{"citations":[{"key":1,"placeholder":"{{cite:1}}","sources":[1,2]}]}`. The
/// runs' source numbers live in one buffer, so recording a run never allocates on its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CitationMap {
    /// Per run: its key and the end of its numbers in `sources` (the start is the previous end).
    runs: Vec<(u32, usize)>,
    sources: Vec<u32>,
}

impl CitationMap {
    /// The number of runs.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether the map holds no run.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The runs, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Citation<'_>> + '_ {
        (0..self.runs.len()).map(|i| self.at(i))
    }

    /// Looks a run up by its key.
    pub fn get(&self, key: u32) -> Option<Citation<'_>> {
        let at = self.runs.binary_search_by_key(&key, |&(k, _)| k).ok()?;
        Some(self.at(at))
    }

    fn at(&self, i: usize) -> Citation<'_> {
        let start = if i == 0 { 0 } else { self.runs[i - 1].1 };
        let (key, end) = self.runs[i];
        Citation {
            key,
            sources: &self.sources[start..end],
        }
    }

    pub(crate) fn push(&mut self, key: u32, sources: &[u32]) {
        self.sources.extend_from_slice(sources);
        self.runs.push((key, self.sources.len()));
    }

    /// A map of the runs from position `first` on.
    pub(crate) fn tail(&self, first: usize) -> CitationMap {
        let mut tail = CitationMap::default();
        for citation in self.iter().skip(first) {
            tail.push(citation.key, citation.sources);
        }
        tail
    }
}

impl Serialize for CitationMap {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        struct Runs<'a>(&'a CitationMap);
        impl Serialize for Runs<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_seq(self.0.iter())
            }
        }
        let mut s = serializer.serialize_struct("CitationMap", 1)?;
        s.serialize_field("citations", &Runs(self))?;
        s.end()
    }
}

/// The sources by number, for quick lookups while streaming.
#[derive(Debug, Clone, Default)]
pub(crate) struct SourceTable {
    /// Sorted by index; for a number listed twice, the first entry of the snapshot wins.
    sources: Vec<Source>,
}

impl SourceTable {
    pub(crate) fn new(snapshot: &SourceSnapshot) -> Self {
        let mut sources = snapshot.sources.clone();
        // A stable sort keeps the snapshot's order among equal numbers, so dedup keeps the first.
        sources.sort_by_key(|s| s.index);
        sources.dedup_by_key(|s| s.index);
        Self { sources }
    }

    pub(crate) fn position(&self, index: u32) -> Option<usize> {
        self.sources.binary_search_by_key(&index, |s| s.index).ok()
    }

    pub(crate) fn get(&self, index: u32) -> Option<&Source> {
        Some(&self.sources[self.position(index)?])
    }

    pub(crate) fn contains(&self, index: u32) -> bool {
        self.position(index).is_some()
    }

    pub(crate) fn len(&self) -> usize {
        self.sources.len()
    }

    /// The source numbers, ascending.
    pub(crate) fn indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.sources.iter().map(|s| s.index)
    }
}

/// Writes the placeholder for run `key`: `{{cite:K}}`.
pub(crate) fn write_placeholder(key: u32, out: &mut String) {
    out.reserve(20);
    out.push_str("{{cite:");
    push_decimal(key, out);
    out.push_str("}}");
}

/// The decimal digits of `n`.
struct Decimal {
    digits: [u8; 10],
    start: usize,
}

impl Decimal {
    fn as_slice(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

fn decimal(mut n: u32) -> Decimal {
    let mut digits = [0u8; 10];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return Decimal { digits, start };
        }
    }
}

/// Writes `n` in decimal, digit by digit (cheaper than the formatting machinery on a hot path).
fn push_decimal(n: u32, out: &mut String) {
    for &digit in decimal(n).as_slice() {
        out.push(char::from(digit));
    }
}

/// Writes `[[N]](url "title")` for each source of a run.
pub(crate) fn write_links(table: &SourceTable, indices: &[u32], out: &mut String) {
    for &index in indices {
        let Some(source) = table.get(index) else {
            continue;
        };
        out.push_str("[[");
        push_decimal(index, out);
        out.push_str("]](");
        push_destination(&source.url, out);
        if let Some(title) = source.title.as_deref().filter(|t| !t.is_empty()) {
            out.push_str(" \"");
            push_title(title, out);
            out.push('"');
        }
        out.push(')');
    }
}

/// How many bytes [`write_links`] writes for a run, computed without writing them (so that a
/// bound can be checked before anything is allocated).
pub(crate) fn links_len(table: &SourceTable, indices: &[u32]) -> u64 {
    let mut total = 0u64;
    for &index in indices {
        let Some(source) = table.get(index) else {
            continue;
        };
        // `[[`, the digits, `]](`, the destination, `)`.
        let mut len = 6 + decimal(index).as_slice().len();
        len += source.url.chars().map(destination_len).sum::<usize>();
        if let Some(title) = source.title.as_deref().filter(|t| !t.is_empty()) {
            len += 3 + title.chars().map(title_len).sum::<usize>();
        }
        total = total.saturating_add(len as u64);
    }
    total
}

fn destination_len(c: char) -> usize {
    match c {
        ' ' | '(' | ')' | '<' | '>' | '\\' => 3,
        c if c.is_control() => 3 * c.len_utf8(),
        c => c.len_utf8(),
    }
}

fn title_len(c: char) -> usize {
    match c {
        '"' | '\\' => 2,
        '\n' | '\r' => 1,
        c => c.len_utf8(),
    }
}

/// A link destination that no character of the URL can end early: spaces, parentheses, angle
/// brackets and control characters are percent-encoded.
fn push_destination(url: &str, out: &mut String) {
    for c in url.chars() {
        match c {
            ' ' | '(' | ')' | '<' | '>' | '\\' => {
                out.push_str(&format!("%{:02X}", c as u32));
            }
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
}

/// A link title in double quotes: quotes and backslashes escaped, line breaks flattened.
fn push_title(title: &str, out: &mut String) {
    for c in title.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound on links is checked with `links_len` before writing: it must count exactly what
    /// `write_links` writes, escapes included.
    #[test]
    fn links_len_counts_what_write_links_writes() {
        let snapshot = SourceSnapshot {
            sources: vec![
                Source {
                    index: 1,
                    url: "https://a.example/x y(z)<>\\\u{7}é".into(),
                    title: Some("A \"quoted\" \\ title\nwith a break".into()),
                },
                Source {
                    index: 123_456,
                    url: "https://b.example/".into(),
                    title: Some(String::new()),
                },
                Source {
                    index: 7,
                    url: "https://c.example/\u{85}".into(),
                    title: None,
                },
            ],
        };
        let table = SourceTable::new(&snapshot);
        let run = [1, 123_456, 7, 99];
        let mut out = String::new();
        write_links(&table, &run, &mut out);
        assert_eq!(links_len(&table, &run), out.len() as u64, "{out}");
    }
}
