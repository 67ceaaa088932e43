//! What MCP discovery found on each server, as data, and its merge into one namespaced toolset.
//!
//! Discovery itself is IO and lives in the `promptstack` facade (`promptstack::mcp`). It produces
//! one [`McpServerListing`] per configured server; the send context carries them, and
//! [`merge_mcp_tools`] turns them into provider-facing tools with the names of
//! [`namespace_mcp_tools`]. A server whose discovery failed
//! contributes no tools and is reported in [`McpToolset::skipped`] with its diagnostic.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use super::naming::{McpToolOrigin, NamespacedTools, namespace_mcp_tools};

/// A tool as an MCP server lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpTool {
    /// The tool's name on its server (not yet namespaced, not necessarily provider-safe).
    pub name: String,
    /// The server's description of the tool, if it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the tool's input, as the server sent it.
    // Always a JSON object; shared, so the tools built from a listing do not copy it.
    #[serde(deserialize_with = "object_schema")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub input_schema: Arc<serde_json::Value>,
}

/// The step at which discovery of a server failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpFailureStage {
    /// Starting the server process (stdio) or building the client (HTTP).
    Start,
    /// The MCP initialisation handshake.
    Connect,
    /// Listing the server's tools.
    List,
    /// The send lists the server's name more than once: none of those listings is used.
    Conflict,
}

/// Why a server contributed no tools to this send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpFailure {
    /// The step that failed.
    #[serde(deserialize_with = "crate::context::by_name")]
    pub stage: McpFailureStage,
    /// Whether the step ran out of time (rather than failing outright).
    pub timed_out: bool,
    /// A lowercase, human-readable explanation (for logs and the inspector, not for the model).
    pub message: String,
}

/// The outcome of discovering one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum McpServerStatus {
    /// The server answered; these are its tools, in the order it listed them.
    Ready {
        /// The listed tools.
        tools: Vec<McpTool>,
    },
    /// The server could not be used for this send.
    Failed {
        /// Why.
        failure: McpFailure,
    },
}

/// One configured MCP server and what discovery found on it.
// Not `deny_unknown_fields`: serde does not support it next to the flattened status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServerListing {
    /// The server's configured name; the prefix of its tools' names.
    pub server: String,
    /// The server's human-readable title, as it introduced itself (for the UI: its tools get
    /// their display names from it). Never shown to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What discovery found.
    #[serde(flatten)]
    pub status: McpServerStatus,
}

/// An MCP tool with its provider-facing name, borrowed from the listing it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct NamespacedMcpTool<'a> {
    /// The provider-facing name, `<server>_<tool>` made safe and unique.
    pub name: &'a str,
    /// The server and the tool's own name there.
    pub origin: &'a McpToolOrigin,
    /// The tool as the server listed it (description and input schema).
    pub tool: &'a McpTool,
    /// The title of the server that listed it, if the server gave one.
    pub title: Option<&'a str>,
}

/// A server that contributed no tools, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkippedMcpServer {
    /// The server's configured name.
    pub server: String,
    /// Why it was skipped.
    pub failure: McpFailure,
}

/// Every discovered MCP tool under its final name, plus the servers that were skipped.
///
/// Borrows the listings it was merged from, so merging copies no schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpToolset<'a> {
    /// Both-way name map (name → origin, origin → name), in canonical (name) order.
    pub names: NamespacedTools,
    /// The listed tool behind each entry of `names` and its server's title, in the same order.
    tools: Vec<(&'a McpTool, Option<&'a str>)>,
    /// Servers whose discovery failed, sorted by server name.
    pub skipped: Vec<SkippedMcpServer>,
}

impl<'a> McpToolset<'a> {
    /// The tools in canonical order (sorted by provider-facing name).
    pub fn tools(&self) -> impl ExactSizeIterator<Item = NamespacedMcpTool<'_>> {
        self.names
            .iter()
            .zip(&self.tools)
            .map(|((name, origin), &(tool, title))| NamespacedMcpTool {
                name,
                origin,
                tool,
                title,
            })
    }

    /// How many tools the toolset has.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the toolset has no tool.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

/// The server names listed more than once, with how many times each is.
fn conflicts(listings: &[McpServerListing]) -> BTreeMap<&str, usize> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for listing in listings {
        *counts.entry(listing.server.as_str()).or_default() += 1;
    }
    counts.retain(|_, n| *n > 1);
    counts
}

