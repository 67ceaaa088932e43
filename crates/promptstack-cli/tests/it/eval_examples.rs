//! The examples' eval suites, run by the real binary: every suite replayed offline from the
//! recordings kept beside it (made from the local model), and one small suite run live against
//! the real model on CPU that `scripts/test` starts.

use std::path::{Path, PathBuf};

use promptstack_eval::testing::local_model_url;
use serde_json::Value;

use crate::support::{promptstack, root};

/// Every `examples/*/evals/*.toml`, sorted.
fn suites() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for example in std::fs::read_dir(root().join("examples"))
        .unwrap()
        .flatten()
    {
        let evals = example.path().join("evals");
        let Ok(entries) = std::fs::read_dir(&evals) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The report of `promptstack eval ARGS --json -`, asserting it exited 0.
fn eval_json(args: &[&str]) -> Value {
    let output = promptstack()
        .arg("eval")
        .args(args)
        .args(["--json", "-", "--quiet"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "promptstack eval {args:?} exited {:?}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What a suite should hold: versions × scenarios × repeats rows on its local model.
fn expected_rows(suite: &Path) -> usize {
    let suite: toml::Table = toml::from_str(&std::fs::read_to_string(suite).unwrap()).unwrap();
    let matrix = suite["matrix"].as_table().unwrap();
    let versions = matrix["versions"].as_array().unwrap().len();
    let repeats = matrix
        .get("repeats")
        .and_then(toml::Value::as_integer)
        .unwrap_or(1);
    let scenarios = suite["scenarios"].as_array().unwrap().len();
    versions * scenarios * usize::try_from(repeats).unwrap()
}

#[test]
fn every_example_suite_replays_from_its_recordings() {
    let suites = suites();
    assert!(
        suites.len() >= 8,
        "the examples' suites must be found: {suites:?}"
    );
    for suite in suites {
        let recordings = suite.parent().unwrap().join("recordings");
        let shown = suite.strip_prefix(root()).unwrap().display().to_string();
        let report = eval_json(&[
            suite.to_str().unwrap(),
            "--model",
            "local",
            "--replay",
            recordings.to_str().unwrap(),
        ]);
        let rows = report["rows"].as_array().unwrap();
        assert_eq!(rows.len(), expected_rows(&suite), "{shown}");
        for row in rows {
            // A replayed row read the recorded stream: the model's usage came with it.
            assert!(
                row["usage"]["input_tokens"].as_u64().unwrap() > 0,
                "{shown}: {row}"
            );
            assert!(!row["assertions"].as_array().unwrap().is_empty(), "{shown}");
        }
        let statistics = &report["statistics"];
        assert!(
            !statistics["cells"].as_array().unwrap().is_empty(),
            "{shown}"
        );
        assert_eq!(
            statistics["comparisons"].as_array().unwrap().len(),
            {
                let versions = report["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r["version_id"].as_str().unwrap())
                    .collect::<std::collections::BTreeSet<_>>()
                    .len();
                versions * (versions - 1) / 2
            },
            "{shown}: every two versions are compared"
        );
    }
}

#[test]
fn a_suite_runs_live_against_the_real_local_model() {
    let Some(url) = local_model_url("eval_examples: the live run") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let example = root().join("examples/chat-assistant");
    std::fs::copy(example.join("agent.toml"), dir.path().join("agent.toml")).unwrap();
    std::fs::create_dir(dir.path().join("sends")).unwrap();
    std::fs::copy(
        example.join("sends/research.json"),
        dir.path().join("sends/research.json"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("evals")).unwrap();
    let suite = dir.path().join("evals/live.toml");
    std::fs::write(
        &suite,
        include_str!("../data/eval/live.toml").replace("{url}", &url),
    )
    .unwrap();
    let recordings = dir.path().join("recordings");
    let live = eval_json(&[
        suite.to_str().unwrap(),
        "--record",
        recordings.to_str().unwrap(),
    ]);
    let rows = live["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        // The model may still be calling tools at the last step (a weak model loops); anything
        // else that ends a row early (an HTTP error, a stream that does not read) is a failure.
        if let Some(error) = row.get("error") {
            assert!(
                error.as_str().unwrap().contains("max_steps"),
                "a live row failed: {row}"
            );
        }
        assert!(row["usage"]["input_tokens"].as_u64().unwrap() > 0, "{row}");
        assert!(row["usage"]["output_tokens"].as_u64().unwrap() > 0, "{row}");
        assert!(row["latency"]["total_us"].as_u64().unwrap() > 0, "{row}");
        assert!(row["predicted_cache_read_tokens"].is_u64(), "{row}");
    }
    // The same run replayed from what it recorded gives the same verdicts and usage.
    let replayed = eval_json(&[
        suite.to_str().unwrap(),
        "--replay",
        recordings.to_str().unwrap(),
    ]);
    for (a, b) in rows.iter().zip(replayed["rows"].as_array().unwrap()) {
        assert_eq!(a["passed"], b["passed"]);
        assert_eq!(a["assertions"], b["assertions"]);
        assert_eq!(a["usage"], b["usage"]);
    }
}
