//! The `promptstack` command line.
//!
//! Parse arguments, resolve inputs (read files), run one command. Only `main` turns errors into
//! exit codes: 0 success, 1 failure (including lint errors), 2 bad input.

mod cmd;
mod exit;
mod input;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Decide exactly what an LLM sees on every send, and clean up what it writes back.
#[derive(Debug, Parser)]
#[command(name = "promptstack", version, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Change a limit for this run (repeatable): NAME=VALUE, e.g. content-bytes=256MiB or
    /// sim-turns=5000. Every limit, its default and its ceiling: docs/limits.md.
    #[arg(long, global = true, value_name = "NAME=VALUE")]
    limit: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    Render(cmd::render::Args),
    Explain(cmd::explain::Args),
    Lint(cmd::lint::Args),
    Schema(cmd::schema::Args),
    Bench(cmd::bench::Args),
    /// Wrap untrusted content from stdin in a nonce fence, or check a wrapped text.
    Fence(cmd::fence::Args),
    Cite(cmd::cite::Args),
    Tools(cmd::tools::Args),
    CacheSim(cmd::cache_sim::Args),
    Diff(cmd::diff::Args),
    Keys(cmd::keys::Args),
    Serve(cmd::serve::Args),
    Capabilities(cmd::capabilities::Args),
    Eval(cmd::eval::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version are successes; everything else is bad input.
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    let mut limits = promptstack::limits::Limits::default();
    for setting in &cli.limit {
        if let Err(error) = limits.apply(setting) {
            return exit::report(Err(exit::bad_input(
                anyhow::Error::new(error).context("invalid --limit"),
            )));
        }
    }
    input::set_limits(limits);
    let result = match cli.command {
        Command::Render(args) => cmd::render::run(args),
        Command::Explain(args) => cmd::explain::run(args),
        Command::Lint(args) => cmd::lint::run(args),
        Command::Schema(args) => cmd::schema::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::Fence(args) => cmd::fence::run(args),
        Command::Cite(args) => cmd::cite::run(args),
        Command::Tools(args) => cmd::tools::run(args),
        Command::CacheSim(args) => cmd::cache_sim::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Keys(args) => cmd::keys::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Capabilities(args) => cmd::capabilities::run(args),
        Command::Eval(args) => cmd::eval::run(args),
    };
    exit::report(result)
}
