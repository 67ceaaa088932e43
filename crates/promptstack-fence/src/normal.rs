//! The normalised view: how the detector reads text, one [`Unit`] at a time, each with its byte
//! span in the original text (the map back that defanging needs).
//!
//! A unit is one character or one escape sequence. Its [`Sym`] says what a reader could take it
//! for, after folding away everything that changes bytes but not meaning:
//!
//! - **case**: letters are lowercased, and fullwidth or mathematical letters fold to ASCII through
//!   Unicode compatibility decomposition (NFKD); a small table folds the Cyrillic and Greek letters
//!   that look like Latin ones;
//! - **look-alike brackets**: fullwidth, small-form, CJK, mathematical, ornamental and
//!   modifier-letter angle brackets read as `<` or `>`; characters that stand for several
//!   brackets carry a weight (`≪` = 2, `⋘` = 3, `《` = 2);
//! - **escapes**: HTML character references (`&lt;`, `&#60;`, `&#x3c;`, `&amp;lt;`), URL escapes
//!   (`%3C`, `%253C`, multi-byte `%EF%BC%9C`) and backslash escapes (`\u003c`, `\u{3c}`, `\x3c`,
//!   `\U0000003c`) decode to the character they stand for, which is then classified;
//! - **invisible characters**: Unicode format characters (zero-width space and joiners, BOM, bidi
//!   controls, tag characters, variation selectors), combining marks and other control characters
//!   are [`Sym::Ignorable`]; whitespace is [`Sym::Space`] or [`Sym::LineBreak`].
//!
//! Our own defanged glyphs `‹` and `›` are [`Sym::Exempt`]: they look like angle brackets, but
//! they are what the fence writes, so reading them as brackets would flag the fence's own output.
//!
//! Decoding a unit looks at most [`MAX_UNIT_BYTES`] bytes ahead, so it costs O(1).

use std::ops::Range;

use unicode_normalization::char::{decompose_compatible, is_combining_mark};

/// The most bytes one unit (an escape sequence with its prefixes) may span.
pub const MAX_UNIT_BYTES: usize = 48;

/// What a unit of the normalised view stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Sym {
    /// An opening angle bracket, or a character standing for `weight` of them.
    Open(u8),
    /// A closing angle bracket, or a character standing for `weight` of them.
    Close(u8),
    /// An opening square bracket (`[`, `［`).
    OpenSquare,
    /// A closing square bracket (`]`, `］`).
    CloseSquare,
    /// A vertical bar (`|`, `｜`, `∣`, `ǀ`).
    Bar,
    /// A slash (`/`, `／`, `⁄`, `∕`).
    Slash,
    /// A double quote (`"`, `＂`).
    Quote,
    /// A separator inside a word: `_`, `-`, `.`, `▁` and their fullwidth forms.
    Joiner,
    /// Whitespace that does not break a line.
    Space,
    /// A line break (`\n`, `\r`, NEL, line and paragraph separators).
    LineBreak,
    /// A character a reader does not see: format characters, combining marks, controls.
    Ignorable,
    /// Our own defanged glyphs `‹` and `›`, exempt from bracket detection.
    Exempt,
    /// One to three lowercase ASCII letters or digits (three for ligatures such as `ﬃ`).
    Word(Letters),
    /// Anything else.
    Other,
}

/// Up to three lowercase ASCII letters or digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Letters {
    bytes: [u8; 3],
    len: u8,
}

impl Letters {
    fn one(b: u8) -> Self {
        Letters {
            bytes: [b.to_ascii_lowercase(), 0, 0],
            len: 1,
        }
    }

    /// The letters, lowercase ASCII.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// One unit of the normalised view: what it stands for and where it sits in the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// What the unit stands for.
    pub sym: Sym,
    /// The unit's bytes in the original text.
    pub span: Range<usize>,
}

/// Decodes the unit that starts at byte `pos` of `text`.
///
/// `pos` must be a character boundary before the end of `text`. Looks at most
/// [`MAX_UNIT_BYTES`] bytes ahead.
pub fn unit_at(text: &str, pos: usize) -> Unit {
    let bytes = text.as_bytes();
    let b = bytes[pos];
    if b < 0x80 {
        let decoded = match b {
            b'&' | b'%' | b'\\' => escape_at(text, pos),
            _ => None,
        };
        if let Some((c, len)) = decoded {
            return Unit {
                sym: classify(c),
                span: pos..pos + len,
            };
        }
        return Unit {
            sym: classify_ascii(b),
            span: pos..pos + 1,
        };
    }
    // `pos` is a char boundary, so a char starts here.
    let c = text[pos..].chars().next().unwrap_or('\u{fffd}');
    Unit {
        sym: classify(c),
        span: pos..pos + c.len_utf8(),
    }
}

