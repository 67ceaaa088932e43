//! One module per subcommand: each has an `Args` struct and a `run` function.
pub mod cite;
