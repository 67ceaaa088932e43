//! `promptstack render`: print exactly what a target sends.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::ValueEnum;
use promptstack::{Assembly, Composition, Severity};
use serde::Serialize;

use crate::input;

/// Print the exact text a target sends for one send context.
///
/// With `--target`, the text is printed byte for byte as it goes on the wire (no trailing newline is
/// added). Without it, every target is printed under a `==> id <==` header. Warnings go to stderr.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent spec (TOML, or JSON if the name ends in .json).
    spec: PathBuf,
    /// The send context (JSON).
    #[arg(long)]
    send: PathBuf,
    #[command(flatten)]
    workspace: input::Workspace,
    /// The target to render (default: every target).
    #[arg(long)]
    target: Option<String>,
    /// Which text of the target to print in text format.
    #[arg(long, value_enum, default_value_t = SlotArg::System)]
    slot: SlotArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The text itself.
    Text,
    /// Every composed text with its parts, the fingerprint and the diagnostics, as JSON.
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SlotArg {
    /// The system text.
    System,
    /// The notes for the last user message.
    User,
}

#[derive(Serialize)]
struct JsonOutput<'a> {
    agent: &'a str,
    fingerprint: String,
    targets: Vec<Composition>,
    diagnostics: Vec<&'a promptstack::Diagnostic>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    let send = input::send_in(&args.send, &args.workspace)?;
    let assembly = agent.assemble(&send).context("assembly failed")?;
    let targets: Vec<String> = match &args.target {
        Some(t) => vec![t.clone()],
        None => assembly.target_ids().map(str::to_owned).collect(),
    };
    let compositions = compose_all(&assembly, &targets)?;
    report_diagnostics(assembly.diagnostics());
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let output = JsonOutput {
                agent: agent.name(),
                fingerprint: assembly.fingerprint().to_string(),
                targets: compositions,
                diagnostics: assembly.diagnostics().collect(),
            };
            serde_json::to_writer_pretty(&mut out, &output)?;
            writeln!(out)?;
        }
        Format::Text if args.target.is_some() => {
            let composition = &compositions[0];
            let text = match args.slot {
                SlotArg::System => &composition.system,
                SlotArg::User => &composition.user,
            };
            out.write_all(text.as_bytes())?;
        }
        Format::Text => {
            for (i, composition) in compositions.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                let (label, text) = match args.slot {
                    SlotArg::System => ("system", &composition.system),
                    SlotArg::User => ("user", &composition.user),
                };
                writeln!(out, "==> {} ({label}) <==", composition.target)?;
                writeln!(out, "{text}")?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Composes each target, turning an unknown target name into a bad-input error.
pub fn compose_all(assembly: &Assembly, targets: &[String]) -> anyhow::Result<Vec<Composition>> {
    targets
        .iter()
        .map(|t| {
            assembly.compose(t).map_err(|e| match e.kind() {
                promptstack::ErrorKind::NotFound => crate::exit::bad_input(e),
                _ => anyhow::Error::new(e),
            })
        })
        .collect()
}

/// Prints warnings and lint errors to stderr (informational findings only with `explain`).
pub fn report_diagnostics<'a>(diagnostics: impl Iterator<Item = &'a promptstack::Diagnostic>) {
    for diagnostic in diagnostics.filter(|d| d.severity >= Severity::Warning) {
        eprintln!("{diagnostic}");
    }
}
