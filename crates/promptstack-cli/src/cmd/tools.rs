//! `promptstack tools`: the toolset one send resolves to, with every tool's origin and the reason it
//! is offered or left out. MCP servers given with `--mcp` are really contacted.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::report::{McpServerRow, ToolRow};
use promptstack::{Agent, SendContext};

use crate::input;

/// Show the toolset a send resolves to: every tool offered (in canonical order) or left out, its
/// origin (local or an MCP server), why, and its budget class; then the MCP servers and what
/// discovery found on each.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent spec (TOML, or JSON if the name ends in .json).
    spec: PathBuf,
    /// The send context (JSON). MCP listings it already carries (`mcp_servers`) are used as given.
    #[arg(long)]
    send: PathBuf,
    #[command(flatten)]
    mcp: crate::cmd::mcp_args::McpArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    let mut send = input::send(&args.send, &agent)?;
    args.mcp.discover_into(&mut send)?;
    let assembly = agent.assemble(&send).context("assembly failed")?;
    let report = promptstack::command::tools(&promptstack::command::Assembled {
        agent: &agent,
        send: &send,
        assembly: &assembly,
    })
    .value;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        // Server names, tool names and failures come from MCP servers: nothing they hold may
        // reach the terminal raw.
        let table = table(&agent, &send, &report.tools, &report.mcp_servers);
        print!("{}", promptstack::diagnostic::terminal_safe(&table));
    }
    Ok(ExitCode::SUCCESS)
}

fn table(agent: &Agent, send: &SendContext, rows: &[ToolRow], servers: &[McpServerRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "agent  {}", agent.name());
    let _ = writeln!(out, "model  {}", super::model_summary(&send.model));
    for (title, offered) in [("offered, in canonical order", true), ("left out", false)] {
        let section: Vec<&ToolRow> = rows.iter().filter(|r| r.offered == offered).collect();
        let _ = writeln!(out, "\n{title} ({})", section.len());
        if section.is_empty() {
            continue;
        }
        let name_width = section
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(0)
            .max(4);
        let origins: Vec<String> = section.iter().map(|r| origin(r)).collect();
        let origin_width = origins.iter().map(String::len).max().unwrap_or(0).max(6);
        let _ = writeln!(
            out,
            "{:name_width$}  {:origin_width$}  {:6}  why",
            "name", "origin", "budget"
        );
        for (row, origin) in section.iter().zip(&origins) {
            let _ = writeln!(
                out,
                "{:name_width$}  {:origin_width$}  {:6}  {}",
                row.name,
                origin,
                row.budget.as_deref().unwrap_or("-"),
                row.why
            );
        }
    }
    if !servers.is_empty() {
        let _ = writeln!(out, "\nMCP servers ({})", servers.len());
        let width = servers.iter().map(|s| s.name.len()).max().unwrap_or(0);
        for server in servers {
            match &server.failure {
                None => {
                    let _ = writeln!(
                        out,
                        "{:width$}  ready    {} tools",
                        server.name, server.tools
                    );
                }
                Some(failure) => {
                    // One line per server: a quoted stderr tail may span many.
                    let failure = failure.split_whitespace().collect::<Vec<_>>().join(" ");
                    let _ = writeln!(
                        out,
                        "{:width$}  skipped  {failure} (skipped for this send; the stable half does not change)",
                        server.name
                    );
                }
            }
        }
    }
    out
}

fn origin(row: &ToolRow) -> String {
    match &row.mcp_tool {
        None => row.origin.clone(),
        Some(tool) => format!("mcp {}/{tool}", row.origin),
    }
}
