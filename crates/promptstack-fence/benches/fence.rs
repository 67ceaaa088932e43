//! Fence throughput: clean prose (the fast path) and adversarial inputs (the linear slow path).
//!
//! Run with `cargo bench -p promptstack-fence --bench fence`. Sizes are 1 MB and 10 MB so the
//! ratio time(10 MB) / time(1 MB) shows whether detection stays linear.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use promptstack_fence::{Fence, FixedNonce, Nonce, Provenance, defang};

const MB: usize = 1 << 20;

/// English prose in the shape of a documentation page (with the curly quotes and dashes real
/// pages have, whose lead byte the fast path must look at), repeated to `size` bytes.
fn prose(size: usize) -> String {
    const PARAGRAPH: &str = "The scheduler keeps one queue per core and steals work from its \
        neighbours when its own queue runs dry — the “work-stealing” design. Each task records the time it became runnable, so \
        the metrics endpoint can report how long work waited before a core picked it up. When a \
        task blocks on IO, it parks itself and the core moves on; the reactor’s wakes it once the \
        socket is ready. This keeps latency predictable under load, even when a few requests are \
        slow, because no core ever sits idle while another has a backlog (see the design notes, \
        section 4, for the measurements behind these numbers).\n\n";
    repeat_to(PARAGRAPH, size)
}

fn repeat_to(unit: &str, size: usize) -> String {
    let mut out = String::with_capacity(size + unit.len());
    while out.len() < size {
        out.push_str(unit);
    }
    let mut cut = size.min(out.len());
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out
}

fn bench_defang(c: &mut Criterion) {
    let inputs: [(&str, &str); 5] = [
        ("prose", ""),
        ("lt", "<"),
        ("zero_width", "\u{200b}"),
        ("html_lt", "&lt;"),
        ("very_much_less", "\u{22d8}"),
    ];
    let mut group = c.benchmark_group("defang");
    group.sample_size(10);
    for size in [MB, 10 * MB] {
        for (name, unit) in inputs {
            let text = if unit.is_empty() {
                prose(size)
            } else {
                repeat_to(unit, size)
            };
            group.throughput(Throughput::Bytes(text.len() as u64));
            group.bench_with_input(BenchmarkId::new(name, size / MB), &text, |b, text| {
                b.iter(|| defang(text).len());
            });
        }
    }
    group.finish();
}

fn bench_wrap(c: &mut Criterion) {
    let fence = Fence::new(FixedNonce::new(
        Nonce::parse("9f2ab41c07d3e58a").expect("valid nonce"),
    ));
    let provenance = Provenance::page("https://example.com/docs")
        .and_then(|p| p.with_tool("read_page"))
        .expect("valid provenance");
    let mut group = c.benchmark_group("wrap");
    group.sample_size(10);
    for size in [64 * 1024, MB] {
        let text = prose(size);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(BenchmarkId::new("prose", size), &text, |b, text| {
            b.iter(|| fence.wrap(text, &provenance).map(|w| w.text.len()));
        });
    }
    group.finish();
}

criterion_group!(benches, bench_defang, bench_wrap);
criterion_main!(benches);
