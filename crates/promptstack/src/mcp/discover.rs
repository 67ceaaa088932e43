//! Connecting to one MCP server, listing its tools, and turning every failure into a diagnostic.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::join_all;
use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{
    StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use tokio::io::AsyncReadExt;

use crate::limits::Limit;

use super::{
    DiscoveryConfig, McpFailure, McpFailureStage, McpServerConfig, McpServerListing,
    McpServerStatus, McpTool, McpTransport,
};

/// How much of a child's stderr a diagnostic quotes (its end, where the reason usually is).
const STDERR_TAIL: usize = 1024;

/// Discovers every server concurrently; the listings come back in the order of `servers`.
pub async fn discover_all(
    servers: &[McpServerConfig],
    config: &DiscoveryConfig,
) -> Vec<McpServerListing> {
    join_all(servers.iter().map(|server| discover_server(server, config))).await
}

/// Starts or contacts one server, performs the MCP handshake and lists all its tools.
///
/// Never fails: a problem becomes [`McpServerStatus::Failed`] with the failing step, whether it
/// timed out, and for stdio servers the end of what the process wrote to stderr. A started child
/// process is stopped before this returns (or killed if the future is dropped).
pub async fn discover_server(
    server: &McpServerConfig,
    config: &DiscoveryConfig,
) -> McpServerListing {
    let mut title = None;
    let status = match &server.transport {
        McpTransport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut process = tokio::process::Command::new(command);
            process.args(args).envs(env).kill_on_drop(true);
            if let Some(cwd) = cwd {
                process.current_dir(cwd);
            }
            match TokioChildProcess::builder(process)
                .stderr(Stdio::piped())
                .spawn()
            {
                Err(e) => failed(
                    McpFailureStage::Start,
                    false,
                    format!("cannot start `{command}`: {e}"),
                ),
                Ok((transport, stderr)) => {
                    let captured = Arc::new(Mutex::new(Vec::new()));
                    if let Some(mut stderr) = stderr {
                        let captured = Arc::clone(&captured);
                        // Keep draining stderr so a chatty server never blocks on a full pipe.
                        tokio::spawn(async move {
                            let mut buffer = [0u8; 4096];
                            while let Ok(n) = stderr.read(&mut buffer).await {
                                if n == 0 {
                                    break;
                                }
                                let mut captured =
                                    captured.lock().unwrap_or_else(PoisonError::into_inner);
                                captured.extend_from_slice(&buffer[..n]);
                                let excess = captured.len().saturating_sub(STDERR_TAIL);
                                captured.drain(..excess);
                            }
                        });
                    }
                    match list_tools(transport, config).await {
                        Ok((found, tools)) => {
                            title = found;
                            McpServerStatus::Ready { tools }
                        }
                        Err(mut failure) => {
                            // Give the process a moment to flush its last words.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            let tail = captured.lock().unwrap_or_else(PoisonError::into_inner);
                            let tail = String::from_utf8_lossy(&tail);
                            let tail = tail.trim();
                            if !tail.is_empty() {
                                failure.message.push_str("; stderr: ");
                                failure.message.push_str(tail);
                            }
                            McpServerStatus::Failed { failure }
                        }
                    }
                }
            }
        }
        McpTransport::StreamableHttp { url, headers } => match http_config(url, headers) {
            Err(message) => failed(McpFailureStage::Start, false, message),
            Ok(http) => {
                match list_tools(StreamableHttpClientTransport::from_config(http), config).await {
                    Ok((found, tools)) => {
                        title = found;
                        McpServerStatus::Ready { tools }
                    }
                    Err(failure) => McpServerStatus::Failed { failure },
                }
            }
        },
    };
    McpServerListing {
        server: server.name.clone(),
        title,
        status,
    }
}

fn failed(stage: McpFailureStage, timed_out: bool, message: String) -> McpServerStatus {
    McpServerStatus::Failed {
        failure: McpFailure {
            stage,
            timed_out,
            message,
        },
    }
}

fn http_config(
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut custom = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("invalid header name `{name}`: {e}"))?;
        let value = http::HeaderValue::from_str(value)
            .map_err(|e| format!("invalid value for header `{name}`: {e}"))?;
        custom.insert(name, value);
    }
    Ok(StreamableHttpClientTransportConfig::with_uri(url).custom_headers(custom))
}

