//! Reusable prompt layers for agent families: the pieces every browser or coding agent needs,
//! done once and correctly.
//!
//! - [`escape`]: XML-ish escaping of `& < > " '` (and its inverse, for tests and tools).
//! - [`guidelines`]: trim (ECMAScript whitespace), drop empties, exact dedupe with the first
//!   position winning.
//! - [`crate::sites`] (a module of its own, since the send context checks skill patterns with it):
//!   site patterns matched against the tab at submit time and the tabs the user referenced.
//! - [`files`]: context files (AGENTS.md, CLAUDE.md) with relative `/` paths and per-file and
//!   total size caps that leave a visible truncation note.
//! - [`compact`]: harness state serialised compactly (bounded lists with `+N more`, long strings
//!   cut with an ellipsis).
//!
//! Each layer is a pure function with its own tests, and is also a template filter registered in
//! every agent's environment (see `register`), so a spec uses it as
//! `{{ skills | unique_names }}`, `{{ text | escape_xml }}`, `{% for g in list | guidelines %}`.

pub mod compact;
pub mod escape;
pub mod files;
pub mod guidelines;

use minijinja::value::{Kwargs, Rest, Value};
use minijinja::{Environment, Error, ErrorKind, State};

use crate::room::{ensure_room, ensure_value_fits};
use crate::sites;

/// Registers the layers as template filters:
///
/// | filter | input | result |
/// |---|---|---|
/// | `escape_xml` | string | `& < > " '` escaped |
/// | `posix_path` | string | every `\` replaced by `/` |
/// | `escape_end_tags(name, …)` | string | every end tag of one of the names (any ASCII case, whitespace after `</` allowed) written with `&lt;` for its `<`, so the text cannot close those elements |
/// | `guidelines` | list of strings | trimmed, non-empty, first-wins unique |
/// | `unique_names` | list of objects with `name` | first object of each exact name |
/// | `for_sites(urls)` | list of objects with `sites` | those whose site patterns match one of `urls` (an empty `sites` matches every URL) |
/// | `context_files(base=…, max_file_bytes=…, max_total_bytes=…)` | list of `{path, content}` | paths relative to `base` with `/`, contents capped, with `truncated` and `note` |
/// | `compact(max_items=…, max_chars=…)` | any value | one-line JSON, bounded |
pub(crate) fn register(env: &mut Environment<'static>) {
    // Every filter checks the size of its result against what the render may still allocate
    // before allocating it.
    env.add_filter("escape_xml", |state: &State, s: &str| {
        ensure_room(state, escape::escaped_len(s))?;
        Ok::<_, Error>(escape::escape_xml(s).into_owned())
    });
    env.add_filter("posix_path", |state: &State, s: &str| {
        ensure_room(state, s.len())?;
        Ok::<_, Error>(files::posix_path(s))
    });
    env.add_filter("escape_end_tags", escape_end_tags_filter);
    env.add_filter("guidelines", guidelines_filter);
    env.add_filter("unique_names", unique_names_filter);
    env.add_filter("for_sites", for_sites_filter);
    env.add_filter("context_files", context_files_filter);
    env.add_filter("compact", compact_filter);
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidOperation, message)
}

/// `escape_end_tags(name, …)`: between one and [`escape::MAX_END_TAG_NAMES`] tag names, each
/// one [`escape::is_tag_name`] takes; the result's length is counted before it is made.
fn escape_end_tags_filter(state: &State, text: &str, names: Rest<Value>) -> Result<String, Error> {
    if names.is_empty() || names.len() > escape::MAX_END_TAG_NAMES {
        return Err(invalid(format!(
            "escape_end_tags takes 1 to {} tag names, not {}",
            escape::MAX_END_TAG_NAMES,
            names.len()
        )));
    }
    // The names are read where they lie: a long or non-string argument is refused, not copied.
    let mut checked = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        match name.as_str() {
            Some(name) if escape::is_tag_name(name) => checked.push(name),
            _ => {
                return Err(invalid(format!(
                    "escape_end_tags: argument {i} is not a tag name (a letter or `_`, then letters, digits, `_`, `-`, `.` or `:`, at most {} bytes)",
                    escape::MAX_END_TAG_NAME_BYTES
                )));
            }
        }
    }
    ensure_room(state, escape::end_tags_escaped_len(text, &checked))?;
    Ok(escape::escape_end_tags(text, &checked).into_owned())
}

