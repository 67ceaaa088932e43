//! `promptstack lint`: check a spec, and optionally every send against it.

use std::path::PathBuf;
use std::process::ExitCode;

use promptstack::{Diagnostic, Severity};
use serde::Serialize;

use crate::input;

/// Check an agent spec: schema, templates, invariants, lint rules; with `--send`, also assemble and
/// compose every target for each send (token limits, empty variables, render failures). Without
/// `--send`, blocks with literal text are still held to their `max_tokens` (counted as o200k).
///
/// Exit status: 0 when there is no lint error (warnings allowed), 1 when there are lint errors,
/// 2 when the spec or a send cannot be read or is invalid.
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

#[derive(Serialize)]
struct Finding {
    /// The send the finding is about (absent for findings about the spec alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    send: Option<String>,
    #[serde(flatten)]
    diagnostic: Diagnostic,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    let mut findings: Vec<Finding> = agent
        .lint()
        .iter()
        .cloned()
        .map(|diagnostic| Finding {
            send: None,
            diagnostic,
        })
        .collect();
    if args.send.is_empty() {
        // Without a send, literal texts can still be held to their token limits (o200k estimate).
        let counting = promptstack::tokens::Counting {
            encoding: promptstack::tokens::Encoding::O200k,
            exact: false,
        };
        findings.extend(
            agent
                .literal_token_limits(counting)
                .into_iter()
                .map(|diagnostic| Finding {
                    send: None,
                    diagnostic,
                }),
        );
    }
    for path in &args.send {
        let send = input::send_in(path, &args.workspace)?;
        let name = path.display().to_string();
        let assembly = match agent.assemble(&send) {
            Ok(assembly) => assembly,
            Err(error) => {
                let mut diagnostic = Diagnostic::error("assembly-failed", error.to_string());
                if let Some(block) = error.block() {
                    diagnostic = diagnostic.subject(block);
                }
                findings.push(Finding {
                    send: Some(name),
                    diagnostic,
                });
                continue;
            }
        };
        for diagnostic in assembly.diagnostics() {
            if diagnostic.severity > Severity::Info && !agent.lint().contains(diagnostic) {
                findings.push(Finding {
                    send: Some(name.clone()),
                    diagnostic: diagnostic.clone(),
                });
            }
        }
        for target in assembly.target_ids() {
            if let Err(error) = assembly.compose(target) {
                let diagnostic =
                    Diagnostic::error("compose-failed", error.to_string()).subject(target);
                findings.push(Finding {
                    send: Some(name.clone()),
                    diagnostic,
                });
            }
        }
    }
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
