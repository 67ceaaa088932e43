//! Stream processor throughput on a realistic answer corpus, against a regex-per-delta baseline.
//!
//! The corpus (`corpus/mod.rs`) is assembled deterministically: Markdown answers mixing prose with
//! `[N]` runs, native `【N†…】` shapes, unknown numbers, inline and display math, inline code,
//! fenced code with brackets inside, lists, links, CJK and emoji, and for the widget rows widget
//! tags. It is fed in 16-byte deltas (token-sized, the worst case for per-call overhead) and 4 KiB
//! deltas.
//!
//! The baseline is the straightforward streaming approach: append each delta to a carry buffer,
//! hold back from the last unclosed opener, and run one regex per shape over the rest. It is not
//! Markdown-aware (it rewrites inside code and links), so it does less than the processor; it is
//! here to show what the careful version costs, or saves.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use promptstack_stream::{Processor, StreamConfig, WidgetSet};
use regex::{Captures, Regex};

mod corpus;

use corpus::{PIECES, WIDGET_PIECES, corpus, corpus_of, deltas, sources};

/// The straightforward baseline: one regex per shape over each delta (plus a carried tail).
#[derive(Clone)]
struct RegexBaseline {
    native: Regex,
    run: Regex,
    inline_math: Regex,
    display_math: Regex,
    carry: String,
    key: u32,
}

impl RegexBaseline {
    fn new() -> Self {
        Self {
            native: Regex::new(r"【\d+(?::\d+)?(?:†[^】\n]*)?】").unwrap(),
            run: Regex::new(r"\[\d+(?:,\s*\d+)*\](?:\s?\[\d+(?:,\s*\d+)*\])*").unwrap(),
            inline_math: Regex::new(r"\\\((.+?)\\\)").unwrap(),
            display_math: Regex::new(r"(?s)\\\[(.+?)\\\]").unwrap(),
            carry: String::new(),
            key: 0,
        }
    }

    /// How much of the carry can be released: everything before the last opener that has no
    /// closer after it (within 4 KiB).
    fn ready(&self) -> usize {
        let text = &self.carry;
        let mut window = text.len().saturating_sub(4096);
        while !text.is_char_boundary(window) {
            window += 1;
        }
        let mut cut = text.len();
        for (opener, closer) in [("【", "】"), ("[", "]"), ("\\(", "\\)"), ("\\[", "\\]")] {
            if let Some(at) = text[window..].rfind(opener).map(|i| i + window)
                && !text[at..].contains(closer)
            {
                cut = cut.min(at);
            }
        }
        if text.ends_with('\\') {
            cut = cut.min(text.len() - 1);
        }
        cut
    }

    fn push(&mut self, delta: &str, out: &mut String) {
        self.carry.push_str(delta);
        let cut = self.ready();
        self.release(cut, out);
    }

    fn finish(&mut self, out: &mut String) {
        self.release(self.carry.len(), out);
    }

    fn release(&mut self, cut: usize, out: &mut String) {
        let ready = &self.carry[..cut];
        let text = self.native.replace_all(ready, "");
        let key = &mut self.key;
        let text = self.run.replace_all(&text, |_: &Captures<'_>| {
            *key += 1;
            format!("{{{{cite:{key}}}}}")
        });
        let text = self.inline_math.replace_all(&text, "$$$1$$");
        let text = self.display_math.replace_all(&text, "$$$$$1$$$$");
        out.push_str(&text);
        self.carry.drain(..cut);
    }
}

fn bench(c: &mut Criterion) {
    let sources = sources();
    // Compiled once, as an application would; each iteration starts from a clone.
    let template = RegexBaseline::new();
    let mut group = c.benchmark_group("stream");
    group.sample_size(20);
    for size in [64 * 1024, 1024 * 1024] {
        let text = corpus(size);
        group.throughput(Throughput::Bytes(text.len() as u64));
        for delta in [16, 4096] {
            let pieces = deltas(&text, delta);
            let label = format!("{}KiB/{}B", size / 1024, delta);
            let mut out = String::with_capacity(text.len() * 2);
            group.bench_function(BenchmarkId::new("processor", &label), |b| {
                b.iter(|| {
                    out.clear();
                    let mut processor = Processor::new(&sources, StreamConfig::default());
                    for piece in &pieces {
                        processor.push_into(piece, &mut out);
                    }
                    processor.finish_into(&mut out);
                    black_box(out.len())
                });
            });
            group.bench_function(BenchmarkId::new("regex_baseline", &label), |b| {
                b.iter(|| {
                    out.clear();
                    let mut baseline = template.clone();
                    for piece in &pieces {
                        baseline.push(piece, &mut out);
                    }
                    baseline.finish(&mut out);
                    black_box(out.len())
                });
            });
        }
    }
    // Widget tags declared: the `<` of prose needs a decision too. Bare names, so that the same
    // run measures builds before and after namespaced names.
    let widgets = WidgetSet::new(["forecast", "map"]).expect("valid widget names");
    for size in [64 * 1024, 1024 * 1024] {
        let text = corpus_of(PIECES, WIDGET_PIECES, size);
        group.throughput(Throughput::Bytes(text.len() as u64));
        for delta in [16, 4096] {
            let pieces = deltas(&text, delta);
            let label = format!("{}KiB/{}B", size / 1024, delta);
            let mut out = String::with_capacity(text.len() * 2);
            let config = StreamConfig::default().with_widgets(widgets.clone());
            group.bench_function(BenchmarkId::new("processor_widgets", &label), |b| {
                b.iter(|| {
                    out.clear();
                    let mut processor = Processor::new(&sources, config.clone());
                    for piece in &pieces {
                        processor.push_into(piece, &mut out);
                    }
                    processor.finish_into(&mut out);
                    black_box((out.len(), processor.take_widgets().len()))
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