fn guidelines_filter(state: &State, values: Value) -> Result<Value, Error> {
    let mut items = Vec::new();
    let mut bytes = 0usize;
    for (i, value) in values.try_iter()?.enumerate() {
        match value.as_str() {
            Some(s) => {
                bytes = bytes.saturating_add(s.len());
                ensure_room(state, bytes)?;
                items.push(s.to_owned());
            }
            None => {
                return Err(invalid(format!(
                    "guideline {i} is {}, not a string",
                    value.kind()
                )));
            }
        }
    }
    Ok(Value::from(guidelines::normalize(&items)))
}

fn unique_names_filter(values: Value) -> Result<Value, Error> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for value in values.try_iter()? {
        let name = value.get_attr("name")?;
        let key = name
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| name.to_string());
        if seen.insert(key) {
            out.push(value);
        }
    }
    Ok(Value::from(out))
}

fn for_sites_filter(values: Value, urls: Value) -> Result<Value, Error> {
    let urls: Vec<String> = urls
        .try_iter()?
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect();
    let parsed: Vec<url::Url> = urls
        .iter()
        .filter_map(|u| sites::parse_url(u).ok())
        .collect();
    let mut out = Vec::new();
    for value in values.try_iter()? {
        let patterns = value.get_attr("sites")?;
        let mut any = false;
        let mut empty = true;
        if !patterns.is_undefined() && !patterns.is_none() {
            for pattern in patterns.try_iter()? {
                empty = false;
                let Some(text) = pattern.as_str() else {
                    continue;
                };
                // Patterns are validated when the send is read; one that still fails matches nothing.
                if let Ok(pattern) = sites::SitePattern::parse(text)
                    && parsed.iter().any(|u| pattern.matches(u))
                {
                    any = true;
                    break;
                }
            }
        }
        if empty || any {
            out.push(value);
        }
    }
    Ok(Value::from(out))
}

fn context_files_filter(state: &State, values: Value, kwargs: Kwargs) -> Result<Value, Error> {
    let base: Option<String> = kwargs.get("base")?;
    let max_file: Option<usize> = kwargs.get("max_file_bytes")?;
    let max_total: Option<usize> = kwargs.get("max_total_bytes")?;
    kwargs.assert_all_used()?;
    let mut inputs = Vec::new();
    let mut bytes = 0usize;
    for (i, value) in values.try_iter()?.enumerate() {
        let path = value.get_attr("path")?;
        let content = value.get_attr("content")?;
        match (path.as_str(), content.as_str()) {
            (Some(p), Some(c)) => {
                bytes = bytes.saturating_add(p.len()).saturating_add(c.len());
                ensure_room(state, bytes)?;
                inputs.push(crate::context::ContextFile {
                    path: p.to_owned(),
                    content: c.to_owned(),
                });
            }
            _ => {
                return Err(invalid(format!(
                    "context file {i} needs a string `path` and `content`"
                )));
            }
        }
    }
    let caps = files::Caps {
        max_file_bytes: max_file.unwrap_or(files::Caps::default().max_file_bytes),
        max_total_bytes: max_total.unwrap_or(files::Caps::default().max_total_bytes),
    };
    let shown = files::prepare(&inputs, base.as_deref(), caps);
    Ok(Value::from(minijinja::value::Serde(shown)))
}

fn compact_filter(state: &State, value: Value, kwargs: Kwargs) -> Result<String, Error> {
    let defaults = compact::Bounds::default();
    let bounds = compact::Bounds {
        max_items: kwargs
            .get::<Option<usize>>("max_items")?
            .unwrap_or(defaults.max_items),
        max_chars: kwargs
            .get::<Option<usize>>("max_chars")?
            .unwrap_or(defaults.max_chars),
        max_depth: kwargs
            .get::<Option<usize>>("max_depth")?
            .unwrap_or(defaults.max_depth),
    };
    kwargs.assert_all_used()?;
    // The value is converted in full before it is cut to its bounds.
    ensure_value_fits(state, &value)?;
    let json = serde_json::to_value(&value)
        .map_err(|e| invalid(format!("the value cannot be serialised: {e}")))?;
    Ok(compact::compact(&json, bounds))
}
