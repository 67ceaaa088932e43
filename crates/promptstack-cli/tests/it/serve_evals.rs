//! Eval runs in the service through the real binary and real sockets: the gate on `production`
//! refusing a version made worse on purpose and letting a rewording through, a forced move
//! audited, two instances on one PostgreSQL database sharing a run while one is killed, and a run
//! resumed when its only instance restarts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::eval::scripted::{text_reply, tool_call_reply, usage};
use crate::serve::{Server, eventually, key};

/// A scripted OpenAI-compatible model on the loopback. Offered `search` with no tool result
/// yet, it searches; otherwise it answers with the facts the suite asks for, citing `[1][2]`
/// only when it was given results and its system prompt asks for `[N]` citations: a model that
/// follows the citation instruction, and only it.
struct Model {
    port: u16,
    requests: Arc<AtomicUsize>,
}

fn model(delay: Duration) -> Model {
    let (port, requests) = crate::support::model_server(answer, delay, 10_000);
    Model { port, requests }
}

fn answer(request: &Value) -> String {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let system = messages
        .iter()
        .filter(|m| m["role"] == "system" || m["role"] == "developer")
        .map(|m| m["content"].to_string())
        .collect::<String>();
    let searches = request["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["function"]["name"] == "search"));
    let has_result = messages.iter().any(|m| m["role"] == "tool");
    let usage = usage(900, 20);
    if searches && !has_result {
        return tool_call_reply("search", r#"{"query":"facts"}"#, &usage);
    }
    let cites = has_result && system.contains("[N]");
    let text = if cites {
        "It was finished in 1889 and the river runs 6300 km [1][2]."
    } else {
        "It was finished in 1889 and the river runs 6300 km."
    };
    text_reply(text, Some(&usage))
}

const AGENT: &str = "/v1/agents/chat-assistant";

/// The version `production` points at and its bundle.
fn production(server: &Server, admin: &str) -> (String, Value) {
    let (status, labels) = server.json("GET", &format!("{AGENT}/labels"), admin, Value::Null);
    assert_eq!(status, 200, "{labels}");
    let id = labels
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "production")
        .map(|l| l["version"].as_str().unwrap().to_owned())
        .unwrap();
    let (status, detail) =
        server.json("GET", &format!("{AGENT}/versions/{id}"), admin, Value::Null);
    assert_eq!(status, 200, "{detail}");
    (id, detail["bundle"].clone())
}

/// Publishes `bundle` with its spec changed by `edit`; returns the publish answer.
fn publish(server: &Server, admin: &str, bundle: &Value, edit: impl Fn(&str) -> String) -> Value {
    let mut bundle = bundle.clone();
    bundle["spec"] = Value::String(edit(bundle["spec"].as_str().unwrap()));
    let (status, published) = server.json("POST", &format!("{AGENT}/versions"), admin, bundle);
    assert_eq!(status, 201, "{published}");
    published
}

/// Starts a run of the citations suite and waits for it to finish; returns the finished run.
fn run(server: &Server, admin: &str, refs: &[&str], repeats: u32) -> Value {
    let (status, created) = server.json(
        "POST",
        &format!("{AGENT}/evals"),
        admin,
        json!({"suite": "evals/citations.toml", "refs": refs, "repeats": repeats}),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let mut last = Value::Null;
    eventually(Duration::from_secs(180), || {
        let (status, run) = server.json("GET", &format!("{AGENT}/evals/{id}"), admin, Value::Null);
        assert_eq!(status, 200, "{run}");
        last = run;
        !matches!(last["state"].as_str(), Some("queued" | "running"))
    })
    .unwrap_or_else(|| panic!("the run did not finish: {last}"));
    assert_eq!(last["state"], "done", "{last}");
    last
}

/// The citation instruction taken out: every line of the spec that asks for `[N]`.
fn without_citations(spec: &str) -> String {
    let kept: Vec<&str> = spec.lines().filter(|l| !l.contains("[N]")).collect();
    assert!(kept.len() < spec.lines().count(), "the spec asks for [N]");
    kept.join("\n") + "\n"
}

/// Only the wording changed.
fn reworded(spec: &str) -> String {
    let changed = spec.replace(
        "Be accurate, direct and useful.",
        "Be accurate, direct and helpful.",
    );
    assert_ne!(changed, spec, "the spec has the sentence reworded");
    changed
}

#[test]
fn the_gate_refuses_a_version_made_worse_lets_a_rewording_through_and_audits_a_force() {
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap();
    let model = model(Duration::ZERO);
    let url = format!("local=http://127.0.0.1:{}/v1", model.port);
    let server = Server::start(&[
        "--data",
        data_arg,
        "--examples",
        "examples",
        "--eval-model-url",
        &url,
    ]);
    let admin = key(&["--data", data_arg], "default", "admin");
    let editor = key(&["--data", data_arg], "default", "editor");
    let move_production = |key: &str, body: Value| {
        server.json("PUT", &format!("{AGENT}/labels/production"), key, body)
    };
    let (original, bundle) = production(&server, &admin);

    // A version without the citation instruction: not evaluated, and the gate says so.
    let worse = publish(&server, &admin, &bundle, without_citations);
    let worse_id = worse["version"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        worse["evaluation"]["production"],
        original.as_str(),
        "{worse}"
    );
    assert_eq!(worse["evaluation"]["evaluated"], false, "{worse}");
    assert_eq!(worse["evaluation"]["gate"]["passes"], false, "{worse}");
    let (status, refused) = move_production(&admin, json!({"version": worse_id}));
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["gate"]["reason"]
            .as_str()
            .unwrap()
            .contains("no finished run"),
        "{refused}"
    );

    // Evaluated beside production, it is refused with the comparison in the problem.
    let finished = run(&server, &admin, &["production", &worse_id], 1);
    assert_eq!(finished["progress"]["done"], 10, "{finished}");
    assert_eq!(finished["results"].as_array().unwrap().len(), 10);
    let passed = |version: &str| {
        finished["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["version"] == version && r["passed"] == true)
            .count()
    };
    assert_eq!(passed(&original), 5, "{finished}");
    assert_eq!(passed(&worse_id), 2, "{finished}");
    let (status, refused) = move_production(&admin, json!({"version": worse_id}));
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["type"].as_str().unwrap().ends_with("/gate-refused"),
        "{refused}"
    );
    let gate = &refused["gate"];
    assert_eq!(gate["suite"], "evals/citations.toml");
    assert_eq!(gate["passes"], false);
    assert!(gate["reason"].as_str().unwrap().contains("worse"), "{gate}");
    let outcome = &gate["comparisons"][0]["comparison"]["outcome"];
    assert_eq!(outcome["status"], "compared", "{gate}");
    assert_eq!(outcome["scenarios"], 5, "{gate}");
    // The compare route reads the same.
    let (status, compared) = server.json(
        "GET",
        &format!("{AGENT}/evals/compare?candidate={worse_id}"),
        &admin,
        Value::Null,
    );
    assert_eq!(status, 200, "{compared}");
    assert_eq!(compared["suite"], "evals/citations.toml", "{compared}");
    assert_eq!(compared["gate"]["passes"], false, "{compared}");
    assert_eq!(compared["summaries"][0]["version_id"], original.as_str());
    assert_eq!(
        compared["summaries"][0]["mean_pass_rate"], 1.0,
        "{compared}"
    );
    assert_eq!(
        compared["summaries"][1]["mean_pass_rate"], 0.4,
        "{compared}"
    );
    // The drill-down of one cell carries its row, send and target.
    let cell = finished["results"][0]["index"].as_u64().unwrap();
    let id = finished["id"].as_str().unwrap();
    let (status, detail) = server.json(
        "GET",
        &format!("{AGENT}/evals/{id}/cells/{cell}"),
        &admin,
        Value::Null,
    );
    assert_eq!(status, 200, "{detail}");
    assert!(detail["row"]["assertions"].is_array(), "{detail}");
    assert!(detail["send"].is_object(), "{detail}");
    assert!(detail["target"].is_string(), "{detail}");

    // Only wording changed: evaluated, and let through.
    let wording = publish(&server, &admin, &bundle, reworded);
    let wording_id = wording["version"]["id"].as_str().unwrap().to_owned();
    run(&server, &admin, &["production", &wording_id], 1);
    let (status, moved) = move_production(&admin, json!({"version": wording_id}));
    assert_eq!(status, 200, "{moved}");
    assert_eq!(moved["gate"]["passes"], true, "{moved}");
    assert_eq!(moved["forced"], false, "{moved}");
    // Published again, the same bundle is the same version, now evaluated against production.
    let mut same = bundle.clone();
    same["spec"] = Value::String(reworded(bundle["spec"].as_str().unwrap()));
    let (status, again) = server.json("POST", &format!("{AGENT}/versions"), &admin, same);
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["created"], false, "{again}");
    assert_eq!(again["evaluation"]["evaluated"], true, "{again}");

    // A force needs an admin and a reason, and is audited with the comparison it overrode.
    let (status, _) = move_production(
        &editor,
        json!({"version": worse_id, "force": true, "reason": "hotfix"}),
    );
    assert_eq!(status, 403);
    let (status, problem) = move_production(&admin, json!({"version": worse_id, "force": true}));
    assert_eq!(status, 422, "{problem}");
    let (status, forced) = move_production(
        &admin,
        json!({"version": worse_id, "force": true, "reason": "the legal team asked for it"}),
    );
    assert_eq!(status, 200, "{forced}");
    assert_eq!(forced["forced"], true, "{forced}");
    assert_eq!(forced["gate"]["passes"], false, "{forced}");
    let (status, audit) = server.json("GET", "/v1/audit", &admin, Value::Null);
    assert_eq!(status, 200, "{audit}");
    let entry = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "label.force")
        .unwrap_or_else(|| panic!("no label.force entry: {audit}"));
    let note: Value = serde_json::from_str(entry["to"].as_str().unwrap()).unwrap();
    assert_eq!(note["reason"], "the legal team asked for it", "{note}");
    assert_eq!(note["suite"], "evals/citations.toml", "{note}");
    assert!(note["comparisons"][0]["difference"].is_number(), "{note}");
    assert_eq!(entry["from"], wording_id.as_str());
}

