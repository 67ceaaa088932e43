//! The `promptstack` command line.
//!
//! Parse arguments, resolve inputs (read files), run one command. Only `main` turns errors into
//! exit codes: 0 success, 1 failure (including lint errors), 2 bad input.

mod cmd;
mod exit;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Decide exactly what an LLM sees on every send, and clean up what it writes back.
#[derive(Debug, Parser)]
#[command(name = "promptstack", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {};
    exit::report(result)
}
