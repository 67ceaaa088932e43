//! The stream processor: data-driven cases, chunking invariance, code preservation, fuzz smoke.

use std::fmt::Write as _;

use promptstack_core::source::{Source, SourceSnapshot};
use promptstack_core::stream::{self, OutputMode, Processor, StreamConfig};
use proptest::prelude::*;

/// A case file: a header (comments, sources), then `--- input` and the input verbatim.
struct Case {
    sources: SourceSnapshot,
    input: String,
}

fn default_source(index: u32) -> Source {
    Source {
        index,
        url: format!("https://example.com/source-{index}"),
        title: Some(format!("Source {index}")),
    }
}

fn parse_case(text: &str) -> Case {
    let (header, input) = text.split_once("--- input\n").expect("a case needs a `--- input` line");
    let mut sources = Vec::new();
    for line in header.lines() {
        if let Some(list) = line.strip_prefix("sources:") {
            sources.extend(list.split_whitespace().map(|n| default_source(n.parse().unwrap())));
        } else if let Some(spec) = line.strip_prefix("source:") {
            let mut parts = spec.trim().splitn(3, ' ');
            let index = parts.next().unwrap().parse().unwrap();
            let url = parts.next().unwrap().to_string();
            let title = parts.next().map(str::to_string);
            sources.push(Source { index, url, title });
        } else {
            assert!(line.starts_with('#') || line.trim().is_empty(), "unknown header line {line:?}");
        }
    }
    Case { sources: SourceSnapshot { sources }, input: input.to_string() }
}

fn config(mode: OutputMode) -> StreamConfig {
    StreamConfig { mode }
}

/// The output of `input` pushed as `pieces` (byte offsets, any of them, even inside characters).
fn run_bytes(input: &[u8], cuts: &[usize], sources: &SourceSnapshot, mode: OutputMode) -> (String, String) {
    let mut processor = Processor::new(sources, config(mode));
    let mut out = String::new();
    let mut from = 0;
    for &cut in cuts {
        let cut = cut.clamp(from, input.len());
        processor.push_bytes_into(&input[from..cut], &mut out);
        from = cut;
    }
    processor.push_bytes_into(&input[from..], &mut out);
    processor.finish_into(&mut out);
    (out, serde_json::to_string(processor.citations()).unwrap())
}

/// Asserts that every way of cutting `input` in two, and byte-by-byte delivery, give the output
/// of the whole text at once; returns that output and map.
fn assert_invariant(input: &str, sources: &SourceSnapshot, mode: OutputMode) -> (String, String) {
    let whole = run_bytes(input.as_bytes(), &[], sources, mode);
    for cut in 0..=input.len() {
        assert_eq!(run_bytes(input.as_bytes(), &[cut], sources, mode), whole, "cut at byte {cut} of {input:?}");
    }
    let every: Vec<usize> = (1..input.len()).collect();
    assert_eq!(run_bytes(input.as_bytes(), &every, sources, mode), whole, "byte by byte: {input:?}");
    // The `&str` API, character by character, must agree too.
    let mut processor = Processor::new(sources, config(mode));
    let mut out = String::new();
    for (i, ch) in input.char_indices() {
        let segment = processor.push(&input[i..i + ch.len_utf8()]);
        out.push_str(&segment.text);
    }
    out.push_str(&processor.finish().text);
    assert_eq!(out, whole.0, "char by char: {input:?}");
    whole
}

#[test]
fn cases() {
    insta::glob!("../data/stream", "*.txt", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let case = parse_case(&text);
        let (placeholders, map) = assert_invariant(&case.input, &case.sources, OutputMode::Placeholders);
        let (links, _) = assert_invariant(&case.input, &case.sources, OutputMode::Links);
        let score = stream::score(&case.input, &case.sources);
        let mut snapshot = String::new();
        writeln!(snapshot, "--- placeholders\n{placeholders}").unwrap();
        writeln!(snapshot, "--- map\n{map}").unwrap();
        writeln!(snapshot, "--- links\n{links}").unwrap();
        write!(snapshot, "--- score\n{}", serde_json::to_string(&score).unwrap()).unwrap();
        insta::assert_snapshot!(snapshot);
    });
}
