//! The fast send reader: a send read straight from its text with plain serde, with exactly the
//! acceptance of the located reader ([`SendContext::from_json_for`]).
//!
//! The located reader parses the text into a tree, indexes the span of every key path, validates
//! the tree against the send's JSON Schema and deserialises it with the path of any error; all of
//! that is needed only to say where a problem is. Almost every send has none, so this reader
//! tries first, and answers only when it can decide exactly as the located reader would:
//!
//! - the same limits, in the same order: size ([`MAX_SEND_BYTES`]), UTF-8, nesting;
//! - serde on the text (unknown keys, wrong types, missing keys, `now`, enum names: the same
//!   derived deserialisers the located reader runs on the tree);
//! - one pass over the text for what serde on the text accepts and the located reader refuses:
//!   a key written twice in one object, a value of a JSON type the schema does not allow where
//!   serde would take it (a struct written as an array, an enum name written as an object, a
//!   non-object `auto_injections`), a number outside the schema's `minimum`/`maximum`;
//! - the checks after deserialising: site patterns, and the shapes the spec declares.
//!
//! The pass follows a skeleton made from the send's own JSON Schema, so a type added to the send
//! is covered without a change here; a schema keyword the skeleton does not know switches the
//! fast reader off (every send goes to the located reader) rather than guess. A key written with
//! an escape (`"\u006eow"`) is left to the located reader, which compares keys as it does.
//! Whenever this reader does not answer, the located reader reads the send, so every error is the
//! located one.

use std::collections::{BTreeMap, HashSet};
use std::sync::LazyLock;

use super::send::SEND_SCHEMA;
use super::{MAX_SEND_BYTES, SendContext};
use crate::spec::load::{SpecFormat, nesting_exceeded};

/// Why the fast reader did not read a send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Declined {
    /// The located reader refuses this send (it reads it again, to say where and why).
    Refused,
    /// Not decided here (an escaped key); the located reader decides.
    Undecided,
}

/// Reads a send without locating anything; see the module documentation.
pub(crate) fn read(bytes: &[u8], spec: Option<&crate::AgentSpec>) -> Result<SendContext, Declined> {
    let Some(skeleton) = SKELETON.as_ref() else {
        return Err(Declined::Undecided);
    };
    if bytes.len() > MAX_SEND_BYTES {
        return Err(Declined::Refused);
    }
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(Declined::Refused);
    };
    if nesting_exceeded(text, SpecFormat::Json).is_some() {
        return Err(Declined::Refused);
    }
    let Ok(context) = serde_json::from_str::<SendContext>(text) else {
        return Err(Declined::Refused);
    };
    // Serde accepted the text, so it is one well-formed JSON value nested at most
    // `MAX_NESTING` deep: the pass below relies on both.
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
        keys: Vec::new(),
    };
    scan.value(skeleton)?;
    if !context_fits(&context, spec) {
        return Err(Declined::Refused);
    }
    Ok(context)
}

/// The skeleton of the send's schema, or `None` when the schema uses a keyword it does not know.
static SKELETON: LazyLock<Option<Node>> = LazyLock::new(|| {
    let defs = SEND_SCHEMA
        .get("$defs")
        .and_then(serde_json::Value::as_object);
    Node::of(&SEND_SCHEMA, defs, 0)
});

/// JSON types, as bits of [`Node::types`].
const OBJECT: u8 = 1;
const ARRAY: u8 = 2;
const STRING: u8 = 4;
const NUMBER: u8 = 8;
const BOOLEAN: u8 = 16;
const NULL: u8 = 32;
const ANY: u8 = OBJECT | ARRAY | STRING | NUMBER | BOOLEAN | NULL;

/// What the schema allows at one place, reduced to what serde on the text does not check itself:
/// the JSON types, the keys' and items' own places, and a number's bounds. Looser than the schema
/// wherever it cannot be exact (the union of `anyOf`/`oneOf` branches), never stricter.
#[derive(Debug, Clone)]
struct Node {
    types: u8,
    /// The places of the named keys of an object.
    properties: BTreeMap<String, Node>,
    /// The place of every other key (`None`: anything).
    additional: Option<Box<Node>>,
    /// The place of every item of an array (`None`: anything).
    items: Option<Box<Node>>,
    minimum: Option<f64>,
    maximum: Option<f64>,
}

