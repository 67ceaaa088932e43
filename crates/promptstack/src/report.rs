//! Reports as data: what `explain`, `lint` and `tools` show, for every front end that prints or
//! returns them (the command line's `--json`, the server, the language packages).
//!
//! Both are plain serialisable structs built from an [`Agent`] and its assemblies, so a report
//! printed by the command line and one returned to an application cannot differ.

use promptstack_core::compose::Composition;
use promptstack_core::diagnostic::{Diagnostic, Severity};
use promptstack_core::inject::InjectionPreview;
use promptstack_core::provider::{CachePlan, Conversation, Format, RequestOptions, Rules};
use promptstack_core::spec::{ResultTrust, SettingRequirement, ToolSpec};
use promptstack_core::tokens::{Counting, Encoding, TokenCount};
use promptstack_core::tools::mcp::{
    McpFailureStage, McpServerListing, McpServerStatus, reconcile_listings,
};
use promptstack_core::toolset::{Tool, ToolOrigin};
use promptstack_core::{Agent, Assembly, Error, SendContext};
use serde::Serialize;

/// An explained assembly: the assembly JSON, what each target composes with its token counts
/// (and the blocks its token budget shed, with the reason), a stage's injectable blocks, and for a
/// chosen provider format the cache breakpoints each target's request would carry. Serialised, it
/// is the output of `promptstack explain --json`.
#[derive(Debug, Serialize)]
pub struct Explanation<'a> {
    /// The agent's name.
    pub agent: &'a str,
    /// The assembly, in the assembly JSON format.
    pub assembly: &'a Assembly,
    /// Each composed target, in the order asked for.
    pub targets: Vec<TargetReport>,
    /// A stage's injectable blocks with their exact text and state (removed ones included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub injections: Vec<InjectionPreview>,
    /// For a chosen provider format: each target's planned cache breakpoints, in target order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub breakpoints: Vec<PlannedBreakpoints>,
}

/// The cache plan of one target's provider request for the send: where its breakpoints go,
/// which stability boundaries were left without one and why, and what it costs.
#[derive(Debug, Serialize)]
pub struct PlannedBreakpoints {
    /// The target.
    pub target: String,
    /// The request format planned for.
    pub format: Format,
    /// The model id the request goes to.
    pub model: String,
    /// The plan: breakpoints, skipped boundaries, costs.
    pub plan: CachePlan,
}

/// The provider format (and rules table) to plan cache breakpoints for in [`explain`].
#[derive(Debug, Clone, Copy)]
pub struct BreakpointFormat<'r> {
    /// The request format.
    pub format: Format,
    /// The rules table to plan with ([`Rules::bundled`] unless the caller has its own).
    pub rules: &'r Rules,
}

/// One composed target with the token counts of its two texts.
#[derive(Debug, Serialize)]
pub struct TargetReport {
    /// The composition.
    #[serde(flatten)]
    pub composition: Composition,
    /// Tokens of the system text.
    pub system_tokens: TokenCount,
    /// Tokens of the user-slot text.
    pub user_tokens: TokenCount,
}

/// Explains `assembly` (assembled from `send`): `target` alone, or every target of the spec;
/// with `format`, also the cache breakpoints of each target's request for the send (a new
/// conversation whose only message is the send's `user_message`).
///
/// # Errors
///
/// [`ErrorKind::NotFound`](promptstack_core::ErrorKind::NotFound) for an unknown target, any
/// error of composing a target or previewing the stage's injections, and with `format` any error
/// of building the request ([`ErrorKind::Request`](promptstack_core::ErrorKind::Request) for a
/// send without a `user_message`, [`ErrorKind::Rules`](promptstack_core::ErrorKind::Rules) for a
/// model the rules do not cover).
pub fn explain<'a>(
    agent: &'a Agent,
    send: &SendContext,
    assembly: &'a Assembly,
    target: Option<&str>,
    format: Option<BreakpointFormat<'_>>,
) -> Result<Explanation<'a>, Error> {
    let counting = assembly.counting();
    let report = |composition: Composition| TargetReport {
        system_tokens: agent.count_tokens(counting, &composition.system),
        user_tokens: agent.count_tokens(counting, &composition.user),
        composition,
    };
    let targets = match target {
        Some(target) => vec![report(assembly.compose(target)?)],
        None => assembly
            .target_ids()
            .map(|t| assembly.compose(t).map(report))
            .collect::<Result<_, _>>()?,
    };
    let breakpoints = match format {
        None => Vec::new(),
        Some(planned) => targets
            .iter()
            .map(|t| plan_breakpoints(agent, assembly, &t.composition.target, planned))
            .collect::<Result<_, _>>()?,
    };
    Ok(Explanation {
        agent: agent.name(),
        assembly,
        targets,
        injections: agent.preview_injections(send)?,
        breakpoints,
    })
}

