//! The refresher: for any sequence of variable changes and topic switches, each at its own
//! moment, the refreshed prompt equals a fresh assembly with the final variables, topic and clock
//! — no duplicated block, no stripped rule, no stale date.

use std::collections::BTreeMap;

use promptstack_core::context::Now;
use promptstack_core::refresh::{Change, Refresher};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::injections::{agent_with, send};

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        any::<Option<bool>>().prop_map(|v| {
            let mut values = BTreeMap::new();
            values.insert("verified".to_owned(), v.map_or(Value::Null, Value::Bool));
            Change::Variables(values)
        }),
        prop_oneof![
            Just(None),
            Just(Some("billing".to_owned())),
            Just(Some("support".to_owned()))
        ]
        .prop_map(Change::Topic),
    ]
}

fn overrides() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        Just(json!({})),
        Just(json!({"capabilities": {
            "customer_authentication": {"main": false, "subagents": {"support": false}},
            "end_session": {"subagents": {"billing": false}},
            "orders": {"mode": "off"}
        }})),
        Just(json!({"platform_context": false, "capabilities": {
            "payments": {"mode": "custom", "text": "Pay with `take_card_payment` in {{capability_config.currency}}."},
            "orders": {"main": false, "subagents": {"billing": true}}
        }})),
        Just(
            json!({"tenant_instructions": false, "capabilities": {"external_consult": {"mode": "bogus"}}})
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn refreshing_equals_a_fresh_assembly(
        config in overrides(),
        start_topic in prop_oneof![Just(json!(null)), Just(json!("billing"))],
        tenant in any::<bool>(),
        changes in proptest::collection::vec((change(), 0i64..200_000), 1..12),
    ) {
        let agent = agent_with("");
        let mut extra = json!({"auto_injections": config, "topic": start_topic});
        if !tenant {
            extra["tenant_instructions"] = json!({"enabled": false, "text": ""});
        }
        let ctx = send(extra);
        let start = ctx.now;
        let mut refresher = Refresher::new(&agent, ctx, "main").unwrap();
        for (change, minutes_later) in changes {
            refresher.apply(change, later(start, minutes_later)).unwrap();
            prop_assert_eq!(refresher.context().now, later(start, minutes_later));
            let fresh = agent
                .assemble_fresh(refresher.context())
                .unwrap()
                .compose("main")
                .unwrap()
                .system;
            prop_assert_eq!(refresher.text(), fresh.as_str());
            let assembly = agent.assemble_fresh(refresher.context()).unwrap();
            for (id, segment) in refresher.segments() {
                let shown = assembly.block(id).unwrap().is_included();
                prop_assert_eq!(refresher.text().matches(segment.text.as_str()).count(), usize::from(shown), "{}", id);
            }
        }
    }
}

/// The same moment as `start`, `minutes` later, on the same wall clock.
fn later(start: Now, minutes: i64) -> Now {
    Now::new(
        start
            .timestamp()
            .checked_add(jiff::SignedDuration::from_mins(minutes))
            .unwrap(),
        start.offset(),
    )
}

#[test]
fn switching_topics_back_and_forth_restores_the_prompt_exactly() {
    let agent = agent_with("");
    let mut refresher = Refresher::new(&agent, send(json!({})), "main").unwrap();
    let now = refresher.context().now;
    let first = refresher.text().to_owned();
    refresher
        .apply(Change::Topic(Some("billing".to_owned())), now)
        .unwrap();
    assert_ne!(refresher.text(), first);
    refresher.apply(Change::Topic(None), now).unwrap();
    assert_eq!(
        refresher.text(),
        first,
        "switching back restores the prompt exactly"
    );
    assert_eq!(refresher.refreshes(), 2);
}

/// Regression (issue 17.11): the tail was captured once, so the platform context kept the date
/// of the first build for the whole session.
#[test]
fn a_refresh_shows_the_date_of_the_refresh() {
    let agent = agent_with("");
    let ctx = send(json!({}));
    let start = ctx.now;
    let mut refresher = Refresher::new(&agent, ctx, "main").unwrap();
    let first = refresher.text().to_owned();
    assert!(first.contains("2026-12-01 04:30 UTC"), "{first}");
    let next_day = later(start, 25 * 60);
    let refreshed = refresher
        .apply(Change::Topic(None), next_day)
        .unwrap()
        .to_owned();
    assert!(refreshed.contains("2026-12-02 05:30 UTC"), "{refreshed}");
    assert!(!refreshed.contains("2026-12-01"), "{refreshed}");
    let mut ctx = send(json!({}));
    ctx.now = next_day;
    let fresh = agent.assemble_fresh(&ctx).unwrap().compose("main").unwrap();
    assert_eq!(refreshed, fresh.system);
}

#[test]
fn a_stage_is_required() {
    let spec = "spec_version = 1\nname = \"s\"\n[[blocks]]\nid = \"a\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"A.\"\n[targets.main]\nsystem = [\"@body\"]\n";
    let agent = promptstack_core::Agent::from_source(
        spec.as_bytes(),
        "s.toml",
        promptstack_core::SpecFormat::Toml,
    )
    .unwrap();
    assert!(Refresher::new(&agent, send(json!({})), "main").is_err());
}

#[test]
fn a_target_with_notes_after_the_injected_blocks_is_refused() {
    let agent = agent_with(
        "[[notes]]\nid = \"hint\"\ntrust = \"platform\"\ntext = \"Hint.\"\n\n[targets.with_note]\nsystem = [\"@body\", \"hint\"]\n",
    );
    let err = Refresher::new(&agent, send(json!({})), "with_note").unwrap_err();
    assert!(err.to_string().contains("`hint`"), "{err}");
    assert!(Refresher::new(&agent, send(json!({})), "main").is_ok());
}
