//! Namespacing and merging the tools of many MCP servers (discovery excluded).

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
            status: McpServerStatus::Ready {
                tools: (0..tools)
                    .map(|t| McpTool {
                        name: format!("tool_number_{t}"),
                        description: Some(format!("Does thing {t}.")),
                        input_schema: serde_json::json!({
                            "type": "object",
                            "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                            "required": ["query"]
                        })
                        .as_object()
                        .unwrap()
                        .clone(),
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

criterion_group!(benches, bench);
criterion_main!(benches);
