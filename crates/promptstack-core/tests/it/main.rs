//! The core's integration tests: one binary, one module per area.

mod blocks;
mod caches;
mod canonical_url;
mod examples_turn;
mod full;
mod injections;
mod invariants;
mod label;
mod layers;
mod limits;
mod malformed;
mod module_graph;
mod naming;
mod provider;
mod purity;
mod refresh;
mod registry;
mod spec_fuzz;
mod support;
mod tokens;
mod tools;
mod turn;
