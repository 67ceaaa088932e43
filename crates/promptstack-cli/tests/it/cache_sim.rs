//! `promptstack cache-sim` end to end: the report for the chat assistant, ours next to the naive
//! baseline, and the cache economics goal when no MCP server fails.

use crate::support::{json_output, promptstack, succeeds};
use insta_cmd::assert_cmd_snapshot;

const ARGS: [&str; 6] = [
    "cache-sim",
    "examples/chat-assistant/agent.toml",
    "--sends",
    "examples/chat-assistant/sends",
    "--target",
    "legacy",
];

#[test]
fn report_for_the_chat_assistant() {
    assert_cmd_snapshot!(promptstack().args(ARGS).args([
        "--turns",
        "100",
        "--gap-seconds",
        "60",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5"
    ]));
}

fn report(extra: &[&str]) -> serde_json::Value {
    let output = succeeds(
        promptstack()
            .args(ARGS)
            .args(["--turns", "100", "--gap-seconds", "60", "--json"])
            .args(extra),
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Without MCP failures, at least 95 % of the stable system text and tool tokens are read from the
/// cache after the first request, for every format with explicit or automatic prefix caching of
/// the tools and system text (and at least 90 % with the per-send system notes counted); the naive
/// baseline stays far below.
#[test]
fn system_and_tools_are_served_from_the_cache() {
    for (provider, model) in [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai-chat", "gpt-5.6"),
        ("openai-responses", "gpt-5"),
    ] {
        let report = report(&[
            "--provider",
            provider,
            "--model",
            model,
            "--mcp-failure-rate",
            "0",
        ]);
        let ours = report["ours"]["stable_prefix_read_share"].as_f64().unwrap();
        let naive = report["naive"]["stable_prefix_read_share"]
            .as_f64()
            .unwrap();
        assert!(ours >= 0.95, "{provider}: {ours}");
        assert!(naive < 0.5, "{provider}: {naive}");
        // With the per-send notes counted, ours still reads at least 90 %.
        let all = report["ours"]["prefix_read_share"].as_f64().unwrap();
        assert!(all >= 0.9, "{provider}: {all}");
        assert!(
            report["ours"]["relative_cost"].as_f64() < report["naive"]["relative_cost"].as_f64(),
            "{provider}: {report}"
        );
    }
}

#[test]
fn bad_input_is_reported() {
    let output = promptstack()
        .args(ARGS)
        .args(["--provider", "nope"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown provider `nope`"));
}

/// The cache-first target (every per-send note in the last user message) keeps the goal even with
/// MCP servers failing now and then, and caches the conversation too: most of all input tokens are
/// read from the cache, at a small fraction of the naive baseline's cost.
#[test]
fn the_cache_first_target_meets_the_goal_with_failing_servers() {
    for (provider, model) in [
        ("anthropic", "claude-sonnet-4-5"),
        ("openai-chat", "gpt-5.6"),
        ("openai-responses", "gpt-5"),
    ] {
        let report = json_output(&[
            "cache-sim",
            "examples/chat-assistant/agent.toml",
            "--sends",
            "examples/chat-assistant/sends",
            "--target",
            "cached",
            "--turns",
            "100",
            "--gap-seconds",
            "60",
            "--json",
            "--provider",
            provider,
            "--model",
            model,
        ]);
        let ours = &report["ours"];
        let naive = &report["naive"];
        let share = |v: &serde_json::Value, key: &str| v[key].as_f64().unwrap();
        assert!(
            share(ours, "prefix_read_share") >= 0.95,
            "{provider}: {ours}"
        );
        assert!(share(ours, "read_share") >= 0.9, "{provider}: {ours}");
        assert!(
            share(ours, "relative_cost") * 3.0 < share(naive, "relative_cost"),
            "{provider}: {ours} vs {naive}"
        );
    }
}

/// `--svg` writes the per-turn chart: a self-contained SVG with a title and a description, every
/// turn's bars for both sides, and the totals in text.
#[test]
fn svg_chart_of_a_short_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chart.svg");
    succeeds(
        promptstack()
            .args(ARGS)
            .args([
                "--turns",
                "12",
                "--provider",
                "anthropic",
                "--model",
                "claude-sonnet-4-5",
                "--svg",
            ])
            .arg(&path),
    );
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(svg.matches("<g><title>turn ").count(), 12);
    insta::assert_snapshot!(svg);
}

/// The per-turn figures of `--json` add up to the totals of each side.
#[test]
fn per_turn_figures_add_up_to_the_totals() {
    let report = report(&["--provider", "anthropic", "--model", "claude-sonnet-4-5"]);
    let turns = report["per_turn"].as_array().unwrap();
    assert_eq!(turns.len(), 100);
    for side in ["ours", "naive"] {
        for key in ["requests", "read", "written", "uncached"] {
            let sum: u64 = turns.iter().map(|t| t[side][key].as_u64().unwrap()).sum();
            assert_eq!(sum, report[side][key].as_u64().unwrap(), "{side} {key}");
        }
    }
}

#[test]
fn an_unwritable_svg_path_is_reported() {
    let output = promptstack()
        .args(ARGS)
        .args(["--turns", "2", "--svg", "/nonexistent-dir/chart.svg"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot write the chart to"));
}
