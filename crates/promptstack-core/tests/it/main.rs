//! The core's integration tests: one binary, one module per area.
mod fence;
mod stream;
