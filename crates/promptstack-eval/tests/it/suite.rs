//! The suite format: every example suite parses, every bad suite is refused with every problem
//! located, and no input makes the reader panic.

use std::path::Path;

use promptstack_eval::suite::{self, Assertion, MAX_SUITE_BYTES, Suite};
use proptest::prelude::*;

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn examples() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut found = Vec::new();
    for agent in std::fs::read_dir(&root).unwrap() {
        let evals = agent.unwrap().path().join("evals");
        if let Ok(entries) = std::fs::read_dir(&evals) {
            for entry in entries {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|e| e == "toml") {
                    found.push(path);
                }
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_example_suite_parses_and_names_files_that_exist() {
    let suites = examples();
    assert!(!suites.is_empty(), "no example suite found");
    for path in suites {
        let name = path.display().to_string();
        let suite = Suite::parse(&read(&path), &name).unwrap_or_else(|e| panic!("{e}"));
        let agent = path.parent().and_then(Path::parent).unwrap();
        for version in &suite.matrix.versions {
            if let Some(spec) = &version.spec {
                assert!(agent.join(spec).is_file(), "{name}: {spec} is missing");
            }
        }
        for scenario in &suite.scenarios {
            if let Some(send) = &scenario.send {
                assert!(agent.join(send).is_file(), "{name}: {send} is missing");
            }
        }
    }
}

#[test]
fn defaults_are_filled_in() {
    let text = r#"
suite_version = 1
[models.m]
format = "anthropic"
base_url = "https://api.anthropic.com"
model = "claude"
api_key_env = "ANTHROPIC_API_KEY"
[matrix]
versions = [{ name = "prod", ref = "production" }]
models = ["m"]
[[scenarios]]
name = "s"
context = { now = "2026-12-06T10:00:00+01:00", model = { id = "m", name = "M", provider = "p" }, user_message = "hi" }
[[scenarios.assert]]
type = "citations"
"#;
    let suite = Suite::parse(text.as_bytes(), "s.toml").unwrap();
    assert_eq!(suite.matrix.repeats, 1);
    assert_eq!(suite.matrix.concurrency, 4);
    assert_eq!(suite.matrix.max_steps, 8);
    assert!((suite.matrix.confidence - 0.95).abs() < f64::EPSILON);
    let model = &suite.models["m"];
    assert_eq!((model.timeout_seconds, model.retries), (120, 4));
    assert_eq!(
        suite.scenarios[0].assertions,
        [Assertion::Citations {
            min: 1,
            resolve: true
        }]
    );
    assert_eq!(
        suite.scenarios[0]
            .context
            .as_ref()
            .unwrap()
            .user_message
            .as_deref(),
        Some("hi")
    );
}

#[test]
fn the_same_suite_reads_as_json() {
    let toml_path = examples().into_iter().next().unwrap();
    let suite = Suite::parse(&read(&toml_path), "a.toml").unwrap();
    let json = serde_json::to_vec(&suite).unwrap();
    assert_eq!(Suite::parse(&json, "a.json").unwrap(), suite);
}

#[test]
fn bad_suites() {
    insta::glob!("bad-suites/*.toml", |path| {
        let name = format!("bad/{}", path.file_name().unwrap().to_string_lossy());
        let error = Suite::parse(&read(path), &name).expect_err("a bad suite was accepted");
        insta::assert_snapshot!(error.to_string());
    });
}

#[test]
fn an_oversized_suite_is_refused_before_it_is_read() {
    let text = format!(
        "suite_version = 1\ndescription = \"{}\"\n",
        "x".repeat(MAX_SUITE_BYTES)
    );
    let error = Suite::parse(text.as_bytes(), "big.toml").unwrap_err();
    assert_eq!(error.diagnostics[0].code, "too-large");
}

#[test]
fn the_schema_is_what_schema_eval_prints() {
    let schema = Suite::json_schema();
    assert_eq!(schema["title"], "promptstack eval suite");
    for key in ["suite_version", "models", "matrix", "scenarios"] {
        assert!(
            schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == key),
            "{key} is not required"
        );
    }
}

#[test]
fn paths_stay_inside_the_agent_folder() {
    for good in ["agent.toml", "sends/research.json", "a/b/c.d", ".hidden/x"] {
        assert_eq!(suite::check_path(good), Ok(()), "{good}");
    }
    for bad in [
        "",
        "/etc/passwd",
        "../agent.toml",
        "sends/../../x",
        "sends//x",
        "./x",
        "sends\\x",
        "a\nb",
        "x/",
    ] {
        assert!(suite::check_path(bad).is_err(), "{bad:?} was accepted");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes: a suite or a located error, never a panic.
    #[test]
    fn any_bytes_give_a_suite_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Err(error) = Suite::parse(&bytes, "x.toml") {
            prop_assert!(!error.diagnostics.is_empty());
        }
        if let Err(error) = Suite::parse(&bytes, "x.json") {
            prop_assert!(!error.diagnostics.is_empty());
        }
    }

    /// An example suite with one line removed or duplicated: never a panic, and every error
    /// carries a location.
    #[test]
    fn mangled_examples_are_located(line in 0usize..200, duplicate in any::<bool>()) {
        let path = examples().into_iter().next().unwrap();
        let text = String::from_utf8(read(&path)).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let line = line % lines.len();
        if duplicate { lines.insert(line, lines[line]); } else { lines.remove(line); }
        if let Err(error) = Suite::parse(lines.join("\n").as_bytes(), "m.toml") {
            for d in &error.diagnostics {
                prop_assert!(d.location.is_some(), "{}", d);
            }
        }
    }
}

#[test]
fn files_a_suite_names_must_exist() {
    let path = examples()
        .into_iter()
        .find(|p| p.ends_with("chat-assistant/evals/citations.toml"))
        .unwrap();
    let text = read(&path);
    let error = Suite::parse_for(&text, "evals/citations.toml", |p| p == "agent.toml")
        .expect_err("a send that is not there was accepted");
    let codes: Vec<(&str, &str)> = error
        .diagnostics
        .iter()
        .map(|d| (d.code, d.path.as_str()))
        .collect();
    assert_eq!(
        codes,
        [
            ("missing-file", "scenarios[0].send"),
            ("missing-file", "scenarios[1].send")
        ]
    );
    assert!(error.diagnostics.iter().all(|d| d.location.is_some()));
    Suite::parse_for(&text, "evals/citations.toml", |p| {
        matches!(p, "agent.toml" | "sends/research.json")
    })
    .unwrap();
}

#[test]
fn a_suite_compiles_a_bounded_number_of_patterns() {
    let mut text = String::from(
        "suite_version = 1\n[models.m]\nformat = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n[matrix]\nversions = [{ name = \"v\", ref = \"production\" }]\nmodels = [\"m\"]\n",
    );
    for s in 0..5 {
        text.push_str(&format!(
            "[[scenarios]]\nname = \"s{s}\"\nsend = \"sends/x.json\"\n"
        ));
        for _ in 0..52 {
            // Heavy to compile, and one that does not compile: past the cap neither is tried.
            text.push_str("[[scenarios.assert]]\ntype = \"regex\"\npattern = \"\\\\w{50}(\"\n");
        }
    }
    let error = Suite::parse(text.as_bytes(), "many.toml").unwrap_err();
    let codes: Vec<&str> = error.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["too-many-patterns"], "{error}");
    assert!(error.diagnostics[0].location.is_some());
}