fn classify_ascii(b: u8) -> Sym {
    match b {
        b'<' => Sym::Open(1),
        b'>' => Sym::Close(1),
        b'[' => Sym::OpenSquare,
        b']' => Sym::CloseSquare,
        b'|' => Sym::Bar,
        b'/' => Sym::Slash,
        b'"' => Sym::Quote,
        b'_' | b'-' | b'.' => Sym::Joiner,
        b' ' | b'\t' | 0x0b | 0x0c => Sym::Space,
        b'\n' | b'\r' => Sym::LineBreak,
        b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => Sym::Word(Letters::one(b)),
        0x00..=0x1f | 0x7f => Sym::Ignorable,
        _ => Sym::Other,
    }
}

/// Classifies one character (already decoded from any escape).
pub fn classify(c: char) -> Sym {
    if c.is_ascii() {
        return classify_ascii(c as u8);
    }
    if let Some(sym) = classify_table(c) {
        return sym;
    }
    if is_combining_mark(c) {
        return Sym::Ignorable;
    }
    classify_decomposed(c)
}

/// Characters that need no decomposition to classify: brackets, whitespace, invisible
/// characters and letters that look Latin. Every character that reads as an opening bracket is
/// listed here (a test checks that NFKD finds no other), so the detector's fast path can search
/// for exactly these.
fn classify_table(c: char) -> Option<Sym> {
    let sym = match c {
        // Opening angle brackets and their look-alikes.
        '\u{FF1C}' | '\u{FE64}' | '\u{3008}' | '\u{2329}' | '\u{27E8}' | '\u{29FC}'
        | '\u{276E}' | '\u{276C}' | '\u{2770}' | '\u{02C2}' | '\u{1438}' | '\u{22D6}'
        | '\u{2991}' | '\u{226E}' | '\u{FE3F}' | '\u{2039}' => {
            if c == '\u{2039}' {
                Sym::Exempt
            } else {
                Sym::Open(1)
            }
        }
        '\u{226A}' | '\u{00AB}' | '\u{300A}' | '\u{27EA}' | '\u{2AA1}' | '\u{FE3D}' => Sym::Open(2),
        '\u{22D8}' | '\u{2AF7}' => Sym::Open(3),
        // Closing angle brackets and their look-alikes.
        '\u{FF1E}' | '\u{FE65}' | '\u{3009}' | '\u{232A}' | '\u{27E9}' | '\u{29FD}'
        | '\u{276F}' | '\u{276D}' | '\u{2771}' | '\u{02C3}' | '\u{1433}' | '\u{22D7}'
        | '\u{2992}' | '\u{226F}' | '\u{FE40}' => Sym::Close(1),
        '\u{203A}' => Sym::Exempt,
        '\u{226B}' | '\u{00BB}' | '\u{300B}' | '\u{27EB}' | '\u{2AA2}' | '\u{FE3E}' => {
            Sym::Close(2)
        }
        '\u{22D9}' | '\u{2AF8}' => Sym::Close(3),
        '\u{FF3B}' | '\u{FE47}' => Sym::OpenSquare,
        '\u{FF3D}' | '\u{FE48}' => Sym::CloseSquare,
        '\u{FF5C}' | '\u{2223}' | '\u{01C0}' | '\u{FE31}' | '\u{2758}' => Sym::Bar,
        '\u{FF0F}' | '\u{2044}' | '\u{2215}' | '\u{29F8}' => Sym::Slash,
        '\u{FF02}' => Sym::Quote,
        '\u{2581}' | '\u{FF3F}' | '\u{FF0D}' | '\u{2010}' | '\u{2011}' | '\u{2012}'
        | '\u{2013}' | '\u{2014}' | '\u{2212}' | '\u{FF0E}' | '\u{00B7}' | '\u{30FB}' => {
            Sym::Joiner
        }
        '\u{0085}' | '\u{2028}' | '\u{2029}' => Sym::LineBreak,
        '\u{00A0}'
        | '\u{1680}'
        | '\u{2000}'..='\u{200A}'
        | '\u{202F}'
        | '\u{205F}'
        | '\u{3000}' => Sym::Space,
        '\u{00AD}'
        | '\u{034F}'
        | '\u{061C}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{17B4}'
        | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}'
        | '\u{E0000}'..='\u{E0FFF}'
        | '\u{0080}'..='\u{009F}' => Sym::Ignorable,
        _ => return confusable_letter(c).map(|b| Sym::Word(Letters::one(b))),
    };
    Some(sym)
}