/// Plans the cache breakpoints of `target`'s request for the send `assembly` was built from, in
/// one format.
///
/// # Errors
///
/// As [`Agent::request`].
pub fn plan_breakpoints(
    agent: &Agent,
    assembly: &Assembly,
    target: &str,
    format: BreakpointFormat<'_>,
) -> Result<PlannedBreakpoints, Error> {
    let options = RequestOptions::new(format.format, target);
    let request = agent.request(assembly, &Conversation::default(), format.rules, &options)?;
    Ok(PlannedBreakpoints {
        target: request.target,
        format: request.format,
        model: request.model,
        plan: request.plan,
    })
}

/// One lint finding: a diagnostic, and the send it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The send the finding is about (absent for findings about the spec alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send: Option<String>,
    /// The finding.
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
}

/// Lints an agent, and checks it against each named send: the spec's own findings, then for
/// every send the findings of assembling it and of composing each target.
///
/// Token budgets are checked too: a target whose pinned blocks alone exceed its budget is an
/// `over-budget` error, and a block a budget sheds on some send is a `shed-block` warning (with
/// that send). Without sends, blocks with literal text are still held to their `max_tokens` and
/// targets to their budgets (counted as o200k, an estimate). An assembly or composition that
/// fails is a finding (`assembly-failed`, `compose-failed`), not an error, so one report covers
/// every send.
pub fn lint<'a>(
    agent: &Agent,
    sends: impl IntoIterator<Item = (&'a str, &'a SendContext)>,
) -> Vec<Finding> {
    let spec_finding = |diagnostic| Finding {
        send: None,
        diagnostic,
    };
    let mut findings: Vec<Finding> = agent.lint().iter().cloned().map(spec_finding).collect();
    let mut checked = 0usize;
    for (name, send) in sends {
        checked += 1;
        let finding = |diagnostic| Finding {
            send: Some(name.to_owned()),
            diagnostic,
        };
        let assembly = match agent.assemble(send) {
            Ok(assembly) => assembly,
            Err(error) => {
                let mut diagnostic = Diagnostic::error("assembly-failed", error.to_string());
                if let Some(block) = error.block() {
                    diagnostic = diagnostic.subject(block);
                }
                findings.push(finding(diagnostic));
                continue;
            }
        };
        for diagnostic in assembly.diagnostics() {
            if diagnostic.severity > Severity::Info && !agent.lint().contains(diagnostic) {
                findings.push(finding(diagnostic.clone()));
            }
        }
        for target in assembly.target_ids() {
            match assembly.compose(target) {
                Ok(composition) => {
                    findings.extend(composition.diagnostics.into_iter().map(finding))
                }
                Err(error) => {
                    let diagnostic =
                        Diagnostic::error("compose-failed", error.to_string()).subject(target);
                    findings.push(finding(diagnostic));
                }
            }
        }
    }
    if checked == 0 {
        // Without a send, literal texts can still be held to their token limits (o200k estimate).
        let counting = Counting {
            encoding: Encoding::O200k,
            exact: false,
        };
        findings.extend(
            agent
                .literal_token_limits(counting)
                .into_iter()
                .chain(agent.pinned_over_budget(counting))
                .map(spec_finding),
        );
    }
    findings
}

