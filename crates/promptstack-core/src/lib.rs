//! The pure promptstack engine.
//!
//! It decides, for every send, exactly what the model sees, and cleans up what the model writes back.
//! The core does no IO, reads no clock and draws no randomness: time, nonces and tenant text arrive
//! in the send context, so the same inputs always give byte-identical output.
//!
//! - [`fence`]: wraps untrusted content (pages, files, MCP resources, tool results) in nonce
//!   markers it cannot forge, defanging look-alike markers and chat-template control tokens.

pub mod fence;
pub mod source;

#[doc(hidden)]
pub mod fuzzing;
