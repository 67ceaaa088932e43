//! An independent reader of forgeries, for the properties: it normalises a whole text with plain,
//! slow, global rewrites (decode escapes three times over, NFKD, drop marks and invisible
//! characters, map look-alike brackets and letters, drop spaces and joiners) and then searches it
//! with regular expressions. It shares no code with the detector, so a property checked with it
//! does not merely restate the implementation.

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;

fn decode_escapes(text: &str) -> String {
    static NAMED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"&([A-Za-z]+);?").expect("regex"));
    static NUMERIC: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"&#(?:[xX]([0-9a-fA-F]{1,8})|([0-9]{1,10}));?").expect("regex")
    });
    static PERCENT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(?:%(?:25)*[0-9a-fA-F]{2})+").expect("regex"));
    static BACKSLASH: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\\+(?:u\{([0-9a-fA-F]{1,6})\}|x\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2}))")
            .expect("regex")
    });
    let text = NUMERIC.replace_all(text, |c: &regex::Captures<'_>| {
        let v = match (c.get(1), c.get(2)) {
            (Some(h), _) => u32::from_str_radix(h.as_str(), 16).ok(),
            (_, Some(d)) => d.as_str().parse::<u32>().ok(),
            _ => None,
        };
        v.and_then(char::from_u32)
            .map_or_else(|| c[0].to_owned(), String::from)
    });
    let text = NAMED.replace_all(&text, |c: &regex::Captures<'_>| {
        let name = &c[1];
        let lower = name.to_ascii_lowercase();
        let decoded = match name {
            "Lt" | "ll" => Some("≪"),
            "Gt" | "gg" => Some("≫"),
            "Ll" => Some("⋘"),
            "Gg" => Some("⋙"),
            "laquo" => Some("«"),
            "raquo" => Some("»"),
            "lang" | "langle" | "LeftAngleBracket" => Some("⟨"),
            "rang" | "rangle" | "RightAngleBracket" => Some("⟩"),
            "verbar" | "vert" | "VerticalLine" => Some("|"),
            "lsqb" | "lbrack" => Some("["),
            "rsqb" | "rbrack" => Some("]"),
            "sol" => Some("/"),
            "lowbar" => Some("_"),
            "zwnj" | "zwj" | "ZeroWidthSpace" | "shy" | "lrm" | "rlm" => Some(""),
            "nbsp" => Some(" "),
            _ => match lower.as_str() {
                "lt" => Some("<"),
                "gt" => Some(">"),
                "amp" => Some("&"),
                "quot" => Some("\""),
                _ if lower.starts_with("lt") => None,
                _ => None,
            },
        };
        match decoded {
            Some(d) => d.to_owned(),
            // `&ltfoo` reads as `<foo` in HTML.
            None if lower.starts_with("lt") => format!("<{}", &c[0][3..]),
            None if lower.starts_with("gt") => format!(">{}", &c[0][3..]),
            None => c[0].to_owned(),
        }
    });
    let text = PERCENT.replace_all(&text, |c: &regex::Captures<'_>| {
        let mut bytes = Vec::new();
        let s = c[0].as_bytes();
        let mut i = 0;
        while i < s.len() {
            // s[i] == '%'; skip any `25` that re-escapes the percent sign.
            i += 1;
            while s.len() >= i + 4
                && &s[i..i + 2] == b"25"
                && s[i + 2].is_ascii_hexdigit()
                && s[i + 3].is_ascii_hexdigit()
            {
                i += 2;
            }
            let h = std::str::from_utf8(&s[i..i + 2]).unwrap_or("00");
            bytes.push(u8::from_str_radix(h, 16).unwrap_or(0));
            i += 2;
        }
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let text = BACKSLASH.replace_all(&text, |c: &regex::Captures<'_>| {
        let hex = (1..=5)
            .find_map(|i| c.get(i))
            .map(|m| m.as_str())
            .unwrap_or("0");
        u32::from_str_radix(hex, 16)
            .ok()
            .and_then(char::from_u32)
            .map_or_else(|| c[0].to_owned(), String::from)
    });
    text.into_owned()
}

fn invisible(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\r' | '\t' | '\u{85}'))
        || matches!(c,
            '\u{AD}' | '\u{34F}' | '\u{61C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
            | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}' | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
        || is_combining_mark(c)
}

