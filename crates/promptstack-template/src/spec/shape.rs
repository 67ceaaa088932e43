//! The shape a spec variable's value must have: `string`, `number`, `integer`, `bool`, `object`,
//! `any`, or `list of <shape>` (`list` alone is `list of any`).
//!
//! A send context read for an agent (`promptstack_core::SendContext::from_json_for`)
//! is checked against the shapes its spec declares, so a value of the wrong shape is refused where
//! it is written (`send.json:12:18`) instead of failing later inside a template.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The shape of a variable's value. Written as text in a spec: `shape = "list of string"`.
///
/// `null` fits every shape: it is the absence of a value (rendered as nothing, and reported as
/// an empty variable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// How many `list of` wrap the item shape.
    lists: u8,
    item: Item,
}

/// The innermost shape, inside every `list of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Item {
    Any,
    String,
    Number,
    Integer,
    Bool,
    Object,
}

impl Item {
    const ALL: [(Item, &'static str); 6] = [
        (Item::Any, "any"),
        (Item::String, "string"),
        (Item::Number, "number"),
        (Item::Integer, "integer"),
        (Item::Bool, "bool"),
        (Item::Object, "object"),
    ];

    fn name(self) -> &'static str {
        Item::ALL
            .iter()
            .find(|(item, _)| *item == self)
            .map_or("any", |(_, name)| name)
    }

    fn fits(self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (self, value) {
            (Item::Any, _) | (_, Value::Null) => true,
            (Item::String, Value::String(_)) | (Item::Bool, Value::Bool(_)) => true,
            (Item::Number, Value::Number(_)) | (Item::Object, Value::Object(_)) => true,
            (Item::Integer, Value::Number(n)) => n.is_i64() || n.is_u64(),
            _ => false,
        }
    }
}

impl Shape {
    /// The most `list of` a shape may nest (deeper data is refused by the parsers anyway).
    pub const MAX_LISTS: u8 = 8;

    /// Any value.
    pub const ANY: Shape = Shape {
        lists: 0,
        item: Item::Any,
    };

    /// Reads a shape written as text (`string`, `list of integer`, …).
    ///
    /// # Errors
    ///
    /// A message saying which shapes exist, for anything else.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rest = text.trim();
        let mut lists = 0u8;
        loop {
            if let Some(inner) = rest.strip_prefix("list of ") {
                lists += 1;
                rest = inner.trim_start();
            } else if rest == "list" {
                lists += 1;
                rest = "any";
            } else {
                break;
            }
            if lists > Self::MAX_LISTS {
                return Err(format!("a shape nests at most {} lists", Self::MAX_LISTS));
            }
        }
        let item = Item::ALL
            .iter()
            .find(|(_, name)| *name == rest)
            .map(|(item, _)| *item)
            .ok_or_else(|| {
                format!(
                    "`{}` is not a shape; write one of string, number, integer, bool, object, \
                     any, list, or `list of` one of them",
                    crate::text::quote(text)
                )
            })?;
        Ok(Shape { lists, item })
    }

    /// Whether `value` has this shape. Returns the JSON pointer (relative to the value) of the
    /// first part that does not fit, or `None` when it fits.
    pub fn mismatch(&self, value: &serde_json::Value) -> Option<String> {
        self.mismatch_at(value, self.lists)
    }

    /// The pointer is made only for a mismatch, from the inside out: a value that fits costs no
    /// allocation, however long its lists.
    fn mismatch_at(&self, value: &serde_json::Value, lists: u8) -> Option<String> {
        if lists == 0 {
            return (!self.item.fits(value)).then(String::new);
        }
        match value {
            serde_json::Value::Null => None,
            serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                self.mismatch_at(item, lists - 1)
                    .map(|inner| format!("/{i}{inner}"))
            }),
            _ => Some(String::new()),
        }
    }

    /// The shape of the items at `pointer` (as [`Shape::mismatch`] returns it) inside a value of
    /// this shape: what was expected there, for messages.
    pub fn expected_at(&self, pointer: &str) -> Shape {
        let depth = pointer.matches('/').count().min(usize::from(self.lists)) as u8;
        Shape {
            lists: self.lists - depth,
            item: self.item,
        }
    }
}

impl Default for Shape {
    fn default() -> Self {
        Shape::ANY
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for _ in 0..self.lists {
            f.write_str("list of ")?;
        }
        f.write_str(self.item.name())
    }
}

/// What a JSON value is, in the words shapes use (`a string`, `a list`), for messages.
pub fn describe(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Shape::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Shape {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Shape".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^(list of )*(string|number|integer|bool|object|any|list)$",
            "description": "string, number, integer, bool, object, any, list, or `list of` one of them"
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_are_read_and_written_back() {
        for text in [
            "string",
            "list of string",
            "list",
            "list of list of integer",
            "any",
        ] {
            let shape = Shape::parse(text).unwrap();
            let again = Shape::parse(&shape.to_string()).unwrap();
            assert_eq!(shape, again, "{text}");
        }
        assert_eq!(Shape::parse("list").unwrap().to_string(), "list of any");
        assert!(Shape::parse("lists of string").is_err());
        assert!(Shape::parse(&"list of ".repeat(9)).is_err());
    }

    #[test]
    fn values_are_checked_to_the_first_misfit() {
        let strings = Shape::parse("list of string").unwrap();
        assert_eq!(strings.mismatch(&json!(["a", "b"])), None);
        assert_eq!(strings.mismatch(&json!("not a list")), Some(String::new()));
        assert_eq!(strings.mismatch(&json!(["a", 2])), Some("/1".into()));
        assert_eq!(strings.expected_at("/1").to_string(), "string");
        assert_eq!(strings.mismatch(&json!(null)), None);
        let integer = Shape::parse("integer").unwrap();
        assert_eq!(integer.mismatch(&json!(1.5)), Some(String::new()));
        assert_eq!(integer.mismatch(&json!(3)), None);
        let nested = Shape::parse("list of list of integer").unwrap();
        assert_eq!(nested.mismatch(&json!([[1], [2, 3]])), None);
        assert_eq!(
            nested.mismatch(&json!([[1], [2, "x"]])),
            Some("/1/1".into())
        );
        assert_eq!(nested.mismatch(&json!([[1], 2])), Some("/1".into()));
        assert_eq!(nested.expected_at("/1").to_string(), "list of integer");
    }
}
