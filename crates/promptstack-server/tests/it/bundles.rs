//! What a published bundle may hold: normalised relative file paths, bounded files, every problem
//! named at once.

use axum::http::StatusCode;
use promptstack_server::ServerConfig;
use serde_json::json;

use crate::harness::{Harness, bundle};

fn with_files(files: &[(&str, String)]) -> serde_json::Value {
    let mut value = serde_json::to_value(bundle("chat-assistant")).unwrap();
    for (path, text) in files {
        value["files"][*path] = json!(text);
    }
    value
}

/// How many versions the chat assistant has.
async fn versions(h: &Harness) -> usize {
    h.get("/v1/agents/chat-assistant/versions", &h.acme.viewer)
        .await
        .json()["items"]
        .as_array()
        .unwrap()
        .len()
}

/// The subjects of a problem's diagnostics.
fn subjects(problem: &serde_json::Value) -> Vec<String> {
    problem["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["subject"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn path_like_file_names_are_refused_all_at_once_and_nothing_is_stored() {
    let h = Harness::new().await;
    let hostile = [
        "../../../../etc/passwd",
        "/etc/shadow",
        "capabilities/../../x.toml",
        "capabilities\\x.toml",
        "capabilities//x.toml",
        "capabilities/./x.toml",
        "capabilities/x.toml/",
        "capa\u{1b}[2Jbilities/x.toml",
        "",
    ];
    let files: Vec<(&str, String)> = hostile.iter().map(|p| (*p, "x".to_owned())).collect();
    let answer = h
        .post(
            "/v1/agents/chat-assistant/versions",
            &h.acme.editor,
            with_files(&files),
        )
        .await;
    let problem = answer.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem["type"],
        "https://promptstack.dev/problems/invalid-bundle"
    );
    let named = subjects(&problem);
    assert_eq!(named.len(), hostile.len(), "{problem}");
    for path in [
        "../../../../etc/passwd",
        "/etc/shadow",
        "capabilities/../../x.toml",
    ] {
        assert!(
            named.contains(&format!("files/{path}")),
            "{path}: {named:?}"
        );
        assert!(
            problem["detail"].as_str().unwrap().contains(path),
            "{problem}"
        );
    }
    // The control character is escaped wherever the name is quoted.
    assert!(!answer.text().contains('\u{1b}'), "{}", answer.text());
    assert!(answer.text().contains("\\\\u{1b}"), "{}", answer.text());
    // Nothing was stored: the agent still has its one version.
    assert_eq!(versions(&h).await, 1);
}

#[tokio::test]
async fn a_normalised_nested_path_is_accepted() {
    let h = Harness::new().await;
    let answer = h
        .post(
            "/v1/agents/chat-assistant/versions",
            &h.acme.editor,
            with_files(&[("notes/readme.md", "hello".to_owned())]),
        )
        .await;
    answer.assert_status(StatusCode::CREATED);
}

#[tokio::test]
async fn files_are_bounded_one_by_one_together_and_in_number() {
    let h = Harness::with_config(
        ServerConfig::default()
            .rate_limit(0, 1)
            .max_body_bytes(16 * 1024 * 1024),
    )
    .await;
    // One file past 1 MiB, and five of 1 MiB that are together past 4 MiB.
    let mut files = vec![("big.txt", "b".repeat(1024 * 1024 + 1))];
    let names = ["a1.txt", "a2.txt", "a3.txt", "a4.txt"];
    for name in names {
        files.push((name, "a".repeat(1024 * 1024)));
    }
    let problem = h
        .post(
            "/v1/agents/chat-assistant/versions",
            &h.acme.editor,
            with_files(&files),
        )
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    let codes: Vec<&str> = problem["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["file-too-large", "bundle-too-large"], "{problem}");
    assert_eq!(subjects(&problem), ["files/big.txt", "files"]);

    // 257 files of one byte each.
    let many: Vec<(String, String)> = (0..257)
        .map(|i| (format!("f/{i}.txt"), "x".to_owned()))
        .collect();
    let many: Vec<(&str, String)> = many.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    let problem = h
        .post(
            "/v1/agents/chat-assistant/versions",
            &h.acme.editor,
            with_files(&many),
        )
        .await
        .problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem["diagnostics"][0]["code"], "too-many-files",
        "{problem}"
    );
}

