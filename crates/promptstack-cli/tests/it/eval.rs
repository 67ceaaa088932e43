//! `promptstack eval` end to end: a run recorded against a scripted OpenAI-compatible server on
//! the loopback, replayed offline to the same rows, its JSON report, and the exit codes.

pub(crate) mod scripted;

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use self::scripted::{text_reply, tool_call_reply, usage};
use crate::support::promptstack;

/// The eval crate's tester agent, allowed three searches a turn.
fn spec() -> String {
    let spec = include_str!("../../../promptstack-eval/tests/data/tester/agent.toml");
    assert_eq!(spec.matches("auto = 2").count(), 1);
    spec.replace("auto = 2", "auto = 3")
}

/// The eval crate's tester send.
const SEND: &str = include_str!("../../../promptstack-eval/tests/data/tester/sends/s.json");

/// Two scenarios: one the scripted model passes (it cites the scripted source), one it fails.
fn suite(port: u16) -> String {
    include_str!("../data/eval/cites.toml").replace("{port}", &port.to_string())
}

/// The agent's folder with its spec, send and suite.
fn folder(port: u16) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.toml"), spec()).unwrap();
    std::fs::create_dir(dir.path().join("sends")).unwrap();
    std::fs::write(dir.path().join("sends/s.json"), SEND).unwrap();
    std::fs::create_dir(dir.path().join("evals")).unwrap();
    std::fs::write(dir.path().join("evals/suite.toml"), suite(port)).unwrap();
    dir
}

/// The scripted model: it searches first, and answers citing source 1 once it has a result.
fn answer(request: &Value) -> String {
    let judging = request["messages"].as_array().is_some_and(|m| {
        m.iter()
            .any(|m| m["content"].to_string().contains("<rubric>"))
    });
    if judging {
        let verdict = r#"{"score": 0.75, "reason": "It names the release."}"#;
        return text_reply(verdict, None);
    }
    let has_result = request["messages"]
        .as_array()
        .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
    let usage = usage(40, 4);
    if has_result {
        text_reply("Rust 1.95 is out [1].", Some(&usage))
    } else {
        tool_call_reply("search", r#"{"query":"rust"}"#, &usage)
    }
}

/// A scripted OpenAI-compatible server on the loopback, serving at most 64 connections.
fn server() -> u16 {
    crate::support::model_server(answer, std::time::Duration::ZERO, 64).0
}

fn eval(dir: &Path, args: &[&str]) -> Output {
    promptstack()
        .current_dir(dir)
        .arg("eval")
        .arg("evals/suite.toml")
        .args(args)
        .output()
        .unwrap()
}

/// `eval` that must exit 0, its report read as JSON.
fn eval_json(dir: &Path, args: &[&str]) -> Value {
    let output = eval(dir, args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The JSON report with what changes from run to run (time) set to fixed values.
fn without_timing(mut report: Value) -> Value {
    report["run"]["started_at"] = json!("[started_at]");
    for row in report["rows"].as_array_mut().unwrap() {
        row["latency"] = json!({"total_us": "[total_us]"});
    }
    report
}

#[test]
fn a_recorded_run_replays_to_the_same_report_and_exit_codes_follow_fail_under() {
    let port = server();
    let dir = folder(port);
    let recorded = eval(
        dir.path(),
        &[
            "--record",
            "recordings",
            "--json",
            "recorded.json",
            "--quiet",
        ],
    );
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    assert!(recorded.stdout.is_empty(), "{}", text(&recorded.stdout));
    // Two steps for each scenario, whose first requests are the same bytes (one send, one
    // repetition): three exchanges.
    let files = std::fs::read_dir(dir.path().join("recordings")).unwrap();
    assert_eq!(files.count(), 3);
    let recorded: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("recorded.json")).unwrap()).unwrap();

    let replayed = eval_json(dir.path(), &["--replay", "recordings", "--json", "-"]);
    assert_eq!(
        without_timing(recorded.clone())["rows"],
        without_timing(replayed.clone())["rows"]
    );
    // Live rows carry a first-token time; replayed ones do not.
    assert!(recorded["rows"][0]["latency"]["first_token_us"].is_u64());
    insta::assert_snapshot!(serde_json::to_string_pretty(&without_timing(replayed)).unwrap());

    // One of two scenarios passes: 50 %.
    let met = eval(
        dir.path(),
        &["--replay", "recordings", "--fail-under", "0.5"],
    );
    assert_eq!(met.status.code(), Some(0), "{}", text(&met.stderr));
    let summary = text(&met.stdout);
    assert!(summary.contains("wants-nope"), "{summary}");
    let missed = eval(
        dir.path(),
        &["--replay", "recordings", "--fail-under", "0.6", "-q"],
    );
    assert_eq!(missed.status.code(), Some(1));
    let stderr = text(&missed.stderr);
    assert!(
        stderr.contains("pass rate 50.0% (1 of 2 runs) is under fail_under 60.0%"),
        "{stderr}"
    );

    // Filters: only the scenario that passes.
    let only = eval(
        dir.path(),
        &[
            "--replay",
            "recordings",
            "--scenario",
            "cites",
            "--fail-under",
            "1",
            "-q",
        ],
    );
    assert_eq!(only.status.code(), Some(0), "{}", text(&only.stderr));

    // Reports as files.
    let files = eval(
        dir.path(),
        &[
            "--replay",
            "recordings",
            "--junit",
            "junit.xml",
            "--html",
            "report.html",
            "-q",
        ],
    );
    assert_eq!(files.status.code(), Some(0), "{}", text(&files.stderr));
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains("<testsuite"), "{junit}");
    assert!(dir.path().join("report.html").is_file());
}

