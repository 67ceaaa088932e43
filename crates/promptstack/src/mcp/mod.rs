//! MCP discovery: contact the configured MCP servers and list their tools, with timeouts.
//!
//! Each server is reached over stdio (a child process) or streamable HTTP through the official
//! Rust SDK, `rmcp`. Discovery never fails as a whole: every server yields an
//! [`McpServerListing`], either its tools or a [`McpFailure`] saying which step failed and
//! whether it timed out. The listings are plain data for the core, where
//! [`merge_mcp_tools`](promptstack_core::tools::mcp::merge_mcp_tools) namespaces them.
//!
//! [`McpDirectory`] keeps the latest listing of every server for the next sends and retries
//! failed servers in the background. It spawns nothing itself: the application runs the future
//! returned by [`McpDirectory::retry_failed`] on the runtime it owns.
//!
//! All of this needs a tokio runtime with the IO and time drivers enabled.

mod directory;
mod discover;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use directory::{McpDirectory, RetryPolicy};
pub use discover::{discover_all, discover_server};
use promptstack_core::tools::mcp::{
    McpFailure, McpFailureStage, McpServerListing, McpServerStatus, McpTool,
};

/// One MCP server to discover tools from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServerConfig {
    /// The server's name: the prefix of its tools' names, and its key in diagnostics.
    pub name: String,
    /// How to reach it.
    #[serde(flatten)]
    pub transport: McpTransport,
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "snake_case", deny_unknown_fields)]
pub enum McpTransport {
    /// Start a child process and speak MCP over its stdin and stdout.
    Stdio {
        /// The program to run.
        command: String,
        /// Its arguments.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Environment variables set for it (on top of the inherited environment).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// Its working directory (the current one if absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<PathBuf>,
    },
    /// Speak MCP's streamable HTTP transport to a URL.
    StreamableHttp {
        /// The endpoint, e.g. `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Extra headers sent with every request (e.g. `Authorization`).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// Time and size limits of one server's discovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscoveryConfig {
    /// For starting the server and completing the MCP initialisation handshake.
    pub connect_timeout: Duration,
    /// For listing the tools (every page), once connected.
    pub list_timeout: Duration,
    /// The most pages of `tools/list` read: a server still returning a next cursor after them
    /// fails to list (see [`Limit::McpPages`](crate::limits::Limit::McpPages)).
    pub max_pages: u64,
    /// The most tools accepted from one server ([`Limit::McpTools`](crate::limits::Limit::McpTools)).
    pub max_tools: u64,
    /// The most bytes of tool definitions (names, descriptions and schemas as JSON) accepted
    /// from one server ([`Limit::McpBytes`](crate::limits::Limit::McpBytes)). One message is
    /// further bounded by the transport (16 MiB).
    pub max_bytes: u64,
}

impl DiscoveryConfig {
    /// The default timeouts with the MCP caps of `limits`.
    pub fn with_limits(limits: &crate::limits::Limits) -> Self {
        use crate::limits::Limit;
        Self {
            connect_timeout: crate::limits::MCP_TIMEOUT_DEFAULT,
            list_timeout: crate::limits::MCP_TIMEOUT_DEFAULT,
            max_pages: limits.get(Limit::McpPages),
            max_tools: limits.get(Limit::McpTools),
            max_bytes: limits.get(Limit::McpBytes),
        }
    }
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self::with_limits(&crate::limits::Limits::default())
    }
}
