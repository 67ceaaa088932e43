//! The one canonical form of a URL, shared by call budgets, the source registry and evals.
//!
//! Two spellings of the same web page must count as one source and one budgeted call. Every place
//! in promptstack that compares URLs goes through [`canonicalize_url`] (or [`url_key`], its
//! infallible form), so there is exactly one notion of "the same URL".
//!
//! # What is normalised
//!
//! Parsing follows the WHATWG URL standard (what browsers do), which already gives:
//! - scheme and host lowercased; internationalised host names converted to their ASCII
//!   (punycode) form through UTS #46; IPv4 and IPv6 literals written in their canonical form;
//! - default ports removed (`:80` for `http`, `:443` for `https`);
//! - an empty path written as `/`; `.` and `..` segments resolved (also when percent-encoded);
//! - characters that must be escaped, escaped; surrounding whitespace, tabs and newlines removed.
//!
//! On top of that, this function:
//! - drops the **fragment**: it never reaches the server, so `#intro` and `#usage` are one page;
//! - drops trailing dots of the host (`example.com.` is `example.com`);
//! - decodes percent-escapes of unreserved characters (`%7E` is `~`, `%41` is `A`) and writes the
//!   remaining escapes with uppercase hex digits (RFC 3986 §6.2.2), in the path and the query;
//! - drops **trailing slashes** of a non-root path (`/docs/` is `/docs`): servers nearly always
//!   redirect one spelling to the other, and numbering one page twice is worse for citations than
//!   the rare site that serves different pages under both spellings;
//! - drops **tracking parameters** from the query, compared ASCII case-insensitively: every
//!   `utm_*` parameter and `gclid`, `gclsrc`, `dclid`, `gbraid`, `wbraid`, `fbclid`, `msclkid`,
//!   `mc_cid`, `mc_eid`, `igshid`, `yclid`, `twclid`, `ttclid`, `_ga`, `_gl`, `_hsenc`,
//!   `_hsmktg`, `mkt_tok`. These identify the click, never the content; search engines and
//!   newsletters hand out the same article with different values of them. Empty parameters
//!   (`a=1&&b=2`) and an empty query (`?`) are dropped too.
//!
//! # What is kept on purpose
//!
//! - The **order** of the remaining query parameters and their case: some servers depend on both.
//! - `http` versus `https`, and `www.` versus the bare domain: they are different origins, and
//!   conflating them would merge pages that a server is free to serve differently.
//! - The path's case, user name and password, and non-default ports.
//!
//! # What is refused
//!
//! Only absolute `http` and `https` URLs have a canonical form. Anything else (a relative
//! reference, another scheme, text that does not parse, a host that is not a valid IDN) is an
//! [`InvalidUrl`]; [`url_key`] then falls back to the trimmed input, so such values still have an
//! identity (exact text) but are never merged with anything else.
//!
//! The function is idempotent: canonicalising a canonical URL returns it unchanged.

use std::fmt;

use url::{Host, Url};

/// An absolute `http`/`https` URL in canonical form (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CanonicalUrl(String);

impl CanonicalUrl {
    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The canonical text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for CanonicalUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for CanonicalUrl {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Why a text has no canonical URL form.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidUrlKind {
    /// The text is not an absolute URL (relative reference, bad host, bad port, bad IDN…).
    Unparsable,
    /// The URL parses but its scheme is not `http` or `https`.
    UnsupportedScheme,
}

/// A text that has no canonical URL form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidUrl {
    kind: InvalidUrlKind,
    detail: String,
}

impl InvalidUrl {
    /// What kind of problem it is.
    pub fn kind(&self) -> &InvalidUrlKind {
        &self.kind
    }
}

impl fmt::Display for InvalidUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            InvalidUrlKind::Unparsable => write!(f, "not an absolute url: {}", self.detail),
            InvalidUrlKind::UnsupportedScheme => {
                write!(
                    f,
                    "unsupported url scheme `{}`: only http and https",
                    self.detail
                )
            }
        }
    }
}

impl std::error::Error for InvalidUrl {}

/// Query parameters that identify a click, never the content; dropped from canonical URLs.
const TRACKING_PARAMETERS: &[&str] = &[
    "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "fbclid", "msclkid", "mc_cid", "mc_eid",
    "igshid", "yclid", "twclid", "ttclid", "_ga", "_gl", "_hsenc", "_hsmktg", "mkt_tok",
];

