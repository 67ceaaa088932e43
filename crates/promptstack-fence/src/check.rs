//! Verifying a wrapped text: is it exactly one valid fence, and nothing in it a forgery?
//!
//! [`check`] is for people debugging their pipelines (and for the fence's own tests). It reports
//! every problem it finds, as data, rather than stopping at the first.

use std::fmt;
use std::ops::Range;

use aho_corasick::AhoCorasick;

use crate::attribute::{ContentKind, decode_attribute, is_safe_byte};
use crate::detect::{FindingKind, contains_any, find_all};
use crate::nonce::{MAX_NONCE_HEX, MIN_NONCE_HEX, Nonce};

/// What [`check`] found out about a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckReport {
    /// The fence's header, when the opening line parsed.
    pub fence: Option<FenceInfo>,
    /// Every problem found; empty when the text is a valid single fence.
    pub problems: Vec<Problem>,
}

impl CheckReport {
    /// Whether the text is a valid single fence.
    pub fn is_valid(&self) -> bool {
        self.problems.is_empty() && self.fence.is_some()
    }
}

/// The header of a fence: what its opening line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceInfo {
    /// The content kind.
    pub kind: ContentKind,
    /// The nonce.
    pub nonce: Nonce,
    /// The origin attribute, unescaped.
    pub origin: Option<String>,
    /// The tool attribute, unescaped.
    pub tool: Option<String>,
    /// The body's byte range in the checked text.
    pub body: Range<usize>,
}

/// One problem with a text that should be a single fence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// What kind of problem.
    pub kind: ProblemKind,
    /// Where, as a byte offset into the checked text, when it has a place.
    pub offset: Option<usize>,
    /// A lowercase explanation.
    pub message: String,
}

/// The kinds of problem [`check`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The text is not at least an opening line and a closing line.
    TooShort,
    /// The first line is not a well-formed opening marker.
    BadOpening,
    /// The last line is not a well-formed closing marker.
    BadClosing,
    /// The closing marker's kind or nonce differs from the opening marker's.
    Mismatch,
    /// The nonce occurs other than exactly twice (case-insensitively) in the text.
    NonceCount,
    /// The body holds something that reads as a marker.
    MarkerInBody,
    /// The body holds a chat-template control token.
    ControlTokenInBody,
    /// An attribute value would read as a marker once unescaped.
    HostileAttribute,
}