async fn list_tools<T, E, A>(
    transport: T,
    config: &DiscoveryConfig,
) -> Result<(Option<String>, Vec<McpTool>), McpFailure>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client: RunningService<RoleClient, ()> =
        match tokio::time::timeout(config.connect_timeout, ().serve(transport)).await {
            Err(_) => {
                return Err(McpFailure {
                    stage: McpFailureStage::Connect,
                    timed_out: true,
                    message: format!(
                        "no answer to the mcp handshake within {}",
                        seconds(config.connect_timeout)
                    ),
                });
            }
            Ok(Err(e)) => {
                return Err(McpFailure {
                    stage: McpFailureStage::Connect,
                    timed_out: false,
                    message: format!("mcp handshake failed: {e}"),
                });
            }
            Ok(Ok(client)) => client,
        };
    let title = client.peer_info().and_then(|info| {
        info.server_info
            .as_ref()
            .and_then(|server| server.title.as_deref())
            .and_then(display_title)
    });
    // rmcp keeps listed pages in a response cache (hundreds of entries, kept as long as the
    // server asks); discovery reads each page once, so nothing is kept beyond what it returns.
    client
        .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
        .await;
    let listed = tokio::time::timeout(config.list_timeout, list_pages(&client, config)).await;
    // Close the session either way; a server that does not close in time is dropped (and a child
    // process killed) when `client` goes out of scope.
    let _ = tokio::time::timeout(config.list_timeout, client.cancel()).await;
    match listed {
        Err(_) => Err(McpFailure {
            stage: McpFailureStage::List,
            timed_out: true,
            message: format!(
                "tools/list did not complete within {}",
                seconds(config.list_timeout)
            ),
        }),
        Ok(result) => result.map(|tools| (title, tools)),
    }
}

/// A server's title made fit for a UI label: its first line, without control characters,
/// trimmed, at most 100 characters; `None` when nothing is left.
fn display_title(title: &str) -> Option<String> {
    const MAX_CHARS: usize = 100;
    let line = title.lines().next().unwrap_or_default();
    let clean: String = line
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_CHARS)
        .collect();
    let clean = clean.trim();
    (!clean.is_empty()).then(|| clean.to_owned())
}

/// Lists every page of tools, stopping at the first page, tool or byte beyond the config's caps:
/// a server that always returns a next cursor, or lists without end, costs at most the caps.
async fn list_pages(
    client: &RunningService<RoleClient, ()>,
    config: &DiscoveryConfig,
) -> Result<Vec<McpTool>, McpFailure> {
    let over = |what: String| McpFailure {
        stage: McpFailureStage::List,
        timed_out: false,
        message: what,
    };
    let mut tools = Vec::new();
    let mut bytes = 0u64;
    let mut cursor = None;
    for page in 0.. {
        if page == config.max_pages {
            return Err(over(format!(
                "tools/list was still returning a next cursor after {} pages (the `{}` limit)",
                config.max_pages,
                Limit::McpPages
            )));
        }
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
        let listed = client.list_tools(Some(params)).await.map_err(|e| {
            over(format!(
                "tools/list failed: {}",
                promptstack_core::diagnostic::quote(&e.to_string())
            ))
        })?;
        for tool in listed.tools {
            if tools.len() as u64 == config.max_tools {
                return Err(over(format!(
                    "the server lists more than {} tools (the `{}` limit)",
                    config.max_tools,
                    Limit::McpTools
                )));
            }
            let tool = McpTool {
                name: tool.name.into_owned(),
                description: tool.description.map(|d| d.into_owned()),
                input_schema: Arc::new(serde_json::Value::Object(Arc::unwrap_or_clone(
                    tool.input_schema,
                ))),
            };
            bytes = bytes.saturating_add(tool_bytes(&tool));
            if bytes > config.max_bytes {
                return Err(over(format!(
                    "the server's tool definitions exceed {} (the `{}` limit)",
                    Limit::McpBytes.format_value(config.max_bytes),
                    Limit::McpBytes
                )));
            }
            tools.push(tool);
        }
        match listed.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    Ok(tools)
}

/// The size of a tool's definition: its name, description and schema as JSON.
fn tool_bytes(tool: &McpTool) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, &*tool.input_schema);
    count.0 + tool.name.len() as u64 + tool.description.as_ref().map_or(0, |d| d.len() as u64)
}

fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}