#[test]
fn a_missing_recording_fails_loudly() {
    let port = server();
    let dir = folder(port);
    let recorded = eval(dir.path(), &["--record", "recordings", "-q"]);
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        text(&recorded.stderr)
    );
    // A second repetition was never recorded.
    let replayed = eval(
        dir.path(),
        &["--replay", "recordings", "--repeats", "2", "-q"],
    );
    assert_eq!(replayed.status.code(), Some(2));
    let stderr = text(&replayed.stderr);
    assert!(
        stderr.contains("no recording of this request to `small-model` at repetition 1"),
        "{stderr}"
    );
    assert!(stderr.contains("record it first, or run live"), "{stderr}");

    // An empty folder: nothing was recorded.
    let empty = eval(dir.path(), &["--replay", "nothing-here", "-q"]);
    assert_eq!(empty.status.code(), Some(2));
}

#[test]
fn bad_input_exits_2() {
    let dir = folder(1);
    // An unknown filter name.
    let out = eval(dir.path(), &["--replay", "r", "--scenario", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no scenario `nope`"),
        "{}",
        text(&out.stderr)
    );

    // A suite that does not read is located as lint locates it.
    let bad = suite(1).replace("models = [\"local\"]", "models = [\"remote\"]");
    std::fs::write(dir.path().join("evals/suite.toml"), bad).unwrap();
    let out = eval(dir.path(), &["--replay", "r"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("error[unknown-model]"), "{stderr}");
    assert!(stderr.contains("evals/suite.toml:"), "{stderr}");

    // A spec that is not there.
    std::fs::write(dir.path().join("evals/suite.toml"), suite(1)).unwrap();
    std::fs::remove_file(dir.path().join("agent.toml")).unwrap();
    let out = eval(dir.path(), &["--replay", "r"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("agent.toml"),
        "{}",
        text(&out.stderr)
    );

    // A rate that is not one.
    let out = eval(dir.path(), &["--fail-under", "80"]);
    assert_eq!(out.status.code(), Some(2));

    // A model whose key variable is not set.
    std::fs::write(dir.path().join("agent.toml"), spec()).unwrap();
    let keyed = suite(1).replace(
        "retries = 0",
        "retries = 0\napi_key_env = \"PROMPTSTACK_TEST_KEY_THAT_IS_NOT_SET\"",
    );
    std::fs::write(dir.path().join("evals/suite.toml"), keyed).unwrap();
    let out = eval(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("PROMPTSTACK_TEST_KEY_THAT_IS_NOT_SET"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_judge_outside_the_model_filter_still_judges_and_replays() {
    let port = server();
    let dir = folder(port);
    let suite = suite(port)
        .replace(
            "[matrix]",
            &format!(
                "[models.judge]\nformat = \"openai-chat\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nmodel = \"judge-model\"\nretries = 0\n\n[matrix]"
            ),
        )
        .replace("models = [\"local\"]", "models = [\"local\", \"judge\"]")
        + "\n[[scenarios.assert]]\ntype = \"rubric\"\njudge = \"judge\"\nrubric = \"Names a release.\"\nthreshold = 0.7\n";
    std::fs::write(dir.path().join("evals/suite.toml"), suite).unwrap();
    let args = [
        "--model",
        "local",
        "--scenario",
        "wants-nope",
        "--json",
        "-",
        "-q",
    ];
    let recorded = eval_json(
        dir.path(),
        &[&["--record", "recordings"][..], &args].concat(),
    );
    let rows = recorded["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["model"], "local");
    let rubric = &rows[0]["assertions"][1];
    assert_eq!(rubric["id"], "1:rubric");
    assert_eq!(rubric["verdict"], "pass", "{rubric}");
    assert!(
        rubric["reason"].as_str().unwrap().contains("score 0.75"),
        "{rubric}"
    );
    // The scenario's two steps and the judge's one call.
    let files = std::fs::read_dir(dir.path().join("recordings")).unwrap();
    assert_eq!(files.count(), 3);

    let replayed = eval_json(
        dir.path(),
        &[&["--replay", "recordings"][..], &args].concat(),
    );
    assert_eq!(
        without_timing(recorded)["rows"],
        without_timing(replayed)["rows"]
    );
}
