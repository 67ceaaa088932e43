//! Where things are in a spec's source text: byte spans per value path, and line/column lookup.
//!
//! A spec is first parsed into a generic tree (`serde_json::Value`) while a [`SpanIndex`] records,
//! for every value, the byte span of its key and of its value, keyed by JSON pointer
//! (`/blocks/2/template`). Schema and semantic errors are found on the tree and located through the
//! index, so both TOML and JSON specs get `file:line:column` for every error.

use std::collections::HashMap;
use std::ops::Range;

use crate::diagnostic::Location;

/// A source text with its name, able to turn byte offsets into [`Location`]s.
///
/// Locating is linear in the input whatever its shape: a column is counted from the nearest
/// checkpoint (every [`CHECKPOINT_BYTES`] bytes) rather than from the start of its line, so a
/// one-line multi-megabyte document with thousands of errors is located as fast as a short one.
#[derive(Debug, Clone)]
pub struct SourceMap {
    name: String,
    text: String,
    line_starts: Vec<usize>,
    /// The number of characters before each multiple of [`CHECKPOINT_BYTES`], then before the
    /// end of the text.
    checkpoints: Vec<usize>,
}

/// The distance between two character-count checkpoints of a [`SourceMap`], in bytes.
const CHECKPOINT_BYTES: usize = 512;

/// Whether a byte starts a character (is not a UTF-8 continuation byte).
fn starts_char(b: &u8) -> bool {
    b & 0xC0 != 0x80
}

impl SourceMap {
    /// Indexes the line starts of `text`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let mut line_starts = vec![0];
        line_starts.extend(memchr_newlines(&text));
        let mut checkpoints = Vec::with_capacity(text.len() / CHECKPOINT_BYTES + 2);
        let mut chars = 0;
        for block in text.as_bytes().chunks(CHECKPOINT_BYTES) {
            checkpoints.push(chars);
            chars += block.iter().filter(|b| starts_char(b)).count();
        }
        // The end of the text is a position too (a span may end there): when the text fills its
        // last block exactly, the end starts a block of its own.
        checkpoints.push(chars);
        Self {
            name: name.into(),
            text,
            line_starts,
            checkpoints,
        }
    }

    /// The file name as the caller gave it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole source text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The number of characters before a byte offset (a character boundary), in at most
    /// [`CHECKPOINT_BYTES`] steps.
    fn chars_before(&self, offset: usize) -> usize {
        let block = offset / CHECKPOINT_BYTES;
        let base = self.checkpoints.get(block).copied().unwrap_or(0);
        let from = (block * CHECKPOINT_BYTES).min(offset);
        base + self.text.as_bytes()[from..offset]
            .iter()
            .filter(|b| starts_char(b))
            .count()
    }

    /// The byte offset of the start of the zero-based line holding `offset`.
    fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&start| start <= offset) - 1
    }

    /// `offset` clamped to the text and moved back to a character boundary.
    fn clamp(&self, offset: usize) -> usize {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// The location of a byte offset (clamped to the text, and to a character boundary).
    pub fn location(&self, offset: usize) -> Location {
        let offset = self.clamp(offset);
        let line = self.line_of(offset);
        let start = self.line_starts[line];
        let column = self.chars_before(offset) - self.chars_before(start) + 1;
        Location {
            file: self.name.clone(),
            line: line + 1,
            column,
        }
    }

    /// The byte range of the zero-based line holding `offset`, without its line terminator.
    pub(crate) fn line_range(&self, offset: usize) -> Range<usize> {
        let line = self.line_of(self.clamp(offset));
        let start = self.line_starts[line];
        let end = self
            .line_starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len());
        let text = self.text[start..end].trim_end_matches(['\n', '\r']);
        start..start + text.len()
    }

    /// The text of a one-based line, without its line terminator.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }
}

fn memchr_newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter(|&(_, b)| b == b'\n')
        .map(|(i, _)| i + 1)
}

/// The byte spans of one value in the source: its key (for table entries) and the value itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spans {
    /// The span of the key naming this value, if it is a table entry.
    pub key: Option<Range<usize>>,
    /// The span of the value.
    pub value: Range<usize>,
}

/// Byte spans of every value in a parsed document, keyed by JSON pointer.
#[derive(Debug, Clone, Default)]
pub struct SpanIndex {
    spans: HashMap<String, Spans>,
}

impl SpanIndex {
    /// Records the spans of the value at `pointer`.
    pub(crate) fn insert(&mut self, pointer: String, spans: Spans) {
        self.spans.insert(pointer, spans);
    }

    /// The spans of the value at `pointer`, or of its nearest recorded ancestor.
    pub fn find(&self, pointer: &str) -> Option<&Spans> {
        let mut pointer = pointer;
        loop {
            if let Some(spans) = self.spans.get(pointer) {
                return Some(spans);
            }
            let cut = pointer.rfind('/')?;
            pointer = &pointer[..cut];
        }
    }
}

