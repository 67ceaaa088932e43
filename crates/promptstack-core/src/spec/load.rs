//! Loading a spec: bytes → generic tree with spans → schema check → typed [`AgentSpec`].
//!
//! Every problem found is reported, not just the first: syntax errors (as many as the parser can
//! recover from), then every schema violation (unknown keys, wrong types, missing keys, bad enum
//! values), each with `file:line:column`, the offending key path and a hint.

use std::fmt;
use std::sync::OnceLock;

use serde::Serialize;

use super::span::{SourceMap, SpanIndex, index_json, push_pointer, toml_to_json};
use super::{AgentSpec, SPEC_VERSION};
pub(crate) use crate::diagnostic::lowercase_first;
use crate::diagnostic::quote;

/// The largest spec accepted, in bytes. Specs are hand-written; anything larger is a mistake.
pub const MAX_SPEC_BYTES: usize = 4 * 1024 * 1024;

/// The deepest nesting of arrays and tables accepted in a spec or send context.
pub const MAX_NESTING: usize = 64;

pub use promptstack_template::spec::{MAX_EXPRESSION_OPERATORS, MAX_TEMPLATE_NESTING};

/// The most problems one [`SpecError`] reports. A hostile file can hold a million bad keys; the
/// first ones, in source order, are reported with a count of the rest, and no more are collected
/// once a producer has this many.
pub const MAX_REPORTED_ERRORS: usize = 100;

/// The two syntaxes a spec may be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SpecFormat {
    /// TOML (the usual choice).
    Toml,
    /// JSON, with exactly the same schema.
    Json,
}

impl SpecFormat {
    /// Guesses the format from a file name: `.json` is JSON, anything else TOML.
    pub fn from_name(name: &str) -> Self {
        if name.to_ascii_lowercase().ends_with(".json") {
            SpecFormat::Json
        } else {
            SpecFormat::Toml
        }
    }
}

/// One problem in a spec, with where it is and what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecDiagnostic {
    /// A short, stable, kebab-case code (`unknown-key`, `wrong-type`, `unknown-variable`, …).
    pub code: &'static str,
    /// What is wrong, in lowercase.
    pub message: String,
    /// The key path of the offending value, like `blocks[2].template` (empty for the whole file).
    pub path: String,
    /// The same place as a JSON pointer (`/blocks/2/template`).
    #[serde(skip)]
    pub(crate) pointer: String,
    /// Where it is in the source, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<crate::diagnostic::Location>,
    /// How to fix it, when there is something useful to say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The source line, for display.
    #[serde(skip)]
    pub(crate) snippet: Option<Snippet>,
}

/// The part of a source line shown under a diagnostic, with the span to underline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Snippet {
    /// The line, or on a long line a window of [`SNIPPET_WIDTH`] characters around the span with
    /// `…` where it was cut.
    text: String,
    /// Character columns within `text` (one-based, inclusive start, exclusive end) to underline.
    columns: (usize, usize),
}

/// The widest source line shown in full; longer lines (minified JSON, generated files) are shown
/// as a window around the error.
const SNIPPET_WIDTH: usize = 100;

impl Snippet {
    /// The window of `source`'s line around the byte span `span`, in time proportional to the
    /// window, not to the line.
    fn new(source: &SourceMap, span: std::ops::Range<usize>) -> Self {
        let text = source.text();
        let line = source.line_range(span.start);
        let start = span.start.clamp(line.start, line.end);
        let start = floor_char(text, start);
        // Up to half the width before the span...
        let mut from = start;
        for c in text[line.start..start]
            .chars()
            .rev()
            .take(SNIPPET_WIDTH / 2)
        {
            from -= c.len_utf8();
        }
        // ...and the rest after it; near the end of the line, more before it.
        let mut to = from;
        let mut shown = 0;
        for c in text[from..line.end].chars().take(SNIPPET_WIDTH) {
            to += c.len_utf8();
            shown += 1;
        }
        for c in text[line.start..from]
            .chars()
            .rev()
            .take(SNIPPET_WIDTH - shown)
        {
            from -= c.len_utf8();
        }
        let mut window = String::new();
        if from > line.start {
            window.push('…');
        }
        window.push_str(&text[from..to]);
        if to < line.end {
            window.push('…');
        }
        let lead = usize::from(from > line.start);
        let first = lead + text[from..start].chars().count() + 1;
        let end = floor_char(text, span.end.clamp(start, to));
        let last = if span.end > to {
            window.chars().count() + 1
        } else {
            first + text[start..end].chars().count()
        };
        Self {
            text: window,
            columns: (first, last.max(first + 1)),
        }
    }

