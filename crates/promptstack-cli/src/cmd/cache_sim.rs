//! `promptstack cache-sim`: replay a multi-turn thread against the provider caching rules.

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::command::{self, CacheSimRequest, Env, SimOption};
use promptstack::provider::Format;
use promptstack::provider::sim::{SimCancel, SimFigures, SimReport};

use crate::exit::bad_input;
use crate::input;

/// Simulate a provider's prompt cache over a multi-turn thread, for our requests and for a naive
/// baseline in the same run.
///
/// The thread keeps the first send's stable inputs (model, settings, user); turn N takes the
/// user message and volatile variables of the next send in DIR (in name order, cycling); the clock
/// advances by the gap; the conversation grows by each user message as sent and an answer; every
/// third turn the model first calls a tool (a continuation request two seconds later). Two
/// synthetic MCP servers list their tools in a new order every turn and now and then one fails.
/// The naive baseline has the same content with the per-send notes (the timestamp) at the top of
/// the system text and the tools in discovery order.
///
/// Reported for each side: the share of input tokens read from the cache, written to it and
/// uncached; the cost relative to no caching; and the share of system + tool tokens read from the
/// cache after the first request.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent spec.
    spec: PathBuf,
    /// A directory of send contexts (*.json).
    #[arg(long)]
    sends: PathBuf,
    /// How many user turns (at most the `sim-turns` limit, 1000 unless --limit raises it).
    #[arg(long, default_value_t = CacheSimRequest::DEFAULT_TURNS)]
    turns: u32,
    /// Seconds between turns (at most 2592000, 30 days).
    #[arg(long, default_value_t = CacheSimRequest::DEFAULT_GAP_SECONDS)]
    gap_seconds: u32,
    /// The request format: anthropic, openai-chat, openai-responses or gemini (default: from the
    /// first send's model provider).
    #[arg(long)]
    provider: Option<String>,
    /// The model id (default: the first send's model id).
    #[arg(long)]
    model: Option<String>,
    /// The target composed (default: the spec's only target; required when it has several).
    #[arg(long)]
    target: Option<String>,
    /// A provider rules table (TOML) replacing the bundled one.
    #[arg(long)]
    rules: Option<PathBuf>,
    /// The chance per turn that one synthetic MCP server fails.
    #[arg(long, default_value_t = CacheSimRequest::DEFAULT_MCP_FAILURE_RATE)]
    mcp_failure_rate: f64,
    /// The seed of the generator that reorders and fails MCP servers.
    #[arg(long, default_value_t = CacheSimRequest::DEFAULT_SEED)]
    seed: u64,
    /// Print the report as JSON (with every turn's figures).
    #[arg(long)]
    json: bool,
    /// Also write the per-turn chart (tokens read from the cache, written and uncached, ours next
    /// to the naive baseline, with the totals) as a self-contained SVG file; the inspector draws
    /// the same chart.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut request = CacheSimRequest {
        target: args.target.clone(),
        format: Format::default(),
        model: args.model.clone(),
        turns: args.turns,
        gap_seconds: args.gap_seconds,
        mcp_failure_rate: args.mcp_failure_rate,
        seed: args.seed,
    };
    request.check(input::limits()).map_err(refusal)?;
    let agent = input::agent(&args.spec)?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.sends)
        .with_context(|| {
            format!(
                "cannot read the sends directory {}",
                promptstack::diagnostic::quote(&args.sends.display().to_string())
            )
        })
        .map_err(bad_input)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(bad_input(anyhow::anyhow!(
            "{} holds no send contexts (*.json)",
            promptstack::diagnostic::quote(&args.sends.display().to_string())
        )));
    }
    let sends = read_sends(&paths, &agent)?;
    check_clock(&args, &sends[0])?;
    let provider = args
        .provider
        .clone()
        .unwrap_or_else(|| sends[0].model.provider.clone());
    request.format = Format::for_provider(&provider).ok_or_else(|| {
        bad_input(anyhow::anyhow!(
            "unknown provider `{provider}`; use anthropic, openai-chat, openai-responses or gemini"
        ))
    })?;
    let assembly = agent.assemble(&sends[0]).context("assembly failed")?;
    let target = crate::cmd::request::target(&assembly, args.target.as_deref())?;
    if assembly.target_ids().all(|t| t != target) {
        return Err(bad_input(anyhow::anyhow!("unknown target `{target}`")));
    }
    request.target = Some(target);
    let rules = crate::cmd::request::rules(args.rules.as_deref())?;
    let env = Env {
        limits: input::limits(),
        rules: &rules,
    };
    let report = command::cache_sim(&agent, &sends, &request, &env, SimCancel::default())
        .map_err(refusal)?;
    if let Some(path) = &args.svg {
        std::fs::write(path, promptstack_inspector::cache_chart_svg(&report)).with_context(
            || {
                format!(
                    "cannot write the chart to {}",
                    promptstack::diagnostic::quote(&path.display().to_string())
                )
            },
        )?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", table(&report))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The simulation's refusal as the command line words it: an option out of its range (with how
/// to raise the `sim-turns` limit when it can be), rules or a request that cannot be, as bad
/// input.
fn refusal(error: command::Error) -> anyhow::Error {
    use promptstack::limits::Limit;
    match error {
        command::Error::OutOfRange(range) => {
            let name = format!("--{}", range.option.as_str().replace('_', "-"));
            let max_turns = input::limits().get(Limit::SimTurns);
            let raise = if range.option == SimOption::Turns && max_turns < Limit::SimTurns.ceiling()
            {
                format!(
                    "; raise the limit with --limit sim-turns=N (at most {})",
                    Limit::SimTurns.ceiling()
                )
            } else {
                String::new()
            };
            bad_input(anyhow::anyhow!("{}{raise}", range.message(&name)))
        }
        command::Error::Engine(e) => match e.kind() {
            promptstack::ErrorKind::Rules | promptstack::ErrorKind::Request => bad_input(e),
            _ => anyhow::Error::new(e),
        },
        other => crate::cmd::request::command_error(other),
    }
}

/// Reads the sends, refusing more files or more bytes in all than the `sim-sends` and
/// `sim-sends-bytes` limits.
fn read_sends(
    paths: &[PathBuf],
    agent: &promptstack::Agent,
) -> anyhow::Result<Vec<promptstack::SendContext>> {
    use promptstack::limits::{InputKind, Limit};
    let limits = input::limits();
    let (max_files, max_bytes) = (
        limits.get(Limit::SimSends),
        limits.get(Limit::SimSendsBytes),
    );
    if paths.len() as u64 > max_files {
        return Err(bad_input(anyhow::anyhow!(
            "the sends directory holds {} send contexts; the `sim-sends` limit is {max_files}",
            paths.len()
        )));
    }
    let mut total = 0u64;
    let mut sends = Vec::with_capacity(paths.len());
    for path in paths {
        let bytes = input::read(path, InputKind::Send)?;
        total += bytes.len() as u64;
        if total > max_bytes {
            return Err(bad_input(anyhow::anyhow!(
                "the send contexts up to {} hold more than {} together (the `sim-sends-bytes` limit)",
                promptstack::diagnostic::quote(&path.display().to_string()),
                Limit::SimSendsBytes.format_value(max_bytes)
            )));
        }
        let send = promptstack::SendContext::from_json_for(
            &bytes,
            &path.display().to_string(),
            agent.spec(),
        )
        .map_err(bad_input)?;
        sends.push(send);
    }
    Ok(sends)
}

/// Refuses a simulation whose last turn would fall beyond the last representable instant.
fn check_clock(args: &Args, first: &promptstack::SendContext) -> anyhow::Result<()> {
    let start = first.now.timestamp().as_second();
    let span = i64::from(args.turns) * i64::from(args.gap_seconds);
    if start.saturating_add(span) > jiff::Timestamp::MAX.as_second() {
        return Err(bad_input(anyhow::anyhow!(
            "{} turns {} s apart from {} end after the year 9999; use fewer turns or a shorter gap",
            args.turns,
            args.gap_seconds,
            first.now
        )));
    }
    Ok(())
}

fn percent(x: f64) -> String {
    format!("{:.1} %", x * 100.0)
}

fn row(label: &str, f: &SimFigures) -> String {
    format!(
        "{label:<8} {:>8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>14} {:>16}\n",
        f.requests,
        f.input_tokens,
        percent(f.read_share),
        percent(f.written_share),
        percent(f.uncached_share),
        format!("{:.3}×", f.relative_cost),
        percent(f.prefix_read_share),
        percent(f.stable_prefix_read_share),
    )
}

fn table(report: &SimReport) -> String {
    let mut text = format!(
        "{} {} · target {} · rules {} · {} turns, {} s apart · synthetic MCP failures on {} turns\n\n",
        report.format,
        report.model,
        report.target,
        report.rules_version,
        report.turns,
        report.gap_seconds,
        report.mcp_failures
    );
    text.push_str(&format!(
        "{:<8} {:>8} {:>12} {:>9} {:>9} {:>9} {:>9} {:>14} {:>16}\n",
        "",
        "requests",
        "input tokens",
        "read",
        "written",
        "uncached",
        "cost",
        "sys+tools read",
        "stable part read"
    ));
    text.push_str(&row("ours", &report.ours));
    text.push_str(&row("naive", &report.naive));
    text.push_str(
        "\ncost: the price of all requests relative to sending every token uncached.\n\
         sys+tools read: the share of system and tool tokens read from the cache after the first request.\n\
         stable part read: the same without the per-send system notes after the stable half.\n",
    );
    text
}
