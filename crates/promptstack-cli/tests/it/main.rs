//! End-to-end tests of the `promptstack` binary: one binary, one module per subcommand.
mod cite;
mod commands;
mod examples;
mod families;
mod fence;
mod pi_compat;
