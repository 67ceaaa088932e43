//! Site patterns: which web pages a skill or a site instruction applies to.
//!
//! A pattern is `[scheme://]host[:port][/path]`:
//!
//! - **host**: an exact host (`docs.example.com`, `127.0.0.1`, `[::1]`), or `*.` followed by a
//!   domain (`*.example.com`), which matches that domain **and** every subdomain of it, at any
//!   depth; or `*` alone, which matches every host. A `*` anywhere else is an error.
//!   Internationalised names are compared in their ASCII (punycode) form, so `*.bücher.example`
//!   and `*.xn--bcher-kva.example` are the same pattern; hosts are case-insensitive and a
//!   trailing dot is ignored.
//! - **scheme** (optional): `http`, `https` or `*`; absent means either.
//! - **port** (optional): without one, any port matches; with one, only that port, where a URL
//!   without an explicit port has its scheme's default (`example.com:443` matches
//!   `https://example.com/`).
//! - **path** (optional): a prefix on segment boundaries (`/docs` matches `/docs` and
//!   `/docs/api`, not `/docsearch`); a trailing `*` or `/` is allowed and means the same.
//!
//! Only absolute `http` and `https` URLs with a host can match; anything else (`about:blank`, a
//! `file:` URL, text that does not parse) matches nothing. Parsing never panics: a malformed
//! pattern is a [`SitePatternError`] naming what is wrong, a malformed URL is a [`url::ParseError`].

use std::fmt;

use url::{Host, Url};

/// A parsed site pattern (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePattern {
    scheme: Option<String>,
    host: HostPattern,
    port: Option<u16>,
    path: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Any,
    Exact(String),
    /// The domain and its subdomains.
    Domain(String),
}

/// Why a site pattern is malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SitePatternError {
    pattern: String,
    reason: String,
}

impl fmt::Display for SitePatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not a site pattern: {}",
            self.pattern, self.reason
        )
    }
}

impl std::error::Error for SitePatternError {}

/// The longest pattern accepted, in bytes.
const MAX_PATTERN_BYTES: usize = 2048;

impl SitePattern {
    /// Parses a pattern.
    ///
    /// # Errors
    ///
    /// A [`SitePatternError`] for an empty pattern, whitespace inside it, an unknown scheme, a
    /// misplaced `*`, a host that is not a valid (internationalised) domain or IP address, or a
    /// port that is not a number from 0 to 65535.
    pub fn parse(pattern: &str) -> Result<Self, SitePatternError> {
        let fail = |reason: &str| SitePatternError {
            pattern: pattern.chars().take(200).collect(),
            reason: reason.to_owned(),
        };
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(fail("it is longer than 2048 bytes"));
        }
        if pattern.is_empty() {
            return Err(fail("it is empty"));
        }
        if pattern.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(fail("it contains whitespace or a control character"));
        }
        let (scheme, rest) = match pattern.split_once("://") {
            Some((scheme, rest)) => {
                let scheme = scheme.to_ascii_lowercase();
                match scheme.as_str() {
                    "*" => (None, rest),
                    "http" | "https" => (Some(scheme), rest),
                    _ => return Err(fail("the scheme must be http, https or *")),
                }
            }
            None => (None, pattern),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let path = path.map(|p| p.trim_end_matches('*').trim_end_matches('/'));
        if let Some(p) = path
            && p.contains('*')
        {
            return Err(fail("`*` may end the path but not appear inside it"));
        }
        let path = path.filter(|p| !p.is_empty()).map(str::to_owned);
        let (host, port) = split_port(authority).map_err(|r| fail(&r))?;
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(domain) = host.strip_prefix("*.") {
            if domain.contains('*') {
                return Err(fail(
                    "`*` may only stand for the whole first label, as in `*.example.com`",
                ));
            }
            match parse_host(domain).map_err(|r| fail(&r))? {
                Host::Domain(d) => HostPattern::Domain(d),
                _ => {
                    return Err(fail(
                        "a wildcard needs a domain name after `*.`, not an IP address",
                    ));
                }
            }
        } else if host.contains('*') {
            return Err(fail(
                "`*` may only stand for the whole first label, as in `*.example.com`",
            ));
        } else {
            HostPattern::Exact(match parse_host(host).map_err(|r| fail(&r))? {
                Host::Domain(d) => d,
                Host::Ipv4(ip) => ip.to_string(),
                Host::Ipv6(ip) => format!("[{ip}]"),
            })
        };
        Ok(Self {
            scheme,
            host,
            port,
            path,
        })
    }

    /// Whether the URL is on a site this pattern names.
    pub fn matches(&self, url: &Url) -> bool {
        if !matches!(url.scheme(), "http" | "https") {
            return false;
        }
        if let Some(scheme) = &self.scheme
            && scheme != url.scheme()
        {
            return false;
        }
        let Some(host) = url.host() else {
            return false;
        };
        let host = match host {
            Host::Domain(d) => d.trim_end_matches('.').to_owned(),
            Host::Ipv4(ip) => ip.to_string(),
            Host::Ipv6(ip) => format!("[{ip}]"),
        };
        let host_ok = match &self.host {
            HostPattern::Any => true,
            HostPattern::Exact(h) => *h == host,
            HostPattern::Domain(d) => {
                host == *d
                    || (host.len() > d.len()
                        && host.ends_with(d.as_str())
                        && host.as_bytes()[host.len() - d.len() - 1] == b'.')
            }
        };
        if !host_ok {
            return false;
        }
        if let Some(port) = self.port
            && url.port_or_known_default() != Some(port)
        {
            return false;
        }
        match &self.path {
            None => true,
            Some(prefix) => {
                let path = url.path();
                path == prefix
                    || (path.starts_with(prefix.as_str())
                        && path.as_bytes().get(prefix.len()) == Some(&b'/'))
            }
        }
    }
}