fn look_alike(c: char) -> Option<&'static str> {
    Some(match c {
        '〈' | '⟨' | '⧼' | '❮' | '❬' | '❰' | '˂' | 'ᐸ' | '⋖' | '⦑' | '︿' => "<",
        '≪' | '«' | '《' | '⟪' | '⪡' | '︽' => "<<",
        '⋘' | '⫷' => "<<<",
        '〉' | '⟩' | '⧽' | '❯' | '❭' | '❱' | '˃' | 'ᐳ' | '⋗' | '⦒' | '﹀' => ">",
        '≫' | '»' | '》' | '⟫' | '⪢' | '︾' => ">>",
        '⋙' | '⫸' => ">>>",
        '∣' | 'ǀ' | '︱' | '❘' => "|",
        '⁄' | '∕' | '⧸' => "/",
        '\u{2028}' | '\u{2029}' | '\u{85}' | '\r' => "\n",
        'а' | 'А' | 'α' | 'Α' => "a",
        'В' | 'Β' | 'ь' => "b",
        'с' | 'С' | 'ϲ' | 'Ϲ' => "c",
        'ԁ' => "d",
        'е' | 'Е' | 'Ε' | 'ё' => "e",
        'һ' | 'Н' | 'Η' => "h",
        'і' | 'І' | 'ι' | 'Ι' | 'ı' | 'ӏ' | 'Ӏ' => "i",
        'ј' | 'Ј' | 'ȷ' => "j",
        'к' | 'К' | 'κ' | 'Κ' => "k",
        'М' | 'Μ' => "m",
        'Ν' | 'ո' => "n",
        'о' | 'О' | 'ο' | 'Ο' | 'σ' => "o",
        'р' | 'Р' | 'ρ' | 'Ρ' => "p",
        'ԛ' => "q",
        'ѕ' | 'Ѕ' => "s",
        'Т' | 'Τ' | 'т' => "t",
        'υ' | 'ս' => "u",
        'ν' | 'ѵ' => "v",
        'ԝ' | 'ѡ' => "w",
        'х' | 'Х' | 'Χ' | 'χ' => "x",
        'у' | 'У' | 'Υ' | 'γ' => "y",
        'Ζ' => "z",
        _ => return None,
    })
}

/// The whole text as the oracle reads it: spaces and joiners vanish, line breaks stay.
pub fn normalise(text: &str) -> String {
    normalise_with(text, false)
}

/// The whole text as the oracle reads it for nonce-shaped names: every joiner becomes `_` and
/// every kind of whitespace, line breaks included, vanishes.
pub fn normalise_keeping_joiners(text: &str) -> String {
    normalise_with(text, true)
}

fn normalise_with(text: &str, keep_joiners: bool) -> String {
    let mut s = text.to_owned();
    for _ in 0..3 {
        s = decode_escapes(&s);
    }
    let mut out = String::with_capacity(s.len());
    for c in s.nfkd() {
        if invisible(c) {
            continue;
        }
        if let Some(rep) = look_alike(c) {
            if !(keep_joiners && rep == "\n") {
                out.push_str(rep);
            }
        } else if c.is_whitespace() && (keep_joiners || c != '\n') {
            // Spaces vanish: a reader skips them inside a marker.
        } else if matches!(
            c,
            '_' | '-' | '.' | '▁' | '‐' | '‑' | '‒' | '–' | '—' | '−' | '·' | '・'
        ) {
            // Joiners vanish too, or all read as one.
            if keep_joiners {
                out.push('_');
            }
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

/// Forgeries the oracle sees in `text`: fence markers and control tokens.
pub fn forgeries(text: &str) -> Vec<String> {
    static MARKER: LazyLock<Regex> = LazyLock::new(|| {
        // Line breaks may split a keyword anywhere: `end` U+2028 `web_content`.
        let spaced = |word: &str| {
            word.chars()
                .map(String::from)
                .collect::<Vec<_>>()
                .join("\n*")
        };
        let kinds = [
            "webcontent",
            "webselection",
            "filecontent",
            "mcpresource",
            "toolresult",
        ]
        .map(spaced)
        .join("|");
        let end = spaced("end");
        Regex::new(&format!(r"<(?:\n*<)+\n*/?\n*(?:{end}\n*)?(?:{kinds})")).expect("regex")
    });
    // Three brackets, an identifier, a joiner and eight or more hexadecimal digits.
    static NONCE_SHAPED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"<<<+/?_*[a-z0-9][a-z0-9_]*_[0-9a-f]{8,}(?:[^a-z0-9]|$)").expect("regex")
    });
    static PIPE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"<\|[a-z0-9]+\|>").expect("regex"));
    static TOKENS: LazyLock<Vec<String>> = LazyLock::new(|| {
        // The list the fence compiles in, read here as plain lines so the oracle does not share
        // the fence's parser.
        include_str!("../../src/data/control_tokens.txt")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(normalise)
            .collect()
    });
    let n = normalise(text);
    let mut found: Vec<String> = MARKER
        .find_iter(&n)
        .map(|m| m.as_str().to_owned())
        .collect();
    found.extend(PIPE.find_iter(&n).map(|m| m.as_str().to_owned()));
    found.extend(
        NONCE_SHAPED
            .find_iter(&normalise_keeping_joiners(text))
            .map(|m| m.as_str().to_owned()),
    );
    found.extend(TOKENS.iter().filter(|t| n.contains(t.as_str())).cloned());
    found
}
