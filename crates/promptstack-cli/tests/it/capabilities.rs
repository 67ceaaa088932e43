//! `promptstack capabilities publish` end to end: a stage's registry capability published from
//! the manifest next to the spec.

use insta_cmd::assert_cmd_snapshot;

use crate::support::{json_output, promptstack};

const SPEC: &str = "examples/voice-platform/agent.toml";

/// Publish the voice platform's `llm_context` for its default send.
const PUBLISH: [&str; 7] = [
    "capabilities",
    "publish",
    SPEC,
    "--send",
    "examples/voice-platform/sends/default.json",
    "--target",
    "llm_context",
];

#[test]
fn help() {
    assert_cmd_snapshot!(promptstack().args(["capabilities", "publish", "--help"]));
}

#[test]
fn publishes_the_authored_text_with_the_registry_fragment() {
    assert_cmd_snapshot!(promptstack().args(PUBLISH));
}

/// The JSON's provenance points at exactly the appended fragment, and the authored text is what
/// is left without it.
#[test]
fn json_carries_segments_and_provenance() {
    let json = json_output(&[&PUBLISH[..], &["--json"]].concat());
    let text = json["text"].as_str().unwrap();
    let segment = json["segments"]["outage_lookup"]["text"].as_str().unwrap();
    let provenance = &json["provenance"][0];
    assert_eq!(provenance["slug"], "outage_lookup");
    let start = provenance["range"]["start"].as_u64().unwrap() as usize;
    let end = provenance["range"]["end"].as_u64().unwrap() as usize;
    assert_eq!(end, text.len());
    assert!(text[start..end].ends_with(segment));
    assert!(
        json["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "lookup_outage")
    );
    // The text on stdout without --json is the same text, byte for byte.
    let plain = promptstack().args(PUBLISH).output().unwrap();
    assert_eq!(plain.stdout, text.as_bytes());
}

#[test]
fn a_spec_without_a_stage_is_bad_input() {
    let output = promptstack()
        .args([
            "capabilities",
            "publish",
            "crates/promptstack-cli/tests/data/budget/agent.toml",
            "--send",
            "crates/promptstack-cli/tests/data/budget/send.json",
            "--target",
            "tight",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("[stage]"));
}
