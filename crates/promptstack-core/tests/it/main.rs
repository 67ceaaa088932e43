//! The core's integration tests: one binary, one module per area.

mod canonical_url;
mod fence;
mod label;
mod malformed;
mod naming;
mod stream;
mod turn;
