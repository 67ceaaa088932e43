//! What a citation run becomes: a placeholder plus a citation-map entry, or Markdown links.

use serde::Serialize;

use crate::source::{Source, SourceSnapshot};

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

/// One citation run: the placeholder written in the text and the sources it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Citation {
    /// The run's key, counting from 1 in the order runs were written.
    pub key: u32,
    /// The exact placeholder text written for this run, `{{cite:K}}`.
    pub placeholder: String,
    /// The source numbers of the run, each once, in order of first mention.
    pub sources: Vec<u32>,
}

/// Every citation run written so far, in order.
///
/// Serialised as `{"citations":[{"key":1,"placeholder":"{{cite:1}}","sources":[1,2]}]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CitationMap {
    /// The runs, in the order their placeholders appear in the text.
    pub citations: Vec<Citation>,
}

impl CitationMap {
    /// Looks a run up by its key.
    pub fn get(&self, key: u32) -> Option<&Citation> {
        // Keys are dense and start at 1, so the position is known.
        self.citations
            .get(key.checked_sub(1)? as usize)
            .filter(|c| c.key == key)
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

    pub(crate) fn get(&self, index: u32) -> Option<&Source> {
        let at = self
            .sources
            .binary_search_by_key(&index, |s| s.index)
            .ok()?;
        Some(&self.sources[at])
    }

    pub(crate) fn contains(&self, index: u32) -> bool {
        self.get(index).is_some()
    }
}

/// Writes the placeholder for run `key`.
pub(crate) fn placeholder(key: u32) -> String {
    format!("{{{{cite:{key}}}}}")
}

/// Writes `[[N]](url "title")` for each source of a run.
pub(crate) fn write_links(table: &SourceTable, indices: &[u32], out: &mut String) {
    for &index in indices {
        let Some(source) = table.get(index) else {
            continue;
        };
        out.push_str("[[");
        out.push_str(itoa(index).as_str());
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

fn itoa(n: u32) -> String {
    n.to_string()
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
