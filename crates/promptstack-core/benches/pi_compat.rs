//! The promptstack side of the pi-compat comparison, under criterion: every parity case, two ways.
//!
//! - `full`: `clear_caches` then assemble and compose — a full assembly that reuses nothing from
//!   earlier calls (only the compiled spec remains);
//! - `reuse`: assemble and compose the later sends of one thread (the clock a minute later each
//!   time): the stable half is reused by its input key.
//!
//! The side-by-side run against the peer itself is `examples/pi-compat/bench.sh`.

// Benchmarks read the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use promptstack_core::context::Now;
use promptstack_core::{Agent, SendContext, SpecFormat};

fn cases() -> (Agent, Vec<(SendContext, Vec<SendContext>)>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/pi-compat");
    let agent = Agent::from_source(
        &std::fs::read(root.join("agent.toml")).unwrap(),
        "examples/pi-compat/agent.toml",
        SpecFormat::Toml,
    )
    .expect("the parity spec compiles");
    let mut names: Vec<String> = std::fs::read_dir(root.join("cases"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let cases = names
        .iter()
        .map(|name| {
            let bytes = std::fs::read(root.join("sends").join(format!("{name}.json"))).unwrap();
            let send = SendContext::from_json(&bytes, name).unwrap();
            let later = (1..=64)
                .map(|i| {
                    let mut next = send.clone();
                    let at = send.now.timestamp() + jiff::SignedDuration::from_secs(60 * i);
                    next.now = Now::new(at, send.now.offset());
                    next
                })
                .collect();
            (send, later)
        })
        .collect();
    (agent, cases)
}

fn bench(c: &mut Criterion) {
    let (agent, cases) = cases();
    let mut group = c.benchmark_group("pi_compat");
    group.bench_function("full", |b| {
        let mut i = 0;
        b.iter(|| {
            let (send, _) = &cases[i % cases.len()];
            i += 1;
            agent.clear_caches();
            let assembly = agent.assemble(send).unwrap();
            std::hint::black_box(assembly.compose("system").unwrap());
        });
    });
    group.bench_function("reuse", |b| {
        let mut i = 0;
        b.iter(|| {
            let (_, later) = &cases[i % cases.len()];
            let send = &later[(i / cases.len()) % later.len()];
            i += 1;
            let assembly = agent.assemble(send).unwrap();
            std::hint::black_box(assembly.compose("system").unwrap());
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
