//! The error of assembling and composing: one type with a kind, a lowercase message and a source.
//!
//! Problems in a spec or a send context found while *loading* them are [`SpecError`]s with
//! locations; everything that can go wrong after that (a template failing at render time, a
//! user-controlled block about to end a system text, an unknown target) is an [`Error`].
//! Recoverable problems are not errors at all but [`Diagnostic`]s returned with the result.
//!
//! [`SpecError`]: crate::spec::SpecError
//! [`Diagnostic`]: crate::diagnostic::Diagnostic

use std::fmt;

/// What went wrong, broadly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A template failed while rendering (e.g. it read an attribute the context lacks).
    Render,
    /// A gate expression failed while evaluating.
    Gate,
    /// A user-controlled block would end the stable half or a system text.
    TrailingUserText,
    /// A target, block or note that does not exist was asked for.
    NotFound,
    /// The send context does not fit the spec (e.g. a variable of the wrong shape).
    Context,
    /// A capability manifest is malformed (not valid TOML, a missing field, an empty fragment).
    Manifest,
    /// A provider rules table is malformed, or has no row for a model.
    Rules,
    /// A provider request cannot be built from these inputs (e.g. an inconsistent conversation).
    Request,
}

impl ErrorKind {
    /// The kind's stable name, the one every front end reports (`render`, `not-found`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Render => "render",
            ErrorKind::Gate => "gate",
            ErrorKind::TrailingUserText => "trailing-user-text",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Context => "context",
            ErrorKind::Manifest => "manifest",
            ErrorKind::Rules => "rules",
            ErrorKind::Request => "request",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error raised while assembling or composing.
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    block: Option<String>,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl Error {
    /// A new error of `kind` with a lowercase `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            block: None,
            source: None,
        }
    }

    /// Names the block (or note, or target) the error is about.
    pub fn with_block(mut self, id: impl Into<String>) -> Self {
        self.block = Some(id.into());
        self
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Box::new(source));
        self
    }

    /// What went wrong, broadly.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The block, note or target the error is about, if any.
    pub fn block(&self) -> Option<&str> {
        self.block.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.block {
            Some(block) => write!(f, "{} (in `{block}`)", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
