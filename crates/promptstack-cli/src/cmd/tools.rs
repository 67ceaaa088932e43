//! `promptstack tools`: the toolset one send resolves to, with every tool's origin and the reason it
//! is offered or left out. MCP servers given with `--mcp` are really contacted.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use promptstack::spec::{ResultTrust, SettingRequirement, ToolSpec};
use promptstack::tools::mcp::{McpServerListing, McpServerStatus};
use promptstack::toolset::{Tool, ToolOrigin};
use promptstack::{Agent, Assembly, SendContext};
use serde::Serialize;

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

#[derive(Serialize)]
struct Output<'a> {
    agent: &'a str,
    tools: Vec<Row>,
    mcp_servers: Vec<ServerRow>,
}

#[derive(Serialize)]
struct Row {
    name: String,
    /// `local`, or the MCP server's name.
    origin: String,
    /// The tool's own name on its MCP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    mcp_tool: Option<String>,
    offered: bool,
    why: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<String>,
    cacheable: bool,
    untrusted_results: bool,
    /// The tool's name for people, its UI group and its icon key, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    icon: Option<String>,
}

#[derive(Serialize)]
struct ServerRow {
    name: String,
    ready: bool,
    tools: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let agent = input::agent(&args.spec)?;
    let mut send = input::send(&args.send, &agent)?;
    args.mcp.discover_into(&mut send)?;
    let assembly = agent.assemble(&send).context("assembly failed")?;
    let rows = rows(&agent, &assembly);
    let servers = server_rows(&promptstack::tools::mcp::reconcile_listings(
        &send.mcp_servers,
    ));
    if args.json {
        let output = Output {
            agent: agent.name(),
            tools: rows,
            mcp_servers: servers,
        };
        println!("{}", serde_json::to_string_pretty(&output)?);
    } else {
        // Server names, tool names and failures come from MCP servers: nothing they hold may
        // reach the terminal raw.
        let table = table(&agent, &send, &rows, &servers);
        print!("{}", promptstack::diagnostic::terminal_safe(&table));
    }
    Ok(ExitCode::SUCCESS)
}

fn rows(agent: &Agent, assembly: &Assembly) -> Vec<Row> {
    let toolset = assembly.toolset();
    let spec_of = |name: &str| agent.spec().tools.iter().find(|t| t.name == name);
    let mut rows: Vec<Row> = toolset
        .tools()
        .iter()
        .map(|tool| {
            let why = match &tool.origin {
                ToolOrigin::Local => spec_of(&tool.name).map_or_else(String::new, offered_because),
                ToolOrigin::Mcp { server, .. } => format!("listed by MCP server `{server}`"),
            };
            row(tool, true, why)
        })
        .collect();
    for excluded in toolset.excluded() {
        let Some(spec) = spec_of(&excluded.name) else {
            continue;
        };
        rows.push(Row {
            name: excluded.name.clone(),
            origin: "local".into(),
            mcp_tool: None,
            offered: false,
            why: excluded.reason.clone(),
            budget: spec.budget.clone(),
            cacheable: spec.cacheable,
            untrusted_results: spec.results == ResultTrust::Untrusted,
            display_name: spec.display_name.clone(),
            category: spec.category.clone(),
            icon: spec.icon.clone(),
        });
    }
    for withheld in toolset.withheld_mcp_tools() {
        let origin = toolset.mcp_origin(&withheld.name);
        rows.push(Row {
            name: withheld.name.clone(),
            origin: origin.map_or_else(String::new, |o| o.server.clone()),
            mcp_tool: origin.map(|o| o.tool.clone()),
            offered: false,
            why: withheld.reason.clone(),
            budget: None,
            cacheable: false,
            untrusted_results: true,
            display_name: None,
            category: None,
            icon: None,
        });
    }
    rows
}

fn row(tool: &Tool, offered: bool, why: String) -> Row {
    let (origin, mcp_tool) = match &tool.origin {
        ToolOrigin::Local => ("local".to_owned(), None),
        ToolOrigin::Mcp { server, tool } => (server.clone(), Some(tool.clone())),
    };
    Row {
        name: tool.name.clone(),
        origin,
        mcp_tool,
        offered,
        why,
        budget: tool.budget.clone(),
        cacheable: tool.cacheable,
        untrusted_results: tool.results == ResultTrust::Untrusted,
        display_name: tool.display_name.clone(),
        category: tool.category.clone(),
        icon: tool.icon.clone(),
    }
}

/// Why an offered local tool is offered: each requirement that held, and its gate.
fn offered_because(spec: &ToolSpec) -> String {
    let mut reasons = Vec::new();
    let requires = &spec.requires;
    if let Some(integration) = &requires.integration {
        reasons.push(format!(
            "integration `{integration}` is connected and enabled"
        ));
    }
    if let Some(setting) = &requires.setting {
        reasons.push(match setting {
            SettingRequirement::WithDefault { default: true, .. } => {
                format!("setting `{}` is on (or unset)", setting.name())
            }
            _ => format!("setting `{}` is on", setting.name()),
        });
    }
    if requires.skills {
        reasons.push("skills are enabled".into());
    }
    if requires.project_siblings {
        reasons.push("the project has other threads".into());
    }
    if let Some(when) = &spec.when {
        reasons.push(format!("gate true: {when}"));
    }
    if reasons.is_empty() {
        "always offered to a model that can call tools".into()
    } else {
        reasons.join("; ")
    }
}

fn server_rows(listings: &[McpServerListing]) -> Vec<ServerRow> {
    let mut rows: Vec<ServerRow> = listings
        .iter()
        .map(|listing| match &listing.status {
            McpServerStatus::Ready { tools } => ServerRow {
                name: listing.server.clone(),
                ready: true,
                tools: tools.len(),
                failure: None,
            },
            McpServerStatus::Failed { failure } => ServerRow {
                name: listing.server.clone(),
                ready: false,
                tools: 0,
                failure: Some(format!(
                    "{} {}: {}",
                    match failure.stage {
                        promptstack::tools::mcp::McpFailureStage::Start => "start",
                        promptstack::tools::mcp::McpFailureStage::Connect => "connect",
                        promptstack::tools::mcp::McpFailureStage::List => "list",
                        promptstack::tools::mcp::McpFailureStage::Conflict => "conflict",
                        _ => "discovery",
                    },
                    if failure.timed_out {
                        "timed out"
                    } else {
                        "failed"
                    },
                    failure.message
                )),
            },
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

fn table(agent: &Agent, send: &SendContext, rows: &[Row], servers: &[ServerRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "agent  {}", agent.name());
    let _ = writeln!(out, "model  {}", super::model_summary(&send.model));
    for (title, offered) in [("offered, in canonical order", true), ("left out", false)] {
        let section: Vec<&Row> = rows.iter().filter(|r| r.offered == offered).collect();
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

fn origin(row: &Row) -> String {
    match &row.mcp_tool {
        None => row.origin.clone(),
        Some(tool) => format!("mcp {}/{tool}", row.origin),
    }
}