/// Whether a query parameter name is a tracking parameter (see the [module docs](self)).
pub fn is_tracking_parameter(name: &str) -> bool {
    let bytes = name.as_bytes();
    (bytes.len() >= 4 && bytes[..4].eq_ignore_ascii_case(b"utm_"))
        || TRACKING_PARAMETERS
            .iter()
            .any(|t| t.eq_ignore_ascii_case(name))
}

/// Returns the canonical form of an absolute `http`/`https` URL.
///
/// See the [module docs](self) for exactly what is normalised, kept and refused.
///
/// # Errors
///
/// [`InvalidUrl`] when the text is not an absolute URL, or its scheme is not `http`/`https`.
///
/// # Example
///
/// ```
/// use promptstack_core::canonical_url::canonicalize_url;
///
/// let url = canonicalize_url("HTTPS://Example.COM:443/docs/?utm_source=x&q=Rust#intro").unwrap();
/// assert_eq!(url.as_str(), "https://example.com/docs?q=Rust");
/// ```
pub fn canonicalize_url(input: &str) -> Result<CanonicalUrl, InvalidUrl> {
    let mut url = Url::parse(input).map_err(|e| InvalidUrl {
        kind: InvalidUrlKind::Unparsable,
        detail: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(InvalidUrl {
            kind: InvalidUrlKind::UnsupportedScheme,
            detail: url.scheme().to_owned(),
        });
    }
    url.set_fragment(None);

    if let Some(Host::Domain(domain)) = url.host()
        && domain.ends_with('.')
    {
        let trimmed = domain.trim_end_matches('.').to_owned();
        // A host made only of dots has nothing left to keep; it stays as parsed.
        if !trimmed.is_empty() {
            let _ = url.set_host(Some(&trimmed));
        }
    }

    let normalized = normalize_escapes(url.path());
    let trimmed = normalized.trim_end_matches('/');
    let path = if trimmed.is_empty() { "/" } else { trimmed };
    if path != url.path() {
        let path = path.to_owned();
        url.set_path(&path);
    }

    if let Some(query) = url.query() {
        let query = normalize_escapes(query).into_owned();
        let mut kept = String::with_capacity(query.len());
        for pair in query.split('&') {
            let name = pair.split_once('=').map_or(pair, |(name, _)| name);
            if pair.is_empty() || is_tracking_parameter(name) {
                continue;
            }
            if !kept.is_empty() {
                kept.push('&');
            }
            kept.push_str(pair);
        }
        if kept.is_empty() {
            url.set_query(None);
        } else if Some(kept.as_str()) != url.query() {
            url.set_query(Some(&kept));
        }
    }

    Ok(CanonicalUrl(url.into()))
}

/// The identity of a URL-like text: its canonical form, or the trimmed text when it has none.
///
/// This is what budgets and the source registry key on, so that a value which is not a valid
/// `http`/`https` URL still has a stable identity (its exact text) without ever being merged with a
/// different text.
pub fn url_key(input: &str) -> String {
    match canonicalize_url(input) {
        Ok(url) => url.into_string(),
        Err(_) => input.trim().to_owned(),
    }
}

/// Decodes escapes of unreserved characters and uppercases the hex digits of the others.
fn normalize_escapes(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('%') {
        return std::borrow::Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut plain_start = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(hi), Some(lo)) = (hex_value(bytes[i + 1]), hex_value(bytes[i + 2]))
        {
            out.push_str(&text[plain_start..i]);
            let byte = hi * 16 + lo;
            if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                out.push(char::from(byte));
            } else {
                out.push('%');
                out.push(char::from(HEX_UPPER[usize::from(hi)]));
                out.push(char::from(HEX_UPPER[usize::from(lo)]));
            }
            i += 3;
            plain_start = i;
        } else {
            i += 1;
        }
    }
    out.push_str(&text[plain_start..]);
    std::borrow::Cow::Owned(out)
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_normalised() {
        assert_eq!(normalize_escapes("/a%7e%2fb%2F"), "/a~%2Fb%2F");
        assert_eq!(normalize_escapes("%4"), "%4");
        assert_eq!(normalize_escapes("x%"), "x%");
        assert_eq!(normalize_escapes("%41%42"), "AB");
    }
}
