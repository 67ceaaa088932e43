//! Widget tags: inline UI elements a model may emit, such as `<chart kind="bar" data="q3"/>` or,
//! with a namespace, `<widget:weather-forecast location="Seattle"/>`.
//!
//! Only the names an application declares in a [`WidgetSet`] are widgets. A complete tag — a
//! self-closing `<name attr="value"/>` or an empty pair `<name attr="value"></name>` — is removed
//! from the text and reported as a [`Widget`]. Anything else that starts with `<` is text:
//! undeclared names, tags with content between the pair, unquoted values, duplicate attributes,
//! a line break inside the tag, or a tag longer than [`WIDGET_MAX`] bytes.
//!
//! While a tag streams, the processor reports it as soon as its name is complete and followed
//! by a space, a tab or `/` ([`WidgetEvent::Start`]), so a UI can draw a placeholder; the
//! finished [`Widget`] or a [`WidgetEvent::Cancel`] follows.

use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::Serialize;
use serde::ser::SerializeMap as _;

use crate::Parse;

/// The longest widget tag, in bytes from `<` to the final `>`; anything longer is text.
///
/// Large enough for an inline data attribute (a map's GeoJSON with a few dozen points), small
/// enough that a tag streaming in is held back for at most this many bytes.
pub const WIDGET_MAX: usize = 4000;

/// The longest widget name, namespace included.
const NAME_MAX: usize = 64;

/// Up to this many attributes, a new one is checked against the others one by one; past it, in
/// a set.
const FEW_ATTRIBUTES: usize = 8;

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
            "invalid widget name {:?}: a widget name is an ASCII letter followed by ASCII \
             letters, digits, `_` or `-`, optionally after a namespace of the same shape and a \
             `:` (`widget:map`), at most {NAME_MAX} bytes in all",
            self.name.escape_debug().to_string()
        )
    }
}

impl std::error::Error for WidgetNameError {}

/// Whether `name` is a declarable widget name: `segment` or `namespace:segment`, each an ASCII
/// letter followed by ASCII letters, digits, `_` or `-`, at most [`NAME_MAX`] bytes in all.
/// Nothing outside ASCII passes, so no look-alike of a letter or of `:` can name a widget.
fn is_valid_name(name: &str) -> bool {
    let segment = |s: &str| {
        s.as_bytes().first().is_some_and(u8::is_ascii_alphabetic) && s.bytes().all(is_name_byte)
    };
    name.len() <= NAME_MAX
        && match name.split_once(':') {
            Some((namespace, local)) => segment(namespace) && segment(local),
            None => segment(name),
        }
}

impl WidgetSet {
    /// Declares the widget names. Names are matched exactly (case-sensitively). A name is an
    /// ASCII letter followed by ASCII letters, digits, `_` or `-`, optionally after a namespace
    /// of the same shape and a `:` (`chart`, `widget:weather-forecast`), at most 64 bytes in
    /// all. Duplicates are ignored.
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
            if !is_valid_name(&name) {
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

    /// The declared name equal to `name`.
    fn get(&self, name: &[u8]) -> Option<&str> {
        self.names
            .iter()
            .find(|n| n.as_bytes() == name)
            .map(String::as_str)
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
    /// The name as declared (namespace included: `widget:map`).
    pub name: String,
    /// The attributes in the order written, values as written between the quotes (no entity
    /// decoding); an attribute without a value has an empty one.
    pub attributes: Vec<(String, String)>,
    /// Where the tag stood: the byte offset in the processor's whole output (all segments
    /// concatenated) at which it was removed.
    pub offset: u64,
}

/// Attributes serialised as a map, in the order written.
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

impl Serialize for Widget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut s = serializer.serialize_struct("Widget", 3)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("attributes", &Attributes(&self.attributes))?;
        s.serialize_field("offset", &self.offset)?;
        s.end()
    }
}

/// A declared widget's tag that is streaming: its name is complete and followed by a space, a
/// tab or `/`, and the tag has not closed yet.
///
/// Serialised as `{"name":"widget:map","offset":12}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WidgetStart {
    /// The name as declared (namespace included).
    pub name: String,
    /// Where the tag stands: the byte offset in the processor's whole output. The text before
    /// the tag is released with the start, so while the tag streams the released output ends
    /// exactly here and a placeholder goes at its end.
    pub offset: u64,
}

