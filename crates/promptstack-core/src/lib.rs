//! The pure promptstack engine.
//!
//! It decides, for every send, exactly what the model sees, and cleans up what the model writes back.
//! The core does no IO, reads no clock and draws no randomness: time, nonces and tenant text arrive
//! in the send context, so the same inputs always give byte-identical output.
//!
//! - [`stream`]: the model-output pipeline, turning streamed text into display-ready Markdown with
//!   resolved citations and one math style, plus the eval scorer that counts citations.

pub mod source;
pub mod stream;

#[doc(hidden)]
pub mod fuzzing;
