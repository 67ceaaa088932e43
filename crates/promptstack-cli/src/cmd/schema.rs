//! `promptstack schema`: print the JSON Schema of the agent spec, the send context or an eval suite.

use std::process::ExitCode;

use clap::ValueEnum;

/// Print the JSON Schema of the agent spec (for editor autocompletion), of the send context or of
/// an eval suite.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Which schema to print.
    #[arg(value_enum, default_value_t = Which::Spec)]
    which: Which,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Which {
    /// The agent spec (`agent.toml` / `agent.json`).
    Spec,
    /// The send context (`send.json`).
    Send,
    /// An eval suite (`evals/*.toml`).
    Eval,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let schema = match args.which {
        Which::Spec => promptstack::spec::AgentSpec::json_schema(),
        Which::Send => promptstack::SendContext::json_schema(),
        Which::Eval => promptstack_eval::suite::Suite::json_schema(),
    };
    println!("{}", serde_json::to_string_pretty(&schema)?);
    Ok(ExitCode::SUCCESS)
}
