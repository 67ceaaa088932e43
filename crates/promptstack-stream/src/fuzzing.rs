//! Fuzz target bodies, shared by `fuzz/` (cargo-fuzz) and the fixed-seed smoke runs in `cargo test`.
//!
//! Each function takes arbitrary bytes, exercises one parser or transformer with bounded work, and
//! panics if a property that must hold for every input is violated. Only with the `fuzzing`
//! feature; not part of the stable API.

use crate::{
    CitationMap, MAX_LOOKAHEAD, OutputMode, Processor, Source, SourceSnapshot, StreamConfig,
    WidgetEvent, WidgetSet,
};

/// Sources 1, 2, 3 and 10, so that fuzzed numbers both resolve and miss.
fn stream_sources() -> SourceSnapshot {
    let sources = [1, 2, 3, 10]
        .into_iter()
        .map(|index| Source {
            index,
            url: format!("https://example.com/{index}"),
            title: Some(format!("Title {index}")),
        })
        .collect();
    SourceSnapshot { sources }
}

/// Feeds `input` to a processor in pieces ending at `cuts` (byte offsets, possibly inside a
/// character) and returns the output, the citation map and the widget events.
fn stream_run(
    input: &[u8],
    cuts: &[usize],
    mode: OutputMode,
) -> (String, CitationMap, Vec<WidgetEvent>) {
    let widgets = WidgetSet::new(["chart", "map", "widget:map"]).expect("valid widget names");
    let config = StreamConfig::new(mode).with_widgets(widgets);
    let mut processor = Processor::new(&stream_sources(), config);
    let mut out = String::new();
    let mut events = Vec::new();
    let mut from = 0;
    for &cut in cuts {
        let cut = cut.clamp(from, input.len());
        processor.push_bytes_into(&input[from..cut], &mut out);
        assert!(
            processor.held() <= MAX_LOOKAHEAD,
            "held {} bytes",
            processor.held()
        );
        events.extend(processor.take_widget_events());
        if let Some(loading) = processor.loading_widget() {
            assert_eq!(
                loading.offset,
                out.len() as u64,
                "a loading widget is at the end"
            );
        }
        from = cut;
    }
    processor.push_bytes_into(&input[from..], &mut out);
    processor.finish_into(&mut out);
    assert_eq!(processor.held(), 0, "finish left input behind");
    assert!(
        processor.loading_widget().is_none(),
        "finish left a widget loading"
    );
    events.extend(processor.take_widget_events());
    (out, processor.take_citations(), events)
}

/// The stream processor is chunking-invariant: the input, split at offsets derived from its own
/// bytes (inside multi-byte characters included), gives the same output, citation map and widget
/// events as the whole input pushed at once, in both output modes.
pub fn stream_chunking(data: &[u8]) {
    let input = &data[..data.len().min(16 * 1024)];
    // A small generator seeded from the input chooses the cuts, so every input has its own split.
    let mut seed = input.iter().fold(0x9E37_79B9_7F4A_7C15u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01B3)
    });
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < input.len() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        at += 1 + (seed % 24) as usize;
        cuts.push(at);
    }
    for mode in [OutputMode::Placeholders, OutputMode::Links] {
        let whole = stream_run(input, &[], mode);
        let split = stream_run(input, &cuts, mode);
        assert_eq!(
            split, whole,
            "split at {cuts:?} differs from the whole input"
        );
        if input.len() <= 256 {
            let every: Vec<usize> = (1..input.len()).collect();
            assert_eq!(
                stream_run(input, &every, mode),
                whole,
                "byte by byte differs"
            );
        }
    }
}
