//! UI labels rendered from a tool's `verb`.

use promptstack_core::tools::label::{LabelConfig, render_label, render_label_with};
use proptest::prelude::*;
use serde_json::{Value, json};

#[test]
fn recorded_cases() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../data/tool_label/cases.json")).unwrap();
    let mut out = String::new();
    for case in &cases {
        let verb = case["verb"].as_str().unwrap();
        let label = render_label(verb, &case["input"]);
        out.push_str(&format!("{verb:?} {}\n    => {label}\n", case["input"]));
    }
    insta::assert_snapshot!(out);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn values_are_cut_once_and_only_when_long(value in "[a-z .]{1,80}", max in 2usize..50) {
        let label = render_label_with("find {q}", &json!({"q": value}), &LabelConfig { max_value_chars: max });
        let collapsed = value.split_whitespace().collect::<Vec<_>>().join(" ");
        let shown = label.strip_prefix("Find \"").and_then(|l| l.strip_suffix("\"…"));
        if collapsed.is_empty() {
            prop_assert_eq!(label, "Find…");
        } else {
            let shown = shown.expect("a present value is quoted");
            prop_assert!(shown.chars().count() <= max);
            if collapsed.chars().count() <= max {
                prop_assert_eq!(shown, collapsed.as_str());
            } else {
                let stem = shown.strip_suffix('…').expect("a long value ends with one ellipsis");
                prop_assert!(!stem.ends_with('.') && !stem.ends_with(' ') && !stem.ends_with('…'));
                prop_assert!(collapsed.starts_with(stem));
            }
        }
    }
}

#[test]
fn fuzz_smoke() {
    crate::support::fuzz_smoke(promptstack_core::fuzzing::tool_label);
}
