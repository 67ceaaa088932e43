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
    write_inner(out, value, None);
}

/// A placeholder for the unit with this index, replaced by [`to_string_spliced`]: a number
/// standing as an array element. Request skeletons hold no other number directly in an array (their
/// numbers are field values such as `max_tokens`), and a number needs no allocation, which
/// matters for a body with a hundred thousand units.
pub(crate) fn placeholder(index: usize) -> Value {
    Value::from(index)
}

/// Writes a request skeleton canonically, writing each placeholder's unit text as is (the unit
/// texts are canonical JSON themselves), so that units are not serialised twice.
pub(crate) fn to_string_spliced(value: &Value, units: &[&str], capacity: usize) -> String {
    let mut out = String::with_capacity(capacity);
    write_inner(&mut out, value, Some(units));
    out
}

fn write_inner(out: &mut String, value: &Value, splice: Option<&[&str]>) {
    let write = |out: &mut String, value: &Value| write_inner(out, value, splice);
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            use std::fmt::Write as _;
            // Writing to a String cannot fail.
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                match (splice, item) {
                    (Some(units), Value::Number(n))
                        if let Some(unit) = n.as_u64().and_then(|i| units.get(i as usize)) =>
                    {
                        out.push_str(unit);
                    }
                    _ => write(out, item),
                }
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            // Without serde_json's `preserve_order` feature the map iterates in key order
            // already; sorting is then skipped (it is still applied if some build enables it).
            let sorted = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| a.as_bytes() <= b.as_bytes());
            if sorted {
                for (i, (key, item)) in map.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, key);
                    out.push(':');
                    write(out, item);
                }
            } else {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(out, key);
                    out.push(':');
                    write(out, item);
                }
            }
            out.push('}');
        }
    }
}

/// Which bytes need escaping in a JSON string: control characters, `"` and `\`.
static ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = true;
        i += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// A JSON string literal, escaped as `serde_json` escapes it.
fn write_str(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !ESCAPE[b as usize] {
            continue;
        }
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 0xf)] as char);
            }
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "\\PC{0,8}|[\"\\\\\u{0}-\u{1f}a]{0,6}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]{0,2}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Canonical text parses back to the same value, is what serde_json writes for sorted
        /// maps, and is a fixed point.
        #[test]
        fn canonical_round_trips(value in json()) {
            let text = to_string(&value);
            let back: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&back, &value);
            prop_assert_eq!(to_string(&back), text.clone());
            prop_assert_eq!(serde_json::to_string(&value).unwrap(), text);
        }
    }

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
