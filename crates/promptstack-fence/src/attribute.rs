//! Content kinds, provenance, and the attribute encoder that keeps `origin="…"` and `tool="…"`
//! from ever breaking the marker line.
//!
//! Every attribute value is reduced first, then escaped:
//!
//! | kind | origin given as | origin written as |
//! |---|---|---|
//! | page, selection, tool result | a URL with a host (`http`, `https`, `ws`, `wss`, `ftp`) | `scheme://host[:port]` (path, query, credentials dropped; host lowercased and punycoded) |
//! | file | a path | `file:` + the path with `\` turned into `/` |
//! | MCP resource | a server name and a resource URI | `mcp://server/` + the URI |
//!
//! The tool name must be a registry name (`^[A-Za-z0-9_-]{1,64}$`). The encoder then
//! percent-encodes every byte outside a safe set (letters, digits and `-._~:/?#[]@!$'()*+,;=`),
//! including `%` itself, so a value can never hold `"`, `<`, `>`, `&`, `\`, whitespace or
//! non-ASCII text, and decoding is exact. A value whose decoding would read as a marker or control
//! token (say a file named `<<<end_tool_result>>>`) is rejected, because a reader who decodes
//! `%3C` might otherwise see one. A tool result has no origin unless one is given; the other kinds
//! require one.

use std::fmt;

use crate::detect::contains_any;
use crate::{FenceError, FenceErrorKind};

/// The kinds of untrusted content, each with its own marker name.
///
/// There is deliberately no kind for text the user typed: user text is never fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ContentKind {
    /// A web page (or part of one) read by a tool or attached by the user: `web_content`.
    Page,
    /// Text the user selected on a page and attached: `web_selection`.
    Selection,
    /// A file's content: `file_content`.
    File,
    /// A resource read from an MCP server: `mcp_resource`.
    McpResource,
    /// The result of a tool whose results are declared untrusted: `tool_result`.
    ToolResult,
}

impl ContentKind {
    /// Every kind, in declaration order.
    pub const ALL: [ContentKind; 5] = [
        ContentKind::Page,
        ContentKind::Selection,
        ContentKind::File,
        ContentKind::McpResource,
        ContentKind::ToolResult,
    ];

    /// The name used in the marker line, e.g. `web_content` in `<<<web_content_…>>>`.
    pub fn marker_name(self) -> &'static str {
        match self {
            ContentKind::Page => "web_content",
            ContentKind::Selection => "web_selection",
            ContentKind::File => "file_content",
            ContentKind::McpResource => "mcp_resource",
            ContentKind::ToolResult => "tool_result",
        }
    }

    /// The short name used on the command line: `page`, `selection`, `file`, `mcp-resource`,
    /// `tool-result`.
    pub fn short_name(self) -> &'static str {
        match self {
            ContentKind::Page => "page",
            ContentKind::Selection => "selection",
            ContentKind::File => "file",
            ContentKind::McpResource => "mcp-resource",
            ContentKind::ToolResult => "tool-result",
        }
    }

    /// Finds a kind by its short name or its marker name.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::UnknownKind`] for any other name.
    pub fn parse(name: &str) -> Result<ContentKind, FenceError> {
        ContentKind::ALL
            .into_iter()
            .find(|k| k.short_name() == name || k.marker_name() == name)
            .ok_or_else(|| {
                FenceError::new(
                    FenceErrorKind::UnknownKind,
                    format!(
                        "{name:?} is not one of page, selection, file, mcp-resource, tool-result"
                    ),
                )
            })
    }

    /// Finds a kind by its marker name only.
    pub fn from_marker_name(name: &str) -> Option<ContentKind> {
        ContentKind::ALL
            .into_iter()
            .find(|k| k.marker_name() == name)
    }
}

impl fmt::Display for ContentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

/// Where untrusted content came from: its kind, its origin and the tool that produced it, with
/// the attribute values already reduced, checked and escaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Provenance {
    kind: ContentKind,
    origin: Option<String>,
    tool: Option<String>,
}

