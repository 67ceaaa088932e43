//! Exact token counting on the examples' text: every distinct block text and half of every send of
//! every bundled example (see `support/examples.rs`), counted whole, text by text.
//!
//! - `library`: the tokenizer library's own count (`bpe_openai::Tokenizer::count`), the reference;
//! - `count`: `Encoding::count`, the count the engine makes on a text-memo miss; after the first
//!   iteration this thread's piece memo is warm, as in a long-running process;
//! - `count_new_thread`: the same on a fresh thread each iteration, so every piece is counted
//!   once before the memo can serve it (the first texts a process or thread counts).
//!
//! Throughput is reported in bytes of text per second.

// Benchmarks read the examples from disk; the library itself does no IO.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use promptstack_core::tokens::Encoding;

#[path = "support/examples.rs"]
mod examples;

fn bench(c: &mut Criterion) {
    let corpus =
        examples::example_texts(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples"));
    let bytes: usize = corpus.iter().map(String::len).sum();
    eprintln!("corpus: {} texts, {bytes} bytes", corpus.len());
    for (encoding, tokenizer) in [
        (Encoding::O200k, bpe_openai::o200k_base()),
        (Encoding::Cl100k, bpe_openai::cl100k_base()),
    ] {
        let library: usize = corpus.iter().map(|t| tokenizer.count(t.as_str())).sum();
        let ours: usize = corpus.iter().map(|t| encoding.count(t)).sum();
        assert_eq!(ours, library, "counts differ from the library's");
        let mut group = c.benchmark_group(format!("tokens/{}", encoding.as_str()));
        group.throughput(Throughput::Bytes(bytes as u64));
        group.sample_size(20);
        group.measurement_time(Duration::from_secs(4));
        group.bench_function("library", |b| {
            b.iter(|| {
                corpus
                    .iter()
                    .map(|t| tokenizer.count(black_box(t.as_str())))
                    .sum::<usize>()
            })
        });
        group.bench_function("count", |b| {
            b.iter(|| {
                corpus
                    .iter()
                    .map(|t| encoding.count(black_box(t)))
                    .sum::<usize>()
            })
        });
        group.bench_function("count_new_thread", |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    total += std::thread::scope(|scope| {
                        scope
                            .spawn(|| {
                                let start = Instant::now();
                                black_box(corpus.iter().map(|t| encoding.count(t)).sum::<usize>());
                                start.elapsed()
                            })
                            .join()
                            .unwrap()
                    });
                }
                total
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