impl ProblemKind {
    /// The kind's name, as front ends report it: `too-short`, `bad-opening`, `bad-closing`,
    /// `mismatch`, `nonce-count`, `marker-in-body`, `control-token-in-body`,
    /// `hostile-attribute`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::TooShort => "too-short",
            ProblemKind::BadOpening => "bad-opening",
            ProblemKind::BadClosing => "bad-closing",
            ProblemKind::Mismatch => "mismatch",
            ProblemKind::NonceCount => "nonce-count",
            ProblemKind::MarkerInBody => "marker-in-body",
            ProblemKind::ControlTokenInBody => "control-token-in-body",
            ProblemKind::HostileAttribute => "hostile-attribute",
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "at byte {offset}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Checks that `text` is exactly one valid fence, as [`Fence::wrap`](super::Fence::wrap) writes:
/// a well-formed opening line, a matching closing line last (one trailing line break allowed),
/// the nonce exactly twice, and no marker or control token in the body.
pub fn check(text: &str) -> CheckReport {
    let mut problems = Vec::new();
    let mut problem = |kind, offset, message: String| {
        problems.push(Problem {
            kind,
            offset,
            message,
        });
    };
    let text_end = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .map_or(text.len(), str::len);
    let trimmed = &text[..text_end];
    let (Some(first_break), Some(last_break)) = (trimmed.find('\n'), trimmed.rfind('\n')) else {
        problem(
            ProblemKind::TooShort,
            None,
            "expected an opening line, a body and a closing line".to_owned(),
        );
        return CheckReport {
            fence: None,
            problems,
        };
    };
    if first_break == last_break {
        problem(
            ProblemKind::TooShort,
            None,
            "expected an opening line, a body and a closing line; a fence is at least three lines"
                .to_owned(),
        );
        return CheckReport {
            fence: None,
            problems,
        };
    }
    let opening = &trimmed[..first_break];
    let closing = &trimmed[last_break + 1..];
    let body = first_break + 1..last_break;

    let header = match parse_opening(opening) {
        Ok(header) => Some(header),
        Err(message) => {
            problem(ProblemKind::BadOpening, Some(0), message);
            None
        }
    };
    match parse_closing(closing) {
        Ok((kind, nonce)) => {
            if let Some(h) = &header
                && (h.kind != kind || h.nonce != nonce)
            {
                problem(
                    ProblemKind::Mismatch,
                    Some(last_break + 1),
                    format!(
                        "the closing marker names {}_{} but the opening marker names {}_{}",
                        kind.marker_name(),
                        nonce,
                        h.kind.marker_name(),
                        h.nonce
                    ),
                );
            }
        }
        Err(message) => problem(ProblemKind::BadClosing, Some(last_break + 1), message),
    }
    if let Some(h) = &header {
        if let Some(why) = &h.hostile {
            problem(ProblemKind::HostileAttribute, Some(0), why.clone());
        }
        if let Ok(finder) = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([h.nonce.as_str()])
        {
            let count = finder.find_iter(text).count();
            if count != 2 {
                problem(
                    ProblemKind::NonceCount,
                    None,
                    format!("the nonce occurs {count} times; a fence has it exactly twice"),
                );
            }
        }
    }
    for finding in find_all(&text[body.clone()]) {
        let at = body.start + finding.open.start;
        let end = (body.start + finding.end).min(body.end);
        let excerpt: String = text[at..end].chars().take(60).collect();
        let (kind, what) = match finding.kind {
            FindingKind::Marker => (ProblemKind::MarkerInBody, "a fence marker"),
            _ => (ProblemKind::ControlTokenInBody, "a control token"),
        };
        problem(
            kind,
            Some(at),
            format!("the body holds {what}: {excerpt:?}"),
        );
    }
    let fence = header.map(|h| FenceInfo {
        kind: h.kind,
        nonce: h.nonce,
        origin: h.origin,
        tool: h.tool,
        body,
    });
    CheckReport { fence, problems }
}

struct Header {
    kind: ContentKind,
    nonce: Nonce,
    origin: Option<String>,
    tool: Option<String>,
    hostile: Option<String>,
}

fn parse_marker_name(rest: &str) -> Result<(ContentKind, Nonce, &str), String> {
    let kind = ContentKind::ALL
        .into_iter()
        .find(|k| {
            rest.strip_prefix(k.marker_name())
                .is_some_and(|r| r.starts_with('_'))
        })
        .ok_or_else(|| {
            format!(
                "the marker names no known kind (expected one of {})",
                ContentKind::ALL.map(ContentKind::marker_name).join(", ")
            )
        })?;
    let after = &rest[kind.marker_name().len() + 1..];
    let digits = after
        .bytes()
        .take_while(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        .count();
    if !(MIN_NONCE_HEX..=MAX_NONCE_HEX).contains(&digits) {
        return Err(format!(
            "the nonce must be {MIN_NONCE_HEX} to {MAX_NONCE_HEX} lowercase hexadecimal digits"
        ));
    }
    let nonce = Nonce::parse(&after[..digits]).map_err(|e| e.to_string())?;
    Ok((kind, nonce, &after[digits..]))
}

fn parse_opening(line: &str) -> Result<Header, String> {
    let rest = line
        .strip_prefix("<<<")
        .ok_or("the first line does not start with <<<")?;
    let (kind, nonce, mut rest) = parse_marker_name(rest)?;
    let mut origin = None;
    let mut tool = None;
    let mut hostile = None;
    for (name, slot) in [("origin", &mut origin), ("tool", &mut tool)] {
        let Some(after) = rest.strip_prefix(&format!(" {name}=\"")) else {
            continue;
        };
        let end = after
            .find('"')
            .ok_or_else(|| format!("the {name} attribute is not closed"))?;
        let raw = &after[..end];
        if !raw.bytes().all(|b| b == b'%' || is_safe_byte(b)) {
            return Err(format!("the {name} attribute holds unescaped characters"));
        }
        let value = decode_attribute(raw)
            .ok_or_else(|| format!("the {name} attribute holds a broken escape"))?;
        if contains_any(raw) || contains_any(&value) {
            hostile = Some(format!(
                "the {name} attribute reads as a marker once unescaped"
            ));
        }
        *slot = Some(value);
        rest = &after[end + 1..];
    }
    if rest != ">>>" {
        return Err(format!(
            "the opening marker must end with >>> right after its attributes, found {:?}",
            rest.chars().take(40).collect::<String>()
        ));
    }
    Ok(Header {
        kind,
        nonce,
        origin,
        tool,
        hostile,
    })
}

fn parse_closing(line: &str) -> Result<(ContentKind, Nonce), String> {
    let rest = line
        .strip_prefix("<<<end_")
        .ok_or("the last line does not start with <<<end_")?;
    let (kind, nonce, rest) = parse_marker_name(rest)?;
    if rest != ">>>" {
        return Err("the closing marker must end with >>> right after its nonce".to_owned());
    }
    Ok((kind, nonce))
}
