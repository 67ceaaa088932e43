//! Assembly speed on the bundled examples: every send of every example, three ways.
//!
//! - `warm`: a full assembly that renders every block (templates compiled, tokenizer loaded and
//!   token counts memoised, but no stable part reused);
//! - `volatile_only`: the next send of the same thread where only the clock moved, so the stable
//!   half is reused by its input key;
//! - `compose`: composing every target of one assembly.

// Benchmarks read the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::{Path, PathBuf};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use promptstack_core::context::Now;
use promptstack_core::inject::manifests::{Manifest, Registry};
use promptstack_core::refresh::{Change, Refresher};
use promptstack_core::{Agent, SendContext, SpecFormat};

/// One example: its name, its compiled agent, and its sends by name.
type Example = (String, Agent, Vec<(String, SendContext)>);

fn examples() -> Vec<Example> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("examples dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let spec = dir.join("agent.toml");
        let sends_dir = dir.join("sends");
        if !spec.exists() || !sends_dir.exists() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // Registry capabilities of a stage: every manifest in `capabilities/`.
        let mut registry = Registry::new();
        if let Ok(entries) = std::fs::read_dir(dir.join("capabilities")) {
            for entry in entries.flatten() {
                let path = entry.path();
                let text = std::fs::read_to_string(&path).unwrap();
                registry.insert(Manifest::from_toml(&text, &path.display().to_string()).unwrap());
            }
        }
        let agent = Agent::from_source_with_registry(
            &std::fs::read(&spec).unwrap(),
            &spec.display().to_string(),
            SpecFormat::Toml,
            &registry,
        )
        .expect("example spec compiles");
        let mut sends: Vec<PathBuf> = std::fs::read_dir(&sends_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        sends.sort();
        let sends = sends
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .map(|p| {
                let ctx =
                    SendContext::from_json(&std::fs::read(&p).unwrap(), &p.display().to_string())
                        .unwrap();
                (p.file_stem().unwrap().to_string_lossy().into_owned(), ctx)
            })
            .collect();
        out.push((name, agent, sends));
    }
    out
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
