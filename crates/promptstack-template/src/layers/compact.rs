//! Compact serialisation of harness state (task lists, subagents, open files…) for a prompt.
//!
//! [`compact`] writes one line of JSON with sorted keys and bounds every part of it: a list or an
//! object longer than `max_items` keeps its first `max_items` entries and then says how many were
//! left out (`"+3 more"` as a last list item, or a `"…"` key for objects); a string longer than
//! `max_chars` characters is cut to `max_chars - 1` characters followed by `…`; containers nested
//! deeper than `max_depth` are written as `"[…]"` or `"{…}"`. The output is deterministic.

use std::fmt::Write as _;

use serde_json::Value;

/// The bounds of [`compact`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Entries kept per list or object. Default: 8.
    pub max_items: usize,
    /// Characters kept per string, the ellipsis included. Default: 160.
    pub max_chars: usize,
    /// Containers nested deeper than this are elided. Default: 4.
    pub max_depth: usize,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            max_items: 8,
            max_chars: 160,
            max_depth: 4,
        }
    }
}

/// One line of bounded JSON (see the [module docs](self)).
pub fn compact(value: &Value, bounds: Bounds) -> String {
    let mut out = String::new();
    write_value(&mut out, value, bounds, 0);
    out
}

fn write_string(out: &mut String, text: &str, bounds: Bounds) {
    let count = text.chars().count();
    let text = if count > bounds.max_chars {
        let keep = bounds.max_chars.saturating_sub(1);
        let mut cut: String = text.chars().take(keep).collect();
        cut.push('…');
        cut
    } else {
        text.to_owned()
    };
    // Serialising a string cannot fail.
    out.push_str(&serde_json::to_string(&text).unwrap_or_default());
}

fn write_value(out: &mut String, value: &Value, bounds: Bounds, depth: usize) {
    match value {
        Value::String(s) => write_string(out, s, bounds),
        Value::Array(items) => {
            if depth >= bounds.max_depth && !items.is_empty() {
                out.push_str("\"[…]\"");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().take(bounds.max_items).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, bounds, depth + 1);
            }
            if items.len() > bounds.max_items {
                if bounds.max_items > 0 {
                    out.push(',');
                }
                let _ = write!(out, "\"+{} more\"", items.len() - bounds.max_items);
            }
            out.push(']');
        }
        Value::Object(map) => {
            if depth >= bounds.max_depth && !map.is_empty() {
                out.push_str("\"{…}\"");
                return;
            }
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.iter().take(bounds.max_items).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, key, bounds);
                out.push(':');
                write_value(out, &map[*key], bounds, depth + 1);
            }
            if keys.len() > bounds.max_items {
                if bounds.max_items > 0 {
                    out.push(',');
                }
                let _ = write!(out, "\"…\":\"+{} more\"", keys.len() - bounds.max_items);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_lists_and_strings() {
        let value = serde_json::json!({"todo": ["a", "b", "c", "d"], "note": "abcdefgh", "n": 1});
        let bounds = |max_items| Bounds {
            max_items,
            max_chars: 5,
            max_depth: 4,
        };
        assert_eq!(
            compact(&value, bounds(2)),
            r#"{"n":1,"note":"abcd…","…":"+1 more"}"#
        );
        assert_eq!(
            compact(&value, bounds(3)),
            r#"{"n":1,"note":"abcd…","todo":["a","b","c","+1 more"]}"#
        );
    }
}
