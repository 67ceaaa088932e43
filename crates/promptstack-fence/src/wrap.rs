//! The one wrapping point: [`Fence::wrap`] turns untrusted content into a fenced block.

use std::fmt;
use std::sync::Arc;

use aho_corasick::AhoCorasick;

use crate::attribute::{ContentKind, Provenance};
use crate::detect::defang_counted;
use crate::nonce::{Nonce, NonceSource};
use crate::truncate::{Fit, Truncation, truncate};
use crate::{FenceError, FenceErrorKind};

/// How many nonces [`Fence::wrap`] draws before giving up on content that holds each of them.
/// With 64-bit random nonces a second draw is already astronomically unlikely to be needed.
pub const MAX_DRAWS: usize = 8;

/// Wraps untrusted content in nonce-delimited markers. Cheap to clone and shareable across
/// threads; one per application (or per limit) is enough.
#[derive(Clone)]
pub struct Fence {
    nonces: Arc<dyn NonceSource>,
    limit: Option<Arc<dyn Fit>>,
}

impl fmt::Debug for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fence")
            .field("limited", &self.limit.is_some())
            .finish_non_exhaustive()
    }
}

/// Fenced content, ready to be placed in a prompt or a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Wrapped {
    /// The opening line, the body and the closing line, joined by `\n`; ends with the closing
    /// marker (no trailing newline).
    pub text: String,
    /// The nonce in both marker lines. Store it with the content to re-render the same bytes
    /// later with [`Fence::rewrap`].
    pub nonce: Nonce,
    /// The kind of content.
    pub kind: ContentKind,
    /// How many markers and control tokens were defanged.
    pub defanged: usize,
    /// Set when the content was cut to fit the limit.
    pub truncated: Option<Truncation>,
}

impl Fence {
    /// A fence drawing its nonces from `nonces`, with no size limit.
    pub fn new(nonces: impl NonceSource + 'static) -> Self {
        Fence {
            nonces: Arc::new(nonces),
            limit: None,
        }
    }

    /// The same fence, cutting content so that the body fits `limit` (never mid-character, with a
    /// visible note inside the fence). Use [`MaxBytes`](crate::MaxBytes) for bytes,
    /// or a closure `|body: &str| count_tokens(body) <= n` for tokens.
    pub fn with_limit(mut self, limit: impl Fit + 'static) -> Self {
        self.limit = Some(Arc::new(limit));
        self
    }

    /// The same fence without a size limit.
    pub fn without_limit(mut self) -> Self {
        self.limit = None;
        self
    }

    /// Wraps untrusted `content` from `provenance` with a fresh nonce.
    ///
    /// Defangs the content, truncates it to the limit, draws a nonce (again, up to
    /// [`MAX_DRAWS`] times, while the body or an attribute contains it in any letter case) and
    /// writes
    ///
    /// ```text
    /// <<<{kind}_{nonce} origin="…" tool="…">>>
    /// {body}
    /// <<<end_{kind}_{nonce}>>>
    /// ```
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::NonceUnavailable`] when the source fails, and
    /// [`FenceErrorKind::NonceCollision`] when every nonce drawn occurs in the content.
    pub fn wrap(&self, content: &str, provenance: &Provenance) -> Result<Wrapped, FenceError> {
        let prepared = self.prepare(content);
        for _ in 0..MAX_DRAWS {
            let nonce = self.nonces.draw()?;
            if !prepared.collides(&nonce, provenance) {
                return Ok(prepared.finish(nonce, provenance));
            }
        }
        Err(FenceError::new(
            FenceErrorKind::NonceCollision,
            format!("each of {MAX_DRAWS} nonces drawn occurs in the content"),
        ))
    }

    /// Wraps `content` again with the `nonce` stored when it first entered, to re-render a
    /// transcript byte for byte (so provider caches stay warm). Same content, provenance, limit
    /// and nonce give the same bytes.
    ///
    /// # Errors
    ///
    /// [`FenceErrorKind::NonceCollision`] when the nonce occurs in the body or the attributes
    /// (never the case for the content it was first drawn for, with the same limit).
    pub fn rewrap(
        &self,
        content: &str,
        provenance: &Provenance,
        nonce: &Nonce,
    ) -> Result<Wrapped, FenceError> {
        let prepared = self.prepare(content);
        if prepared.collides(nonce, provenance) {
            return Err(FenceError::new(
                FenceErrorKind::NonceCollision,
                "the stored nonce occurs in the content",
            ));
        }
        Ok(prepared.finish(nonce.clone(), provenance))
    }

    fn prepare(&self, content: &str) -> Prepared {
        let (defanged, count) = defang_counted(content);
        let (body, truncated) = match &self.limit {
            Some(limit) => {
                let (body, truncated) = truncate(&defanged, limit.as_ref());
                (body.into_owned(), truncated)
            }
            None => (defanged.into_owned(), None),
        };
        Prepared {
            body,
            defanged: count,
            truncated,
        }
    }
}

struct Prepared {
    body: String,
    defanged: usize,
    truncated: Option<Truncation>,
}

impl Prepared {
    fn collides(&self, nonce: &Nonce, provenance: &Provenance) -> bool {
        // Hex digits have case; a reader may take `9F2A…` for `9f2a…`, so compare without it.
        let Ok(finder) = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([nonce.as_str()])
        else {
            return true;
        };
        finder.is_match(&self.body) || finder.is_match(&provenance.attributes())
    }

    fn finish(self, nonce: Nonce, provenance: &Provenance) -> Wrapped {
        let kind = provenance.kind();
        let name = kind.marker_name();
        let attributes = provenance.attributes();
        let mut text = String::with_capacity(self.body.len() + 2 * name.len() + 96);
        text.push_str("<<<");
        text.push_str(name);
        text.push('_');
        text.push_str(nonce.as_str());
        text.push_str(&attributes);
        text.push_str(">>>\n");
        text.push_str(&self.body);
        text.push_str("\n<<<end_");
        text.push_str(name);
        text.push('_');
        text.push_str(nonce.as_str());
        text.push_str(">>>");
        Wrapped {
            text,
            nonce,
            kind,
            defanged: self.defanged,
            truncated: self.truncated,
        }
    }
}