/// Cyrillic and Greek letters that render like Latin ones in common fonts.
fn confusable_letter(c: char) -> Option<u8> {
    let b = match c {
        'а' | 'А' | 'α' | 'Α' => b'a',
        'В' | 'Β' | 'ь' => b'b',
        'с' | 'С' | 'ϲ' | 'Ϲ' => b'c',
        'ԁ' => b'd',
        'е' | 'Е' | 'Ε' | 'ё' => b'e',
        'һ' | 'Н' | 'Η' => b'h',
        'і' | 'І' | 'ι' | 'Ι' | 'ı' | 'ӏ' | 'Ӏ' => b'i',
        'ј' | 'Ј' | 'ȷ' => b'j',
        'к' | 'К' | 'κ' | 'Κ' => b'k',
        'М' | 'Μ' => b'm',
        'Ν' | 'ո' => b'n',
        'о' | 'О' | 'ο' | 'Ο' | 'σ' => b'o',
        'р' | 'Р' | 'ρ' | 'Ρ' => b'p',
        'ԛ' => b'q',
        'ѕ' | 'Ѕ' => b's',
        'Т' | 'Τ' | 'т' => b't',
        'υ' | 'ս' => b'u',
        'ν' | 'ѵ' => b'v',
        'ԝ' | 'ѡ' => b'w',
        'х' | 'Х' | 'Χ' | 'χ' => b'x',
        'у' | 'У' | 'Υ' | 'γ' => b'y',
        'Ζ' => b'z',
        _ => return None,
    };
    Some(b)
}

/// Classifies through the compatibility decomposition: fullwidth and mathematical letters,
/// ligatures, accented letters (marks dropped) and compatibility forms of punctuation.
fn classify_decomposed(c: char) -> Sym {
    let mut out = [0u8; 3];
    let mut len = 0usize;
    let mut single: Option<char> = None;
    let mut count = 0usize;
    let mut ascii_alnum = true;
    decompose_compatible(c, |d| {
        if is_combining_mark(d) {
            return;
        }
        count += 1;
        single = Some(d);
        if d.is_ascii_alphanumeric() && len < 3 {
            out[len] = (d as u8).to_ascii_lowercase();
            len += 1;
        } else {
            ascii_alnum = false;
        }
    });
    match (count, single) {
        (0, _) => Sym::Ignorable,
        (1, Some(d)) if d == c => Sym::Other,
        (1, Some(d)) if d.is_ascii() => classify_ascii(d as u8),
        (1, Some(d)) => classify_table(d)
            .or_else(|| confusable_letter(d).map(|b| Sym::Word(Letters::one(b))))
            .unwrap_or(Sym::Other),
        (n, _) if ascii_alnum && n <= 3 => Sym::Word(Letters {
            bytes: out,
            len: len as u8,
        }),
        _ => Sym::Other,
    }
}

/// Every non-ASCII character that classifies as [`Sym::Open`] or [`Sym::OpenSquare`]. The
/// detector's fast path stops at their lead bytes; a test checks, over every Unicode scalar value,
/// that no other character classifies as an opener.
#[cfg(test)]
const NON_ASCII_OPENERS: &[char] = &[
    '\u{FF1C}', '\u{FE64}', '\u{3008}', '\u{2329}', '\u{27E8}', '\u{29FC}', '\u{276E}', '\u{276C}',
    '\u{2770}', '\u{02C2}', '\u{1438}', '\u{22D6}', '\u{2991}', '\u{226E}', '\u{FE3F}', '\u{226A}',
    '\u{00AB}', '\u{300A}', '\u{27EA}', '\u{2AA1}', '\u{FE3D}', '\u{22D8}', '\u{2AF7}', '\u{FF3B}',
    '\u{FE47}',
];

// ---------------------------------------------------------------------------------------------
// Escapes. Each decoder returns the character and the number of bytes the escape spans, or
// `None` when the bytes at `pos` are not an escape it understands.

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn hex_value(b: u8) -> u32 {
    match b {
        b'0'..=b'9' => u32::from(b - b'0'),
        b'a'..=b'f' => u32::from(b - b'a' + 10),
        b'A'..=b'F' => u32::from(b - b'A' + 10),
        _ => 0,
    }
}

