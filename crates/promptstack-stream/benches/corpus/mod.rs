//! The corpus of the stream processor's benchmark, shared by the criterion bench
//! (`benches/stream.rs`) and the instruction-counting example (`examples/stream_corpus.rs`):
//! Markdown answers mixing prose with `[N]` runs, native `【N†…】` shapes, unknown numbers,
//! inline and display math, inline code, fenced code with brackets inside, lists, links, CJK and
//! emoji, assembled deterministically; optionally with widget tags.

use promptstack_stream::{Source, SourceSnapshot};

pub fn sources() -> SourceSnapshot {
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
pub const PIECES: &[&str] = &[
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
pub const WIDGET_PIECES: &[&str] = &[
    "Here is the forecast: <forecast location=\"Seattle\" days=\"3\"/> as of today [{n}]. ",
    "The route is on the map <map data='{\"type\":\"FeatureCollection\",\"features\":[]}' zoom=\"4\"/>. ",
    "An undeclared <div class=\"note\"/> stays, and so does 5 < 10 or a <b>bold</b> word. ",
    "A malformed <map data=unquoted/> stays text, and `<forecast/>` in code is left alone. ",
];

/// About `target` bytes of answers, the same on every run.
pub fn corpus(target: usize) -> String {
    corpus_of(PIECES, &[], target)
}

/// About `target` bytes of answers drawn from `pieces` and `extra`, the same on every run.
pub fn corpus_of(pieces: &[&str], extra: &[&str], target: usize) -> String {
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
pub fn deltas(text: &str, size: usize) -> Vec<&str> {
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
