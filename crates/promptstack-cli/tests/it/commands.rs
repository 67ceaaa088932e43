//! The assembly commands end to end: help texts, exit codes, errors on bad input, schema, lint,
//! bench. Example outputs are covered in `examples.rs`.

use crate::support::{json_output, promptstack};
use insta_cmd::assert_cmd_snapshot;

const SPEC: &str = "examples/chat-assistant/agent.toml";
const SEND: &str = "examples/chat-assistant/sends/plain.json";

#[test]
fn help() {
    assert_cmd_snapshot!("help", promptstack().arg("--help"));
    for command in ["render", "explain", "lint", "schema", "bench", "tools"] {
        insta::with_settings!({ snapshot_suffix => command }, {
            assert_cmd_snapshot!("help", promptstack().args([command, "--help"]));
        });
    }
}

#[test]
fn version() {
    let output = promptstack().arg("--version").output().unwrap();
    assert!(output.status.success());
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("promptstack "));
}

#[test]
fn no_arguments_is_bad_input() {
    let output = promptstack().output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn missing_files_are_bad_input() {
    assert_cmd_snapshot!(promptstack().args(["render", "no/such/agent.toml", "--send", SEND]));
    assert_cmd_snapshot!(promptstack().args(["explain", SPEC, "--send", "no/such/send.json"]));
}

#[test]
fn invalid_spec_is_bad_input_with_locations() {
    assert_cmd_snapshot!(promptstack().args([
        "lint",
        "crates/promptstack-cli/tests/data/lint/invalid.toml"
    ]));
}

#[test]
fn invalid_send_is_bad_input_with_locations() {
    assert_cmd_snapshot!(promptstack().args([
        "render",
        SPEC,
        "--send",
        "crates/promptstack-cli/tests/data/lint/bad-send.json"
    ]));
}

#[test]
fn unknown_target_is_bad_input() {
    assert_cmd_snapshot!(promptstack().args(["render", SPEC, "--send", SEND, "--target", "nope"]));
}

#[test]
fn lint_errors_exit_one() {
    assert_cmd_snapshot!(promptstack().args([
        "lint",
        "crates/promptstack-cli/tests/data/lint/lint-errors.toml"
    ]));
    assert_cmd_snapshot!(promptstack().args([
        "lint",
        "crates/promptstack-cli/tests/data/lint/over-limit.toml",
        "--send",
        SEND,
        "--json"
    ]));
}

#[test]
fn lint_clean_exits_zero() {
    assert_cmd_snapshot!(promptstack().args(["lint", SPEC, "--send", SEND]));
}

#[test]
fn render_all_targets_with_headers() {
    assert_cmd_snapshot!(promptstack().args(["render", SPEC, "--send", SEND]));
}

#[test]
fn explain_json_is_the_assembly_format() {
    let output = promptstack()
        .args(["explain", SPEC, "--send", SEND, "--json"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["assembly"]["format"], "promptstack.assembly/v1");
    assert_eq!(json["assembly"]["full"], json["assembly"]["stable"]);
    assert!(json["assembly"]["blocks"].as_array().unwrap().len() > 10);
    assert_eq!(json["targets"].as_array().unwrap().len(), 3);
}

#[test]
fn schema_of_spec_send_and_eval() {
    for which in ["spec", "send", "eval"] {
        let output = promptstack().args(["schema", which]).output().unwrap();
        assert!(output.status.success());
        let schema: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        insta::with_settings!({ snapshot_suffix => which }, {
            insta::assert_json_snapshot!("schema", schema);
        });
    }
}

/// The names of the figures `bench --json` printed, in order.
fn figure_names(figures: &serde_json::Value) -> Vec<&str> {
    figures
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect()
}

#[test]
fn bench_reports_three_figures() {
    let figures = json_output(&["bench", SPEC, "--send", SEND, "--iterations", "5", "--json"]);
    let names = figure_names(&figures);
    assert_eq!(names, ["warm", "volatile-only", "compose"]);
    for figure in figures.as_array().unwrap() {
        assert_eq!(figure["iterations"], 5);
        assert!(figure["median_ns"].as_u64().unwrap() >= figure["min_ns"].as_u64().unwrap());
    }
}

#[test]
fn bench_cold_adds_the_cold_figures() {
    let figures = json_output(&[
        "bench",
        SPEC,
        "--send",
        SEND,
        "--iterations",
        "3",
        "--cold",
        "--json",
    ]);
    let names = figure_names(&figures);
    assert_eq!(
        names,
        ["warm", "volatile-only", "compose", "cold", "cold-counted"]
    );
}

#[test]
fn bench_rejects_zero_iterations() {
    let output = promptstack()
        .args(["bench", SPEC, "--send", SEND, "--iterations", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// A target over its token budget sheds volatile and low-priority blocks first, never pinned
/// ones, and names each shed block with its tokens.
#[test]
fn budget_sheds_blocks() {
    for target in ["tight", "roomy"] {
        insta::with_settings!({ snapshot_suffix => target }, {
            assert_cmd_snapshot!("budget", promptstack().args([
                "render",
                "crates/promptstack-cli/tests/data/budget/agent.toml",
                "--send",
                "crates/promptstack-cli/tests/data/budget/send.json",
                "--target",
                target,
            ]));
        });
    }
}

/// `lint` checks token budgets: pinned blocks over a target's budget are an error even without a
/// send; a block a budget sheds on a send is a warning naming that send.
#[test]
fn lint_checks_token_budgets() {
    for (name, args) in [
        (
            "pinned",
            vec![
                "lint",
                "crates/promptstack-cli/tests/data/budget/pinned.toml",
            ],
        ),
        (
            "pinned-with-send",
            vec![
                "lint",
                "crates/promptstack-cli/tests/data/budget/pinned.toml",
                "--send",
                "crates/promptstack-cli/tests/data/budget/send.json",
            ],
        ),
        (
            "shed",
            vec![
                "lint",
                "crates/promptstack-cli/tests/data/budget/agent.toml",
                "--send",
                "crates/promptstack-cli/tests/data/budget/send.json",
            ],
        ),
    ] {
        insta::with_settings!({ snapshot_suffix => name }, {
            assert_cmd_snapshot!("lint_budget", promptstack().args(&args));
        });
    }
}

/// `lint` reads the eval suites beside the spec as a publish does: a bad one is bad input, every
/// problem located in its file, and a file it names must be in the spec's folder.
#[test]
fn lint_checks_the_eval_suites_beside_the_spec() {
    let dir = tempfile::tempdir().unwrap();
    let spec = dir.path().join("agent.toml");
    let root = crate::support::root();
    std::fs::copy(root.join(SPEC), &spec).unwrap();
    std::fs::create_dir(dir.path().join("evals")).unwrap();
    std::fs::create_dir(dir.path().join("sends")).unwrap();
    std::fs::copy(root.join(SEND), dir.path().join("sends/research.json")).unwrap();
    let suite = "suite_version = 1\n[models.local]\nformat = \"openai-chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n[matrix]\nversions = [{ name = \"current\", spec = \"agent.toml\" }]\nmodels = [\"local\"]\n[[scenarios]]\nname = \"s\"\nsend = \"sends/research.json\"\n[[scenarios.assert]]\ntype = \"budget\"\n";
    std::fs::write(dir.path().join("evals/good.toml"), suite).unwrap();
    let clean = promptstack().arg("lint").arg(&spec).output().unwrap();
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );

    let bad = suite
        .replace("[\"local\"]", "[\"remote\"]")
        .replace("sends/research.json", "../sends/research.json");
    std::fs::write(dir.path().join("evals/bad.toml"), bad).unwrap();
    std::fs::write(
        dir.path().join("evals/missing.toml"),
        suite.replace("sends/research.json", "sends/nowhere.json"),
    )
    .unwrap();
    let refused = promptstack().arg("lint").arg(&spec).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    for expected in [
        "error[unknown-model]",
        "bad.toml:8:",
        "error[bad-path]",
        "error[missing-file]",
        "missing.toml:11:",
    ] {
        assert!(stderr.contains(expected), "{expected} not in {stderr}");
    }
}