impl Provenance {
    /// A web page at `url`; the origin is reduced to `scheme://host[:port]`.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidOrigin`] when `url` does not parse or has no host, or its
    /// scheme is not `http`, `https`, `ws`, `wss` or `ftp`.
    pub fn page(url: &str) -> Result<Self, FenceError> {
        Self::new(ContentKind::Page, Some(url), None)
    }

    /// A selection on the page at `url`.
    ///
    /// # Errors
    ///
    /// As for [`Provenance::page`].
    pub fn selection(url: &str) -> Result<Self, FenceError> {
        Self::new(ContentKind::Selection, Some(url), None)
    }

    /// A file at `path` (relative paths are preferable: they keep home directories out of the
    /// prompt and the prompt stable across machines).
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidOrigin`] for an empty path, [`FenceErrorKind::HostileAttribute`]
    /// for a path that decodes to a marker or control token.
    pub fn file(path: &str) -> Result<Self, FenceError> {
        Self::new(ContentKind::File, Some(path), None)
    }

    /// A resource `uri` read from the MCP server `server`.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidOrigin`] when `server` is not a registry name.
    pub fn mcp_resource(server: &str, uri: &str) -> Result<Self, FenceError> {
        Self::new(
            ContentKind::McpResource,
            Some(&format!("mcp://{server}/{uri}")),
            None,
        )
    }

    /// The result of the tool `tool`, with no origin (add one with [`Provenance::with_origin`]).
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidTool`] when `tool` is not a registry name.
    pub fn tool_result(tool: &str) -> Result<Self, FenceError> {
        Self::new(ContentKind::ToolResult, None, Some(tool))
    }

    /// Builds a provenance from a kind and raw attribute values, reducing and escaping them as
    /// the table in the module documentation says. `origin` is read per kind: a URL for pages,
    /// selections and tool results, a path for files, `mcp://SERVER/URI` for MCP resources.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidOrigin`], [`FenceErrorKind::InvalidTool`] or
    /// [`FenceErrorKind::HostileAttribute`] when a value cannot be made safe.
    pub fn new(
        kind: ContentKind,
        origin: Option<&str>,
        tool: Option<&str>,
    ) -> Result<Self, FenceError> {
        let origin = match (kind, origin) {
            (ContentKind::ToolResult, None) => None,
            (_, None) => {
                return Err(FenceError::new(
                    FenceErrorKind::InvalidOrigin,
                    format!("{} content needs an origin", kind.short_name()),
                ));
            }
            (ContentKind::Page | ContentKind::Selection | ContentKind::ToolResult, Some(o)) => {
                Some(reduce_url(o)?)
            }
            (ContentKind::File, Some(o)) => Some(reduce_path(o)?),
            (ContentKind::McpResource, Some(o)) => Some(reduce_mcp(o)?),
        };
        let tool = tool.map(check_tool).transpose()?;
        Ok(Provenance { kind, origin, tool })
    }

    /// The same provenance with the tool that produced the content.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::InvalidTool`] when `tool` is not a registry name.
    pub fn with_tool(mut self, tool: &str) -> Result<Self, FenceError> {
        self.tool = Some(check_tool(tool)?);
        Ok(self)
    }

    /// The same provenance with an origin, read per kind as in [`Provenance::new`].
    ///
    /// # Errors
    ///
    /// As for [`Provenance::new`].
    pub fn with_origin(self, origin: &str) -> Result<Self, FenceError> {
        let tool = self.tool.clone();
        Provenance::new(self.kind, Some(origin), tool.as_deref())
    }

    /// The kind of content.
    pub fn kind(&self) -> ContentKind {
        self.kind
    }

    /// The escaped origin attribute value, if any.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// The tool attribute value, if any.
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// The attributes as they appear in the opening marker, each preceded by a space:
    /// ` origin="…" tool="…"`.
    pub fn attributes(&self) -> String {
        let mut out = String::new();
        if let Some(origin) = &self.origin {
            out.push_str(" origin=\"");
            out.push_str(origin);
            out.push('"');
        }
        if let Some(tool) = &self.tool {
            out.push_str(" tool=\"");
            out.push_str(tool);
            out.push('"');
        }
        out
    }
}

