//! `promptstack explain`: every block, why it is in or out, and what each target sends.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::block::Block;
use promptstack::block::BlockState;
use promptstack::compose::Composition;
use promptstack::diagnostic::Severity;
use promptstack::report::PlannedBreakpoints;
use promptstack::spec::{BlockKind, Placement};
use promptstack::{Agent, Assembly};

use crate::input;

/// Explain an assembly: every block with its kind, trust, stability, state (and why), override
/// state and tokens; the totals of each half; the fingerprint; what each target composes and the
/// blocks its token budget shed (with the reason); and every diagnostic.
///
/// With `--format`, also the cache breakpoints the planner places in each target's request of
/// that provider format for this send (a new conversation with the send's `user_message`), and
/// every stability boundary left without one, with the reason.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    input: crate::cmd::SendInput,
    /// Only this target in the targets section (default: every target).
    #[arg(long)]
    target: Option<String>,
    /// Print the assembly and the compositions as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also plan the cache breakpoints of each target's request in this provider format.
    #[arg(long, value_parser = crate::cmd::request::provider_format())]
    format: Option<promptstack::provider::Format>,
    /// With `--format`: a provider rules table (TOML) replacing the bundled one.
    #[arg(long, requires = "format")]
    rules: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (agent, send) = args.input.read()?;
    let assembly = agent.assemble(&send).context("assembly failed")?;
    let rules = match args.format {
        Some(_) => Some(crate::cmd::request::rules(args.rules.as_deref())?),
        None => None,
    };
    let on = promptstack::command::Assembled {
        agent: &agent,
        send: &send,
        assembly: &assembly,
    };
    let request = promptstack::command::ExplainRequest {
        target: args.target.clone(),
        format: args.format,
    };
    let env = promptstack::command::Env {
        limits: input::limits(),
        rules: rules
            .as_ref()
            .unwrap_or(promptstack::provider::Rules::bundled()),
    };
    let explanation = promptstack::command::explain(&on, &request, &env).map_err(|e| match e {
        promptstack::command::Error::Engine(e) => match e.kind() {
            promptstack::ErrorKind::NotFound
            | promptstack::ErrorKind::Request
            | promptstack::ErrorKind::Rules => crate::exit::bad_input(e),
            // Any other kind comes from composing a target (planning composes the same targets
            // again, after they composed): the table has always reported it as it is, the JSON
            // with what was being done.
            _ if !args.json => anyhow::Error::new(e),
            _ => anyhow::Error::new(e).context("explaining the assembly failed"),
        },
        other => crate::cmd::request::command_error(other),
    })?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&explanation)?);
        return Ok(ExitCode::SUCCESS);
    }
    let compositions: Vec<Composition> = explanation
        .targets
        .into_iter()
        .map(|target| target.composition)
        .collect();
    let planned = explanation.breakpoints;
    // A report, not the wire text: nothing in it may drive the terminal.
    let mut table = table(&agent, &send, &assembly, &compositions, &args.input.spec);
    table.push_str(&breakpoints_section(&planned));
    print!("{}", promptstack::diagnostic::terminal_safe(&table));
    Ok(ExitCode::SUCCESS)
}

/// The planned breakpoints of each target, and the boundaries left without one.
fn breakpoints_section(planned: &[PlannedBreakpoints]) -> String {
    let mut out = String::new();
    for p in planned {
        let _ = writeln!(
            out,
            "\nbreakpoints  {} · {} {} · rules {} (row `{}`) · {} input tokens",
            p.target,
            p.format.as_str(),
            p.model,
            p.plan.rules_version,
            p.plan.rule.models,
            p.plan.total_tokens
        );
        let mut rows = vec![
            ["boundary", "at", "prefix", "ttl", "fingerprint"]
                .map(String::from)
                .to_vec(),
        ];
        for b in &p.plan.breakpoints {
            rows.push(vec![
                b.boundary.as_str().to_owned(),
                b.at.clone(),
                format!("{} tok", b.prefix_tokens),
                b.ttl.clone(),
                b.fingerprint.short(),
            ]);
        }
        if p.plan.breakpoints.is_empty() {
            let _ = writeln!(out, "(no explicit breakpoints)");
        } else {
            out.push_str(&format_rows(&rows, &[2]));
        }
        for skipped in &p.plan.skipped {
            let _ = writeln!(
                out,
                "- {} ({} tok) skipped: {}",
                skipped.boundary.as_str(),
                skipped.prefix_tokens,
                skipped.reason
            );
        }
        let _ = writeln!(
            out,
            "cost         cold {:.2}×, repeat {:.2}×",
            p.plan.cold.relative, p.plan.repeat.relative
        );
    }
    out
}

/// Selects the blocks of one section of the table.
type BlockFilter = fn(&Block) -> bool;