/// The keywords of the send's schema that the skeleton needs nothing from: checked by serde on
/// the text exactly as by the schema (`required`, `const`, `additionalProperties: false` through
/// `deny_unknown_fields`), not asserted by the validator (`format`, in draft 2020-12), or
/// annotations.
const CHECKED_BY_SERDE_OR_ANNOTATION: [&str; 7] = [
    "$schema",
    "$defs",
    "title",
    "description",
    "default",
    "required",
    "format",
];

impl Node {
    const fn any() -> Self {
        Self {
            types: ANY,
            properties: BTreeMap::new(),
            additional: None,
            items: None,
            minimum: None,
            maximum: None,
        }
    }

    /// The skeleton of one schema; `None` on a keyword or a form it does not know.
    fn of(
        schema: &serde_json::Value,
        defs: Option<&serde_json::Map<String, serde_json::Value>>,
        depth: usize,
    ) -> Option<Self> {
        // The send's schema is finite and its references do not loop; the bound only keeps a
        // mistaken one from recursing forever.
        if depth > 32 {
            return None;
        }
        let schema = match schema {
            serde_json::Value::Bool(true) => return Some(Self::any()),
            serde_json::Value::Object(schema) => schema,
            _ => return None,
        };
        let mut node = Self::any();
        for (keyword, value) in schema {
            match keyword.as_str() {
                "$ref" => {
                    let name = value.as_str()?.strip_prefix("#/$defs/")?;
                    let target = defs?.get(name)?;
                    node = node.and(Self::of(target, defs, depth + 1)?);
                }
                "type" => {
                    let types = match value {
                        serde_json::Value::Array(names) => names
                            .iter()
                            .map(|name| type_bit(name.as_str()?))
                            .try_fold(0, |all, bit| bit.map(|bit| all | bit))?,
                        _ => type_bit(value.as_str()?)?,
                    };
                    node.types &= types;
                }
                "properties" => {
                    for (key, property) in value.as_object()? {
                        let child = Self::of(property, defs, depth + 1)?;
                        node = node.and(Self {
                            properties: BTreeMap::from([(key.clone(), child)]),
                            ..Self::any()
                        });
                    }
                }
                "additionalProperties" => match value {
                    serde_json::Value::Bool(_) => {}
                    _ => {
                        let child = Self::of(value, defs, depth + 1)?;
                        node = node.and(Self {
                            additional: Some(Box::new(child)),
                            ..Self::any()
                        });
                    }
                },
                "items" => {
                    let child = Self::of(value, defs, depth + 1)?;
                    node = node.and(Self {
                        items: Some(Box::new(child)),
                        ..Self::any()
                    });
                }
                "anyOf" | "oneOf" => {
                    let mut union: Option<Self> = None;
                    for branch in value.as_array()? {
                        let branch = Self::of(branch, defs, depth + 1)?;
                        union = Some(match union {
                            None => branch,
                            Some(union) => union.or(&branch),
                        });
                    }
                    node = node.and(union?);
                }
                "minimum" => node.minimum = Some(value.as_f64()?),
                "maximum" => node.maximum = Some(value.as_f64()?),
                "const" => {}
                other if CHECKED_BY_SERDE_OR_ANNOTATION.contains(&other) => {}
                _ => return None,
            }
        }
        Some(node)
    }

    /// The place of the value of `key` in an object here.
    fn property(&self, key: &str) -> Option<&Node> {
        self.properties.get(key).or(self.additional.as_deref())
    }

    /// The names of the properties either node declares, each once, in order.
    fn property_names<'a>(&'a self, other: &'a Self) -> std::collections::BTreeSet<&'a String> {
        self.properties
            .keys()
            .chain(other.properties.keys())
            .collect()
    }

