//! Fuzz target bodies, shared by `fuzz/` (cargo-fuzz) and the fixed-seed smoke runs in `cargo test`.
//!
//! Each function takes arbitrary bytes, exercises one parser or transformer with bounded work, and
//! panics if a property that must hold for every input is violated. Not part of the stable API.
