//! One module per subcommand: each has an `Args` struct and a `run` function.

pub mod bench;
pub mod cache_sim;
pub mod cite;
pub mod diff;
pub mod explain;
pub mod fence;
pub mod lint;
pub mod render;
pub mod request;
pub mod schema;
pub mod tools;