    /// Both this and `other` (the keywords of one schema, or a `$ref` next to them).
    fn and(self, other: Self) -> Self {
        let properties = self
            .property_names(&other)
            .into_iter()
            .map(|key| {
                let child = match (self.property(key), other.property(key)) {
                    (Some(mine), Some(theirs)) => mine.clone().and(theirs.clone()),
                    (Some(one), None) | (None, Some(one)) => one.clone(),
                    (None, None) => Self::any(),
                };
                (key.clone(), child)
            })
            .collect();
        let both = |mine: Option<Box<Node>>, theirs: Option<Box<Node>>| match (mine, theirs) {
            (Some(mine), Some(theirs)) => Some(Box::new(mine.and(*theirs))),
            (mine, theirs) => mine.or(theirs),
        };
        Self {
            types: self.types & other.types,
            properties,
            additional: both(self.additional, other.additional),
            items: both(self.items, other.items),
            minimum: match (self.minimum, other.minimum) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            maximum: match (self.maximum, other.maximum) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }

    /// This or `other` (two branches of an `anyOf`/`oneOf`): what either allows. A branch that
    /// does not allow objects says nothing about keys, one that does not allow arrays nothing
    /// about items, one that does not allow numbers nothing about bounds.
    fn or(self, other: &Self) -> Self {
        let either = |mine: Option<&Node>, theirs: Option<&Node>| match (mine, theirs) {
            (Some(mine), Some(theirs)) => Some(mine.clone().or(theirs)),
            _ => None,
        };
        let (properties, additional) = match (self.types & OBJECT, other.types & OBJECT) {
            (0, _) => (other.properties.clone(), other.additional.clone()),
            (_, 0) => (self.properties.clone(), self.additional.clone()),
            _ => {
                let properties = self
                    .property_names(other)
                    .into_iter()
                    .filter_map(|key| {
                        either(self.property(key), other.property(key))
                            .map(|child| (key.clone(), child))
                    })
                    .collect();
                let additional =
                    either(self.additional.as_deref(), other.additional.as_deref()).map(Box::new);
                (properties, additional)
            }
        };
        let items = match (self.types & ARRAY, other.types & ARRAY) {
            (0, _) => other.items.clone(),
            (_, 0) => self.items.clone(),
            _ => either(self.items.as_deref(), other.items.as_deref()).map(Box::new),
        };
        let (minimum, maximum) = match (self.types & NUMBER, other.types & NUMBER) {
            (0, _) => (other.minimum, other.maximum),
            (_, 0) => (self.minimum, self.maximum),
            _ => (
                self.minimum.zip(other.minimum).map(|(a, b)| a.min(b)),
                self.maximum.zip(other.maximum).map(|(a, b)| a.max(b)),
            ),
        };
        Self {
            types: self.types | other.types,
            properties,
            additional,
            items,
            minimum,
            maximum,
        }
    }
}

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "object" => OBJECT,
        "array" => ARRAY,
        "string" => STRING,
        // Serde decides whether a number is an integer where the send needs one.
        "number" | "integer" => NUMBER,
        "boolean" => BOOLEAN,
        "null" => NULL,
        _ => return None,
    })
}

/// Objects with more keys than this are checked for a repeated key with a hash set.
const LINEAR_KEYS: usize = 16;

/// One pass over well-formed JSON text, following the skeleton.
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The keys of the objects open around the current value, innermost last.
    keys: Vec<&'a [u8]>,
}