/// What the processor reports about widget tags, in the order the input decides them.
///
/// For every tag whose name is complete and followed by a space, a tab or `/`, a
/// [`Start`](Self::Start) comes first, then exactly one of [`Widget`](Self::Widget) (same name
/// and offset) or [`Cancel`](Self::Cancel), before any other event. An empty pair
/// (`<map></map>`) has no start: only its widget. The events depend on the input alone, never
/// on how it was split into deltas.
///
/// Serialised with a `type` first: `{"type":"widget_start","name":"widget:map","offset":12}`,
/// `{"type":"widget","name":…,"attributes":{…},"offset":12}`,
/// `{"type":"widget_cancel","name":"widget:map","offset":12}` (the lines of `cite --json`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WidgetEvent {
    /// A declared widget's tag is streaming: a UI may draw a placeholder at its offset.
    Start(WidgetStart),
    /// A complete widget tag, removed from the text.
    Widget(Widget),
    /// The tag announced by the last [`Start`](Self::Start) is not a widget after all (it broke
    /// the grammar, grew past [`WIDGET_MAX`], or the text ended): its text stays in the output,
    /// at the offset given.
    Cancel(WidgetStart),
}

impl Serialize for WidgetEvent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let (kind, name, offset, attributes) = match self {
            Self::Start(start) => ("widget_start", &start.name, start.offset, None),
            Self::Widget(widget) => (
                "widget",
                &widget.name,
                widget.offset,
                Some(&widget.attributes),
            ),
            Self::Cancel(start) => ("widget_cancel", &start.name, start.offset, None),
        };
        let mut s = serializer.serialize_struct("WidgetEvent", 4)?;
        s.serialize_field("type", kind)?;
        s.serialize_field("name", name)?;
        if let Some(attributes) = attributes {
            s.serialize_field("attributes", &Attributes(attributes))?;
        } else {
            s.skip_field("attributes")?;
        }
        s.serialize_field("offset", &offset)?;
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

/// A byte of a name as written in a tag: a name byte or the namespace's `:`.
fn is_tag_name_byte(b: u8) -> bool {
    is_name_byte(b) || b == b':'
}

/// The declared name of the tag at the start of `s` (which starts with `<`) once the tag is
/// announced: the name is complete and a space, a tab or `/` follows it.
pub(crate) fn announced<'a>(s: &[u8], set: &'a WidgetSet) -> Option<&'a str> {
    debug_assert_eq!(s.first(), Some(&b'<'));
    let name_len = s
        .iter()
        .skip(1)
        .take(NAME_MAX + 1)
        .position(|&b| !is_tag_name_byte(b))?;
    if !matches!(s[1 + name_len], b' ' | b'\t' | b'/') {
        return None;
    }
    set.get(&s[1..1 + name_len])
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
    // A tag that needs more than the [`WIDGET_MAX`] bytes already here is too long, so a tag
    // is never held back for more than that.
    let need = || {
        if eof || s.len() >= WIDGET_MAX {
            Parse::No
        } else {
            Parse::Incomplete
        }
    };
    // The name: it must stay a prefix of a declared name while it is read.
    let mut i = 1;
    while let Some(&b) = s.get(i) {
        if !is_tag_name_byte(b) {
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
    let Some(name) = set.get(name) else {
        return Parse::No;
    };
    // Where each attribute's name and value are: strings are made only for a tag that is whole,
    // not on each of the many scans of a tag that is still streaming in.
    let mut attributes: Vec<(Range<usize>, Range<usize>)> = Vec::new();
    // The attribute names seen, for the duplicate check once a tag has more than a few: a tag
    // streaming in is parsed again on every delta and may hold hundreds of attributes, so
    // comparing each with all before it would cost a quadratic scan per delta.
    let mut keys: HashSet<&[u8]> = HashSet::new();
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
                    _ if i + 2 > WIDGET_MAX => Parse::No,
                    None => need(),
                    Some(b'>') => Parse::Yes(tag(s, i + 2, name, &attributes)),
                    Some(_) => Parse::No,
                };
            }
            b'>' => {
                // Only an empty pair: `</name>` right after.
                let close = i + 1;
                let expected = [b"</".as_slice(), name.as_bytes(), b">"].concat();
                let end = close + expected.len();
                if end > WIDGET_MAX {
                    return Parse::No;
                }
                let got = &s[close..s.len().min(end)];
                if !expected.starts_with(got) {
                    return Parse::No;
                }
                if got.len() < expected.len() {
                    return need();
                }
                return Parse::Yes(tag(s, end, name, &attributes));
            }
            b if is_attribute_byte(b) && b != b'-' && b != b'.' && i > spaced => {
                let start = i;
                while i < WIDGET_MAX && s.get(i).is_some_and(|&b| is_attribute_byte(b)) {
                    i += 1;
                }
                let Some(&after) = s.get(i) else {
                    return need();
                };
                let key = start..i;
                let duplicate = if attributes.len() < FEW_ATTRIBUTES {
                    attributes
                        .iter()
                        .any(|(k, _)| s[k.clone()] == s[key.clone()])
                } else {
                    if keys.is_empty() {
                        keys.extend(attributes.iter().map(|(k, _)| &s[k.clone()]));
                    }
                    !keys.insert(&s[key.clone()])
                };
                if duplicate {
                    return Parse::No;
                }
                if after != b'=' {
                    attributes.push((key, i..i));
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
                let window = &s[value_start..s.len().min(value_start + room)];
                let Some(len) = memchr::memchr2(quote, b'\n', window) else {
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
                attributes.push((key, value_start..value_end));
                i = value_end + 1;
            }
            _ => return Parse::No,
        }
    }
}