/// Appends one reference token to a JSON pointer, escaping `~` and `/`.
pub(crate) fn push_pointer(base: &str, token: &str) -> String {
    let mut out = String::with_capacity(base.len() + token.len() + 1);
    out.push_str(base);
    out.push('/');
    for c in token.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// Converts a TOML document into a JSON value, recording spans.
pub(crate) fn toml_to_json(
    value: &toml::Spanned<toml::de::DeValue<'_>>,
    pointer: &str,
    key: Option<Range<usize>>,
    index: &mut SpanIndex,
) -> serde_json::Value {
    use toml::de::DeValue;
    index.insert(
        pointer.to_owned(),
        Spans {
            key,
            value: value.span(),
        },
    );
    match value.get_ref() {
        DeValue::String(s) => serde_json::Value::String(s.to_string()),
        DeValue::Integer(i) => i
            .as_str()
            .replace('_', "")
            .parse::<i64>()
            .ok()
            .or_else(|| i64::from_str_radix(&i.as_str().replace('_', ""), i.radix()).ok())
            .map(serde_json::Value::from)
            .unwrap_or_else(|| serde_json::Value::String(i.as_str().to_owned())),
        DeValue::Float(f) => f
            .as_str()
            .replace('_', "")
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(serde_json::Value::Number)
            .unwrap_or_else(|| serde_json::Value::String(f.as_str().to_owned())),
        DeValue::Boolean(b) => serde_json::Value::Bool(*b),
        DeValue::Datetime(d) => serde_json::Value::String(d.to_string()),
        DeValue::Array(items) => serde_json::Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    toml_to_json(item, &push_pointer(pointer, &i.to_string()), None, index)
                })
                .collect(),
        ),
        DeValue::Table(table) => {
            let mut map = serde_json::Map::with_capacity(table.len());
            for (k, v) in table.iter() {
                let child = push_pointer(pointer, k.get_ref());
                let json = toml_to_json(v, &child, Some(k.span()), index);
                map.insert(k.get_ref().to_string(), json);
            }
            serde_json::Value::Object(map)
        }
    }
}

/// A key that appears twice in one JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DuplicateKey {
    /// The pointer of the value the key names.
    pub(crate) pointer: String,
    /// The key's name.
    pub(crate) name: String,
    /// The key as written the second time.
    pub(crate) key: Range<usize>,
    /// The key as written the first time.
    pub(crate) first: Range<usize>,
}

/// Records the spans of every value of a JSON document that `serde_json` already accepted, and
/// every key that appears twice in one object (JSON parsers disagree on which one wins, so a
/// duplicate is refused, as TOML refuses it).
///
/// This is a small scanner over the JSON grammar; since the text is known to be valid JSON it does
/// not need to report errors, only to stay in bounds on any input.
pub(crate) fn index_json(text: &str) -> (SpanIndex, Vec<DuplicateKey>) {
    let mut scanner = JsonScanner {
        bytes: text.as_bytes(),
        pos: 0,
        index: SpanIndex::default(),
        duplicates: Vec::new(),
    };
    scanner.value(String::new(), None, 0);
    (scanner.index, scanner.duplicates)
}

struct JsonScanner<'a> {
    bytes: &'a [u8],
    pos: usize,
    index: SpanIndex,
    duplicates: Vec<DuplicateKey>,
}

/// Deeper documents are rejected by `serde_json` before they reach the scanner; this is a guard.
const MAX_JSON_DEPTH: usize = 256;

