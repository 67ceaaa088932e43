//! `promptstack render`: print exactly what a target sends.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::command::RenderFormat as Format;
use promptstack::command::{Assembled, Env, RenderRequest, Rendered, RequestSettings};
use promptstack::compose::{Composition, Slot};
use promptstack::diagnostic::Severity;
use serde::Serialize;

use crate::cmd::request::{command_error, named};
use crate::input;

/// Print the exact text a target sends for one send context, or the provider request body.
///
/// With `--target`, the text is printed byte for byte as it goes on the wire (no trailing newline is
/// added). Without it, every target is printed under a `==> id <==` header. Warnings go to stderr.
///
/// With a provider format (`anthropic`, `openai-chat`, `openai-responses`, `gemini`), the request
/// body is printed as canonical JSON, byte for byte as it is sent, with cache breakpoints placed by
/// the planner; stderr names the rules version, the breakpoints and the expected cost. `--plan`
/// prints the body with its cache plan and units as JSON instead.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: crate::cmd::SendInput,
    /// The target to render (default: every target).
    #[arg(long)]
    target: Option<String>,
    /// Which text of the target to print in text format.
    #[arg(long, default_value_t = Slot::System,
        value_parser = named(&Slot::ALL, Slot::as_str, Slot::summary))]
    slot: Slot,
    /// Output format.
    #[arg(long, default_value_t = Format::Text,
        value_parser = named(&Format::ALL, Format::as_str, Format::summary))]
    format: Format,
    #[command(flatten)]
    request: crate::cmd::request::RequestArgs,
    /// With a provider format: print the body, the cache plan and the units as one JSON document.
    #[arg(long)]
    plan: bool,
    /// Print the full prompt the model receives — authored text with tokens expanded and
    /// variables substituted, then every platform append in build order — for `--target` (or the
    /// only target). Warnings (unresolved tool tokens, variables that rendered empty…) go to
    /// stderr; with `--format json` the text, its parts and the warnings are printed as JSON.
    #[arg(long, conflicts_with_all = ["slot", "plan"])]
    full: bool,
}

#[derive(Serialize)]
struct JsonOutput<'a> {
    agent: &'a str,
    fingerprint: String,
    targets: Vec<Composition>,
    diagnostics: Vec<&'a promptstack::diagnostic::Diagnostic>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (agent, send) = args.input.read()?;
    if args.full {
        return render_full(&agent, &send, &args);
    }
    let assembly = agent.assemble(&send).context("assembly failed")?;
    // Text without `--target` prints every target: the compositions `json` renders.
    let format = match args.format {
        Format::Text if args.target.is_none() => Format::Json,
        format => format,
    };
    // Only a provider request reads the conversation and the rules table.
    let (options, rules) = match format.provider() {
        Some(_) => (args.request.settings_read()?, Some(args.request.rules()?)),
        None => (RequestSettings::default(), None),
    };
    let request = RenderRequest {
        target: args.target.clone(),
        format,
        slot: args.slot,
        full: false,
        options,
    };
    let env = Env {
        limits: input::limits(),
        rules: rules
            .as_ref()
            .unwrap_or(promptstack::provider::Rules::bundled()),
    };
    let on = Assembled {
        agent: &agent,
        send: &send,
        assembly: &assembly,
    };
    let result = promptstack::command::render(&on, &request, &env).map_err(command_error)?;
    report_diagnostics(result.diagnostics.iter());
    let mut out = std::io::stdout().lock();
    match result.rendered {
        Rendered::Request(request) => print_request(&mut out, &request, args.plan)?,
        Rendered::Compositions(compositions) if args.format == Format::Json => {
            let output = JsonOutput {
                agent: agent.name(),
                fingerprint: assembly.fingerprint().to_string(),
                targets: compositions,
                diagnostics: assembly.diagnostics().collect(),
            };
            serde_json::to_writer_pretty(&mut out, &output)?;
            writeln!(out)?;
        }
        Rendered::Compositions(compositions) => {
            for (i, composition) in compositions.iter().enumerate() {
                if i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "==> {} ({}) <==", composition.target, args.slot)?;
                writeln!(out, "{}", composition.text(args.slot))?;
            }
        }
        Rendered::Text(text) => out.write_all(text.as_bytes())?,
        Rendered::Full(full) => out.write_all(full.text.as_bytes())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Prints warnings and lint errors to stderr (informational findings only with `explain`).
pub fn report_diagnostics<'a>(
    diagnostics: impl Iterator<Item = &'a promptstack::diagnostic::Diagnostic>,
) {
    for diagnostic in diagnostics.filter(|d| d.severity >= Severity::Warning) {
        eprintln!("{diagnostic}");
    }
}

/// Prints a provider request body (or, with `--plan`, the body with its plan).
fn print_request(
    out: &mut impl Write,
    request: &promptstack::provider::Request,
    plan: bool,
) -> anyhow::Result<()> {
    if plan {
        #[derive(Serialize)]
        struct Planned<'a> {
            format: &'static str,
            model: &'a str,
            target: &'a str,
            body: serde_json::Value,
            plan: &'a promptstack::provider::CachePlan,
            units: &'a [promptstack::provider::PlanUnit],
        }
        let planned = Planned {
            format: request.format.as_str(),
            model: &request.model,
            target: &request.target,
            body: request.body_value(),
            plan: &request.plan,
            units: &request.units,
        };
        serde_json::to_writer_pretty(&mut *out, &planned)?;
        writeln!(out)?;
    } else {
        eprintln!("{}", crate::cmd::request::summary(request));
        out.write_all(request.body.as_bytes())?;
    }
    Ok(())
}

/// `--full`: the full prompt with its warnings. A rendering failure is an error, never a
/// different text.
fn render_full(
    agent: &promptstack::Agent,
    send: &promptstack::SendContext,
    args: &Args,
) -> anyhow::Result<ExitCode> {
    let request = RenderRequest {
        target: args.target.clone(),
        format: args.format,
        full: true,
        ..RenderRequest::default()
    };
    let full = promptstack::command::render_full(agent, send, &request).map_err(|e| match e {
        promptstack::command::Error::Engine(e) if e.kind() != promptstack::ErrorKind::NotFound => {
            anyhow::Error::new(e).context("rendering the full prompt failed")
        }
        other => command_error(other),
    })?;
    report_diagnostics(full.warnings.iter());
    let mut out = std::io::stdout().lock();
    if args.format == Format::Json {
        serde_json::to_writer_pretty(&mut out, &full)?;
        writeln!(out)?;
    } else {
        out.write_all(full.text.as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