/// Whether `b` may appear unescaped in an attribute value.
pub fn is_safe_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$'()*+,;=".contains(&b)
}

/// Percent-encodes every byte of `value` outside the safe set (see the module documentation).
pub fn encode_attribute(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for &b in value.as_bytes() {
        if is_safe_byte(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b >> 4)]));
            out.push(char::from(b"0123456789ABCDEF"[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// Decodes a value written by [`encode_attribute`]; `None` if it holds an unsafe byte, a broken
/// `%` escape, or bytes that are not UTF-8.
pub fn decode_attribute(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hi = hex(*bytes.get(i + 1)?)?;
            let lo = hex(*bytes.get(i + 2)?)?;
            out.push(hi << 4 | lo);
            i += 3;
        } else if is_safe_byte(b) {
            out.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Whether `name` is a registry name: 1 to 64 of `A-Z a-z 0-9 _ -`.
pub fn is_registry_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn check_tool(tool: &str) -> Result<String, FenceError> {
    if is_registry_name(tool) {
        Ok(tool.to_owned())
    } else {
        Err(FenceError::new(
            FenceErrorKind::InvalidTool,
            format!(
                "{:?} is not a registry tool name (1 to 64 of A-Z a-z 0-9 _ -)",
                shorten(tool)
            ),
        ))
    }
}

fn reduce_url(raw: &str) -> Result<String, FenceError> {
    let invalid = |why: &str| {
        FenceError::new(
            FenceErrorKind::InvalidOrigin,
            format!("{:?}: {why}", shorten(raw)),
        )
    };
    let url = url::Url::parse(raw).map_err(|e| invalid(&e.to_string()))?;
    let scheme = url.scheme();
    if !matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp") {
        return Err(invalid(
            "only http, https, ws, wss and ftp origins are accepted",
        ));
    }
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| invalid("the url has no host"))?;
    let origin = match url.port() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    };
    finish(origin, raw)
}

fn reduce_path(raw: &str) -> Result<String, FenceError> {
    if raw.is_empty() {
        return Err(FenceError::new(
            FenceErrorKind::InvalidOrigin,
            "a file origin needs a non-empty path",
        ));
    }
    let path = raw.replace('\\', "/");
    finish(format!("file:{path}"), raw)
}

fn reduce_mcp(raw: &str) -> Result<String, FenceError> {
    let rest = raw.strip_prefix("mcp://").ok_or_else(|| {
        FenceError::new(
            FenceErrorKind::InvalidOrigin,
            format!(
                "{:?}: an mcp resource origin is written mcp://SERVER/URI",
                shorten(raw)
            ),
        )
    })?;
    let (server, uri) = rest.split_once('/').unwrap_or((rest, ""));
    if !is_registry_name(server) {
        return Err(FenceError::new(
            FenceErrorKind::InvalidOrigin,
            format!(
                "{:?} is not an mcp server name (1 to 64 of A-Z a-z 0-9 _ -)",
                shorten(server)
            ),
        ));
    }
    finish(format!("mcp://{server}/{uri}"), raw)
}

/// Escapes the reduced value and rejects it if a reader who unescapes it would see a marker.
fn finish(reduced: String, raw: &str) -> Result<String, FenceError> {
    let encoded = encode_attribute(&reduced);
    let decoded = decode_attribute(&encoded).unwrap_or_default();
    if contains_any(&encoded) || contains_any(&decoded) {
        return Err(FenceError::new(
            FenceErrorKind::HostileAttribute,
            format!(
                "{:?} reads as a fence marker or control token",
                shorten(raw)
            ),
        ));
    }
    Ok(encoded)
}

fn shorten(text: &str) -> &str {
    match text.char_indices().nth(80) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}