/// Parses a URL the way [`SitePattern::matches`] expects it.
///
/// # Errors
///
/// The parser's error for text that is not an absolute URL.
pub fn parse_url(text: &str) -> Result<Url, url::ParseError> {
    Url::parse(text)
}

/// Whether any of the patterns matches any of the URLs; malformed patterns and URLs match nothing.
pub fn any_match<'a>(
    patterns: impl IntoIterator<Item = &'a str>,
    urls: impl IntoIterator<Item = &'a str> + Clone,
) -> bool {
    let urls: Vec<Url> = urls.into_iter().filter_map(|u| parse_url(u).ok()).collect();
    patterns
        .into_iter()
        .filter_map(|p| SitePattern::parse(p).ok())
        .any(|p| urls.iter().any(|u| p.matches(u)))
}

fn split_port(authority: &str) -> Result<(&str, Option<u16>), String> {
    if authority.contains('@') {
        return Err("user names and passwords are not part of a site".into());
    }
    // An IPv6 literal carries colons inside its brackets.
    let split_at = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => authority[end..].find(':').map(|i| end + i),
            None => return Err("an IPv6 address is missing its closing `]`".into()),
        }
    } else {
        authority.rfind(':')
    };
    match split_at {
        Some(i) => {
            let port = &authority[i + 1..];
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("the port `{port}` is not a number"));
            }
            let port: u16 = port
                .parse()
                .map_err(|_| format!("the port `{port}` is larger than 65535"))?;
            Ok((&authority[..i], Some(port)))
        }
        None => Ok((authority, None)),
    }
}

fn parse_host(host: &str) -> Result<Host, String> {
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.is_empty() {
        return Err("the host is empty".into());
    }
    let parsed = Host::parse(host).map_err(|e| format!("the host `{host}` is invalid ({e})"))?;
    if let Host::Domain(d) = &parsed {
        if d.is_empty() || d.split('.').any(str::is_empty) {
            return Err(format!("the host `{host}` has an empty label"));
        }
        return Ok(Host::Domain(d.to_ascii_lowercase()));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, url: &str) -> bool {
        SitePattern::parse(pattern)
            .unwrap()
            .matches(&Url::parse(url).unwrap())
    }

    #[test]
    fn wildcard_matches_domain_and_subdomains() {
        assert!(m("*.example.com", "https://example.com/"));
        assert!(m("*.example.com", "https://a.b.example.com/x"));
        assert!(!m("*.example.com", "https://badexample.com/"));
        assert!(!m("example.com", "https://www.example.com/"));
    }
}
