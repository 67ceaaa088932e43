//! `promptstack eval`: suites of scenarios run against real models, each answer scored with the
//! runtime's own accounting, versions compared with honest statistics.
//!
//! - [`suite`]: the suite format (`evals/*.toml` beside an agent), its JSON Schema and its checks,
//!   every problem located as a spec's are.

pub mod suite;
