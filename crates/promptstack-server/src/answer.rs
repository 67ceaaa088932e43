//! Writing a render-like answer's JSON straight into its buffer: the same bytes as serde_json's
//! compact serialisation of the answer, with its long strings (the rendered text, the provider
//! request body) escaped eight bytes at a time where serde_json looks at each byte.

use serde::Serialize;

use crate::engine::Attribution;

/// The parts of a render-like answer, in the order its JSON object holds them.
pub(crate) struct Answer<'a, D: Serialize, G: Serialize> {
    /// Which version produced it (the object's first fields).
    pub(crate) attribution: &'a Attribution,
    /// `target`, written when present.
    pub(crate) target: Option<&'a str>,
    /// `text`, written when present.
    pub(crate) text: Option<&'a str>,
    /// `body`, written when present.
    pub(crate) body: Option<&'a str>,
    /// `detail`, written when present.
    pub(crate) detail: Option<&'a D>,
    /// `diagnostics`, always written.
    pub(crate) diagnostics: &'a G,
}

impl<D: Serialize, G: Serialize> Answer<'_, D, G> {
    /// Writes the answer's JSON object at the end of `out`.
    ///
    /// # Errors
    ///
    /// `detail` or `diagnostics` could not be serialised.
    pub(crate) fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let a = self.attribution;
        out.push(b'{');
        field(out, "agent", true);
        string(out, &a.agent);
        field(out, "version", false);
        string(out, &a.version);
        field(out, "label", false);
        match &a.label {
            Some(label) => string(out, label),
            None => out.extend_from_slice(b"null"),
        }
        field(out, "fingerprint", false);
        string(out, &a.fingerprint);
        field(out, "rules_version", false);
        string(out, &a.rules_version);
        if a.preview {
            field(out, "preview", false);
            out.extend_from_slice(b"true");
        }
        for (name, value) in [
            ("target", self.target),
            ("text", self.text),
            ("body", self.body),
        ] {
            if let Some(value) = value {
                field(out, name, false);
                string(out, value);
            }
        }
        if let Some(detail) = self.detail {
            field(out, "detail", false);
            serde_json::to_writer(&mut *out, detail)?;
        }
        field(out, "diagnostics", false);
        serde_json::to_writer(&mut *out, self.diagnostics)?;
        out.push(b'}');
        Ok(())
    }
}

