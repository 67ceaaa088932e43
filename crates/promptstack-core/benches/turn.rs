//! Turn overhead per tool call, excluding the executor (which answers immediately).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use promptstack_core::turn::{
    BudgetsConfig, ClassBudgetConfig, ExecuteFuture, ToolExecutor, ToolInvocation, ToolOutput,
    Turn, TurnConfig, TurnTool, UnfencedForTests,
};
use serde_json::json;

/// Answers at once with `sources` search results, each from a URL taken from the input.
struct Instant {
    sources: usize,
}

impl ToolExecutor for Instant {
    fn execute<'a>(&'a self, call: ToolInvocation<'a>) -> ExecuteFuture<'a> {
        let base = call.input["query"].as_str().unwrap_or("q").to_owned();
        let sources = self.sources;
        Box::pin(async move {
            let mut output = ToolOutput::new();
            for i in 0..sources {
                output = output.source(
                    format!("https://example.com/{base}/{i}"),
                    Some("Title"),
                    "A snippet of text.",
                );
            }
            Ok(output)
        })
    }
}

fn turn(sources: usize) -> Turn {
    let config = TurnConfig {
        budgets: BudgetsConfig {
            classes: [(
                "web".to_owned(),
                ClassBudgetConfig {
                    auto: u32::MAX,
                    intents: Default::default(),
                    promote: None,
                },
            )]
            .into(),
        },
        source_cap: u32::MAX,
    };
    Turn::builder(&config, Arc::new(UnfencedForTests))
        .tool(
            TurnTool::new("search")
                .cacheable()
                .budget_class("web")
                .untrusted(),
            Arc::new(Instant { sources }),
        )
        .tool(
            TurnTool::new("fetch").budget_class("web").untrusted(),
            Arc::new(Instant { sources }),
        )
        .tool(TurnTool::new("note"), Arc::new(Instant { sources }))
        .build()
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("turn_call");
    for sources in [0usize, 1, 5] {
        // The executor alone, to subtract from the numbers below: what the Turn adds is the rest.
        let executor = Instant { sources };
        group.bench_with_input(
            BenchmarkId::new("executor_alone", sources),
            &sources,
            |b, _| {
                let input = json!({"query": "rust"});
                b.iter(|| {
                    block_on(executor.execute(ToolInvocation {
                        name: "note",
                        input: black_box(&input),
                    }))
                    .unwrap()
                });
            },
        );
        let t = turn(sources);
        group.bench_with_input(BenchmarkId::new("unbudgeted", sources), &sources, |b, _| {
            let input = json!({"query": "rust"});
            b.iter(|| block_on(t.call("note", black_box(&input))).unwrap());
        });
        let t = turn(sources);
        group.bench_with_input(
            BenchmarkId::new("budgeted_repeat", sources),
            &sources,
            |b, _| {
                // A repeat of a cacheable, budgeted call: free, served from the dedupe cache.
                let input = json!({"query": "rust async traits"});
                b.iter(|| block_on(t.call("search", black_box(&input))).unwrap());
            },
        );
        group.bench_with_input(
            BenchmarkId::new("budgeted_new", sources),
            &sources,
            |b, &sources| {
                // A new, non-cacheable, budgeted call each time: charged, new sources numbered. A
                // real turn makes a few dozen calls, so a fresh Turn is built every 64 calls, outside
                // the timing; otherwise its ledger and registry would grow by millions of entries.
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    let mut done = 0u64;
                    while done < iters {
                        let chunk = (iters - done).min(64);
                        let t = turn(sources);
                        let inputs: Vec<_> = (done..done + chunk)
                            .map(|n| {
                                json!({"query": format!("q{n}"), "url": format!("https://example.com/page/{n}")})
                            })
                            .collect();
                        // A bench measures time; the engine itself never reads the clock.
                        #[allow(clippy::disallowed_methods)]
                        let start = std::time::Instant::now();
                        for input in &inputs {
                            black_box(block_on(t.call("fetch", black_box(input))).unwrap());
                        }
                        total += start.elapsed();
                        done += chunk;
                    }
                    total
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