impl<'a> Scan<'a> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// Checks the value at the cursor against `node` and moves past it.
    fn value(&mut self, node: &Node) -> Result<(), Declined> {
        self.skip_whitespace();
        let Some(&first) = self.bytes.get(self.at) else {
            return Err(Declined::Undecided);
        };
        let kind = match first {
            b'{' => OBJECT,
            b'[' => ARRAY,
            b'"' => STRING,
            b't' | b'f' => BOOLEAN,
            b'n' => NULL,
            _ => NUMBER,
        };
        if node.types & kind == 0 {
            return Err(Declined::Refused);
        }
        match kind {
            OBJECT => self.object(node),
            ARRAY => self.array(node),
            STRING => self.string().map(|_| ()),
            NUMBER => self.number(node),
            _ => {
                while self.bytes.get(self.at).is_some_and(u8::is_ascii_alphabetic) {
                    self.at += 1;
                }
                Ok(())
            }
        }
    }

    fn object(&mut self, node: &Node) -> Result<(), Declined> {
        self.at += 1;
        let first_key = self.keys.len();
        let mut seen: Option<HashSet<&'a [u8]>> = None;
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b'}') {
            self.at += 1;
            return Ok(());
        }
        let result = loop {
            self.skip_whitespace();
            let key = match self.string() {
                Ok(key) => key,
                Err(verdict) => break Err(verdict),
            };
            if key.contains(&b'\\') {
                break Err(Declined::Undecided);
            }
            let repeated = match &mut seen {
                Some(seen) => !seen.insert(key),
                None => {
                    let repeated = self.keys[first_key..].contains(&key);
                    self.keys.push(key);
                    if self.keys.len() - first_key > LINEAR_KEYS {
                        seen = Some(self.keys.drain(first_key..).collect());
                    }
                    repeated
                }
            };
            if repeated {
                break Err(Declined::Refused);
            }
            self.skip_whitespace();
            if self.bytes.get(self.at) != Some(&b':') {
                break Err(Declined::Undecided);
            }
            self.at += 1;
            // Keys are raw text; the skeleton's are plain names, so an unescaped key compares
            // as written.
            let child = std::str::from_utf8(key)
                .ok()
                .and_then(|key| node.property(key));
            let outcome = match child {
                Some(child) => self.value(child),
                None => self.value(&ANYTHING),
            };
            if let Err(verdict) = outcome {
                break Err(verdict);
            }
            self.skip_whitespace();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    break Ok(());
                }
                _ => break Err(Declined::Undecided),
            }
        };
        self.keys.truncate(first_key);
        result
    }

    fn array(&mut self, node: &Node) -> Result<(), Declined> {
        self.at += 1;
        self.skip_whitespace();
        if self.bytes.get(self.at) == Some(&b']') {
            self.at += 1;
            return Ok(());
        }
        let item = node.items.as_deref().unwrap_or(&ANYTHING);
        loop {
            self.value(item)?;
            self.skip_whitespace();
            match self.bytes.get(self.at) {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Declined::Undecided),
            }
        }
    }

    /// Moves past a string and returns its raw text between the quotes.
    fn string(&mut self) -> Result<&'a [u8], Declined> {
        if self.bytes.get(self.at) != Some(&b'"') {
            return Err(Declined::Undecided);
        }
        let start = self.at + 1;
        let mut at = start;
        loop {
            let Some(offset) = memchr::memchr2(b'"', b'\\', &self.bytes[at..]) else {
                return Err(Declined::Undecided);
            };
            at += offset;
            if self.bytes[at] == b'\\' {
                at += 2;
                if at > self.bytes.len() {
                    return Err(Declined::Undecided);
                }
            } else {
                self.at = at + 1;
                return Ok(&self.bytes[start..at]);
            }
        }
    }

    fn number(&mut self, node: &Node) -> Result<(), Declined> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.at += 1;
        }
        if node.minimum.is_none() && node.maximum.is_none() {
            return Ok(());
        }
        // The same number parser as the tree the schema is checked on.
        let Ok(number) = serde_json::from_slice::<f64>(&self.bytes[start..self.at]) else {
            return Err(Declined::Undecided);
        };
        let below = node.minimum.is_some_and(|minimum| number < minimum);
        let above = node.maximum.is_some_and(|maximum| number > maximum);
        if below || above {
            return Err(Declined::Refused);
        }
        Ok(())
    }
}

/// The place of a value the schema says nothing about.
static ANYTHING: Node = Node::any();

/// What one value of a [`SendTree`] is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TreeKind {
    /// A mapping of string keys.
    Object,
    /// A sequence.
    Array,
    /// A string; `json_bytes` is at least the length of its JSON text, quotes included.
    String {
        /// An upper bound of the length of the string written as JSON.
        json_bytes: usize,
    },
    /// A number JSON can write (an integer of at most 64 bits, or a finite float), as a float
    /// for the schema's bounds.
    Number(f64),
    /// `true` or `false`.
    Bool,
    /// `null`.
    Null,
}

/// A send held as values in memory (a host language's dicts and lists), checked by
/// [`SendContext::check_tree_for`] without being written as JSON text.
///
/// Every method answers `None` or `false` for a value that is not JSON (a key that is not a
/// string, a number JSON cannot write, a type of its own): the tree is then declined.
pub trait SendTree: Sized {
    /// What this value is; `None` when it is not a JSON value.
    fn kind(&self) -> Option<TreeKind>;
    /// Calls `each` with the key of every entry of an object (its text when `need_text`, and
    /// an upper bound of its length as JSON) and the entry's value, until `each` answers `false`.
    /// Answers `false` when `each` did, or when a key is not a string.
    fn entries(
        &self,
        need_text: bool,
        each: &mut dyn FnMut(Option<&str>, usize, &Self) -> bool,
    ) -> bool;
    /// Calls `each` with every item of an array, until it answers `false`; answers `false`
    /// when `each` did.
    fn items(&self, each: &mut dyn FnMut(&Self) -> bool) -> bool;
}