/// Why the listings of a server name given `times` times are all refused.
fn conflict_failure(server: &str, times: usize) -> McpFailure {
    McpFailure {
        stage: McpFailureStage::Conflict,
        timed_out: false,
        message: format!(
            "the send lists MCP server `{server}` {times} times; none of those listings is used"
        ),
    }
}

/// The listings as every consumer must see them: a server name listed more than once is
/// refused, whichever listing came first (so the result does not depend on order). All its
/// listings are replaced by one failed listing ([`McpFailureStage::Conflict`]) at the place of the
/// first. Borrows when no name repeats.
///
/// [`merge_mcp_tools`] applies the same rule, so the servers table (the `mcp` template root,
/// `promptstack tools`) built from these listings agrees with the tools offered.
pub fn reconcile_listings(listings: &[McpServerListing]) -> Cow<'_, [McpServerListing]> {
    let conflicts = conflicts(listings);
    if conflicts.is_empty() {
        return Cow::Borrowed(listings);
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::with_capacity(listings.len());
    for listing in listings {
        match conflicts.get(listing.server.as_str()) {
            None => out.push(listing.clone()),
            Some(&times) => {
                if seen.insert(listing.server.as_str()) {
                    out.push(McpServerListing {
                        server: listing.server.clone(),
                        title: None,
                        status: McpServerStatus::Failed {
                            failure: conflict_failure(&listing.server, times),
                        },
                    });
                }
            }
        }
    }
    Cow::Owned(out)
}

/// Merges discovery results into one toolset with provider-safe, order-independent names.
///
/// `taken` holds the names of local tools, which MCP tools must not shadow. A server name listed
/// more than once is refused as [`reconcile_listings`] says: none of its listings contributes
/// tools, and it is reported in [`McpToolset::skipped`] with a
/// [`Conflict`](McpFailureStage::Conflict) failure. If a server lists one tool name twice, the
/// entries are compared (description, then schema) and the smaller one is kept, so even that does
/// not depend on order.
pub fn merge_mcp_tools<'a>(
    listings: &'a [McpServerListing],
    taken: impl IntoIterator<Item = &'a str>,
) -> McpToolset<'a> {
    let mut listed: Vec<((&str, &str), &McpTool, Option<&str>)> = Vec::new();
    let mut skipped = Vec::new();
    let conflicts = conflicts(listings);
    for (server, times) in &conflicts {
        skipped.push(SkippedMcpServer {
            server: (*server).to_owned(),
            failure: conflict_failure(server, *times),
        });
    }
    for listing in listings {
        if conflicts.contains_key(listing.server.as_str()) {
            continue;
        }
        match &listing.status {
            McpServerStatus::Ready { tools } => listed.extend(tools.iter().map(|tool| {
                (
                    (listing.server.as_str(), tool.name.as_str()),
                    tool,
                    listing.title.as_deref(),
                )
            })),
            McpServerStatus::Failed { failure } => skipped.push(SkippedMcpServer {
                server: listing.server.clone(),
                failure: failure.clone(),
            }),
        }
    }
    skipped.sort_by(|a, b| a.server.cmp(&b.server));
    skipped.dedup_by(|a, b| a.server == b.server);
    listed.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| tool_order_key(a.1).cmp(&tool_order_key(b.1)))
            .then_with(|| a.2.cmp(&b.2))
    });
    listed.dedup_by(|later, first| later.0 == first.0);

    let names = namespace_mcp_tools(listed.iter().map(|(pair, _, _)| *pair), taken);
    let tools = names
        .iter()
        .map(|(_, origin)| {
            let at = listed
                .binary_search_by(|(pair, _, _)| {
                    (*pair).cmp(&(origin.server.as_str(), origin.tool.as_str()))
                })
                .expect("every named pair was listed");
            (listed[at].1, listed[at].2)
        })
        .collect();
    McpToolset {
        names,
        tools,
        skipped,
    }
}

/// A total order over duplicate listings of one tool name, used only to pick one deterministically.
fn tool_order_key(tool: &McpTool) -> (Option<&str>, String) {
    (tool.description.as_deref(), tool.input_schema.to_string())
}

/// Reads an input schema, which must be a JSON object.
fn object_schema<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Arc<serde_json::Value>, D::Error> {
    let map = serde_json::Map::<String, serde_json::Value>::deserialize(deserializer)?;
    Ok(Arc::new(serde_json::Value::Object(map)))
}
