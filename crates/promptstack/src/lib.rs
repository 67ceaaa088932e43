//! promptstack for applications.
//!
//! [`promptstack_core`] is the pure engine; this crate re-exports it and adds the edges an
//! application needs around it: randomness from the operating system, the wall clock, files on
//! disk and MCP servers. Everything here feeds data into the core; nothing here decides prompt text.
//!
//! - [`nonce`]: [`nonce::OsNonces`], fence nonces from the operating system's CSPRNG.
//! - [`context_files`]: the AGENTS.md / CLAUDE.md chain from the agent directory and from the
//!   root down to the working directory.
//! - [`mcp`]: discovery of MCP servers' tools over stdio and streamable HTTP, with timeouts and a
//!   background retry that the application runs on its own runtime.
//! - [`registry`]: registry capability manifests read from the folder next to a spec.
//! - [`tenant`]: tenant-instructions sources (file, memory) behind a fail-open TTL cache.
//!
//! # Features
//!
//! - `mcp`: the [`mcp`] module (rmcp, reqwest, tokio with process support).
//! - `tenant`: the [`tenant`] module (tokio timers and its blocking pool).
//!
//! Both are on by default. An embedder that needs neither builds with `default-features = false`
//! and gets the engine, the OS nonces, context files and registry manifests without rmcp, reqwest
//! or a tokio runtime.

pub mod context_files;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod nonce;
pub mod registry;
#[cfg(feature = "tenant")]
pub mod tenant;

pub use promptstack_core as core;
pub use promptstack_core::*;