    /// The text to show, escaped for a terminal, and the columns to underline within it.
    fn shown(&self) -> (String, usize, usize) {
        let (from, to) = self.columns;
        let mut text = String::with_capacity(self.text.len());
        let (mut shown_from, mut shown_to) = (None, None);
        let mut width = 1;
        for (i, c) in self.text.chars().enumerate() {
            if i + 1 == from {
                shown_from = Some(width);
            }
            if i + 1 == to {
                shown_to = Some(width);
            }
            // Escaped one character at a time so the underline stays under what it marks.
            let piece = quote(c.encode_utf8(&mut [0; 4])).to_string();
            width += piece.chars().count();
            text.push_str(&piece);
        }
        let shown_from = shown_from.unwrap_or(width);
        let shown_to = shown_to.unwrap_or(width).max(shown_from + 1);
        (text, shown_from, shown_to)
    }
}

/// The largest character boundary of `text` at or before `offset`.
fn floor_char(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A spec (or send context) that could not be loaded: every problem found, in source order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpecError {
    /// The problems, sorted by location.
    pub diagnostics: Vec<SpecDiagnostic>,
    /// Whether more problems were found than [`MAX_REPORTED_ERRORS`]: only the first ones are
    /// in [`diagnostics`](Self::diagnostics), and the search may have stopped early.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// What was being read ("spec", "send context"), for the summary line.
    #[serde(skip)]
    pub(crate) subject: &'static str,
}

impl SpecError {
    pub(crate) fn new(mut diagnostics: Vec<SpecDiagnostic>) -> Self {
        diagnostics.sort_by(|a, b| {
            let key = |d: &SpecDiagnostic| d.location.as_ref().map(|l| (l.line, l.column));
            key(a).cmp(&key(b)).then_with(|| a.path.cmp(&b.path))
        });
        diagnostics.dedup();
        let truncated = diagnostics.len() > MAX_REPORTED_ERRORS;
        diagnostics.truncate(MAX_REPORTED_ERRORS);
        Self {
            diagnostics,
            truncated,
            subject: "spec",
        }
    }

    /// Names what was being read, for the summary line.
    pub(crate) fn about(mut self, subject: &'static str) -> Self {
        self.subject = subject;
        self
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{d}")?;
        }
        let n = self.diagnostics.len();
        if self.truncated {
            return write!(
                f,
                "\nmore than {n} errors in {}; the first {n} are shown",
                self.subject
            );
        }
        write!(
            f,
            "\n{n} error{} in {}",
            if n == 1 { "" } else { "s" },
            self.subject
        )
    }
}

impl std::error::Error for SpecError {}

impl SpecDiagnostic {
    /// The offending value's place as a JSON pointer (`/blocks/2/template`; empty for the whole
    /// file): the same place as [`path`](Self::path), in the form programs index documents with.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

impl fmt::Display for SpecDiagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let safe = crate::diagnostic::terminal_safe;
        writeln!(f, "error[{}]: {}", self.code, safe(&self.message))?;
        if let Some(location) = &self.location {
            writeln!(f, "  --> {location}")?;
        }
        if let (Some(snippet), Some(location)) = (&self.snippet, &self.location) {
            let number = location.line.to_string();
            let pad = " ".repeat(number.len());
            let (text, from, to) = snippet.shown();
            writeln!(f, "{pad} |")?;
            writeln!(f, "{number} | {text}")?;
            writeln!(
                f,
                "{pad} | {}{}",
                " ".repeat(from - 1),
                "^".repeat((to - from).max(1))
            )?;
        }
        if !self.path.is_empty() {
            writeln!(f, "   = key: {}", safe(&self.path))?;
        }
        if let Some(hint) = &self.hint {
            writeln!(f, "   = hint: {}", safe(hint))?;
        }
        Ok(())
    }
}

/// Builds located diagnostics for one source.
pub(crate) struct Locator<'a> {
    pub(crate) source: &'a SourceMap,
    pub(crate) spans: &'a SpanIndex,
}

