//! The pure promptstack engine.
//!
//! It decides, for every send, exactly what the model sees, and cleans up what the model writes back.
//! The core does no IO, reads no clock and draws no randomness: time, nonces and tenant text arrive
//! in the send context, so the same inputs always give byte-identical output.
//!
//! - [`canonical_url`]: the one canonical form of a URL (budgets, sources, evals).
//! - [`tools`]: provider-safe tool names, MCP namespacing and merging, UI labels.
//! - [`turn`]: the Turn runtime: dedupe, budgets and the source registry around tool executors.

pub mod canonical_url;
pub mod source;
pub mod tools;
pub mod turn;

#[doc(hidden)]
pub mod fuzzing;
