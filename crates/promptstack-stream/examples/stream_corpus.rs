//! Streams the benchmark's 1 MiB corpus through the processor N times, for counting the
//! instructions a run costs (a measure that other work on the machine does not disturb).
//!
//! `cargo build --release -p promptstack-stream --example stream_corpus`, then
//! `valgrind --tool=callgrind --toggle-collect='stream_corpus::run_all' \
//!  target/release/examples/stream_corpus [plain|widgets] DELTA N`: building the corpus stays
//! outside the count; divide the total by N and by the corpus size for instructions per byte.

use std::hint::black_box;
use std::process::ExitCode;

use promptstack_stream::{Processor, SourceSnapshot, StreamConfig, WidgetSet};

#[path = "../benches/corpus/mod.rs"]
mod corpus;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, delta, times] = args.as_slice() else {
        eprintln!("usage: stream_corpus plain|widgets DELTA TIMES");
        return ExitCode::from(2);
    };
    let (Ok(delta), Ok(times)) = (delta.parse::<usize>(), times.parse::<usize>()) else {
        eprintln!("stream_corpus: DELTA and TIMES must be whole numbers");
        return ExitCode::from(2);
    };
    let size = 1024 * 1024;
    let (text, config) = match kind.as_str() {
        "plain" => (corpus::corpus(size), StreamConfig::default()),
        "widgets" => {
            let widgets = WidgetSet::new(["forecast", "map"]).expect("valid widget names");
            let text = corpus::corpus_of(corpus::PIECES, corpus::WIDGET_PIECES, size);
            (text, StreamConfig::default().with_widgets(widgets))
        }
        other => {
            eprintln!("stream_corpus: the corpus is plain or widgets, not `{other}`");
            return ExitCode::from(2);
        }
    };
    let pieces = corpus::deltas(&text, delta.max(1));
    let out = run_all(&corpus::sources(), &config, &pieces, times);
    println!(
        "{times} runs of {} bytes in {delta}-byte deltas: {out} bytes out",
        text.len()
    );
    ExitCode::SUCCESS
}

/// Streams `pieces` through a fresh processor `times` times; the bytes written in all.
#[inline(never)]
fn run_all(
    sources: &SourceSnapshot,
    config: &StreamConfig,
    pieces: &[&str],
    times: usize,
) -> usize {
    let mut written = 0;
    let mut out = String::new();
    for _ in 0..times {
        out.clear();
        let mut processor = Processor::new(sources, config.clone());
        for piece in pieces {
            processor.push_into(piece, &mut out);
        }
        processor.finish_into(&mut out);
        written += black_box(out.len()) + black_box(processor.take_widgets().len());
    }
    written
}