impl Locator<'_> {
    /// A diagnostic about the value at `pointer` (its key, when `on_key`), with an optional hint.
    pub(crate) fn at(
        &self,
        code: &'static str,
        pointer: &str,
        on_key: bool,
        message: String,
        hint: Option<String>,
    ) -> SpecDiagnostic {
        let span = self.spans.find(pointer).map(|s| match (&s.key, on_key) {
            (Some(key), true) => key.clone(),
            _ => s.value.clone(),
        });
        let mut diagnostic = self.at_span(code, span, message, hint);
        diagnostic.path = display_path(pointer);
        diagnostic.pointer = pointer.to_owned();
        diagnostic
    }

    /// A diagnostic at a byte span (or at the start of the file).
    pub(crate) fn at_span(
        &self,
        code: &'static str,
        span: Option<std::ops::Range<usize>>,
        message: String,
        hint: Option<String>,
    ) -> SpecDiagnostic {
        let span = span.unwrap_or(0..0);
        let location = self.source.location(span.start);
        let snippet = Some(Snippet::new(self.source, span));
        SpecDiagnostic {
            code,
            message,
            path: String::new(),
            pointer: String::new(),
            location: Some(location),
            hint,
            snippet,
        }
    }
}

/// Turns a JSON pointer into the key path users read: `/blocks/2/when` → `blocks[2].when`.
pub(crate) fn display_path(pointer: &str) -> String {
    let mut out = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(&token);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// A spec parsed and checked against the schema, with its source kept for locating later errors.
#[derive(Debug, Clone)]
pub struct ParsedSpec {
    /// The typed spec.
    pub spec: AgentSpec,
    /// The source text and its name.
    pub source: SourceMap,
    /// Byte spans of every value.
    pub spans: SpanIndex,
    /// Problems already found that did not stop parsing (unknown keys, which were set aside so
    /// the rest of the spec could still be checked). Compiling reports them with its own findings.
    pub recovered: Vec<SpecDiagnostic>,
}

/// Parses raw bytes as a generic tree with spans, enforcing size, encoding and nesting limits.
///
/// Shared by specs and send contexts.
///
/// # Errors
///
/// Non-UTF-8 bytes, inputs over `max_bytes`, syntax errors and nesting deeper than
/// [`MAX_NESTING`], each with a location.
pub(crate) fn parse_tree(
    bytes: &[u8],
    name: &str,
    format: SpecFormat,
    max_bytes: usize,
) -> Result<(serde_json::Value, SourceMap, SpanIndex), SpecError> {
    if bytes.len() > max_bytes {
        let source = SourceMap::new(name, "");
        let locator = Locator {
            source: &source,
            spans: &SpanIndex::default(),
        };
        return Err(SpecError::new(vec![locator.at_span(
            "too-large",
            None,
            format!(
                "input is {} bytes; the limit is {max_bytes} bytes",
                bytes.len()
            ),
            Some("split the input, or check that the right file was given".into()),
        )]));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let valid = error.valid_up_to();
            // Locate against the valid prefix so the position is exact.
            let source =
                SourceMap::new(name, String::from_utf8_lossy(&bytes[..valid]).into_owned());
            let locator = Locator {
                source: &source,
                spans: &SpanIndex::default(),
            };
            return Err(SpecError::new(vec![locator.at_span(
                "not-utf8",
                Some(valid..valid),
                format!(
                    "input is not valid UTF-8 (invalid byte 0x{:02x} at offset {valid})",
                    bytes[valid]
                ),
                Some("save the file as UTF-8".into()),
            )]));
        }
    };
    let source = SourceMap::new(name, text);
    if let Some(offset) = nesting_exceeded(text, format) {
        let locator = Locator {
            source: &source,
            spans: &SpanIndex::default(),
        };
        return Err(SpecError::new(vec![locator.at_span(
            "too-deep",
            Some(offset..offset + 1),
            format!("arrays and tables are nested more than {MAX_NESTING} levels deep"),
            None,
        )]));
    }
    let mut spans = SpanIndex::default();
    let tree = match format {
        SpecFormat::Toml => {
            let (document, errors) = toml::de::DeTable::parse_recoverable(text);
            if !errors.is_empty() {
                let locator = Locator {
                    source: &source,
                    spans: &spans,
                };
                let diagnostics = errors
                    .iter()
                    .take(MAX_REPORTED_ERRORS + 1)
                    .map(|e| {
                        let message = e.message().trim().trim_end_matches('.').to_owned();
                        // The same code and message as a duplicate in JSON, naming the key.
                        match e.span().and_then(|span| text.get(span)) {
                            Some(key) if message == "duplicate key" => locator.at_span(
                                "duplicate-key",
                                e.span(),
                                format!("duplicate key `{}`", quote(key.trim())),
                                Some("keep one of them".into()),
                            ),
                            _ => locator.at_span(
                                "toml-syntax",
                                e.span(),
                                lowercase_first(&message),
                                None,
                            ),
                        }
                    })
                    .collect();
                return Err(SpecError::new(diagnostics));
            }
            let span = document.span();
            let value = toml::Spanned::new(span, toml::de::DeValue::Table(document.into_inner()));
            toml_to_json(&value, "", None, &mut spans)
        }
        SpecFormat::Json => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) => {
                let (index, duplicates) = index_json(text);
                spans = index;
                if !duplicates.is_empty() {
                    let locator = Locator {
                        source: &source,
                        spans: &spans,
                    };
                    let diagnostics = duplicates
                        .into_iter()
                        .take(MAX_REPORTED_ERRORS + 1)
                        .map(|duplicate| {
                            let first = source.location(duplicate.first.start);
                            let mut diagnostic = locator.at_span(
                                "duplicate-key",
                                Some(duplicate.key),
                                format!(
                                    "duplicate key `{}`, first written at line {}, column {}",
                                    quote(&duplicate.name),
                                    first.line,
                                    first.column
                                ),
                                Some(
                                    "keep one of them: JSON readers disagree on which one wins"
                                        .into(),
                                ),
                            );
                            diagnostic.path = display_path(&duplicate.pointer);
                            diagnostic.pointer = duplicate.pointer;
                            diagnostic
                        })
                        .collect();
                    return Err(SpecError::new(diagnostics));
                }
                value
            }
            Err(error) => {
                let locator = Locator {
                    source: &source,
                    spans: &spans,
                };
                let offset = offset_of(&source, error.line(), error.column());
                let message = error.to_string();
                let message = message
                    .split(" at line ")
                    .next()
                    .unwrap_or(&message)
                    .to_owned();
                return Err(SpecError::new(vec![locator.at_span(
                    "json-syntax",
                    Some(offset..offset + 1),
                    lowercase_first(&message),
                    None,
                )]));
            }
        },
    };
    Ok((tree, source, spans))
}

