//! `{{TOOL:name}}` and `{{COMPONENT:name}}` tokens in authored text.
//!
//! A tool token becomes the tool's reference (its name in backticks) when the send offers the
//! tool; otherwise it stays as written and the assembly warns (`unresolved-tool-token`), so the
//! gap is visible instead of silently blank. A component token becomes the spec's component text;
//! a multi-line expansion is set off by newlines, so a token in the middle of a sentence does not
//! glue the sentence's tail onto the component's last line.
//!
//! Tokens look like Jinja output tags, so before a template is compiled each token is rewritten
//! into a Jinja string literal that renders the token itself ([`protect`]); expansion then runs on
//! the rendered text, the same way for literal text and templates.

use std::borrow::Cow;
use std::collections::BTreeMap;

const TOOL: &str = "{{TOOL:";
const COMPONENT: &str = "{{COMPONENT:";

/// One token found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    Tool(&'a str),
    Component(&'a str),
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// The next token at or after `from`: its byte range and what it names.
///
/// Every block's rendered text is scanned and most hold no `{` at all, so candidates are found
/// with a vectorised byte search (`str::find` with a two-byte needle walks the text a byte at a
/// time, and was a quarter of the time of rendering a large prompt).
fn next_token(text: &str, from: usize) -> Option<(std::ops::Range<usize>, Token<'_>)> {
    let bytes = text.as_bytes();
    let mut at = from;
    while let Some(offset) = memchr::memchr(b'{', &bytes[at..]) {
        let start = at + offset;
        if bytes.get(start + 1) != Some(&b'{') {
            at = start + 1;
            continue;
        }
        let rest = &text[start..];
        for (prefix, is_tool) in [(TOOL, true), (COMPONENT, false)] {
            let Some(after) = rest.strip_prefix(prefix) else {
                continue;
            };
            let len = after.find(|c: char| !name_char(c)).unwrap_or(after.len());
            if len > 0 && after[len..].starts_with("}}") {
                let name = &after[..len];
                let end = start + prefix.len() + len + 2;
                let token = if is_tool {
                    Token::Tool(name)
                } else {
                    Token::Component(name)
                };
                return Some((start..end, token));
            }
        }
        at = start + 2;
    }
    None
}

/// Rewrites every token of a template source into a Jinja expression that renders the token.
pub(crate) fn protect(source: &str) -> Cow<'_, str> {
    if next_token(source, 0).is_none() {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 16);
    let mut at = 0;
    while let Some((range, _)) = next_token(source, at) {
        out.push_str(&source[at..range.start]);
        out.push_str("{{ \"");
        out.push_str(&source[range.clone()]);
        out.push_str("\" }}");
        at = range.end;
    }
    out.push_str(&source[at..]);
    Cow::Owned(out)
}

/// What expanding a text's tokens found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Unresolved {
    /// Tools named by a token that the send does not offer.
    pub tools: Vec<String>,
    /// Components named by a token that the spec does not define.
    pub components: Vec<String>,
}

/// Expands the tokens of a rendered text. `None` when the text has no token (the common case).
pub(crate) fn expand(
    text: &str,
    offers: impl Fn(&str) -> bool,
    components: &BTreeMap<String, String>,
) -> Option<(String, Unresolved)> {
    next_token(text, 0)?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut unresolved = Unresolved::default();
    let mut at = 0;
    while let Some((range, token)) = next_token(text, at) {
        out.push_str(&text[at..range.start]);
        let mut next = range.end;
        match token {
            Token::Tool(name) if offers(name) => {
                out.push('`');
                out.push_str(name);
                out.push('`');
            }
            Token::Tool(name) => {
                out.push_str(&text[range.clone()]);
                if !unresolved.tools.iter().any(|t| t == name) {
                    unresolved.tools.push(name.to_owned());
                }
            }
            Token::Component(name) => match components.get(name) {
                Some(expansion) => {
                    let expansion = expansion.trim_matches(['\n', '\r']);
                    let multi_line = expansion.contains('\n');
                    // Set off on its own lines, without the spaces that surrounded the token.
                    if multi_line {
                        out.truncate(out.trim_end_matches([' ', '\t']).len());
                        if !out.is_empty() && !out.ends_with('\n') {
                            out.push('\n');
                        }
                    }
                    out.push_str(expansion);
                    if multi_line {
                        let rest = text[range.end..].trim_start_matches([' ', '\t']);
                        next = text.len() - rest.len();
                        if !rest.is_empty() && !rest.starts_with('\n') {
                            out.push('\n');
                        }
                    }
                }
                None => {
                    out.push_str(&text[range.clone()]);
                    if !unresolved.components.iter().any(|c| c == name) {
                        unresolved.components.push(name.to_owned());
                    }
                }
            },
        }
        at = next;
    }
    out.push_str(&text[at..]);
    Some((out, unresolved))
}
