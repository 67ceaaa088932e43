//! `promptstack explain` end to end: blocks shed by a token budget, and the cache breakpoints
//! planned for a provider format.

use insta_cmd::assert_cmd_snapshot;

use crate::support::{json_output, promptstack};

const BUDGET_SPEC: &str = "crates/promptstack-cli/tests/data/budget/agent.toml";
const BUDGET_SEND: &str = "crates/promptstack-cli/tests/data/budget/send.json";
const MESSAGE_SEND: &str = "crates/promptstack-cli/tests/data/budget/send-message.json";

/// The text report names every block the budget shed, in shedding order, with the reason.
#[test]
fn shed_blocks_are_shown_with_their_reason() {
    assert_cmd_snapshot!(promptstack().args([
        "explain",
        BUDGET_SPEC,
        "--send",
        BUDGET_SEND,
        "--target",
        "tight"
    ]));
}

#[test]
fn shed_blocks_are_in_the_json_report() {
    let output = promptstack()
        .args(["explain", BUDGET_SPEC, "--send", BUDGET_SEND, "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let targets = json["targets"].as_array().unwrap();
    let shed_of = |id: &str| {
        targets
            .iter()
            .find(|t| t["target"] == id)
            .unwrap()
            .get("shed")
            .cloned()
    };
    let tight = shed_of("tight").unwrap();
    let ids: Vec<&str> = tight
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["datetime", "tip", "examples"]);
    assert_eq!(
        tight[0]["reason"],
        "shed to fit the budget of 40 tokens (volatile, priority 0)"
    );
    assert_eq!(
        tight[2]["reason"],
        "shed to fit the budget of 40 tokens (stable, priority -1)"
    );
    assert_eq!(
        shed_of("roomy"),
        None,
        "nothing is shed from a roomy target"
    );
    assert!(json.get("breakpoints").is_none(), "no format, no plan");
}

/// `--format` plans the request's cache breakpoints for each target, in text and JSON.
#[test]
fn breakpoints_are_planned_for_a_format() {
    assert_cmd_snapshot!(promptstack().args([
        "explain",
        "examples/browser-agent/agent.toml",
        "--send",
        "examples/browser-agent/sends/dev-server.json",
        "--target",
        "system",
        "--format",
        "anthropic"
    ]));
    let json = json_output(&[
        "explain",
        BUDGET_SPEC,
        "--send",
        MESSAGE_SEND,
        "--format",
        "openai-chat",
        "--json",
    ]);
    let planned = json["breakpoints"].as_array().unwrap();
    let targets: Vec<&str> = planned
        .iter()
        .map(|p| p["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["roomy", "tight"]);
    for p in planned {
        assert_eq!(p["format"], "openai-chat");
        assert!(p["plan"]["breakpoints"].is_array());
        assert!(p["plan"]["skipped"].is_array());
    }
}

/// Planning needs a message to send: a send without one is bad input, named.
#[test]
fn breakpoints_need_a_user_message() {
    let output = promptstack()
        .args([
            "explain",
            BUDGET_SPEC,
            "--send",
            BUDGET_SEND,
            "--format",
            "anthropic",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&output.stderr).is_empty());
}