/// Writes `"name":` (after a comma unless it is the first field). Names need no escapes.
fn field(out: &mut Vec<u8>, name: &str, first: bool) {
    if !first {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// What serde_json writes for each byte below 0x60: 0 for the byte itself, `u` for `\u00XX`,
/// else the letter after the backslash. Bytes from 0x60 up are written as they are.
const ESCAPE: [u8; 0x60] = {
    let mut table = [0u8; 0x60];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes of `word` may need an escape: a control byte, `"` or `\`.
/// Never false when one does (a byte that does not is merely looked at one by one).
fn may_escape(word: u64) -> bool {
    let control = word.wrapping_sub(ONES * 0x20);
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero = |x: u64| x.wrapping_sub(ONES) & !x;
    ((control & !word) | zero(quote) | zero(backslash)) & HIGHS != 0
}

/// Writes `text` as a JSON string, escaped exactly as serde_json escapes it: eight bytes at a
/// time while none of them may need an escape, else each of the eight in turn.
pub(crate) fn string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut at = 0;
    while let Some(word) = bytes.get(at..at + 8) {
        let mut eight = [0u8; 8];
        eight.copy_from_slice(word);
        if may_escape(u64::from_le_bytes(eight)) {
            for (offset, &byte) in eight.iter().enumerate() {
                escape(out, bytes, at + offset, byte, &mut start);
            }
        }
        at += 8;
    }
    while let Some(&byte) = bytes.get(at) {
        escape(out, bytes, at, byte, &mut start);
        at += 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Writes the escape of `byte` (at `at` in `bytes`) when it needs one, after the bytes since
/// `start` that did not; `start` then moves past it.
#[inline]
fn escape(out: &mut Vec<u8>, bytes: &[u8], at: usize, byte: u8, start: &mut usize) {
    let escape = ESCAPE.get(usize::from(byte)).copied().unwrap_or(0);
    if escape == 0 {
        return;
    }
    out.extend_from_slice(&bytes[*start..at]);
    if escape == b'u' {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        out.extend_from_slice(b"\\u00");
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 0xf)]);
    } else {
        out.push(b'\\');
        out.push(escape);
    }
    *start = at + 1;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ours(text: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, text);
        String::from_utf8(out).expect("UTF-8")
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let every: String = (0u32..0x800).filter_map(char::from_u32).collect();
        let mut cases = vec![
            String::new(),
            "plain".to_owned(),
            "a\"b\\c\nd\te\u{8}\u{c}\r\u{1}\u{1f}\u{7f}/".to_owned(),
            "é — 漢字 🎉 \u{2028}".to_owned(),
            every.clone(),
        ];
        // Every byte needing an escape at every position of a word, and runs around it.
        for special in ['"', '\\', '\n', '\u{0}', '\u{1f}', ' ', '~', 'é'] {
            for at in 0..17 {
                let mut text = "x".repeat(at);
                text.push(special);
                text.push_str(&"y".repeat(17 - at));
                cases.push(text);
            }
        }
        cases.push(every.repeat(3));
        for case in cases {
            assert_eq!(
                ours(&case),
                serde_json::to_string(&case).expect("serialises"),
                "{case:?}"
            );
        }
    }

    #[test]
    fn may_escape_finds_every_byte_that_needs_one() {
        for byte in 0u8..=255 {
            for lane in 0..8 {
                let mut eight = [b'a'; 8];
                eight[lane] = byte;
                let needs = byte < 0x20 || byte == b'"' || byte == b'\\';
                if needs {
                    assert!(
                        may_escape(u64::from_le_bytes(eight)),
                        "{byte:#x} in lane {lane}"
                    );
                }
            }
        }
        assert!(!may_escape(u64::from_le_bytes(*b"abcdefgh")));
        assert!(!may_escape(u64::from_le_bytes(*b" ~\x7f/}{[]")));
    }

    #[test]
    fn fingerprints_are_written_as_their_display_writes_them() {
        for text in ["", "a", "the stable half"] {
            let fingerprint = promptstack::Fingerprint::of_bytes("test", text.as_bytes());
            assert_eq!(
                crate::engine::hex(fingerprint.as_bytes()),
                fingerprint.to_string()
            );
        }
    }

    /// The answer written here against serde_json's serialisation of the same answer.
    #[test]
    fn answers_are_the_bytes_serde_json_writes() {
        use crate::render::RenderResponse;
        let attribution = |label: Option<&str>, preview: bool| Attribution {
            agent: "chat-assistant".to_owned(),
            version: "ab".repeat(32),
            label: label.map(ToOwned::to_owned),
            fingerprint: "0f".repeat(32),
            rules_version: "2026-11-30.1".to_owned(),
            preview,
        };
        let answers = [
            RenderResponse {
                attribution: attribution(Some("production"), false),
                target: Some("cached".to_owned()),
                text: Some("You are \"helpful\".\n\tLine two\u{1} — é 🎉\\".repeat(40)),
                body: None,
                detail: None,
                diagnostics: Vec::new(),
            },
            RenderResponse {
                attribution: attribution(None, true),
                target: None,
                text: None,
                body: Some("{\"model\":\"m\",\"system\":\"a\\nb\"}".to_owned()),
                detail: Some(serde_json::json!({"plan": {"breakpoints": [1, 2]}, "x": "\n"})),
                diagnostics: vec![serde_json::json!({"severity": "warning", "message": "q\"\n"})],
            },
            RenderResponse {
                attribution: attribution(Some("staging"), false),
                target: Some(String::new()),
                text: Some(String::new()),
                body: Some("b".to_owned()),
                detail: Some(serde_json::Value::Null),
                diagnostics: vec![serde_json::json!(null), serde_json::json!([])],
            },
        ];
        for response in &answers {
            let mut ours = Vec::new();
            Answer {
                attribution: &response.attribution,
                target: response.target.as_deref(),
                text: response.text.as_deref(),
                body: response.body.as_deref(),
                detail: response.detail.as_ref(),
                diagnostics: &response.diagnostics,
            }
            .write(&mut ours)
            .expect("written");
            let theirs = serde_json::to_vec(response).expect("serialised");
            assert_eq!(String::from_utf8(ours), String::from_utf8(theirs));
        }
    }
}
