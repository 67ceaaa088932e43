//! Registry capabilities: manifests, the publish step, the segments sidecar, and the authored
//! view recovered from a published text.

use std::collections::BTreeMap;

use promptstack_core::block::OverrideState;
use promptstack_core::inject::Prompt;
use promptstack_core::inject::manifests::{Manifest, Registry, publish};
use serde_json::{Map, Value, json};

use crate::injections::{agent_with, send};

const FAQ: &str = r#"
slug = "faq"
compliance = false
[config.topic]
default = "opening hours"
[prompt]
fragment = """
FAQ
- Answer questions about {{capability_config.topic}} from `faq_search` results only."""
[[tools]]
name = "faq_search"
description = "Searches the FAQ. Use it for {{ questions }}. On failure, say so."
[variables.faq_locale]
stability = "stable"
trust = "platform"
default = "en"
"#;

fn registry() -> Registry {
    let mut registry = crate::injections::registry();
    registry.insert(Manifest::from_toml(FAQ, "faq.toml").unwrap());
    registry
}

fn configs() -> BTreeMap<String, Map<String, Value>> {
    let mut configs = BTreeMap::new();
    configs.insert(
        "orders".to_owned(),
        json!({"shop": "the Canal Street shop"})
            .as_object()
            .unwrap()
            .clone(),
    );
    configs
}

fn refs() -> Vec<String> {
    vec![
        "payments".to_owned(),
        "capability:orders".to_owned(),
        "capability:faq".to_owned(),
    ]
}

const AUTHORED: &str = "You answer the phone for a bakery.";

#[test]
fn publishing_appends_each_fragment_and_records_segments_and_provenance() {
    let published = publish(AUTHORED, &refs(), &registry(), &configs(), None).unwrap();
    let orders = "Orders\n- Take orders for the Canal Street shop with `place_order`.";
    let faq = "FAQ\n- Answer questions about opening hours from `faq_search` results only.";
    assert_eq!(published.text, format!("{AUTHORED}\n\n{orders}\n\n{faq}"));
    assert_eq!(published.segments["orders"].text, orders);
    assert_eq!(published.segments["faq"].text, faq);
    assert!(
        !published.segments.contains_key("payments"),
        "built-ins are not published"
    );
    let slugs: Vec<&str> = published
        .provenance
        .iter()
        .map(|p| p.slug.as_str())
        .collect();
    assert_eq!(slugs, ["orders", "faq"]);
    for p in &published.provenance {
        assert!(published.text[p.range.clone()].ends_with(&published.segments[&p.slug].text));
    }
    let tools: Vec<&str> = published.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["place_order", "faq_search"]);
    assert!(published.variables.contains_key("faq_locale"));
    assert!(published.diagnostics.is_empty());
    assert_eq!(published.authored_view(), AUTHORED);
}

#[test]
fn off_skips_only_the_fragment_and_warns_custom_replaces_malformed_falls_back() {
    let overrides = json!({"capabilities": {
        "orders": {"mode": "off"},
        "faq": {"mode": "custom", "text": "FAQ about {{capability_config.topic}}: use `faq_search`."}
    }});
    let published = publish(AUTHORED, &refs(), &registry(), &configs(), Some(&overrides)).unwrap();
    assert_eq!(
        published.text,
        format!("{AUTHORED}\n\nFAQ about opening hours: use `faq_search`.")
    );
    assert!(!published.segments["orders"].ships);
    assert_eq!(
        published.segments["orders"].override_state,
        OverrideState::Off
    );
    assert_eq!(
        published.segments["faq"].override_state,
        OverrideState::Custom
    );
    let tools: Vec<&str> = published.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, ["place_order", "faq_search"], "tools still expand");
    assert!(
        published.variables.contains_key("faq_locale"),
        "variables still expand"
    );
    let warning = published
        .diagnostics
        .iter()
        .find(|d| d.code == "fragment-suppressed")
        .unwrap();
    assert!(warning.message.contains("`orders`"));
    assert_eq!(published.authored_view(), AUTHORED);

    let malformed =
        json!({"capabilities": {"orders": {"mode": "custom", "text": 7}, "faq": {"mode": "of"}}});
    let fallback = publish(AUTHORED, &refs(), &registry(), &configs(), Some(&malformed)).unwrap();
    let default = publish(AUTHORED, &refs(), &registry(), &configs(), None).unwrap();
    assert_eq!(fallback.text, default.text);
    assert_eq!(
        fallback.segments["orders"].override_state,
        OverrideState::FallbackAfterMalformed
    );
    assert_eq!(
        fallback
            .diagnostics
            .iter()
            .filter(|d| d.code == "malformed-override")
            .count(),
        2
    );
}