#[test]
fn the_path_rule_is_the_registry_s() {
    use promptstack::spec::{PathError, check_relative_path};
    assert_eq!(check_relative_path("a/b.toml"), Ok(()));
    assert_eq!(check_relative_path(".hidden/b"), Ok(()));
    assert_eq!(check_relative_path(""), Err(PathError::Empty));
    assert_eq!(check_relative_path("/a"), Err(PathError::Absolute));
    assert_eq!(check_relative_path("a\\b"), Err(PathError::Backslash));
    assert_eq!(check_relative_path("a\nb"), Err(PathError::Control));
    assert_eq!(check_relative_path("a//b"), Err(PathError::EmptyComponent));
    assert_eq!(check_relative_path("a/"), Err(PathError::EmptyComponent));
    assert_eq!(check_relative_path("./a"), Err(PathError::DotComponent));
    assert_eq!(check_relative_path("a/.."), Err(PathError::DotComponent));
}

#[tokio::test]
async fn eval_suites_are_checked_on_publish_every_problem_located_in_its_file() {
    let h = Harness::new().await;
    let unknown_model = "suite_version = 1\n[models.local]\nformat = \"openai-chat\"\nbase_url = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n[matrix]\nversions = [{ name = \"prod\", ref = \"production\" }]\nmodels = [\"remote\"]\n[[scenarios]]\nname = \"s\"\nsend = \"sends/research.json\"\n[[scenarios.assert]]\ntype = \"budget\"\n";
    let missing_send = unknown_model
        .replace("[\"remote\"]", "[\"local\"]")
        .replace("sends/research.json", "sends/nowhere.json");
    let answer = h
        .post(
            "/v1/agents/chat-assistant/versions",
            &h.acme.editor,
            with_files(&[
                ("evals/a.toml", unknown_model.to_owned()),
                ("evals/b.toml", missing_send),
            ]),
        )
        .await;
    let problem = answer.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        problem["type"],
        "https://promptstack.dev/problems/invalid-suite"
    );
    let found: Vec<(String, String, u64)> = problem["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["location"]["file"].as_str().unwrap().to_owned(),
                d["location"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            ("unknown-model".to_owned(), "evals/a.toml".to_owned(), 8),
            ("missing-file".to_owned(), "evals/b.toml".to_owned(), 11),
        ],
        "{problem}"
    );
    // Nothing was stored: the agent still has its one version.
    assert_eq!(versions(&h).await, 1);
}

#[tokio::test]
async fn a_bundle_s_suites_are_part_of_its_version_id() {
    let h = Harness::new().await;
    let with = serde_json::to_value(bundle("chat-assistant")).unwrap();
    assert!(
        with["files"]["evals/citations.toml"].is_string(),
        "the example's suite is in its bundle"
    );
    let mut without = with.clone();
    without["files"]
        .as_object_mut()
        .unwrap()
        .remove("evals/citations.toml");
    let mut ids = Vec::new();
    for body in [with, without] {
        let answer = h
            .post("/v1/agents/chat-assistant/versions", &h.acme.editor, body)
            .await;
        // The harness published the example as it is when it started: 200 for that one.
        assert!(answer.status.is_success(), "{}", answer.text());
        ids.push(answer.json()["version"]["id"].as_str().unwrap().to_owned());
    }
    assert_ne!(ids[0], ids[1]);
}

#[tokio::test]
async fn a_folder_s_spec_variants_travel_with_the_suites_that_name_them() {
    let h = Harness::new().await;
    let with = serde_json::to_value(bundle("browser-agent")).unwrap();
    assert!(
        with["files"]["variants/kernel-zh.toml"].is_string(),
        "the spec variant is in the bundle"
    );
    let answer = h
        .post(
            "/v1/agents/browser-agent/versions",
            &h.acme.editor,
            with.clone(),
        )
        .await;
    assert!(answer.status.is_success(), "{}", answer.text());
    // Without the variant, the suite that compares against it names a file the bundle lacks.
    let mut without = with;
    without["files"]
        .as_object_mut()
        .unwrap()
        .remove("variants/kernel-zh.toml");
    let answer = h
        .post("/v1/agents/browser-agent/versions", &h.acme.editor, without)
        .await;
    let problem = answer.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let found: Vec<(&str, &str)> = problem["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap(),
                d["location"]["file"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [("missing-file", "evals/kernel-language.toml")],
        "{problem}"
    );
}
