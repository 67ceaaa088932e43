//! Widget tags: inline UI elements a model may emit, such as `<chart kind="bar" data="q3"/>`.
//!
//! Only the names an application declares in a [`WidgetSet`] are widgets. A complete tag — a
//! self-closing `<name attr="value"/>` or an empty pair `<name attr="value"></name>` — is removed
//! from the text and reported as a [`Widget`]. Anything else that starts with `<` is text:
//! undeclared names, tags with content between the pair, unquoted values, duplicate attributes,
//! a line break inside the tag, or a tag longer than [`WIDGET_MAX`] bytes.

use std::fmt;

use serde::Serialize;
use serde::ser::SerializeMap as _;

use crate::Parse;

/// The longest widget tag, in bytes from `<` to the final `>`; anything longer is text.
pub const WIDGET_MAX: usize = 1024;

/// The longest widget name.
const NAME_MAX: usize = 64;

/// The widget names a processor recognises; empty (the default) turns widget parsing off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WidgetSet {
    names: Vec<String>,
}

/// A widget name that cannot be declared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WidgetNameError {
    name: String,
}

impl fmt::Display for WidgetNameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid widget name {:?}: a widget name is an ASCII letter followed by up to 63 \
             ASCII letters, digits, `_` or `-`",
            self.name.escape_debug().to_string()
        )
    }
}

impl std::error::Error for WidgetNameError {}

impl WidgetSet {
    /// Declares the widget names. Names are matched exactly (case-sensitively); each is an ASCII
    /// letter followed by up to 63 ASCII letters, digits, `_` or `-`. Duplicates are ignored.
    ///
    /// # Errors
    ///
    /// The first name that does not have that shape.
    pub fn new<I, S>(names: I) -> Result<Self, WidgetNameError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut set = Vec::new();
        for name in names {
            let name = name.into();
            let valid = name.len() <= NAME_MAX
                && name.as_bytes().first().is_some_and(u8::is_ascii_alphabetic)
                && name.bytes().all(is_name_byte);
            if !valid {
                return Err(WidgetNameError { name });
            }
            if !set.contains(&name) {
                set.push(name);
            }
        }
        set.sort();
        Ok(Self { names: set })
    }

    /// Whether no widget is declared.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The declared names, sorted.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.names.iter().map(String::as_str)
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.names.iter().any(|n| n.as_bytes() == name)
    }

    fn has_prefix(&self, prefix: &[u8]) -> bool {
        self.names.iter().any(|n| n.as_bytes().starts_with(prefix))
    }
}

/// One widget tag, parsed and removed from the text.
///
/// Serialised as `{"name":"chart","attributes":{"kind":"bar"},"offset":12}`, attributes in the
/// order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widget {
    /// The declared name.
    pub name: String,
    /// The attributes in the order written, values as written between the quotes (no entity
    /// decoding); an attribute without a value has an empty one.
    pub attributes: Vec<(String, String)>,
    /// Where the tag stood: the byte offset in the processor's whole output (all segments
    /// concatenated) at which it was removed.
    pub offset: u64,
}

impl Serialize for Widget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        struct Attributes<'a>(&'a [(String, String)]);
        impl Serialize for Attributes<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(self.0.len()))?;
                for (name, value) in self.0 {
                    map.serialize_entry(name, value)?;
                }
                map.end()
            }
        }
        let mut s = serializer.serialize_struct("Widget", 3)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("attributes", &Attributes(&self.attributes))?;
        s.serialize_field("offset", &self.offset)?;
        s.end()
    }
}

/// A recognised tag: its length in bytes, its name and attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tag {
    pub len: usize,
    pub name: String,
    pub attributes: Vec<(String, String)>,
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn is_attribute_byte(b: u8) -> bool {
    is_name_byte(b) || b == b':' || b == b'.'
}

