//! The label a UI shows while a tool call runs, rendered from the tool's `verb`.
//!
//! A verb such as `searching for {query}` becomes `Searching for "rust async traits"…`:
//!
//! - each `{param}` (ASCII letters, digits, `_`, `-`) is replaced by the call input's top-level
//!   value of that name: strings with their whitespace collapsed and in double quotes, numbers
//!   and booleans bare, arrays of those joined with `, ` (quoted if any is a string); any other
//!   brace text stays literal;
//! - a value longer than [`LabelConfig::max_value_chars`] is cut **once** and ends with a single
//!   `…` (trailing spaces, dots and ellipses before the cut are removed, so no `.…` or `……`);
//! - a missing, null, empty or structured value is replaced by a neutral `…` without quotes, and
//!   the space before it is dropped when it ends the label (`Searching for…`) or when the verb's
//!   own ellipsis follows it (`reading {url}…` gives `Reading…`);
//! - the first character is uppercased (unless it belongs to a value), and `…` is appended unless
//!   the label already ends with `…` or `...` (trailing full stops give way to it: no `.…`).

use serde_json::Value;

/// How labels are rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelConfig {
    /// The longest a substituted value may be, in characters, ellipsis included. At least 2.
    pub max_value_chars: usize,
}

impl Default for LabelConfig {
    fn default() -> Self {
        Self {
            max_value_chars: 40,
        }
    }
}

const ELLIPSIS: char = '…';

/// Renders `verb` for a call with `input`, with the default [`LabelConfig`].
///
/// # Example
///
/// ```
/// use promptstack_core::tools::label::render_label;
/// use serde_json::json;
///
/// assert_eq!(render_label("searching for {query}", &json!({"query": "rust"})), "Searching for \"rust\"…");
/// assert_eq!(render_label("searching for {query}", &json!({})), "Searching for…");
/// ```
pub fn render_label(verb: &str, input: &Value) -> String {
    render_label_with(verb, input, &LabelConfig::default())
}

/// Renders `verb` for a call with `input` (see the [module docs](self)).
pub fn render_label_with(verb: &str, input: &Value, config: &LabelConfig) -> String {
    let mut out = String::with_capacity(verb.len() + 16);
    // A label that opens with a substituted value keeps the value's case.
    let mut opens_with_value = false;
    let mut rest = verb;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let name_len = after
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count();
        if name_len == 0 || after.as_bytes().get(name_len) != Some(&b'}') {
            // Not a placeholder: keep the brace literally and look further on.
            out.push_str(&rest[..=open]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..open]);
        let next = &after[name_len + 1..];
        match lookup(input, &after[..name_len]) {
            Some(value) => {
                opens_with_value |= out.is_empty();
                if value.quoted {
                    out.push('"');
                }
                push_truncated(&mut out, &value.text, config.max_value_chars.max(2));
                if value.quoted {
                    out.push('"');
                }
            }
            // The verb's own ellipsis already stands in for the missing value.
            None if next.starts_with(ELLIPSIS) || next.starts_with("...") => {
                out.truncate(out.trim_end().len());
            }
            None => out.push(ELLIPSIS),
        }
        rest = next;
    }
    out.push_str(rest);

    let trimmed = out.trim_end();
    let mut label = if opens_with_value {
        trimmed.to_owned()
    } else {
        capitalize_first(trimmed)
    };
    if let Some(stem) = label.strip_suffix(" …") {
        label = format!("{}{ELLIPSIS}", stem.trim_end());
    }
    if !label.ends_with(ELLIPSIS) && !label.ends_with("...") {
        // A verb ending in a full stop gets the ellipsis instead of it, never `.…`.
        label.truncate(label.trim_end_matches('.').len());
        label.push(ELLIPSIS);
    }
    label
}

/// A value to substitute, and whether it is text (quoted) or a number or boolean (bare).
struct Shown {
    text: String,
    quoted: bool,
}

/// The displayable text of a top-level input value, or `None` when there is nothing to show.
fn lookup(input: &Value, name: &str) -> Option<Shown> {
    let scalar = |value: &Value| match value {
        Value::String(s) => {
            let collapsed = s.split_whitespace().collect::<Vec<_>>().join(" ");
            (!collapsed.is_empty()).then_some((collapsed, true))
        }
        Value::Number(n) => Some((n.to_string(), false)),
        Value::Bool(b) => Some((b.to_string(), false)),
        _ => None,
    };
    match input.get(name)? {
        Value::Array(items) => {
            let parts: Option<Vec<(String, bool)>> = items.iter().map(scalar).collect();
            let parts = parts.filter(|p| !p.is_empty())?;
            let quoted = parts.iter().any(|(_, q)| *q);
            let text = parts
                .into_iter()
                .map(|(t, _)| t)
                .collect::<Vec<_>>()
                .join(", ");
            Some(Shown { text, quoted })
        }
        value => scalar(value).map(|(text, quoted)| Shown { text, quoted }),
    }
}

/// Appends `value`, cut to at most `max` characters with one trailing ellipsis if it was longer.
fn push_truncated(out: &mut String, value: &str, max: usize) {
    match value.char_indices().nth(max) {
        None => out.push_str(value),
        Some(_) => {
            let cut = value
                .char_indices()
                .nth(max - 1)
                .map_or(value.len(), |(i, _)| i);
            let kept = value[..cut]
                .trim_end_matches(|c: char| c.is_whitespace() || c == '.' || c == ELLIPSIS);
            out.push_str(kept);
            out.push(ELLIPSIS);
        }
    }
}

fn capitalize_first(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}
