//! `--mcp SERVERS.json` and `--mcp-timeout`, shared by the commands that show what a send offers
//! (`tools`, `render`, `explain`): the servers are contacted now and their listings replace the
//! send's listings of the same name.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use promptstack::SendContext;
use promptstack::mcp::{DiscoveryConfig, McpServerConfig};
use promptstack::tools::mcp::McpServerListing;

use crate::exit::bad_input;
use crate::input;

/// Live MCP servers to discover tools from for this send.
#[derive(Debug, Clone, clap::Args)]
pub struct McpArgs {
    /// MCP servers to discover tools from, contacted now: a JSON array of
    /// `{"name", "transport": "stdio", "command", "args", "env", "cwd"}` or
    /// `{"name", "transport": "streamable_http", "url", "headers"}`. A server of the same name
    /// replaces the send's listing.
    #[arg(long, value_name = "SERVERS.json")]
    pub mcp: Option<PathBuf>,
    /// Seconds each MCP server may take to start and complete the handshake, and again to list
    /// its tools (more than 0, at most 3600).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub mcp_timeout: f64,
}

impl McpArgs {
    /// Checks the options, contacts the servers of `--mcp` (if given) and merges what they list
    /// into `send`.
    ///
    /// # Errors
    ///
    /// Bad input for a timeout out of range, or a servers file that cannot be read, is not a list
    /// of servers, or names one server twice. A server that cannot be reached is not an error: its
    /// listing says why it was skipped.
    pub fn discover_into(&self, send: &mut SendContext) -> anyhow::Result<()> {
        let timeout = self.timeout()?;
        let Some(path) = &self.mcp else {
            return Ok(());
        };
        let servers = servers(path)?;
        let config = DiscoveryConfig {
            connect_timeout: timeout,
            list_timeout: timeout,
            ..DiscoveryConfig::with_limits(input::limits())
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime for MCP discovery")?;
        let found = runtime.block_on(promptstack::mcp::discover_all(&servers, &config));
        merge_listings(send, found);
        Ok(())
    }

    fn timeout(&self) -> anyhow::Result<Duration> {
        let max = promptstack::limits::MCP_TIMEOUT_MAX_SECONDS;
        Some(self.mcp_timeout)
            .filter(|s| *s > 0.0 && *s <= max as f64)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .ok_or_else(|| {
                bad_input(anyhow::anyhow!(
                    "--mcp-timeout must be more than 0 and at most {max} seconds, got {}",
                    self.mcp_timeout
                ))
            })
    }
}

fn servers(path: &Path) -> anyhow::Result<Vec<McpServerConfig>> {
    let bytes = input::read(path, promptstack::limits::InputKind::McpServers)?;
    let servers: Vec<McpServerConfig> = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a list of MCP servers", path.display()))
        .map_err(bad_input)?;
    let mut names = std::collections::HashSet::new();
    for server in &servers {
        if !names.insert(server.name.as_str()) {
            return Err(bad_input(anyhow::anyhow!(
                "{} names MCP server `{}` twice",
                path.display(),
                server.name
            )));
        }
    }
    Ok(servers)
}

/// Discovered listings replace the send's listings of the same server; the others are kept.
fn merge_listings(send: &mut SendContext, found: Vec<McpServerListing>) {
    send.mcp_servers
        .retain(|kept| !found.iter().any(|f| f.server == kept.server));
    send.mcp_servers.extend(found);
}