fn tag(s: &[u8], len: usize, name: &str, attributes: &[(Range<usize>, Range<usize>)]) -> Tag {
    debug_assert!(len <= WIDGET_MAX, "a tag of {len} bytes");
    let text = |range: &Range<usize>| String::from_utf8_lossy(&s[range.clone()]).into_owned();
    Tag {
        len,
        name: name.to_owned(),
        attributes: attributes.iter().map(|(k, v)| (text(k), text(v))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> WidgetSet {
        WidgetSet::new(["chart", "map", "widget:map", "widget:weather-forecast"]).unwrap()
    }

    /// Each of `cases`, the whole input, is text.
    fn all_text(cases: &[&str]) {
        for s in cases {
            assert_eq!(parse(s.as_bytes(), &set(), true), Parse::No, "{s:?}");
        }
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
    fn namespaced_tags() {
        let t = yes(r#"<widget:weather-forecast location="Seattle"/>"#);
        assert_eq!(t.name, "widget:weather-forecast");
        assert_eq!(
            t.attributes,
            [("location".to_owned(), "Seattle".to_owned())]
        );
        assert_eq!(yes("<widget:map></widget:map>").name, "widget:map");
        assert_eq!(yes(r#"<widget:map data='{"a":1}'/>"#).len, 28);
        // The namespace is part of the name: `map` and `widget:map` are two widgets, and a
        // namespace nobody declared is text.
        all_text(&[
            "<widget:chart/>",
            "<other:map/>",
            "<widget::map/>",
            "<widget/>",
            "<Widget:map/>",
            "<widget：map/>",
            "<widget:map></map>",
            "<map></widget:map>",
        ]);
    }

    #[test]
    fn not_widgets() {
        all_text(&[
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
        ]);
        let long = format!("<chart a=\"{}\"/>", "x".repeat(WIDGET_MAX));
        assert_eq!(parse(long.as_bytes(), &set(), false), Parse::No);
        let fits = format!("<chart a=\"{}\"/>", "x".repeat(WIDGET_MAX - 13));
        assert_eq!(fits.len(), WIDGET_MAX);
        assert_eq!(yes(&fits).len, WIDGET_MAX);
    }

    /// Every shape of tag is text from one byte past [`WIDGET_MAX`] on, however its last bytes
    /// are spent (a longer value, spaces before `/>`, the closing tag of a pair), and a tag that
    /// cannot fit is decided without waiting for more.
    #[test]
    fn the_bound_holds_for_every_shape() {
        let shapes = |value: usize| {
            let x = "x".repeat(value);
            [
                format!("<chart a=\"{x}\"/>"),
                format!("<chart a=\"{x}\" />"),
                format!("<chart a=\"{x}\"   />"),
                format!("<map a=\"{x}\"></map>"),
                format!("<map a=\"{x}\" ></map>"),
                format!("<widget:map a=\"{x}\"></widget:map>"),
            ]
        };
        for value in WIDGET_MAX - 40..WIDGET_MAX {
            for tag in shapes(value) {
                let parsed = parse(tag.as_bytes(), &set(), true);
                if tag.len() <= WIDGET_MAX {
                    assert!(
                        matches!(parsed, Parse::Yes(ref t) if t.len == tag.len()),
                        "{}",
                        tag.len()
                    );
                } else {
                    assert_eq!(parsed, Parse::No, "{} bytes", tag.len());
                    // Not even its first WIDGET_MAX bytes make it wait.
                    let head = &tag.as_bytes()[..WIDGET_MAX];
                    assert_eq!(parse(head, &set(), false), Parse::No, "{} bytes", tag.len());
                }
            }
        }
    }

    /// The duplicate check stays exact with many attributes.
    #[test]
    fn many_attributes() {
        let names: Vec<String> = (0..500).map(|i| format!("a{i}")).collect();
        let tag = format!("<chart {}/>", names.join(" "));
        assert_eq!(yes(&tag).attributes.len(), 500);
        for again in [0, 3, 7, 8, 9, 250, 499] {
            let twice = format!("<chart {} a{again}/>", names.join(" "));
            assert_eq!(parse(twice.as_bytes(), &set(), true), Parse::No, "a{again}");
        }
        for count in 1..=10 {
            let first = names[..count].join(" ");
            let once = format!("<chart {first} b/>");
            assert_eq!(yes(&once).attributes.len(), count + 1);
            let twice = format!("<chart {first} a{}/>", count - 1);
            assert_eq!(parse(twice.as_bytes(), &set(), true), Parse::No, "{count}");
        }
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
            "<w",
            "<widget:",
            "<widget:weath",
            "<widget:weather-forecast location=\"Seattle",
            "<widget:map data='{\"type\":\"FeatureColl",
        ] {
            assert_eq!(
                parse(s.as_bytes(), &set(), false),
                Parse::Incomplete,
                "{s:?}"
            );
            assert_eq!(parse(s.as_bytes(), &set(), true), Parse::No, "{s:?}");
        }
        for s in ["<cx", "<div", "< ", "<widget:x", "<widget;"] {
            assert_eq!(parse(s.as_bytes(), &set(), false), Parse::No, "{s:?}");
        }
    }

    #[test]
    fn a_tag_is_announced_once_its_name_is_complete() {
        let set = set();
        let announced = |s: &str| announced(s.as_bytes(), &set);
        assert_eq!(announced("<widget:map "), Some("widget:map"));
        assert_eq!(announced("<widget:map\tdata"), Some("widget:map"));
        assert_eq!(announced("<widget:map/"), Some("widget:map"));
        assert_eq!(announced("<map data='x"), Some("map"));
        // The name is still growing, ends the line, opens an empty pair, or is not declared.
        for s in [
            "<widget:map",
            "<widget:ma ",
            "<widget:map\n",
            "<widget:map>",
            "<widget:chart ",
            "<div ",
            "< map",
            "<",
        ] {
            assert_eq!(announced(s), None, "{s:?}");
        }
        let long = format!("<{} ", "a".repeat(200));
        assert_eq!(announced(&long), None);
    }

    #[test]
    fn names_are_checked() {
        // 64 bytes in all is the longest name, whether or not it has a namespace.
        let longest = [
            "x".repeat(64),
            format!("{}:{}", "a".repeat(31), "b".repeat(32)),
        ];
        let too_long = [
            "x".repeat(65),
            format!("{}:{}", "a".repeat(32), "b".repeat(32)),
        ];
        let ok = ["ok-name_2", "widget:weather-forecast", "w:m", "x"];
        for name in longest.iter().map(String::as_str).chain(ok) {
            assert!(WidgetSet::new([name]).is_ok(), "{name:?}");
        }
        let bad = [
            "",
            "2x",
            "a b",
            "x<",
            ":map",
            "widget:",
            "widget::map",
            "a:b:c",
            "widget:2d",
            "widget：map",
            "wіdget:map",
            "widget:map ",
            "widget.map",
            "widget/map",
        ];
        for name in too_long.iter().map(String::as_str).chain(bad) {
            let error = WidgetSet::new([name]).unwrap_err().to_string();
            assert!(error.contains("namespace"), "{name:?}: {error}");
        }
    }
}