/// Parses the widget tag at the start of `s` (which starts with `<`).
///
/// [`Parse::Incomplete`] while the text so far could still become a declared widget's tag and
/// more input may come; [`Parse::No`] as soon as it cannot.
pub(crate) fn parse(s: &[u8], set: &WidgetSet, eof: bool) -> Parse<Tag> {
    debug_assert_eq!(s.first(), Some(&b'<'));
    let need = || if eof { Parse::No } else { Parse::Incomplete };
    // The name: it must stay a prefix of a declared name while it is read.
    let mut i = 1;
    while let Some(&b) = s.get(i) {
        if !is_name_byte(b) {
            break;
        }
        i += 1;
        if !set.has_prefix(&s[1..i]) {
            return Parse::No;
        }
    }
    if i == s.len() {
        return need();
    }
    let name = &s[1..i];
    if !set.contains(name) {
        return Parse::No;
    }
    let mut attributes: Vec<(String, String)> = Vec::new();
    loop {
        if i >= WIDGET_MAX {
            return Parse::No;
        }
        let spaced = i;
        while i < WIDGET_MAX && matches!(s.get(i), Some(b' ' | b'\t')) {
            i += 1;
        }
        let Some(&b) = s.get(i) else { return need() };
        match b {
            b'/' => {
                return match s.get(i + 1) {
                    None => need(),
                    Some(b'>') => Parse::Yes(tag(i + 2, name, attributes)),
                    Some(_) => Parse::No,
                };
            }
            b'>' => {
                // Only an empty pair: `</name>` right after.
                let close = i + 1;
                let expected = [b"</".as_slice(), name, b">"].concat();
                let got = &s[close..s.len().min(close + expected.len())];
                if !expected.starts_with(got) {
                    return Parse::No;
                }
                if got.len() < expected.len() {
                    return need();
                }
                let end = close + expected.len();
                if end > WIDGET_MAX {
                    return Parse::No;
                }
                return Parse::Yes(tag(end, name, attributes));
            }
            b if is_attribute_byte(b) && b != b'-' && b != b'.' && i > spaced => {
                let start = i;
                while i < WIDGET_MAX && s.get(i).is_some_and(|&b| is_attribute_byte(b)) {
                    i += 1;
                }
                let Some(&after) = s.get(i) else {
                    return need();
                };
                let key = String::from_utf8_lossy(&s[start..i]).into_owned();
                if attributes.iter().any(|(k, _)| *k == key) {
                    return Parse::No;
                }
                if after != b'=' {
                    attributes.push((key, String::new()));
                    continue;
                }
                i += 1;
                let Some(&quote) = s.get(i) else {
                    return need();
                };
                if quote != b'"' && quote != b'\'' {
                    return Parse::No;
                }
                let value_start = i + 1;
                let room = WIDGET_MAX.saturating_sub(value_start);
                let Some(len) = s[value_start..]
                    .iter()
                    .take(room)
                    .position(|&b| b == quote || b == b'\n')
                else {
                    return if value_start + room <= s.len() {
                        Parse::No
                    } else {
                        need()
                    };
                };
                let value_end = value_start + len;
                if s[value_end] == b'\n' {
                    return Parse::No;
                }
                let value = String::from_utf8_lossy(&s[value_start..value_end]).into_owned();
                attributes.push((key, value));
                i = value_end + 1;
            }
            _ => return Parse::No,
        }
    }
}

fn tag(len: usize, name: &[u8], attributes: Vec<(String, String)>) -> Tag {
    Tag {
        len,
        name: String::from_utf8_lossy(name).into_owned(),
        attributes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> WidgetSet {
        WidgetSet::new(["chart", "map"]).unwrap()
    }

    fn yes(s: &str) -> Tag {
        match parse(s.as_bytes(), &set(), true) {
            Parse::Yes(tag) => tag,
            other => panic!("{s:?}: {other:?}"),
        }
    }

    #[test]
    fn complete_tags() {
        let t = yes(r#"<chart kind="bar" data='q3' big/> after"#);
        assert_eq!(t.len, 33);
        assert_eq!(t.name, "chart");
        assert_eq!(
            t.attributes,
            [
                ("kind".to_owned(), "bar".to_owned()),
                ("data".to_owned(), "q3".to_owned()),
                ("big".to_owned(), String::new())
            ]
        );
        assert_eq!(yes("<map/>").len, 6);
        assert_eq!(yes("<map></map>x").len, 11);
        assert_eq!(yes("<map at=\"a>b\" ></map>").len, 21);
    }

    #[test]
    fn not_widgets() {
        for s in [
            "<div/>",
            "<charts/>",
            "<Chart/>",
            "<chart>content</chart>",
            "<chart kind=bar/>",
            "<chart kind=\"a\" kind=\"b\"/>",
            "<chart kind=\"a\nb\"/>",
            "<chart\n/>",
            "<chartkind=\"a\"/>",
            "<chart kind=\"a\"x=\"b\"/>",
            "<chart / >",
            "< chart/>",
            "<map></chart>",
        ] {
            assert_eq!(parse(s.as_bytes(), &set(), true), Parse::No, "{s:?}");
        }
        let long = format!("<chart a=\"{}\"/>", "x".repeat(WIDGET_MAX));
        assert_eq!(parse(long.as_bytes(), &set(), false), Parse::No);
    }

    #[test]
    fn half_streamed_tags_wait() {
        for s in [
            "<",
            "<ch",
            "<chart",
            "<chart kind=\"b",
            "<map>",
            "<map></ma",
            "<chart /",
        ] {
            assert_eq!(
                parse(s.as_bytes(), &set(), false),
                Parse::Incomplete,
                "{s:?}"
            );
            assert_eq!(parse(s.as_bytes(), &set(), true), Parse::No, "{s:?}");
        }
        assert_eq!(parse(b"<cx", &set(), false), Parse::No);
    }

    #[test]
    fn names_are_checked() {
        assert!(WidgetSet::new(["ok-name_2"]).is_ok());
        for bad in ["", "2x", "a b", "x<", &"x".repeat(65)] {
            assert!(WidgetSet::new([bad]).is_err(), "{bad:?}");
        }
    }
}
