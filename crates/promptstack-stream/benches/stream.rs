//! Stream processor throughput on a realistic answer corpus, against a regex-per-delta baseline.
//!
//! The corpus is assembled here, deterministically: Markdown answers mixing prose with `[N]` runs,
//! native `【N†…】` shapes, unknown numbers, inline and display math, inline code, fenced code
//! with brackets inside, lists, links, CJK and emoji. It is fed in 16-byte deltas (token-sized,
//! the worst case for per-call overhead) and 4 KiB deltas.
//!
//! The baseline is the straightforward streaming approach: append each delta to a carry buffer,
//! hold back from the last unclosed opener, and run one regex per shape over the rest. It is not
//! Markdown-aware (it rewrites inside code and links), so it does less than the processor; it is
//! here to show what the careful version costs, or saves.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use promptstack_stream::{Processor, Source, SourceSnapshot, StreamConfig, WidgetSet};
use regex::{Captures, Regex};

fn sources() -> SourceSnapshot {
    let sources = (1..=12)
        .map(|index| Source {
            index,
            url: format!("https://example.com/articles/{index}"),
            title: Some(format!("Article number {index}")),
        })
        .collect();
    SourceSnapshot { sources }
}

/// Building blocks of answers; `{n}` and `{m}` are replaced by varying source numbers. About a
/// third of the pieces are plain sentences, so a citation comes every ~100 bytes of prose, which
/// is denser than typical answers.
const PIECES: &[&str] = &[
    "Ownership is the set of rules that govern how a program manages memory while it runs. ",
    "Every value has a single owner, and the value is dropped when its owner goes out of scope. ",
    "References let code use a value without taking ownership of it, which keeps moves explicit. ",
    "In practice this means most memory errors are caught long before the program ever ships. ",
    "Teams that adopted the language report fewer crashes in production and simpler reviews. ",
    "The compiler's error messages explain what went wrong and usually suggest a concrete fix. ",
    "Cargo handles building, testing and publishing, so a new project starts in seconds. ",
    "The standard library is small on purpose; most functionality lives in community crates. ",
    "Rust guarantees memory safety without a garbage collector [{n}]. ",
    "The borrow checker rejects aliasing and mutation at the same time [{n}][{m}], ",
    "which removes whole classes of bugs at compile time [{n}, {m}]. ",
    "Benchmarks show comparable speed to C++ in most workloads【{n}†Benchmarks game】. ",
    "Some claims come from uploaded files【4:0†source】 and are dropped. ",
    "A source the registry never issued stays literal [42]. ",
    "The complexity is \\( O(n \\log n) \\) for sorting and \\(O(1)\\) for lookups. ",
    "Use `Vec::with_capacity(n)` and index with `v[{n}]` safely. ",
    "See [the reference](https://doc.rust-lang.org/reference/[{n}]) for details. ",
    "東京の人口は約1400万人です【{n}】。大阪は第二の都市です[{m}]。",
    "Ship it 🚀 and measure twice 📏 before optimising [{n}]. ",
    "\n\n",
    "\n\n- First step [{n}]\n- Second step with `code[{m}]`\n- Third step【{m}†Guide】\n\n",
    "\n\n```rust\nfn main() {\n    let v = vec![1, 2, 3];\n    println!(\"{}\", v[1]); // [2] is not a citation\n}\n```\n\n",
    "\n\n\\[\n\\int_0^1 x^2 \\, dx = \\frac{1}{3}\n\\]\n\n",
    "\n\n```python\nmatrix = [[1, 2], [3, 4]]\nprint(matrix[0][1])  # \\(not math\\)\n```\n\n",
    "\n\n> Quoted from the documentation [{n}]: ownership is checked statically.\n\n",
];

/// Pieces of answers that carry widget tags, declared and not, whole and malformed, mixed with
/// the pieces above for the widget run.
const WIDGET_PIECES: &[&str] = &[
    "Here is the forecast: <forecast location=\"Seattle\" days=\"3\"/> as of today [{n}]. ",
    "The route is on the map <map data='{\"type\":\"FeatureCollection\",\"features\":[]}' zoom=\"4\"/>. ",
    "An undeclared <div class=\"note\"/> stays, and so does 5 < 10 or a <b>bold</b> word. ",
    "A malformed <map data=unquoted/> stays text, and `<forecast/>` in code is left alone. ",
];

/// About `target` bytes of answers, the same on every run.
fn corpus(target: usize) -> String {
    corpus_of(PIECES, &[], target)
}

/// About `target` bytes of answers drawn from `pieces` and `extra`, the same on every run.
fn corpus_of(pieces: &[&str], extra: &[&str], target: usize) -> String {
    let mut text = String::with_capacity(target + 512);
    let mut state = 0x853C_49E6_748F_EA9Bu64;
    while text.len() < target {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = (state >> 33) as usize;
        let at = r % (pieces.len() + extra.len());
        let piece = pieces
            .get(at)
            .copied()
            .unwrap_or_else(|| extra[at - pieces.len()]);
        let n = (r / 7) % 12 + 1;
        let m = (r / 97) % 12 + 1;
        text.push_str(
            &piece
                .replace("{n}", &n.to_string())
                .replace("{m}", &m.to_string()),
        );
    }
    text
}

/// Cuts `text` into deltas of about `size` bytes, on character boundaries.
fn deltas(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::with_capacity(text.len() / size + 1);
    let mut from = 0;
    while from < text.len() {
        let mut to = (from + size).min(text.len());
        while !text.is_char_boundary(to) {
            to += 1;
        }
        out.push(&text[from..to]);
        from = to;
    }
    out
}

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