fn table(
    agent: &Agent,
    send: &promptstack::SendContext,
    assembly: &Assembly,
    compositions: &[Composition],
    spec_path: &std::path::Path,
) -> String {
    let counting = assembly.counting();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "agent        {} ({})",
        agent.name(),
        spec_path.display()
    );
    let _ = writeln!(out, "model        {}", super::model_summary(&send.model));
    let _ = writeln!(
        out,
        "tokens       {} ({})",
        counting.encoding.as_str(),
        if counting.exact {
            "exact"
        } else {
            "estimate: this model's tokenizer is not bundled"
        }
    );
    let _ = writeln!(out, "fingerprint  {}", assembly.fingerprint());
    let tools: Vec<&str> = assembly.toolset().names().collect();
    let _ = writeln!(
        out,
        "tools        {}",
        if tools.is_empty() {
            "(none)".to_owned()
        } else {
            tools.join(", ")
        }
    );
    for excluded in assembly.toolset().excluded() {
        let _ = writeln!(
            out,
            "             - {} excluded: {}",
            excluded.name, excluded.reason
        );
    }
    let sections: [(&str, BlockFilter); 3] = [
        ("body", |b| b.placement == Placement::Body),
        ("target blocks", |b| {
            b.placement == Placement::Target && b.kind != BlockKind::Note
        }),
        ("notes", |b| b.kind == BlockKind::Note),
    ];
    for (title, filter) in sections {
        let blocks: Vec<&Block> = assembly.blocks().filter(|b| filter(b)).collect();
        if blocks.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}");
        let mut rows = vec![
            [
                "#",
                "id",
                "kind",
                "trust",
                "stability",
                "state",
                "override",
                "tokens",
                "why / origin",
            ]
            .map(String::from)
            .to_vec(),
        ];
        for (i, block) in blocks.iter().enumerate() {
            let (state, why) = match &block.state {
                BlockState::Included => (
                    "included".to_owned(),
                    block
                        .variant
                        .as_ref()
                        .map(|v| format!("variant {v}; "))
                        .unwrap_or_default()
                        + &block.origin.short(),
                ),
                BlockState::Excluded { reason } => ("excluded".to_owned(), reason.to_string()),
            };
            let tokens = if block.is_included() {
                block.tokens().display()
            } else {
                "-".into()
            };
            rows.push(vec![
                (i + 1).to_string(),
                block.id.to_string(),
                block.kind.as_str().into(),
                block.trust.as_str().into(),
                block.stability.as_str().into(),
                state,
                block.override_state.as_str().into(),
                tokens,
                why,
            ]);
        }
        out.push_str(&format_rows(&rows, &[7]));
    }
    let _ = writeln!(
        out,
        "\nhalves       stable {} tokens · volatile {} tokens",
        assembly.stable_tokens().display(),
        assembly.volatile_tokens().display()
    );
    let _ = writeln!(out, "\ntargets");
    let mut rows = vec![
        ["target", "system", "stable prefix", "user", "composed as"]
            .map(String::from)
            .to_vec(),
    ];
    for c in compositions {
        let system_tokens = agent.count_tokens(counting, &c.system).display();
        let prefix_tokens = agent
            .count_tokens(counting, &c.system[..c.stable_prefix])
            .display();
        let user_tokens = agent.count_tokens(counting, &c.user).display();
        let system_parts: Vec<&str> = c
            .parts
            .iter()
            .filter(|p| p.slot == promptstack::compose::Slot::System)
            .map(|p| &*p.id)
            .collect();
        let user_parts: Vec<&str> = c
            .parts
            .iter()
            .filter(|p| p.slot == promptstack::compose::Slot::User)
            .map(|p| &*p.id)
            .collect();
        let mut composed = format!("system: {}", system_parts.len());
        if let Some(last) = system_parts.last() {
            let _ = write!(composed, " parts, ends with {last}");
        }
        if !user_parts.is_empty() {
            let _ = write!(composed, "; user: {}", user_parts.join(", "));
        }
        rows.push(vec![
            c.target.clone(),
            format!("{system_tokens} tok"),
            format!("{prefix_tokens} tok"),
            format!("{user_tokens} tok"),
            composed,
        ]);
    }
    out.push_str(&format_rows(&rows, &[1, 2, 3]));
    let shed: Vec<(&str, &promptstack::compose::shedding::Shed)> = compositions
        .iter()
        .flat_map(|c| c.shed.iter().map(move |s| (c.target.as_str(), s)))
        .collect();
    if !shed.is_empty() {
        let _ = writeln!(out, "\nshed by a token budget");
        let mut rows = vec![["target", "id", "tokens", "why"].map(String::from).to_vec()];
        for (target, s) in shed {
            rows.push(vec![
                target.to_owned(),
                s.id.to_string(),
                s.tokens.to_string(),
                s.reason.clone(),
            ]);
        }
        out.push_str(&format_rows(&rows, &[2]));
    }
    let shown: Vec<_> = assembly.diagnostics().collect();
    let _ = writeln!(
        out,
        "\ndiagnostics  {}",
        if shown.is_empty() {
            "none".to_owned()
        } else {
            summary(&shown)
        }
    );
    for diagnostic in shown {
        let _ = writeln!(out, "{diagnostic}");
    }
    out
}

fn summary(diagnostics: &[&promptstack::diagnostic::Diagnostic]) -> String {
    let count = |s: Severity| diagnostics.iter().filter(|d| d.severity == s).count();
    format!(
        "{} error(s), {} warning(s), {} info",
        count(Severity::Error),
        count(Severity::Warning),
        count(Severity::Info)
    )
}

/// Left-aligned columns (right-aligned for the indices in `right`), two spaces apart.
fn format_rows(rows: &[Vec<String>], right: &[usize]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c].saturating_sub(cell.chars().count());
            if c > 0 {
                line.push_str("  ");
            }
            if right.contains(&c) {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            } else {
                line.push_str(cell);
                if c + 1 < row.len() {
                    line.push_str(&" ".repeat(pad));
                }
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
