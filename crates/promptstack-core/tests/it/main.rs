//! The core's integration tests: one binary, one module per area.

mod canonical_url;
mod fence;
mod invariants;
mod label;
mod malformed;
mod naming;
mod provider;
mod purity;
mod spec_fuzz;
mod stream;
mod tools;
mod turn;