/// The toolset one send resolves to: every tool offered (in canonical order) or left out, its
/// origin and why, then the MCP servers of the send and what discovery found on each. Serialised,
/// it is the output of `promptstack tools --json` and the `detail` of the server's `tools` answer.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ToolsReport {
    /// The agent's name.
    pub agent: String,
    /// The offered tools in canonical order, then the local tools left out, then the MCP tools
    /// withheld.
    pub tools: Vec<ToolRow>,
    /// The send's MCP servers, by name.
    pub mcp_servers: Vec<McpServerRow>,
}

/// One tool of a [`ToolsReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ToolRow {
    /// The name the model sees.
    pub name: String,
    /// `local`, or the MCP server's name.
    pub origin: String,
    /// The tool's own name on its MCP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mcp_tool: Option<String>,
    /// Whether the send offers it.
    pub offered: bool,
    /// Why it is offered (each requirement that held, and its gate) or left out.
    pub why: String,
    /// Its budget class, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Whether its results may be cached.
    pub cacheable: bool,
    /// Whether its results are untrusted (fenced before the model reads them).
    pub untrusted_results: bool,
    /// Its name for people, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Its UI group, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Its icon key, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

/// One MCP server of a [`ToolsReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct McpServerRow {
    /// The server's name.
    pub name: String,
    /// Whether discovery listed its tools.
    pub ready: bool,
    /// How many tools it listed.
    pub tools: usize,
    /// Why it is skipped for this send: the stage that failed, whether it timed out, the message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// Reports the toolset of `assembly` (assembled from `send`).
pub fn tools(agent: &Agent, send: &SendContext, assembly: &Assembly) -> ToolsReport {
    ToolsReport {
        agent: agent.name().to_owned(),
        tools: tool_rows(agent, assembly),
        mcp_servers: server_rows(&reconcile_listings(&send.mcp_servers)),
    }
}

fn tool_rows(agent: &Agent, assembly: &Assembly) -> Vec<ToolRow> {
    let toolset = assembly.toolset();
    let spec_of = |name: &str| agent.spec().tools.iter().find(|t| t.name == name);
    let mut rows: Vec<ToolRow> = toolset
        .tools()
        .iter()
        .map(|tool| {
            let why = match &tool.origin {
                ToolOrigin::Local => spec_of(&tool.name).map_or_else(String::new, offered_because),
                ToolOrigin::Mcp { server, .. } => format!("listed by MCP server `{server}`"),
            };
            offered_row(tool, why)
        })
        .collect();
    for excluded in toolset.excluded() {
        let Some(spec) = spec_of(&excluded.name) else {
            continue;
        };
        rows.push(ToolRow {
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
        rows.push(ToolRow {
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

fn offered_row(tool: &Tool, why: String) -> ToolRow {
    let (origin, mcp_tool) = match &tool.origin {
        ToolOrigin::Local => ("local".to_owned(), None),
        ToolOrigin::Mcp { server, tool } => (server.clone(), Some(tool.clone())),
    };
    ToolRow {
        name: tool.name.clone(),
        origin,
        mcp_tool,
        offered: true,
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

fn server_rows(listings: &[McpServerListing]) -> Vec<McpServerRow> {
    let mut rows: Vec<McpServerRow> = listings
        .iter()
        .map(|listing| match &listing.status {
            McpServerStatus::Ready { tools } => McpServerRow {
                name: listing.server.clone(),
                ready: true,
                tools: tools.len(),
                failure: None,
            },
            McpServerStatus::Failed { failure } => McpServerRow {
                name: listing.server.clone(),
                ready: false,
                tools: 0,
                failure: Some(format!(
                    "{} {}: {}",
                    match failure.stage {
                        McpFailureStage::Start => "start",
                        McpFailureStage::Connect => "connect",
                        McpFailureStage::List => "list",
                        McpFailureStage::Conflict => "conflict",
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