#[test]
fn a_fragment_hidden_from_main_is_recorded_but_not_appended() {
    let overrides =
        json!({"capabilities": {"faq": {"main": false, "subagents": {"billing": true}}}});
    let published = publish(AUTHORED, &refs(), &registry(), &configs(), Some(&overrides)).unwrap();
    assert!(!published.text.contains("FAQ"));
    let faq = &published.segments["faq"];
    assert!(!faq.visible_in(Prompt::Main));
    assert!(faq.visible_in(Prompt::Subagent("billing")));
    assert_eq!(published.authored_view(), AUTHORED);
}

#[test]
fn the_authored_view_strips_only_what_publishing_appended() {
    // The author's own text ends with the same words as a fragment: only the appended copy goes.
    let orders = "Orders\n- Take orders for the Canal Street shop with `place_order`.";
    let authored = format!("Intro.\n\n{orders}");
    let published = publish(&authored, &refs(), &registry(), &configs(), None).unwrap();
    assert_eq!(published.authored_view(), authored);
    // Text edited after publishing is left in place rather than guessed at.
    let mut edited = published.clone();
    edited.text.push_str(" (edited)");
    assert_eq!(edited.authored_view(), edited.text);
    // An empty authored text publishes the fragments alone, and strips back to empty.
    let only = publish("", &refs(), &registry(), &configs(), None).unwrap();
    assert!(only.text.starts_with("Orders"));
    assert_eq!(only.authored_view(), "");
}

#[test]
fn publishing_fails_loudly_rather_than_publishing_a_different_text() {
    let err = publish(
        AUTHORED,
        &["capability:nope".to_owned()],
        &registry(),
        &configs(),
        None,
    )
    .unwrap_err();
    assert_eq!(err.kind(), promptstack_core::ErrorKind::NotFound);
    let err = publish(AUTHORED, &refs(), &registry(), &BTreeMap::new(), None).unwrap_err();
    assert_eq!(err.kind(), promptstack_core::ErrorKind::Render);
    assert!(err.to_string().contains("capability_config.shop"), "{err}");
    for bad in [
        "slug = \"x\"\n[prompt]\nfragment = \"  \"\n",
        "slug = \"x\"\nprompt = 3\n",
    ] {
        let error = Manifest::from_toml(bad, "x.toml").unwrap_err();
        assert_eq!(
            error.kind(),
            promptstack_core::ErrorKind::Manifest,
            "{error}"
        );
    }
}

/// The preview chip, the publish step and the live assembly render a fragment with the same
/// function, so their texts are identical under the same overrides.
#[test]
fn published_fragments_equal_the_live_blocks() {
    let agent = agent_with("");
    for overrides in [
        json!(null),
        json!({"capabilities": {"orders": {"mode": "custom", "text": "Orders: {{capability_config.shop}}."}}}),
        json!({"capabilities": {"orders": {"mode": "of"}}}),
    ] {
        let ctx = send(json!({"auto_injections": overrides}));
        let published = publish(
            AUTHORED,
            &["capability:orders".to_owned()],
            &registry(),
            &configs(),
            ctx.auto_injections.as_ref(),
        )
        .unwrap();
        let assembly = agent.assemble(&ctx).unwrap();
        let block = assembly.block("capability.orders").unwrap();
        assert_eq!(block.text, published.segments["orders"].text);
        assert_eq!(
            block.override_state,
            published.segments["orders"].override_state
        );
        let preview = agent.preview_injections(&ctx).unwrap();
        let chip = preview
            .iter()
            .find(|p| p.id == "capability.orders")
            .unwrap();
        assert_eq!(chip.text, published.segments["orders"].text);
    }
}
