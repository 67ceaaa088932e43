//! `promptstack diff`: why a cache broke between two sends (or two saved assemblies).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::command::{Assembled, DiffRequest, Env};
use promptstack::provider::diff::{self, Divergence};
use serde::Serialize;

use crate::exit::bad_input;
use crate::input;

/// Show where two sends first diverge and which cache breakpoints survive.
///
/// With a spec and two `--send` files: the first block where the target's system texts differ
/// (block id, byte offset, an excerpt of each side), the first request unit where the provider
/// request bodies differ (`--format`, default anthropic), and, for each breakpoint of the first
/// request, whether the second request can still read it.
///
/// With `--assemblies A B` (assembly JSON as `explain --json` prints it, or the bare assembly):
/// the first block where the two bodies differ, and whether the stable fingerprints match.
///
/// Exit code 0 when the two are identical, 1 when they differ.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent spec (with two --send).
    spec: Option<PathBuf>,
    /// A send context; give exactly two.
    #[arg(long)]
    send: Vec<PathBuf>,
    /// Two saved assemblies instead of a spec and sends.
    #[arg(long, num_args = 2, value_names = ["A", "B"], conflicts_with_all = ["spec", "send"])]
    assemblies: Vec<PathBuf>,
    /// The target (default: the spec's only target).
    #[arg(long)]
    target: Option<String>,
    /// The request format compared: anthropic, openai-chat, openai-responses or gemini.
    #[arg(long, default_value = "anthropic")]
    format: String,
    #[command(flatten)]
    request: crate::cmd::request::RequestArgs,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct AssembliesDiff {
    body: Option<Divergence>,
    same_fingerprint: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if !args.assemblies.is_empty() {
        return assemblies(&args);
    }
    let Some(spec) = &args.spec else {
        return Err(bad_input(anyhow::anyhow!(
            "give a spec and two --send files, or --assemblies A B"
        )));
    };
    let [a, b] = args.send.as_slice() else {
        return Err(bad_input(anyhow::anyhow!(
            "give exactly two --send files (got {})",
            args.send.len()
        )));
    };
    let format = promptstack::provider::Format::for_provider(&args.format).ok_or_else(|| {
        bad_input(anyhow::anyhow!(
            "unknown format `{}`; use anthropic, openai-chat, openai-responses or gemini",
            args.format
        ))
    })?;
    let agent = input::agent(spec)?;
    let (send_a, send_b) = (input::send(a, &agent)?, input::send(b, &agent)?);
    let assembly_a = agent.assemble(&send_a).context("assembly failed")?;
    let assembly_b = agent.assemble(&send_b).context("assembly failed")?;
    let request = DiffRequest {
        target: args.target.clone(),
        format,
        options: args.request.settings_read()?,
    };
    let rules = args.request.rules()?;
    let side = |send, assembly| Assembled {
        agent: &agent,
        send,
        assembly,
    };
    let result = promptstack::command::diff(
        &side(&send_a, &assembly_a),
        &side(&send_b, &assembly_b),
        &request,
        &Env {
            limits: input::limits(),
            rules: &rules,
        },
    )
    .map_err(crate::cmd::request::command_error)?;
    let same = result.is_same();
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        match &result.system {
            None => writeln!(out, "system text ({}): identical", result.target)?,
            Some(d) => print_divergence(&mut out, &format!("system text ({})", result.target), d)?,
        }
        match &result.request {
            None => writeln!(out, "{} request: identical", result.format)?,
            Some(d) => print_divergence(&mut out, &format!("{} request", result.format), d)?,
        }
        if result.breakpoints.is_empty() {
            writeln!(out, "breakpoints: none placed in the first request")?;
        }
        for s in &result.breakpoints {
            writeln!(
                out,
                "breakpoint {} at {} ({} tokens): {}",
                s.boundary.as_str(),
                s.at,
                s.prefix_tokens,
                if s.survives { "survives" } else { "lost" }
            )?;
        }
    }
    out.flush()?;
    Ok(if same {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn print_divergence(
    out: &mut impl std::io::Write,
    what: &str,
    d: &Divergence,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{what}: first difference in `{}` at byte {}",
        d.block, d.offset
    )?;
    writeln!(out, "  - {:?}", d.left)?;
    writeln!(out, "  + {:?}", d.right)
}

/// The assembly inside a saved file: `explain --json` output or the bare assembly.
fn load_assembly(path: &std::path::Path) -> anyhow::Result<serde_json::Value> {
    let bytes = input::read(path, promptstack::limits::InputKind::Assembly)?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not JSON", path.display()))
        .map_err(bad_input)?;
    let assembly = value.get("assembly").cloned().unwrap_or(value);
    if assembly.get("format").and_then(|f| f.as_str()) != Some("promptstack.assembly/v1") {
        return Err(bad_input(anyhow::anyhow!(
            "{} is not a promptstack.assembly/v1 document",
            path.display()
        )));
    }
    Ok(assembly)
}

fn assemblies(args: &Args) -> anyhow::Result<ExitCode> {
    let a = load_assembly(&args.assemblies[0])?;
    let b = load_assembly(&args.assemblies[1])?;
    let text = |v: &serde_json::Value| v["full"].as_str().unwrap_or_default().to_owned();
    let (full_a, full_b) = (text(&a), text(&b));
    let body = diff::first_difference(&full_a, &full_b).map(|at| {
        let owner = |v: &serde_json::Value| {
            v["blocks"].as_array().and_then(|blocks| {
                blocks.iter().find_map(|block| {
                    let start = block["range"]["start"].as_u64()? as usize;
                    let end = block["range"]["end"].as_u64()? as usize;
                    (start <= at && at <= end)
                        .then(|| block["id"].as_str().unwrap_or_default().to_owned())
                })
            })
        };
        let cut = |t: &str| {
            let mut end = (at + 48).min(t.len());
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t[at..end].to_owned()
        };
        Divergence {
            block: owner(&a).or_else(|| owner(&b)).unwrap_or_default(),
            offset: at,
            left: cut(&full_a),
            right: cut(&full_b),
        }
    });
    let result = AssembliesDiff {
        same_fingerprint: a["fingerprint"] == b["fingerprint"],
        body,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        match &result.body {
            None => writeln!(out, "body: identical")?,
            Some(d) => print_divergence(&mut out, "body", d)?,
        }
        writeln!(
            out,
            "stable fingerprint: {}",
            if result.same_fingerprint {
                "same"
            } else {
                "different"
            }
        )?;
    }
    out.flush()?;
    Ok(if result.body.is_none() && result.same_fingerprint {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