#[test]
fn two_instances_share_a_run_and_one_killed_mid_run_loses_no_cell() {
    let database = crate::support::TestDatabase::create();
    let db = database.url().to_owned();
    let model = model(Duration::from_millis(300));
    let url = format!("local=http://127.0.0.1:{}/v1", model.port);
    let args = [
        "--database",
        db.as_str(),
        "--eval-model-url",
        url.as_str(),
        "--eval-lease-seconds",
        "2",
    ];
    let mut first = Server::start(&[&args[..], &["--examples", "examples"]].concat());
    let second = Server::start(&args);
    let admin = key(&["--database", &db], "default", "admin");
    let (status, created) = second.json(
        "POST",
        &format!("{AGENT}/evals"),
        &admin,
        json!({"suite": "evals/citations.toml", "refs": ["production"], "repeats": 4}),
    );
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["progress"]["total"], 20, "{created}");
    let read = || {
        let (status, run) = second.json("GET", &format!("{AGENT}/evals/{id}"), &admin, Value::Null);
        assert_eq!(status, 200, "{run}");
        run
    };
    eventually(Duration::from_secs(120), || {
        read()["progress"]["done"].as_u64().unwrap_or(0) >= 4
    })
    .expect("cells complete");
    // Killed mid-run, with cells in flight: their leases run out and the other instance takes
    // them over.
    first.kill();
    let mut last = Value::Null;
    eventually(Duration::from_secs(180), || {
        last = read();
        last["state"] != "running" && last["state"] != "queued"
    })
    .unwrap_or_else(|| panic!("the run did not finish: {last}"));
    assert_eq!(last["state"], "done", "{last}");
    assert_eq!(last["progress"]["done"], 20, "{last}");
    assert_eq!(last["progress"]["failed"], 0, "{last}");
    let mut indices: Vec<u64> = last["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["index"].as_u64().unwrap())
        .collect();
    indices.sort_unstable();
    assert_eq!(
        indices,
        (0..20).collect::<Vec<u64>>(),
        "every cell exactly once"
    );
    assert!(
        last["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["passed"] == true),
        "{last}"
    );
    // Each repetition of the five scenarios makes 9 model calls; only cells in flight on the
    // killed instance (at most its 2 workers', 2 calls each) were called again.
    let calls = model.requests.load(Ordering::SeqCst);
    assert!((36..=40).contains(&calls), "{calls} model calls");
    drop(first);
    drop(second);
}

#[test]
fn a_run_resumes_after_its_only_instance_restarts() {
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap();
    let model = model(Duration::from_millis(200));
    let url = format!("local=http://127.0.0.1:{}/v1", model.port);
    let args = [
        "--data",
        data_arg,
        "--examples",
        "examples",
        "--eval-model-url",
        url.as_str(),
        "--eval-lease-seconds",
        "1",
    ];
    let mut server = Server::start(&args);
    let admin = key(&["--data", data_arg], "default", "admin");
    let (status, created) = server.json(
        "POST",
        &format!("{AGENT}/evals"),
        &admin,
        json!({"suite": "evals/citations.toml", "refs": ["production"], "repeats": 2}),
    );
    assert_eq!(status, 201, "{created}");
    let path = format!("{AGENT}/evals/{}", created["id"].as_str().unwrap());
    eventually(Duration::from_secs(120), || {
        let (_, run) = server.json("GET", &path, &admin, Value::Null);
        run["progress"]["done"].as_u64().unwrap_or(0) >= 2
    })
    .expect("cells complete");
    server.kill();
    let (_, between) = Server::start(&[&args[..], &["--eval-workers", "0"]].concat()).json(
        "GET",
        &path,
        &admin,
        Value::Null,
    );
    assert_eq!(between["state"], "running", "{between}");
    assert!(
        between["progress"]["done"].as_u64().unwrap() < 10,
        "{between}"
    );
    let server = Server::start(&args);
    let mut last = Value::Null;
    eventually(Duration::from_secs(120), || {
        last = server.json("GET", &path, &admin, Value::Null).1;
        last["state"] == "done"
    })
    .unwrap_or_else(|| panic!("the run did not resume: {last}"));
    assert_eq!(last["progress"]["done"], 10, "{last}");
    assert_eq!(last["results"].as_array().unwrap().len(), 10, "{last}");
}

#[test]
fn bad_eval_flags_are_refused_before_serving() {
    let data = tempfile::tempdir().unwrap();
    for (flag, value, says) in [
        ("--eval-model-url", "local", "is not NAME=URL"),
        (
            "--eval-model-url",
            "local=file:///etc/passwd",
            "is not an http or https URL",
        ),
        ("--eval-lease-seconds", "0", "0 is not in 1..=3600"),
    ] {
        let output = crate::support::promptstack()
            .args(["serve", "--listen", "127.0.0.1:0", "--data"])
            .arg(data.path())
            .args([flag, value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
}
