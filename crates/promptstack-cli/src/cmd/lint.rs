//! `promptstack lint`: check a spec, and optionally every send against it.

use std::path::PathBuf;
use std::process::ExitCode;

use promptstack::diagnostic::Severity;

use crate::input;

/// Check an agent spec: schema, templates, invariants, lint rules; with `--send`, also assemble and
/// compose every target for each send (token limits, empty variables, render failures). Without
/// `--send`, blocks with literal text are still held to their `max_tokens` (counted as o200k). The
/// eval suites beside the spec (`evals/*.toml`) are read as a publish reads them.
///
/// Exit status: 0 when there is no lint error (warnings allowed), 1 when there are lint errors,
/// 2 when the spec, a send or an eval suite cannot be read or is invalid.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent spec (TOML, or JSON if the name ends in .json).
    spec: PathBuf,
    /// Send contexts to check the spec against (repeatable).
    #[arg(long)]
    send: Vec<PathBuf>,
    #[command(flatten)]
    workspace: input::Workspace,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    input::suites(&args.spec)?;
    let sends = args
        .send
        .iter()
        .map(|path| {
            Ok((
                path.display().to_string(),
                input::send_in(path, &args.workspace, &agent)?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let findings = promptstack::command::lint(
        &agent,
        sends.iter().map(|(name, send)| (name.as_str(), send)),
    )
    .findings;
    let errors = findings
        .iter()
        .filter(|f| f.diagnostic.severity == Severity::Error)
        .count();
    let warnings = findings
        .iter()
        .filter(|f| f.diagnostic.severity == Severity::Warning)
        .count();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
    } else {
        let mut report = String::new();
        for finding in &findings {
            report.push_str(&match &finding.send {
                Some(send) => format!("{} (send {send})\n", finding.diagnostic),
                None => format!("{}\n", finding.diagnostic),
            });
        }
        let sends = args.send.len();
        report.push_str(&format!(
            "{}: {errors} error(s), {warnings} warning(s) ({} send{} checked)\n",
            args.spec.display(),
            sends,
            if sends == 1 { "" } else { "s" }
        ));
        print!("{}", promptstack::diagnostic::terminal_safe(&report));
    }
    Ok(if errors > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
