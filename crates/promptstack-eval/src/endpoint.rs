//! The seam between a run and a model: one request body in, the raw streamed answer out.
//!
//! A run never speaks HTTP itself. It renders each request exactly as `render --format` prints
//! it (plus the sampling fields the suite sets, see the runner), hands the body to an
//! [`Endpoint`], and reads the bytes that come back with [`crate::wire::Stream`]. The same bytes
//! are what a recording keeps, so a live run, a recorded run and a replayed run read an answer
//! through one reader.
//!
//! Implementations: the HTTP connectors (retries, `Retry-After`, rate and concurrency limits,
//! timeouts) live with the application edges in the `promptstack` crate; recording and replaying
//! wrap any endpoint with [`crate::record::Recordings`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// One request to a model.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The repetition index of the scenario run the request belongs to (recordings key on it).
    pub repetition: u32,
    /// The request body, byte for byte what is sent.
    pub body: &'a serde_json::Value,
}

/// What a model sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status of the final attempt.
    pub status: u16,
    /// The answer's body, byte for byte as streamed (server-sent events for a success).
    pub body: Vec<u8>,
    /// From the start of the final attempt to the first byte of its body (none when the body
    /// was empty, and for replayed exchanges).
    pub first_byte: Option<Duration>,
    /// From the start of the first attempt to the last byte, retries and their waits included.
    pub elapsed: Duration,
    /// How many attempts were made (1 when the first was answered).
    pub attempts: u32,
}

/// Why an endpoint produced no reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointError {
    kind: EndpointErrorKind,
    message: String,
}

/// The kind of an [`EndpointError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndpointErrorKind {
    /// The endpoint could not be reached, or the connection broke.
    Connect,
    /// The call took longer than its timeout.
    Timeout,
    /// Every retry met a rate limit, an overload or a server error; the message holds the last.
    Exhausted,
    /// The answer was larger than a reply may be.
    TooLarge,
    /// Replaying: no recording holds this exchange (never answered by a live call).
    MissingRecording,
    /// A recording could not be read or written.
    Recording,
    /// The endpoint is misconfigured (a key variable that is not set, a bad URL).
    Config,
}

impl EndpointError {
    /// An error of `kind`.
    pub fn new(kind: EndpointErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> EndpointErrorKind {
        self.kind
    }

    /// The message (never holding a credential).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EndpointError {}

/// The future an [`Endpoint`] answers with.
pub type ReplyFuture<'a> = Pin<Box<dyn Future<Output = Result<Reply, EndpointError>> + Send + 'a>>;

/// A model endpoint: one per model of a suite, shared by every scenario run on that model.
///
/// An implementation bounds itself (calls in flight, calls per minute, the size of a reply) and
/// retries what is worth retrying; the caller sees one [`Reply`] per call.
pub trait Endpoint: Send + Sync {
    /// Sends one request and reads its whole answer.
    fn exchange<'a>(&'a self, call: Call<'a>) -> ReplyFuture<'a>;
}