impl JsonScanner<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn value(&mut self, pointer: String, key: Option<Range<usize>>, depth: usize) {
        self.skip_ws();
        let start = self.pos;
        match self.bytes.get(self.pos) {
            Some(b'{') if depth < MAX_JSON_DEPTH => {
                self.pos += 1;
                let mut keys: HashMap<String, Range<usize>> = HashMap::new();
                loop {
                    self.skip_ws();
                    match self.bytes.get(self.pos) {
                        Some(b'"') => {
                            let key_start = self.pos;
                            let name = self.string();
                            let key_span = key_start..self.pos;
                            self.skip_ws();
                            if self.bytes.get(self.pos) == Some(&b':') {
                                self.pos += 1;
                            }
                            let child = push_pointer(&pointer, &name);
                            if let Some(first) = keys.get(&name) {
                                self.duplicates.push(DuplicateKey {
                                    name: name.clone(),
                                    pointer: child.clone(),
                                    key: key_span.clone(),
                                    first: first.clone(),
                                });
                            } else {
                                keys.insert(name, key_span.clone());
                            }
                            self.value(child, Some(key_span), depth + 1);
                            self.skip_ws();
                            if self.bytes.get(self.pos) == Some(&b',') {
                                self.pos += 1;
                            }
                        }
                        Some(b'}') => {
                            self.pos += 1;
                            break;
                        }
                        Some(_) => self.pos += 1,
                        None => break,
                    }
                }
            }
            Some(b'[') if depth < MAX_JSON_DEPTH => {
                self.pos += 1;
                let mut i = 0usize;
                loop {
                    self.skip_ws();
                    match self.bytes.get(self.pos) {
                        Some(b']') => {
                            self.pos += 1;
                            break;
                        }
                        Some(b',') => self.pos += 1,
                        Some(_) => {
                            let before = self.pos;
                            self.value(push_pointer(&pointer, &i.to_string()), None, depth + 1);
                            i += 1;
                            if self.pos == before {
                                self.pos += 1;
                            }
                        }
                        None => break,
                    }
                }
            }
            Some(b'"') => {
                self.string();
            }
            Some(_) => {
                while let Some(&b) = self.bytes.get(self.pos) {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.pos += 1;
                }
            }
            None => {}
        }
        self.index.insert(
            pointer,
            Spans {
                key,
                value: start..self.pos,
            },
        );
    }

    /// Scans a string starting at the opening quote and returns its decoded value.
    fn string(&mut self) -> String {
        let start = self.pos;
        self.pos += 1;
        while let Some(&b) = self.bytes.get(self.pos) {
            self.pos += 1;
            match b {
                b'\\' => self.pos += 1,
                b'"' => break,
                _ => {}
            }
        }
        let end = self.pos.min(self.bytes.len());
        std::str::from_utf8(&self.bytes[start..end])
            .ok()
            .and_then(|raw| serde_json::from_str::<String>(raw).ok())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_index_finds_nested_values() {
        let text = "{\n  \"a\": [1, {\"b/c\": \"x\"}],\n  \"d\": true\n}";
        let (index, duplicates) = index_json(text);
        assert!(duplicates.is_empty());
        let spans = index.find("/a/1/b~1c").unwrap();
        assert_eq!(&text[spans.value.clone()], "\"x\"");
        assert_eq!(&text[spans.key.clone().unwrap()], "\"b/c\"");
        assert_eq!(&text[index.find("/d").unwrap().value.clone()], "true");
        // An unknown child falls back to its parent.
        assert_eq!(&text[index.find("/d/zz").unwrap().value.clone()], "true");
    }

    #[test]
    fn json_index_finds_duplicate_keys() {
        let text = r#"{"a": {"b": 1, "b": 2}, "a": 3}"#;
        let (_, duplicates) = index_json(text);
        let found: Vec<(&str, &str, usize)> = duplicates
            .iter()
            .map(|d| (d.pointer.as_str(), &text[d.key.clone()], d.first.start))
            .collect();
        assert_eq!(found, vec![("/a/b", "\"b\"", 7), ("/a", "\"a\"", 1)]);
    }

    #[test]
    fn columns_are_counted_across_checkpoints() {
        let line = "é".repeat(3 * CHECKPOINT_BYTES);
        let text = format!("x\n{line}y");
        let map = SourceMap::new("f.json", text.clone());
        let y = text.len() - 1;
        let loc = map.location(y);
        assert_eq!((loc.line, loc.column), (2, 3 * CHECKPOINT_BYTES + 1));
        // An offset inside a character is moved back to its start.
        assert_eq!(map.location(y - 1).column, 3 * CHECKPOINT_BYTES);
        // The end of a text that fills its last block exactly.
        for len in [0, CHECKPOINT_BYTES, 2 * CHECKPOINT_BYTES] {
            let map = SourceMap::new("f.json", "a".repeat(len));
            assert_eq!(map.location(len).column, len + 1);
        }
    }

    proptest::proptest! {
        /// Locating from checkpoints agrees with counting from the start of the line, at every
        /// offset, on text mixing one- to four-byte characters and line breaks.
        #[test]
        fn locations_agree_with_counting_from_the_line_start(
            pieces in proptest::collection::vec(
                proptest::sample::select(vec!["a", "é", "中", "𝄞", "\n", "\r\n"]),
                0..1500,
            ),
            at in 0usize..8000,
        ) {
            let text: String = pieces.concat();
            let map = SourceMap::new("f", text.clone());
            let mut offset = at.min(text.len());
            while !text.is_char_boundary(offset) {
                offset -= 1;
            }
            let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let line = text[..offset].matches('\n').count() + 1;
            let column = text[line_start..offset].chars().count() + 1;
            let loc = map.location(at);
            proptest::prop_assert_eq!((loc.line, loc.column), (line, column));
        }
    }

    #[test]
    fn locations_count_characters() {
        let map = SourceMap::new("f.toml", "a = 1\nbé = \"x\"\n");
        let loc = map.location(9);
        assert_eq!((loc.line, loc.column), (2, 3));
        assert_eq!(map.line_text(2), "bé = \"x\"");
    }
}
