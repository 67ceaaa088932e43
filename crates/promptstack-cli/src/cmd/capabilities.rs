//! `promptstack capabilities`: the registry capabilities of a stage.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use crate::exit::bad_input;
use crate::input;

/// Work with the registry capabilities a stage references (`capability:<slug>`, with manifests in
/// `capabilities/<slug>.toml` next to the spec).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Publish(PublishArgs),
}

/// Publish a stage's main prompt: the authored text of the target (rendered with the send's
/// variables, no topic) followed by every registry capability's fragment, substituted from the
/// stage's `capability_configs` and decided by the overrides (the send's `auto_injections`, else
/// the spec's).
///
/// The published text is printed on stdout byte for byte (no newline is added); warnings
/// (`fragment-suppressed`, `malformed-override`, …) go to stderr. `--json` prints the text with
/// its segments sidecar (each slug's exact fragment, state and visibility), the provenance (the
/// byte range each fragment was appended at), the capabilities' tools and variables, and the
/// warnings. A fragment that cannot be rendered fails the command: publishing never silently
/// produces a different text.
#[derive(Debug, clap::Args)]
struct PublishArgs {
    /// The agent spec (TOML, or JSON if the name ends in .json); its stage's manifests are read
    /// from `capabilities/` next to it.
    spec: PathBuf,
    /// The send context (JSON): the variables the authored text is rendered with, and any
    /// overrides.
    #[arg(long)]
    send: PathBuf,
    /// The target whose authored text is published (default: the spec's only target).
    #[arg(long)]
    target: Option<String>,
    /// Print the published text, segments, provenance, tools, variables and warnings as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Command::Publish(args) => publish(args),
    }
}

fn publish(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    let send = input::send(&args.send, &agent)?;
    let target = promptstack::compose::choose_target(agent.target_ids(), args.target.as_deref())
        .map_err(|several| {
            bad_input(anyhow::anyhow!(several.message("choose one with --target")))
        })?;
    let published =
        promptstack::registry::publish(&agent, &args.spec, &send, &target, input::limits())
            .map_err(|e| match e {
                promptstack::registry::LoadError::Input(e) => input::refused(e),
                promptstack::registry::LoadError::Manifest(e)
                    if e.kind() == promptstack::ErrorKind::NotFound =>
                {
                    bad_input(e)
                }
                other => anyhow::Error::new(other).context("publishing failed"),
            })?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &published)?;
        writeln!(out)?;
    } else {
        crate::cmd::render::report_diagnostics(published.diagnostics.iter());
        out.write_all(published.text.as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