fn starts_with_ignore_case(bytes: &[u8], at: usize, prefix: &[u8]) -> bool {
    bytes
        .get(at..at + prefix.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(prefix))
}

/// `&lt;`, `&LT`, `&#60;`, `&#x3C;`, `&amp;lt;` and the few named references that matter here.
fn html_escape(text: &str, pos: usize) -> Option<(char, usize)> {
    let bytes = text.as_bytes();
    let limit = (pos + MAX_UNIT_BYTES).min(bytes.len());
    let mut i = pos + 1;
    // `&amp;lt;` is `&lt;` escaped once more; a reader who decodes one level sees `&lt;`.
    while i + 4 <= limit && starts_with_ignore_case(bytes, i, b"amp;") {
        i += 4;
    }
    if i >= limit {
        return None;
    }
    if bytes[i] == b'#' {
        i += 1;
        let hex = matches!(bytes.get(i), Some(b'x' | b'X'));
        if hex {
            i += 1;
        }
        let start = i;
        let mut value: u32 = 0;
        let mut significant = 0;
        while i < limit {
            let b = bytes[i];
            let digit = if hex { is_hex(b) } else { b.is_ascii_digit() };
            if !digit {
                break;
            }
            value = value * if hex { 16 } else { 10 } + hex_value(b);
            if value != 0 {
                significant += 1;
                if significant > 7 {
                    return None;
                }
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        if bytes.get(i) == Some(&b';') {
            i += 1;
        }
        return char::from_u32(value).map(|c| (c, i - pos));
    }
    let start = i;
    while i < limit && bytes[i].is_ascii_alphabetic() {
        i += 1;
    }
    let name = &text[start..i];
    if bytes.get(i) == Some(&b';')
        && let Some(c) = named_reference(name)
    {
        return Some((c, i + 1 - pos));
    }
    // HTML decodes `&lt` and `&gt` without the semicolon, even when letters follow.
    if name.len() >= 2 {
        let head = &name[..2];
        if head.eq_ignore_ascii_case("lt") {
            return Some(('<', start + 2 - pos));
        }
        if head.eq_ignore_ascii_case("gt") {
            return Some(('>', start + 2 - pos));
        }
    }
    None
}

fn named_reference(name: &str) -> Option<char> {
    let c = match name {
        "Lt" | "ll" => '\u{226A}',
        "Gt" | "gg" => '\u{226B}',
        "Ll" => '\u{22D8}',
        "Gg" => '\u{22D9}',
        "laquo" => '\u{00AB}',
        "raquo" => '\u{00BB}',
        "lsaquo" => '\u{2039}',
        "rsaquo" => '\u{203A}',
        "lang" | "langle" | "LeftAngleBracket" => '\u{27E8}',
        "rang" | "rangle" | "RightAngleBracket" => '\u{27E9}',
        "lsqb" | "lbrack" => '[',
        "rsqb" | "rbrack" => ']',
        "verbar" | "vert" | "VerticalLine" => '|',
        "sol" => '/',
        "lowbar" | "UnderBar" => '_',
        "hyphen" | "dash" => '-',
        "nbsp" | "NonBreakingSpace" => '\u{00A0}',
        "ensp" | "emsp" | "thinsp" | "hairsp" => ' ',
        "shy" => '\u{00AD}',
        "zwnj" => '\u{200C}',
        "zwj" => '\u{200D}',
        "lrm" => '\u{200E}',
        "rlm" => '\u{200F}',
        "ZeroWidthSpace"
        | "NegativeVeryThinSpace"
        | "NegativeThinSpace"
        | "NegativeMediumSpace"
        | "NegativeThickSpace" => '\u{200B}',
        "NoBreak" => '\u{2060}',
        "NewLine" => '\n',
        "Tab" => '\t',
        _ if name.eq_ignore_ascii_case("lt") => '<',
        _ if name.eq_ignore_ascii_case("gt") => '>',
        _ if name.eq_ignore_ascii_case("quot") => '"',
        _ if name.eq_ignore_ascii_case("amp") => '&',
        _ => return None,
    };
    Some(c)
}

/// The most escape layers decoded for one unit: `&%2360;` (an HTML reference whose `#` is
/// percent-encoded) takes two, and every further layer has to fit in [`MAX_UNIT_BYTES`] as well.
pub const MAX_ESCAPE_LAYERS: usize = 6;

/// Whether `b` can start an escape sequence.
fn is_introducer(b: u8) -> bool {
    matches!(b, b'&' | b'%' | b'\\')
}

/// One escape sequence of any kind at `pos` of `text`, decoded once.
fn escape_once(text: &str, pos: usize) -> Option<(char, usize)> {
    match text.as_bytes().get(pos)? {
        b'&' => html_escape(text, pos),
        b'%' => percent_escape(text.as_bytes(), pos),
        b'\\' => backslash_escape(text.as_bytes(), pos),
        _ => None,
    }
}

/// The escape sequence at `pos` (which holds `&`, `%` or `\`), decoded to a fixpoint: the
/// character a reader who decodes repeatedly ends up with, and how many bytes of `text` stand
/// for it.
///
/// Escapes may be layered in any order (`&%2360;` is `&#60;` with its `#` percent-encoded;
/// `%26lt;` is `&lt;` with its `&` percent-encoded), so one layer at a time the whole window of
/// [`MAX_UNIT_BYTES`] bytes is decoded, each character remembering where its bytes end in
/// `text`, until a layer decodes nothing or [`MAX_ESCAPE_LAYERS`] layers are done. The work is
/// bounded by the window and the layer count, so a unit still costs O(1).
#[inline]
fn escape_at(text: &str, pos: usize) -> Option<(char, usize)> {
    match escape_once(text, pos) {
        // A decoded character that cannot start another escape is final: no later layer can
        // change the first character. This is the common case, kept small and inline.
        Some((c, len)) if !(c.is_ascii() && is_introducer(c as u8)) => Some((c, len)),
        _ => layered_escape(text, pos),
    }
}

/// The slow path of [`escape_at`]: no escape at `pos`, or one that decodes to another escape's
/// first character. Kept out of line so that the hot unit decoder stays small.
#[cold]
#[inline(never)]
fn layered_escape(text: &str, pos: usize) -> Option<(char, usize)> {
    let bytes = text.as_bytes();
    let mut limit = (pos + MAX_UNIT_BYTES).min(bytes.len());
    while !text.is_char_boundary(limit) {
        limit -= 1;
    }
    if escape_once(text, pos).is_none() && !bytes[pos + 1..limit].iter().any(|&b| is_introducer(b))
    {
        // Nothing to decode here, and no other escape in the window to make one.
        return None;
    }
    // The current layer as text, and for each of its bytes the end (relative to `pos`) of the
    // original bytes its character stands for. Decoding never lengthens text, so a layer fits
    // in the window's size.
    let mut layer = [0u8; MAX_UNIT_BYTES];
    let mut ends = [0u8; MAX_UNIT_BYTES];
    let window = &bytes[pos..limit];
    layer[..window.len()].copy_from_slice(window);
    for (i, end) in ends.iter_mut().enumerate().take(window.len()) {
        // Raw bytes stand for themselves; a character's end is the end of its last byte.
        *end = u8::try_from(i + 1).unwrap_or(u8::MAX);
    }
    let mut len = window.len();
    let mut decoded_any = false;
    for _ in 0..MAX_ESCAPE_LAYERS {
        let Ok(current) = std::str::from_utf8(&layer[..len]) else {
            break;
        };
        let mut next = [0u8; MAX_UNIT_BYTES];
        let mut next_ends = [0u8; MAX_UNIT_BYTES];
        let mut out = 0;
        let mut at = 0;
        let mut changed = false;
        while at < len {
            let (c, used) = match escape_once(current, at) {
                Some(decoded) => {
                    changed = true;
                    decoded
                }
                None => {
                    let c = current[at..].chars().next()?;
                    (c, c.len_utf8())
                }
            };
            let end = ends[at + used - 1];
            let mut buf = [0u8; 4];
            let encoded = c.encode_utf8(&mut buf).as_bytes();
            if out + encoded.len() > MAX_UNIT_BYTES {
                break;
            }
            next[out..out + encoded.len()].copy_from_slice(encoded);
            next_ends[out..out + encoded.len()].fill(end);
            out += encoded.len();
            at += used;
        }
        if !changed {
            break;
        }
        decoded_any = true;
        layer = next;
        ends = next_ends;
        len = out;
    }
    if !decoded_any {
        return None;
    }
    let first = std::str::from_utf8(&layer[..len]).ok()?.chars().next()?;
    let span = usize::from(ends[first.len_utf8() - 1]);
    Some((first, span))
}

/// `%3C`, `%253C` (escaped twice) and multi-byte UTF-8 escapes such as `%EF%BC%9C`.
fn percent_escape(bytes: &[u8], pos: usize) -> Option<(char, usize)> {
    let limit = (pos + MAX_UNIT_BYTES).min(bytes.len());
    let mut i = pos + 1;
    // `%25` followed by two more hex digits is this same escape, percent-encoded again.
    while i + 4 <= limit
        && bytes[i] == b'2'
        && bytes[i + 1] == b'5'
        && is_hex(bytes[i + 2])
        && is_hex(bytes[i + 3])
    {
        i += 2;
    }
    if i + 2 > limit || !is_hex(bytes[i]) || !is_hex(bytes[i + 1]) {
        return None;
    }
    let first = (hex_value(bytes[i]) << 4 | hex_value(bytes[i + 1])) as u8;
    i += 2;
    if first < 0x80 {
        return Some((char::from(first), i - pos));
    }
    let needed = match first {
        0xC2..=0xDF => 1,
        0xE0..=0xEF => 2,
        0xF0..=0xF4 => 3,
        _ => return None,
    };
    let mut buf = [first, 0, 0, 0];
    for slot in buf.iter_mut().skip(1).take(needed) {
        if i + 3 > limit || bytes[i] != b'%' || !is_hex(bytes[i + 1]) || !is_hex(bytes[i + 2]) {
            return None;
        }
        *slot = (hex_value(bytes[i + 1]) << 4 | hex_value(bytes[i + 2])) as u8;
        i += 3;
    }
    let c = std::str::from_utf8(&buf[..=needed]).ok()?.chars().next()?;
    Some((c, i - pos))
}

/// `\u003c`, `\u{3c}`, `\U0000003C`, `\x3c`, `\x{3c}`, with any run of extra backslashes.
fn backslash_escape(bytes: &[u8], pos: usize) -> Option<(char, usize)> {
    let limit = (pos + MAX_UNIT_BYTES).min(bytes.len());
    let mut i = pos + 1;
    // `\\u003c` is the same escape inside a string literal that was itself escaped.
    while i < limit && bytes[i] == b'\\' && i - pos < 8 {
        i += 1;
    }
    let letter = *bytes.get(i)?;
    i += 1;
    let braced = |i: usize| -> Option<(u32, usize)> {
        let mut j = i + 1;
        let mut value: u32 = 0;
        while j < limit && is_hex(bytes[j]) && j - i <= 6 {
            value = value * 16 + hex_value(bytes[j]);
            j += 1;
        }
        (j > i + 1 && j < limit && bytes[j] == b'}').then_some((value, j + 1))
    };
    let fixed = |i: usize, n: usize| -> Option<(u32, usize)> {
        let digits = bytes.get(i..i + n)?;
        if i + n > limit || !digits.iter().all(|&b| is_hex(b)) {
            return None;
        }
        Some((digits.iter().fold(0, |v, &b| v * 16 + hex_value(b)), i + n))
    };
    let (value, end) = match letter {
        b'u' | b'x' if bytes.get(i) == Some(&b'{') => braced(i)?,
        b'u' => fixed(i, 4)?,
        b'U' => fixed(i, 8)?,
        b'x' => fixed(i, 2)?,
        _ => return None,
    };
    char::from_u32(value).map(|c| (c, end - pos))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The detector's fast path stops only at the lead bytes of `NON_ASCII_OPENERS`. This walks
    /// every Unicode scalar value and checks that no other character reads as an opening bracket,
    /// and that every listed one does.
    #[test]
    fn fast_path_covers_every_opener() {
        let lead_bytes = [0xC2u8, 0xCB, 0xE1, 0xE2, 0xE3, 0xEF];
        let mut wrong = Vec::new();
        for c in (0x80..=0x10FFFFu32).filter_map(char::from_u32) {
            let opener = matches!(classify(c), Sym::Open(_) | Sym::OpenSquare);
            let mut buf = [0u8; 4];
            let lead = c.encode_utf8(&mut buf).as_bytes()[0];
            if opener != NON_ASCII_OPENERS.contains(&c) || (opener && !lead_bytes.contains(&lead)) {
                wrong.push(format!("U+{:04X} {c} {:?}", c as u32, classify(c)));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }
}
