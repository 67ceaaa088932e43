//! Canonical JSON: object keys sorted bytewise, no insignificant whitespace.
//!
//! Serialising through this writer, rather than through the map type of `serde_json` (whose order
//! depends on a cargo feature any crate in the build may switch on), makes equal values give
//! equal bytes whatever the build.

use serde_json::Value;

/// Writes a value canonically.
pub fn to_string(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write(&mut out, value);
    out
}

/// Appends a value canonically.
pub fn write(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, key);
                out.push(':');
                write(out, item);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal, escaped as `serde_json` escapes it.
fn write_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0x00..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sorted_and_strings_escaped() {
        let value: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"z": [true, null, 1.5], "y": "q\"\n\u0001é"}}"#)
                .unwrap();
        let text = to_string(&value);
        assert_eq!(
            text,
            r#"{"a":{"y":"q\"\n\u0001é","z":[true,null,1.5]},"b":1}"#
        );
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
