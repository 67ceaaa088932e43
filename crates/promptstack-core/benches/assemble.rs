//! Assembly speed on the bundled examples: every send of every example, three ways.
//!
//! - `warm`: a full assembly that renders every block (templates compiled, tokenizer loaded and
//!   token counts memoised, but no stable part reused);
//! - `volatile_only`: the next send of the same thread where only the clock moved, so the stable
//!   half is reused by its input key;
//! - `compose`: composing every target of one assembly.

// Benchmarks read the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use promptstack_core::context::Now;
use promptstack_core::refresh::{Change, Refresher};
use promptstack_core::{Agent, SendContext};

#[path = "support/examples.rs"]
mod examples;

fn examples() -> Vec<examples::Example> {
    examples::examples(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"))
}

fn bench(c: &mut Criterion) {
    for (example, agent, sends) in examples() {
        let mut group = c.benchmark_group(format!("assemble/{example}"));
        for (send_name, ctx) in &sends {
            group.bench_with_input(BenchmarkId::new("warm", send_name), ctx, |b, ctx| {
                b.iter(|| agent.assemble_fresh(ctx).unwrap())
            });
            let later: Vec<SendContext> = (1..=256)
                .map(|minute| {
                    let mut next = ctx.clone();
                    let at = ctx.now.timestamp() + jiff::SignedDuration::from_secs(60 * minute);
                    next.now = Now::new(at, ctx.now.offset());
                    next
                })
                .collect();
            for next in &later {
                agent.assemble(next).unwrap();
            }
            group.bench_with_input(
                BenchmarkId::new("volatile_only", send_name),
                &later,
                |b, later| {
                    let mut i = 0;
                    b.iter(|| {
                        i = (i + 1) % later.len();
                        agent.assemble(&later[i]).unwrap()
                    })
                },
            );
            let assembly = agent.assemble(ctx).unwrap();
            let targets: Vec<String> = agent.target_ids().map(str::to_owned).collect();
            group.bench_with_input(
                BenchmarkId::new("compose", send_name),
                &assembly,
                |b, assembly| {
                    b.iter(|| {
                        for target in &targets {
                            std::hint::black_box(assembly.compose(target).unwrap());
                        }
                    })
                },
            );
        }
        group.finish();
        if agent.spec().stage.is_some() {
            bench_stage(c, &example, &agent, &sends);
        }
    }
}

/// A stage's extra paths: the injection preview, and a refresh after a session-variable change.
fn bench_stage(c: &mut Criterion, example: &str, agent: &Agent, sends: &[(String, SendContext)]) {
    let Some((_, ctx)) = sends.iter().find(|(name, _)| name == "default") else {
        return;
    };
    let mut group = c.benchmark_group(format!("stage/{example}"));
    group.bench_function("preview_injections", |b| {
        b.iter(|| agent.preview_injections(ctx).unwrap())
    });
    let mut refresher = Refresher::new(agent, ctx.clone(), "llm_context").unwrap();
    let mut verified = false;
    group.bench_function("refresh_variable", |b| {
        b.iter(|| {
            verified = !verified;
            let mut values = std::collections::BTreeMap::new();
            values.insert(
                "caller_verified".to_owned(),
                serde_json::Value::Bool(verified),
            );
            refresher
                .apply(Change::Variables(values), ctx.now)
                .unwrap()
                .len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
