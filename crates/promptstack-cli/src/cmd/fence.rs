//! `promptstack fence`: wrap stdin as untrusted content, or check that stdin is a valid fence.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::ValueEnum;
use promptstack::command::{self, FenceKind, FenceRequest};

use crate::exit::bad_input;

/// Wrap untrusted content read from stdin in a nonce fence, or check a wrapped text.
///
/// The nonce is drawn fresh from the operating system for every run. Marker-shaped text and
/// chat-template control tokens inside the content are defanged first.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Check that stdin is exactly one valid fence instead of wrapping it (exit 0 valid,
    /// 1 invalid, 2 unreadable input).
    #[arg(long, conflicts_with_all = ["kind", "origin", "tool", "max_bytes"])]
    check: bool,

    /// What the content is.
    #[arg(long, value_enum, required_unless_present = "check")]
    kind: Option<Kind>,

    /// Where it came from: a URL (page, selection, tool-result; reduced to scheme://host[:port]),
    /// a path (file) or mcp://SERVER/URI (mcp-resource). Optional for tool-result only.
    #[arg(long)]
    origin: Option<String>,

    /// The registry name of the tool that produced the content.
    #[arg(long)]
    tool: Option<String>,

    /// Cut the body (truncation note included) to at most N bytes before wrapping.
    #[arg(long, value_name = "N")]
    max_bytes: Option<usize>,
}

/// The content kinds, as named on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum Kind {
    /// A web page: `web_content`.
    Page,
    /// A selection on a page: `web_selection`.
    Selection,
    /// A file: `file_content`.
    File,
    /// An MCP resource: `mcp_resource`.
    McpResource,
    /// An untrusted tool result: `tool_result`.
    ToolResult,
}

impl From<Kind> for FenceKind {
    fn from(kind: Kind) -> Self {
        match kind {
            Kind::Page => FenceKind::Page,
            Kind::Selection => FenceKind::Selection,
            Kind::File => FenceKind::File,
            Kind::McpResource => FenceKind::McpResource,
            Kind::ToolResult => FenceKind::ToolResult,
        }
    }
}

/// Runs the subcommand.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let raw = crate::input::read_stdin(promptstack::limits::InputKind::Content)?;
    let text = String::from_utf8(raw)
        .map_err(|e| bad_input(anyhow::anyhow!("stdin is not UTF-8: {e}")))?;
    let request = FenceRequest {
        text,
        check: args.check,
        kind: args.kind.map(FenceKind::from),
        origin: args.origin,
        tool: args.tool,
        max_bytes: args.max_bytes,
    };
    let result = command::fence(&request).map_err(|error| match error {
        command::Error::FenceKindRequired => {
            bad_input(anyhow::anyhow!("--kind is required to wrap"))
        }
        command::Error::Provenance(e) => bad_input(e),
        command::Error::Fence(e) => anyhow::Error::new(e),
        other => anyhow::Error::new(other),
    })?;
    let mut stdout = std::io::stdout().lock();
    if let Some(valid) = result.valid {
        if valid {
            if let Some(info) = &result.fence {
                writeln!(
                    stdout,
                    "valid fence: kind {}, nonce {}, origin {}, tool {}, body {} bytes",
                    info.kind.marker_name(),
                    info.nonce,
                    info.origin.as_deref().unwrap_or("(none)"),
                    info.tool.as_deref().unwrap_or("(none)"),
                    info.body.len()
                )
                .context("cannot write stdout")?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        writeln!(stdout, "invalid fence:").context("cannot write stdout")?;
        for problem in result.problems.iter().flatten() {
            writeln!(stdout, "- {problem}").context("cannot write stdout")?;
        }
        return Ok(ExitCode::from(1));
    }
    writeln!(stdout, "{}", result.text.unwrap_or_default()).context("cannot write stdout")?;
    let defanged = result.defanged.unwrap_or_default();
    if defanged > 0 {
        eprintln!("note: defanged {defanged} marker(s) or control token(s)");
    }
    if let Some([kept, total]) = result.truncated {
        eprintln!("note: truncated to {kept} of {total} bytes");
    }
    Ok(ExitCode::SUCCESS)
}
