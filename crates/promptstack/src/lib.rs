//! promptstack for applications.
//!
//! [`promptstack_core`] is the pure engine; this crate re-exports all of it at the same paths
//! (`promptstack::Agent`, `promptstack::context::ModelDescriptor`, …) and adds the edges an
//! application needs around it: randomness from the operating system, the wall clock, files on
//! disk and MCP servers. Everything here feeds data into the core; nothing here decides prompt text.
//!
//! - [`limits`]: every limit on what is read from outside, and the one bounded reader every
//!   input goes through (regular files only, size capped while reading, symlinks kept in their
//!   root).
//! - [`nonce`]: [`nonce::OsNonces`], fence nonces from the operating system's CSPRNG.
//! - [`context_files`]: the AGENTS.md / CLAUDE.md chain from the agent directory and from the
//!   root down to the working directory.
//! - [`mcp`]: discovery of MCP servers' tools over stdio and streamable HTTP, with timeouts and a
//!   background retry that the application runs on its own runtime.
//! - [`registry`]: registry capability manifests read from the folder next to a spec.
//! - [`tenant`]: tenant-instructions sources (file, memory) behind a fail-open TTL cache.
//! - [`eval`]: the eval model connectors, an HTTP endpoint per suite model with retries, rate and
//!   concurrency limits and timeouts.
//! - [`report`]: what `explain` and `lint` report, as serialisable data.
//!
//! # Features
//!
//! - `mcp`: the [`mcp`] module (rmcp, reqwest, tokio with process support).
//! - `tenant`: the [`tenant`] module (tokio timers and its blocking pool).
//! - `eval`: the [`eval`] module (`promptstack-eval`, reqwest, tokio timers and semaphores).
//!
//! All three are on by default. An embedder that needs none of them builds with
//! `default-features = false` and gets the engine, the OS nonces, context files and registry
//! manifests without rmcp, reqwest or a tokio runtime.

pub mod command;
pub mod context_files;
#[cfg(feature = "eval")]
pub mod eval;
pub mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod nonce;
pub mod registry;
pub mod report;
#[cfg(feature = "tenant")]
pub mod tenant;

// The engine's whole public surface, each item at the same path as in `promptstack_core` (one
// path per item: there is no second way in through an alias of the crate).
pub use promptstack_core::*;

/// The embedding guide (`docs/embedding.md`), whose example runs as a doctest so it cannot rot.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/embedding.md")]
pub struct EmbeddingGuide;
