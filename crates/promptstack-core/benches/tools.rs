//! Namespacing and merging the tools of many MCP servers (discovery excluded), and resolving a
//! whole send's toolset with them through the assembly.

// The assembly bench reads the chat-assistant example from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use promptstack_core::tools::mcp::{McpServerListing, McpServerStatus, McpTool, merge_mcp_tools};
use promptstack_core::tools::naming::namespace_mcp_tools;

/// `servers` listings of `tools` tools each; every other server name sanitises like its neighbour
/// (`srv.3` and `srv_3`), so half the names need a hash suffix.
fn listings(servers: usize, tools: usize) -> Vec<McpServerListing> {
    (0..servers)
        .map(|s| McpServerListing {
            server: if s % 2 == 0 { format!("srv.{}", s / 2) } else { format!("srv_{}", s / 2) },
            title: None,
            status: McpServerStatus::Ready {
                tools: (0..tools)
                    .map(|t| McpTool {
                        name: format!("tool_number_{t}"),
                        description: Some(format!("Does thing {t}.")),
                        input_schema: std::sync::Arc::new(serde_json::json!({
                            "type": "object",
                            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                            "required": ["query"]
                        })),
                    })
                    .collect(),
            },
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("mcp_tools");
    let local = ["search", "fetch_content", "skill", "srv_0_tool_number_0"];
    for (servers, tools) in [(2usize, 10usize), (10, 50), (20, 100)] {
        let listings = listings(servers, tools);
        let label = format!("{servers}x{tools}");
        group.bench_with_input(
            BenchmarkId::new("namespace", &label),
            &listings,
            |b, listings| {
                let pairs: Vec<(&str, &str)> = listings
                    .iter()
                    .flat_map(|l| match &l.status {
                        McpServerStatus::Ready { tools } => tools
                            .iter()
                            .map(|t| (l.server.as_str(), t.name.as_str()))
                            .collect(),
                        McpServerStatus::Failed { .. } => Vec::new(),
                    })
                    .collect();
                b.iter(|| namespace_mcp_tools(black_box(pairs.iter().copied()), local));
            },
        );
        group.bench_with_input(
            BenchmarkId::new("merge", &label),
            &listings,
            |b, listings| {
                b.iter(|| merge_mcp_tools(black_box(listings), local));
            },
        );
    }
    group.finish();
}

/// A warm send of the chat-assistant example (stable part reused), without MCP servers and with
/// 10 servers × 50 tools: the difference is what resolving the MCP tools into the toolset, the
/// `mcp` root and the MCP note costs per send.
fn assemble_with_mcp(c: &mut Criterion) {
    use promptstack_core::{Agent, SendContext, SpecFormat};
    let root =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let agent = Agent::from_source(
        &std::fs::read(root.join("agent.toml")).unwrap(),
        "agent.toml",
        SpecFormat::Toml,
    )
    .unwrap();
    let send = SendContext::from_json(
        &std::fs::read(root.join("sends/research.json")).unwrap(),
        "research.json",
    )
    .unwrap();
    let mut group = c.benchmark_group("resolve_toolset");
    group.bench_function("assemble/no_mcp", |b| {
        b.iter(|| agent.assemble(black_box(&send)).unwrap())
    });
    let mut with_mcp = send.clone();
    with_mcp.mcp_servers = listings(10, 50);
    let assembly = agent.assemble(&with_mcp).unwrap();
    assert_eq!(assembly.toolset().tools().len(), 9 + 500);
    group.bench_function("assemble/mcp_10x50", |b| {
        b.iter(|| agent.assemble(black_box(&with_mcp)).unwrap())
    });
    let stable = agent.assemble(&send).unwrap();
    let local: Vec<&str> = agent.spec().tools.iter().map(|t| t.name.as_str()).collect();
    group.bench_function("toolset_with_mcp/10x50", |b| {
        b.iter(|| {
            stable.toolset().with_mcp(
                black_box(&with_mcp.mcp_servers),
                local.iter().copied(),
                true,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench, assemble_with_mcp);
criterion_main!(benches);