/// The longest JSON text of a number: an integer of 64 bits takes 20 bytes, a float at most 24,
/// and a float written without a fraction gets `.0`.
const NUMBER_JSON_BYTES: usize = 26;

/// Whether a send held as a tree is one the located reader accepts, as the text
/// `serde_json::to_vec_pretty` writes of it: the same size limit ([`MAX_SEND_BYTES`], against an
/// upper bound of the pretty text's length), nesting, and the schema's types and bounds that
/// serde does not check itself. `false` when it is not (or not surely) one.
pub(crate) fn tree_fits<T: SendTree>(tree: &T) -> bool {
    let Some(skeleton) = SKELETON.as_ref() else {
        return false;
    };
    let mut walk = Walk { bytes: 0 };
    walk.value(tree, skeleton, 0) && walk.bytes <= MAX_SEND_BYTES
}

/// One pass over a [`SendTree`], following the skeleton and adding up the pretty text's length.
struct Walk {
    bytes: usize,
}

impl Walk {
    /// Checks `tree`, a value at `depth` (the number of containers around it), against `node`.
    fn value<T: SendTree>(&mut self, tree: &T, node: &Node, depth: usize) -> bool {
        let Some(kind) = tree.kind() else {
            return false;
        };
        let bit = match kind {
            TreeKind::Object => OBJECT,
            TreeKind::Array => ARRAY,
            TreeKind::String { .. } => STRING,
            TreeKind::Number(_) => NUMBER,
            TreeKind::Bool => BOOLEAN,
            TreeKind::Null => NULL,
        };
        if node.types & bit == 0 {
            return false;
        }
        // A container opens a level: the text reader counts the root as one, and refuses
        // more than `MAX_NESTING`.
        if matches!(kind, TreeKind::Object | TreeKind::Array)
            && depth + 1 > crate::spec::load::MAX_NESTING
        {
            return false;
        }
        // Each line of a container's content: its indentation, a comma and a newline.
        let line = 2 * (depth + 1) + 2;
        match kind {
            TreeKind::Object => {
                self.bytes += 3 + 2 * depth;
                let need_text = !node.properties.is_empty();
                tree.entries(need_text, &mut |key, key_bytes, value| {
                    // Without named keys, every key has the place of every other key.
                    let child = key
                        .and_then(|key| node.property(key))
                        .or(node.additional.as_deref())
                        .unwrap_or(&ANYTHING);
                    // `"key": `
                    self.bytes = self.bytes.saturating_add(line + key_bytes + 2);
                    self.value(value, child, depth + 1) && self.bytes <= MAX_SEND_BYTES
                })
            }
            TreeKind::Array => {
                self.bytes += 3 + 2 * depth;
                let item = node.items.as_deref().unwrap_or(&ANYTHING);
                tree.items(&mut |value| {
                    self.bytes = self.bytes.saturating_add(line);
                    self.value(value, item, depth + 1) && self.bytes <= MAX_SEND_BYTES
                })
            }
            TreeKind::String { json_bytes } => {
                self.bytes = self.bytes.saturating_add(json_bytes);
                true
            }
            TreeKind::Number(number) => {
                self.bytes += NUMBER_JSON_BYTES;
                let below = node.minimum.is_some_and(|minimum| number < minimum);
                let above = node.maximum.is_some_and(|maximum| number > maximum);
                !(below || above)
            }
            TreeKind::Bool => {
                self.bytes += 5;
                true
            }
            TreeKind::Null => {
                self.bytes += 4;
                true
            }
        }
    }
}

/// The checks after deserialising, as the text reader makes them: site patterns, and the shapes
/// the spec declares. `false` when the located reader would refuse the send.
pub(crate) fn context_fits(context: &SendContext, spec: Option<&crate::AgentSpec>) -> bool {
    for skill in &context.skills {
        for pattern in &skill.sites {
            if crate::sites::SitePattern::parse(pattern).is_err() {
                return false;
            }
        }
    }
    if let Some(spec) = spec {
        for (name, value) in &context.variables {
            let misfit = spec
                .variables
                .get(name)
                .and_then(|declared| declared.shape)
                .and_then(|shape| shape.mismatch(value));
            if misfit.is_some() {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests;
