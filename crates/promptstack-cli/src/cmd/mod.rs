//! One module per subcommand: each has an `Args` struct and a `run` function.

pub mod bench;
pub mod cache_sim;
pub mod capabilities;
pub mod cite;
pub mod diff;
pub mod eval;
pub mod explain;
pub mod fence;
pub mod keys;
pub mod lint;
pub mod mcp_args;
pub mod render;
pub mod request;
pub mod schema;
pub mod serve;
pub mod tools;

/// The inputs of the commands over one send: the spec, the send, the workspace it runs in and
/// the MCP servers discovered into it.
#[derive(Debug, clap::Args)]
pub struct SendInput {
    /// The agent spec (TOML, or JSON if the name ends in .json).
    spec: std::path::PathBuf,
    /// The send context (JSON).
    #[arg(long)]
    send: std::path::PathBuf,
    #[command(flatten)]
    workspace: crate::input::Workspace,
    #[command(flatten)]
    mcp: mcp_args::McpArgs,
}

impl SendInput {
    /// The agent, and the send read for it with the workspace applied and the MCP servers
    /// discovered.
    fn read(&self) -> anyhow::Result<(promptstack::Agent, promptstack::SendContext)> {
        let agent = crate::input::agent(&self.spec)?;
        let mut send = crate::input::send_in(&self.send, &self.workspace, &agent)?;
        self.mcp.discover_into(&mut send)?;
        Ok((agent, send))
    }
}

/// The model line of the human-readable reports: `Name (provider/id, tools: native|none)`.
fn model_summary(model: &promptstack::context::ModelDescriptor) -> String {
    format!(
        "{} ({}/{}, tools: {})",
        model.name,
        model.provider,
        model.id,
        if model.can_use_tools() {
            "native"
        } else {
            "none"
        }
    )
}
