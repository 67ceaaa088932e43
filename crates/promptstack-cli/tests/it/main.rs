//! End-to-end tests of the `promptstack` binary: one binary, one module per subcommand.
mod cache_sim;
mod capabilities;
mod cite;
mod commands;
mod diff;
mod examples;
mod explain;
mod families;
mod fence;
mod hostile;
mod hostile_server;
mod keys;
mod pi_compat;
mod requests;
mod serve;
mod support;
mod tools;