/// Finds the first place where brackets nest deeper than [`MAX_NESTING`], ignoring strings and
/// comments. Runs before the real parser so that no parser recurses without bound.
pub(crate) fn nesting_exceeded(text: &str, format: SpecFormat) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' | b'\'' if bytes[i] == b'"' || format == SpecFormat::Toml => {
                let quote = bytes[i];
                let triple = format == SpecFormat::Toml && bytes[i..].starts_with(&[quote; 3]);
                i += if triple { 3 } else { 1 };
                while i < bytes.len() {
                    if bytes[i] == b'\\' && quote == b'"' {
                        i += 2;
                        continue;
                    }
                    if triple {
                        if bytes[i..].starts_with(&[quote; 3]) {
                            i += 3;
                            // TOML allows up to two extra quotes right after the closing delimiter.
                            while i < bytes.len() && bytes[i] == quote {
                                i += 1;
                            }
                            break;
                        }
                    } else if bytes[i] == quote || (bytes[i] == b'\n' && format == SpecFormat::Toml)
                    {
                        i += 1;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            b'#' if format == SpecFormat::Toml => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' if format == SpecFormat::Toml => {
                // A TOML table header `[a]` or `[[a]]` closes on its own line; inline arrays and
                // tables may span lines, so depth carries over.
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn offset_of(source: &SourceMap, line: usize, column: usize) -> usize {
    let text = source.text();
    let mut offset = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n + 1 == line {
            return offset
                + l.char_indices()
                    .nth(column.saturating_sub(1))
                    .map_or(l.len(), |(i, _)| i);
        }
        offset += l.len();
    }
    text.len()
}

/// A kind of document the project reads as it reads specs: TOML or JSON, checked against the
/// kind's JSON Schema, every problem located. Specs are one kind; eval suites are another.
pub struct DocumentKind {
    /// What is being read ("spec", "eval suite"), for the summary line of an error.
    subject: &'static str,
    /// The key that states the document's format version, and the one version understood.
    version_key: &'static str,
    version: u64,
    /// The largest document accepted, in bytes.
    max_bytes: usize,
    /// Makes the kind's JSON Schema; called once.
    schema: fn() -> serde_json::Value,
    compiled: OnceLock<(serde_json::Value, Option<jsonschema::Validator>)>,
}

impl DocumentKind {
    /// A document kind: its subject, its version key and version, its size bound and its schema.
    pub const fn new(
        subject: &'static str,
        version_key: &'static str,
        version: u64,
        max_bytes: usize,
        schema: fn() -> serde_json::Value,
    ) -> Self {
        Self {
            subject,
            version_key,
            version,
            max_bytes,
            schema,
            compiled: OnceLock::new(),
        }
    }

    fn compiled(&self) -> &(serde_json::Value, Option<jsonschema::Validator>) {
        self.compiled.get_or_init(|| {
            let schema = (self.schema)();
            let validator = jsonschema::validator_for(&schema).ok();
            (schema, validator)
        })
    }

    /// Parses and schema-checks a document of this kind.
    ///
    /// # Errors
    ///
    /// A [`SpecError`] listing every syntax or schema problem with its location.
    pub fn parse<T: serde::de::DeserializeOwned>(
        &self,
        bytes: &[u8],
        name: &str,
        format: SpecFormat,
    ) -> Result<Parsed<T>, SpecError> {
        self.parse_inner(bytes, name, format)
            .map_err(|e| e.about(self.subject))
    }

    fn parse_inner<T: serde::de::DeserializeOwned>(
        &self,
        bytes: &[u8],
        name: &str,
        format: SpecFormat,
    ) -> Result<Parsed<T>, SpecError> {
        let (tree, source, spans) = parse_tree(bytes, name, format, self.max_bytes)?;
        let locator = Locator {
            source: &source,
            spans: &spans,
        };
        let mut diagnostics = Vec::new();
        if let Some(version) = tree.get(self.version_key)
            && version.as_u64() != Some(self.version)
        {
            diagnostics.push(locator.at(
                "unsupported-version",
                &format!("/{}", self.version_key),
                false,
                format!(
                    "{} {} is not supported",
                    self.version_key,
                    quote(&version.to_string())
                ),
                Some(format!(
                    "this build understands {} = {}",
                    self.version_key, self.version
                )),
            ));
        }
        let (schema, validator) = self.compiled();
        diagnostics.extend(schema_diagnostics(
            &tree,
            schema,
            validator.as_ref(),
            &locator,
        ));
        // Unknown keys do not stop the rest of the document from being checked: set them aside,
        // report them, and go on, so that one run shows every problem. Any other schema error
        // stops here.
        let mut tree = tree;
        if !diagnostics.is_empty() {
            // Past the cap, the rest of the file was not searched: nothing more to check.
            if diagnostics.len() > MAX_REPORTED_ERRORS
                || !diagnostics.iter().all(|d| d.code == "unknown-key")
            {
                return Err(SpecError::new(diagnostics));
            }
            for d in &diagnostics {
                remove_path(&mut tree, &d.pointer);
            }
        }
        match serde_path_to_error::deserialize::<_, T>(tree) {
            Ok(value) => Ok(Parsed {
                value,
                source,
                spans,
                recovered: diagnostics,
            }),
            Err(error) => {
                // The schema passed, so what serde refuses is a value: most often a number out
                // of the range of its field (`max_tokens = 1e30`), located with its key path.
                let pointer = path_to_pointer(error.path());
                let message = lowercase_first(&error.inner().to_string());
                let (code, hint) = if out_of_range(&message) {
                    (
                        "out-of-range",
                        Some("write a whole number within the range the message names".to_owned()),
                    )
                } else {
                    ("bad-value", None)
                };
                Err(SpecError::new(vec![
                    locator.at(code, &pointer, false, message, hint),
                ]))
            }
        }
    }
}

/// A document parsed and checked against its kind's schema, with its source kept for locating
/// the problems found later.
#[derive(Debug, Clone)]
pub struct Parsed<T> {
    /// The typed document.
    pub value: T,
    /// The source text and its name.
    pub source: SourceMap,
    /// Byte spans of every value.
    pub spans: SpanIndex,
    /// Unknown keys, set aside so the rest could still be checked; reported with later findings.
    pub recovered: Vec<SpecDiagnostic>,
}

impl<T> Parsed<T> {
    /// A problem with the value at `pointer` (a JSON pointer such as `/scenarios/2/send`),
    /// located in this document's source, with an optional hint.
    pub fn diagnostic(
        &self,
        code: &'static str,
        pointer: &str,
        message: String,
        hint: Option<String>,
    ) -> SpecDiagnostic {
        Locator {
            source: &self.source,
            spans: &self.spans,
        }
        .at(code, pointer, false, message, hint)
    }

    /// The problems found after parsing, with the unknown keys set aside while parsing, as one
    /// error in source order; `None` when there are none.
    pub fn error(&self, subject: &'static str, found: Vec<SpecDiagnostic>) -> Option<SpecError> {
        let mut all = self.recovered.clone();
        all.extend(found);
        (!all.is_empty()).then(|| SpecError::new(all).about(subject))
    }
}

/// Agent specs: `spec_version`, at most [`MAX_SPEC_BYTES`].
static SPEC_KIND: DocumentKind = DocumentKind::new(
    "spec",
    "spec_version",
    SPEC_VERSION as u64,
    MAX_SPEC_BYTES,
    AgentSpec::json_schema,
);

/// Parses and schema-checks a spec.
///
/// # Errors
///
/// A [`SpecError`] listing every syntax or schema problem with its location.
pub fn parse(bytes: &[u8], name: &str, format: SpecFormat) -> Result<ParsedSpec, SpecError> {
    let parsed = SPEC_KIND.parse::<AgentSpec>(bytes, name, format)?;
    Ok(ParsedSpec {
        spec: parsed.value,
        source: parsed.source,
        spans: parsed.spans,
        recovered: parsed.recovered,
    })
}

/// Whether serde refused a whole number for its size: an integer beyond its field's range
/// (`invalid value: integer`), or one too large to be read as an integer at all, which arrives as
/// a float without a fraction (`1e30`, a 30-digit JSON number). A float with a fraction where an
/// integer is expected is a wrong type instead.
fn out_of_range(message: &str) -> bool {
    if message.starts_with("invalid value: integer") {
        return true;
    }
    let Some(rest) = message.strip_prefix("invalid type: floating point `") else {
        return false;
    };
    let number = rest.split('`').next().unwrap_or_default();
    let integer_expected = ["expected u", "expected i"]
        .iter()
        .any(|prefix| message.contains(prefix));
    integer_expected && number.parse::<f64>().is_ok_and(|n| n.fract() == 0.0)
}

/// Removes the value at a JSON pointer, if present.
fn remove_path(tree: &mut serde_json::Value, pointer: &str) {
    let Some(cut) = pointer.rfind('/') else {
        return;
    };
    let key = pointer[cut + 1..].replace("~1", "/").replace("~0", "~");
    if let Some(serde_json::Value::Object(map)) = tree.pointer_mut(&pointer[..cut]) {
        map.remove(&key);
    }
}

/// Checks a tree against a JSON Schema and turns every violation into a located diagnostic.
pub(crate) fn schema_diagnostics(
    tree: &serde_json::Value,
    schema: &serde_json::Value,
    validator: Option<&jsonschema::Validator>,
    locator: &Locator<'_>,
) -> Vec<SpecDiagnostic> {
    let Some(validator) = validator else {
        return vec![locator.at_span(
            "internal",
            None,
            "the built-in schema failed to compile".into(),
            None,
        )];
    };
    let mut out = Vec::new();
    for error in validator.iter_errors(tree) {
        diagnose(&error, schema, locator, &mut out);
        // Enough to report, and to know that some were left out.
        if out.len() > MAX_REPORTED_ERRORS {
            break;
        }
    }
    out
}

/// Turns one schema violation into located diagnostics (several for several unknown keys).
fn diagnose(
    error: &jsonschema::ValidationError<'_>,
    schema: &serde_json::Value,
    locator: &Locator<'_>,
    out: &mut Vec<SpecDiagnostic>,
) {
    use jsonschema::error::ValidationErrorKind as Kind;
    {
        let pointer = error.instance_path().to_string();
        let schema_pointer = error.schema_path().to_string();
        let here = display_path(&pointer);
        let place = if here.is_empty() {
            "at the top level".to_owned()
        } else {
            format!("in `{}`", quote(&here))
        };
        match error.kind() {
            Kind::AdditionalProperties { unexpected } => {
                let allowed = allowed_keys(schema, &schema_pointer);
                for key in unexpected {
                    if out.len() > MAX_REPORTED_ERRORS {
                        break;
                    }
                    let child = push_pointer(&pointer, key);
                    let hint = suggest(key, &allowed);
                    out.push(locator.at(
                        "unknown-key",
                        &child,
                        true,
                        format!("unknown key `{}` {place}", quote(key)),
                        hint,
                    ));
                }
            }
            Kind::Required { property } => {
                let key = property.as_str().unwrap_or_default();
                out.push(locator.at(
                    "missing-key",
                    &pointer,
                    true,
                    format!("missing required key `{}` {place}", quote(key)),
                    None,
                ));
            }
            Kind::Type { kind } => {
                let expected = match kind {
                    jsonschema::error::TypeKind::Single(t) => t.to_string(),
                    // `null` is how optional fields appear in the schema; "must be a null or an
                    // integer" helps nobody.
                    jsonschema::error::TypeKind::Multiple(ts) => ts
                        .iter()
                        .map(|t| t.to_string())
                        .filter(|t| t != "null")
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                let found = json_type_name(error.instance());
                out.push(locator.at(
                    "wrong-type",
                    &pointer,
                    false,
                    format!(
                        "`{}` must be {}, found {found}",
                        quote(&here),
                        article(&expected)
                    ),
                    None,
                ));
            }
            Kind::Enum { options } => {
                let options = options
                    .as_array()
                    .map(|o| {
                        o.iter()
                            .map(|v| v.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                let found = error.instance().to_string();
                let hint = error
                    .instance()
                    .as_str()
                    .and_then(|s| suggest(s, &options_list(&options)))
                    .or_else(|| Some(format!("expected one of {options}")));
                out.push(locator.at(
                    "bad-value",
                    &pointer,
                    false,
                    format!(
                        "`{}` has the value {}, which is not allowed",
                        quote(&here),
                        quote(&found)
                    ),
                    hint,
                ));
            }
            Kind::Constant { expected_value } => out.push(locator.at(
                "bad-value",
                &pointer,
                false,
                format!("`{}` must be {expected_value}", quote(&here)),
                None,
            )),
            // An optional field is `anyOf [the type, null]`: for a non-null value the null branch
            // says nothing useful, so report what the one remaining branch found instead.
            Kind::AnyOf { context } | Kind::OneOfNotValid { context }
                if !error.instance().is_null()
                    && context
                        .iter()
                        .filter(|branch| !is_null_branch(branch))
                        .count()
                        == 1 =>
            {
                if let Some(branch) = context.iter().find(|branch| !is_null_branch(branch)) {
                    for inner in branch {
                        diagnose(inner, schema, locator, out);
                    }
                }
            }
            Kind::Minimum { limit } | Kind::ExclusiveMinimum { limit } => out.push(locator.at(
                "out-of-range",
                &pointer,
                false,
                format!(
                    "`{}` must be at least {limit}, found {}",
                    quote(&here),
                    quote(&error.instance().to_string())
                ),
                None,
            )),
            Kind::Maximum { limit } | Kind::ExclusiveMaximum { limit } => out.push(locator.at(
                "out-of-range",
                &pointer,
                false,
                format!(
                    "`{}` must be at most {limit}, found {}",
                    quote(&here),
                    quote(&error.instance().to_string())
                ),
                None,
            )),
            // A union of objects told apart by one key (`type = "regex"`, `role = "user"`): with
            // a known tag, what its own branch found; with another, the tag itself.
            Kind::OneOfNotValid { context } | Kind::AnyOf { context }
                if error.instance().is_object()
                    && tagged_union(schema, &schema_pointer).is_some() =>
            {
                let (tag, tags) = tagged_union(schema, &schema_pointer).unwrap_or_default();
                let value = error.instance().get(&tag);
                let branch = value
                    .and_then(|v| v.as_str())
                    .and_then(|v| tags.iter().position(|t| t == v));
                match (branch.and_then(|i| context.get(i)), value) {
                    (Some(branch), _) => {
                        for inner in branch {
                            diagnose(inner, schema, locator, out);
                        }
                    }
                    (None, None) => out.push(locator.at(
                        "missing-key",
                        &pointer,
                        true,
                        format!("missing required key `{}` {place}", quote(&tag)),
                        Some(format!("expected one of {}", quoted(&tags))),
                    )),
                    (None, Some(value)) => {
                        let hint = value
                            .as_str()
                            .and_then(|s| suggest(s, &tags))
                            .or_else(|| Some(format!("expected one of {}", quoted(&tags))));
                        let at = push_pointer(&pointer, &tag);
                        out.push(locator.at(
                            "bad-value",
                            &at,
                            false,
                            format!(
                                "`{}` has the value {}, which is not allowed",
                                quote(&display_path(&at)),
                                quote(&value.to_string())
                            ),
                            hint,
                        ));
                    }
                }
            }
            Kind::OneOfNotValid { .. } | Kind::OneOfMultipleValid { .. } | Kind::AnyOf { .. } => {
                // Enum-like unions (schemars renders documented enum variants as `oneOf` of
                // constants): list the allowed constants when there are any.
                let consts = one_of_constants(schema, &schema_pointer);
                let hint = if consts.is_empty() {
                    None
                } else {
                    error
                        .instance()
                        .as_str()
                        .and_then(|s| suggest(s, &consts))
                        .or_else(|| Some(format!("expected one of {}", quoted(&consts))))
                };
                out.push(locator.at(
                    "bad-value",
                    &pointer,
                    false,
                    format!(
                        "`{}` has the value {}, which is not allowed",
                        quote(&here),
                        quote(&error.instance().to_string())
                    ),
                    hint,
                ));
            }
            _ => out.push(locator.at(
                "schema",
                &pointer,
                false,
                format!("{place}: {}", quote(&lowercase_first(&error.to_string()))),
                None,
            )),
        }
    }
}

/// Whether a branch's only complaint is that the value is not null.
fn is_null_branch(branch: &[jsonschema::ValidationError<'_>]) -> bool {
    use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
    branch.len() == 1
        && matches!(branch[0].kind(), Kind::Type { kind: TypeKind::Single(t) } if t.to_string() == "null")
}

fn quoted(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn options_list(options: &str) -> Vec<String> {
    options
        .split(", ")
        .map(|s| s.trim_matches('"').to_owned())
        .collect()
}

fn article(expected: &str) -> String {
    match expected {
        "object" => "a table".into(),
        "array" => "an array".into(),
        "integer" => "an integer".into(),
        other => format!("a {other}"),
    }
}

fn json_type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "a table",
    }
}

/// The schema node a schema path points at, following `$ref`s into `$defs`.
fn schema_node<'a>(schema: &'a serde_json::Value, pointer: &str) -> Option<&'a serde_json::Value> {
    let mut node = schema;
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        node = match token.as_str() {
            "$ref" => {
                let target = node.get("$ref")?.as_str()?.trim_start_matches('#');
                schema.pointer(target)?
            }
            _ => match node {
                serde_json::Value::Object(map) => map.get(&token)?,
                serde_json::Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            },
        };
    }
    Some(node)
}

fn allowed_keys(schema: &serde_json::Value, schema_pointer: &str) -> Vec<String> {
    let parent = schema_pointer
        .strip_suffix("/additionalProperties")
        .unwrap_or(schema_pointer);
    schema_node(schema, parent)
        .and_then(|node| node.get("properties"))
        .and_then(|p| p.as_object())
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

fn one_of_constants(schema: &serde_json::Value, schema_pointer: &str) -> Vec<String> {
    let Some(node) = schema_node(schema, schema_pointer) else {
        return Vec::new();
    };
    let Some(variants) = node.as_array() else {
        return Vec::new();
    };
    variants
        .iter()
        .filter_map(|v| v.get("const").and_then(|c| c.as_str()).map(str::to_owned))
        .collect()
}

/// A union whose branches are all objects holding one key with a constant string (`type`,
/// `role`): that key, and each branch's constant in branch order.
fn tagged_union(schema: &serde_json::Value, schema_pointer: &str) -> Option<(String, Vec<String>)> {
    let branches = schema_node(schema, schema_pointer)?.as_array()?;
    fn resolve<'a>(
        schema: &'a serde_json::Value,
        branch: &'a serde_json::Value,
    ) -> Option<&'a serde_json::Value> {
        match branch.get("$ref").and_then(|r| r.as_str()) {
            Some(target) => schema.pointer(target.trim_start_matches('#')),
            None => Some(branch),
        }
    }
    let constant = |branch: &serde_json::Value, key: &str| {
        resolve(schema, branch)?
            .get("properties")?
            .get(key)?
            .get("const")?
            .as_str()
            .map(str::to_owned)
    };
    let first = resolve(schema, branches.first()?)?
        .get("properties")?
        .as_object()?;
    first.keys().find_map(|key| {
        let tags: Option<Vec<String>> = branches.iter().map(|b| constant(b, key)).collect();
        tags.map(|tags| (key.clone(), tags))
    })
}

/// Words longer than this are not compared for suggestions (the edit distance costs the product
/// of the lengths in time and memory, and no typo is that long).
const SUGGEST_MAX_CHARS: usize = 64;

/// Suggests the closest allowed word, if one is close enough to be a likely typo.
pub(crate) fn suggest(word: &str, allowed: &[String]) -> Option<String> {
    let chars = word.chars().take(SUGGEST_MAX_CHARS + 1).count();
    let best = allowed
        .iter()
        .filter(|_| chars <= SUGGEST_MAX_CHARS)
        .map(|candidate| (strsim::damerau_levenshtein(word, candidate), candidate))
        .min_by_key(|(distance, _)| *distance);
    let limit = (chars / 3).max(1);
    if let Some(best) = best.filter(|best| best.0 <= limit) {
        Some(format!("did you mean `{}`?", best.1))
    } else if allowed.len() <= 12 {
        Some(format!(
            "expected one of {}",
            allowed
                .iter()
                .map(|a| format!("`{}`", quote(a)))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    } else {
        None
    }
}

/// The JSON pointer of a `serde_path_to_error` path, for locating a deserialisation error.
pub(crate) fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                pointer = crate::spec::span_pointer(&pointer, &index.to_string())
            }
            Segment::Map { key } => pointer = crate::spec::span_pointer(&pointer, key),
            Segment::Enum { variant } => pointer = crate::spec::span_pointer(&pointer, variant),
            Segment::Unknown => {}
        }
    }
    pointer
}
