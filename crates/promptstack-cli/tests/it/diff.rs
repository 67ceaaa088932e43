//! `promptstack diff` end to end: two sends of the chat assistant, identical sends, and saved
//! assemblies.

use crate::support::{promptstack, root, succeeded};
use insta_cmd::assert_cmd_snapshot;

const SPEC: &str = "examples/chat-assistant/agent.toml";

#[test]
fn two_sends_that_differ() {
    assert_cmd_snapshot!(promptstack().args([
        "diff",
        SPEC,
        "--send",
        "examples/chat-assistant/sends/research.json",
        "--send",
        "examples/chat-assistant/sends/plain.json",
        "--target",
        "legacy",
        "--model",
        "claude-sonnet-4-5",
    ]));
}

/// Only the clock moved: the stable half, the tools and the stable breakpoint survive; the first
/// difference is the date note.
#[test]
fn only_the_clock_moved() {
    let send = std::fs::read_to_string(root().join("examples/chat-assistant/sends/research.json"))
        .unwrap();
    let later = send.replace("2026-11-30T11:20:00+00:00", "2026-11-30T11:24:00+00:00");
    assert_ne!(send, later);
    let dir = root().join("target/diff-test");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("research-later.json");
    std::fs::write(&path, later).unwrap();
    let output = promptstack()
        .args([
            "diff",
            SPEC,
            "--send",
            "examples/chat-assistant/sends/research.json",
            "--send",
        ])
        .arg(&path)
        .args([
            "--target",
            "legacy",
            "--model",
            "claude-sonnet-4-5",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["system"]["block"], "datetime");
    let breakpoints = json["breakpoints"].as_array().unwrap();
    let stable = breakpoints
        .iter()
        .find(|b| b["boundary"] == "stable")
        .unwrap();
    assert_eq!(stable["survives"], true);
    let tail = breakpoints
        .iter()
        .find(|b| b["boundary"] == "tail")
        .unwrap();
    assert_eq!(tail["survives"], false);
}

#[test]
fn identical_sends_exit_zero() {
    succeeded(&[
        "diff",
        SPEC,
        "--send",
        "examples/chat-assistant/sends/plain.json",
        "--send",
        "examples/chat-assistant/sends/plain.json",
        "--target",
        "harness",
    ]);
}

#[test]
fn saved_assemblies() {
    let dir = root().join("target/diff-test");
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for send in ["plain", "no-web"] {
        let output = promptstack()
            .args([
                "explain",
                SPEC,
                "--send",
                &format!("examples/chat-assistant/sends/{send}.json"),
                "--json",
            ])
            .output()
            .unwrap();
        assert!(output.status.success());
        let path = dir.join(format!("{send}.assembly.json"));
        std::fs::write(&path, output.stdout).unwrap();
        paths.push(path);
    }
    let output = promptstack()
        .args(["diff", "--assemblies"])
        .args(&paths)
        .args(["--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["same_fingerprint"], false);
    assert!(json["body"]["offset"].as_u64().unwrap() > 0);
    assert!(!json["body"]["block"].as_str().unwrap().is_empty());
}
