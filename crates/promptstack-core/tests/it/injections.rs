//! Auto-injections: the decision point, the three families and their order, subagent visibility,
//! fail-open tenant instructions, the template-resolution carry, and the preview.

use promptstack_core::block::{BlockState, Exclusion, OverrideState};
use promptstack_core::inject::manifests::{Manifest, Registry};
use promptstack_core::inject::{Injectable, Overrides, PreviewState, Prompt};
use promptstack_core::spec::Stability;
use promptstack_core::{Agent, ErrorKind, SendContext, SpecFormat};
use serde_json::{Value, json};

pub(crate) const STAGE: &str = r#"
spec_version = 1
name = "stage"

[variables.verified]
stability = "stable"
trust = "platform"
default = false

[[blocks]]
id = "role"
trust = "author"
stability = "stable"
template = """
You answer the phone for a bakery.
{% if variables.verified %}
The caller is verified.
{% else %}
The caller is not verified.
{% endif %}"""

[stage]
capabilities = ["payments", "customer_authentication", "external_consult", "end_session", "capability:orders"]

[stage.capability_configs.payments]
currency = "euros"

[stage.capability_configs.orders]
shop = "the Canal Street shop"

[stage.subagents.billing]
text = "You handle billing questions."

[stage.subagents.support]
template = "You handle support.{% if variables.verified %} The caller is verified.{% endif %}"

[targets.main]
system = ["@body"]
"#;

pub(crate) const ORDERS: &str = r#"
slug = "orders"
[config.shop]
[prompt]
fragment = "Orders\n- Take orders for {{capability_config.shop}} with `place_order`."
[[tools]]
name = "place_order"
description = "Places an order. Use it when the caller confirms. On failure, say so."
"#;

pub(crate) fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.insert(Manifest::from_toml(ORDERS, "orders.toml").unwrap());
    registry
}

pub(crate) fn agent_with(extra: &str) -> Agent {
    let spec = format!("{STAGE}\n{extra}");
    Agent::from_source_with_registry(spec.as_bytes(), "stage.toml", SpecFormat::Toml, &registry())
        .unwrap()
}

pub(crate) fn send(extra: Value) -> SendContext {
    let mut base = json!({
        "now": "2026-11-30T23:30:00-05:00",
        "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"},
        "tenant_instructions": {"enabled": true, "text": "Mention the loyalty card."}
    });
    for (k, v) in extra.as_object().unwrap() {
        base[k] = v.clone();
    }
    SendContext::from_json(base.to_string().as_bytes(), "send.json").unwrap()
}

fn system(agent: &Agent, ctx: &SendContext) -> String {
    agent.assemble(ctx).unwrap().compose("main").unwrap().system
}

fn ids(agent: &Agent, ctx: &SendContext) -> Vec<String> {
    agent
        .assemble(ctx)
        .unwrap()
        .blocks()
        .filter(|b| b.is_included())
        .map(|b| b.id.to_string())
        .collect()
}

fn codes(agent: &Agent, ctx: &SendContext) -> Vec<&'static str> {
    agent
        .assemble(ctx)
        .unwrap()
        .diagnostics()
        .map(|d| d.code)
        .collect()
}

fn decide(config: Value, injectable: Injectable<'_>) -> promptstack_core::inject::Decision {
    Overrides::read(Some(&config)).decide(injectable)
}

const PAYMENTS: Injectable<'static> = Injectable::Capability {
    slug: "payments",
    compliance: true,
};
const END: Injectable<'static> = Injectable::Capability {
    slug: "end_session",
    compliance: false,
};

#[test]
fn the_decision_point_ships_by_default_and_only_literal_false_or_off_suppresses() {
    let absent = Overrides::read(None).decide(END);
    assert_eq!(absent.state, OverrideState::Default);
    assert!(absent.visible_in(Prompt::Main) && absent.visible_in(Prompt::Subagent("any")));
    for (config, injectable, state) in [
        (
            json!({}),
            Injectable::PlatformContext,
            OverrideState::Default,
        ),
        (
            json!({"platform_context": true}),
            Injectable::PlatformContext,
            OverrideState::Default,
        ),
        (
            json!({"platform_context": false}),
            Injectable::PlatformContext,
            OverrideState::Off,
        ),
        (
            json!({"tenant_instructions": false}),
            Injectable::TenantInstructions,
            OverrideState::Off,
        ),
        (
            json!({"platform_context": "false"}),
            Injectable::PlatformContext,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"platform_context": 0}),
            Injectable::PlatformContext,
            OverrideState::FallbackAfterMalformed,
        ),
        (json!({"capabilities": {}}), END, OverrideState::Default),
        (
            json!({"capabilities": {"end_session": {}}}),
            END,
            OverrideState::Default,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "default"}}}),
            END,
            OverrideState::Default,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "off"}}}),
            END,
            OverrideState::Off,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "off", "text": "kept by the editor"}}}),
            END,
            OverrideState::Off,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "custom", "text": "Bye."}}}),
            END,
            OverrideState::Custom,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "custom"}}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "custom", "text": "  "}}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "custom", "text": 3}}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": "Off"}}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": {"mode": false}}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": "off"}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": {"text": "Bye."}}}),
            END,
            OverrideState::FallbackAfterMalformed,
        ),
        (
            json!({"capabilities": {"end_session": {"mdoe": "off"}}}),
            END,
            OverrideState::Default,
        ),
        (json!({"capabilities": "off"}), END, OverrideState::Default),
        (json!("off"), END, OverrideState::Default),
        (
            json!(false),
            Injectable::PlatformContext,
            OverrideState::Default,
        ),
    ] {
        let decision = decide(config.clone(), injectable);
        assert_eq!(decision.state, state, "{config} for {injectable:?}");
        let overrides = Overrides::read(Some(&config));
        let reported = !decision.diagnostics.is_empty() || !overrides.diagnostics().is_empty();
        let expect_report = state == OverrideState::FallbackAfterMalformed
            || config.to_string().contains("mdoe")
            || !config.is_object()
            || config.get("capabilities").is_some_and(|c| !c.is_object());
        assert_eq!(reported, expect_report, "{config}: diagnostics");
    }
}

#[test]
fn visibility_is_sparse_and_a_malformed_switch_keeps_the_block_visible() {
    let d = decide(
        json!({"capabilities": {"end_session": {"main": false, "subagents": {"billing": false, "support": true}}}}),
        END,
    );
    assert!(!d.visible_in(Prompt::Main));
    assert!(!d.visible_in(Prompt::Subagent("billing")));
    assert!(d.visible_in(Prompt::Subagent("support")));
    assert!(
        d.visible_in(Prompt::Subagent("sales")),
        "absent topic = visible"
    );
    let d = decide(
        json!({"capabilities": {"end_session": {"main": "no", "subagents": {"billing": 0}}}}),
        END,
    );
    assert!(d.visible_in(Prompt::Main) && d.visible_in(Prompt::Subagent("billing")));
    assert_eq!(d.diagnostics.len(), 2);
    let d = decide(
        json!({"capabilities": {"end_session": {"subagents": ["billing"]}}}),
        END,
    );
    assert!(d.visible_in(Prompt::Subagent("billing")));
    assert_eq!(d.diagnostics[0].code, "malformed-override");
}

#[test]
fn any_non_default_state_of_a_compliance_capability_warns() {
    let warns = |config: Value| {
        decide(config, PAYMENTS)
            .diagnostics
            .iter()
            .any(|d| d.code == "compliance-override")
    };
    assert!(!warns(json!({})));
    assert!(!warns(
        json!({"capabilities": {"payments": {"mode": "default"}}})
    ));
    assert!(warns(
        json!({"capabilities": {"payments": {"mode": "off"}}})
    ));
    assert!(warns(
        json!({"capabilities": {"payments": {"mode": "custom", "text": "x"}}})
    ));
    assert!(warns(json!({"capabilities": {"payments": {"mode": "of"}}})));
    assert!(warns(
        json!({"capabilities": {"payments": {"main": false}}})
    ));
    assert!(warns(
        json!({"capabilities": {"payments": {"subagents": {"billing": false}}}})
    ));
    // The same changes to a capability without a compliance rule do not warn.
    assert!(
        decide(
            json!({"capabilities": {"end_session": {"mode": "off"}}}),
            END
        )
        .diagnostics
        .is_empty()
    );
}

#[test]
fn absent_config_is_byte_identical_to_an_explicit_all_default_config() {
    let absent = agent_with("");
    let empty = agent_with("[auto_injections]\n");
    let explicit = agent_with(
        r#"
[auto_injections]
platform_context = true
tenant_instructions = true
[auto_injections.capabilities.payments]
mode = "default"
main = true
[auto_injections.capabilities.end_session]
mode = "default"
subagents = { billing = true }
"#,
    );
    for topic in [json!(null), json!("billing"), json!("support")] {
        let ctx = send(json!({"topic": topic}));
        let reference = system(&absent, &ctx);
        assert_eq!(reference, system(&empty, &ctx));
        assert_eq!(reference, system(&explicit, &ctx));
        let a = serde_json::to_value(absent.assemble(&ctx).unwrap()).unwrap();
        let b = serde_json::to_value(explicit.assemble(&ctx).unwrap()).unwrap();
        assert_eq!(a["blocks"], b["blocks"]);
        assert_eq!(a["tools"], b["tools"]);
        assert_eq!(a["fingerprint"], b["fingerprint"]);
    }
    // The send's stored overrides replace the spec's: an empty stored copy is the default too.
    let ctx = send(json!({"auto_injections": {}}));
    assert_eq!(system(&absent, &ctx), system(&absent, &send(json!({}))));
}

#[test]
fn a_spec_without_a_stage_gets_no_injections() {
    let spec = r#"
spec_version = 1
name = "plain"
[[blocks]]
id = "intro"
trust = "author"
stability = "stable"
text = "Hello."
[targets.main]
system = ["@body"]
"#;
    let agent = Agent::from_source(spec.as_bytes(), "plain.toml", SpecFormat::Toml).unwrap();
    let ctx = send(json!({}));
    assert_eq!(system(&agent, &ctx), "Hello.");
    assert_eq!(agent.assemble(&ctx).unwrap().blocks().count(), 1);
    assert!(agent.preview_injections(&ctx).unwrap().is_empty());
}

#[test]
fn families_are_appended_after_the_authored_text_in_the_documented_order() {
    let agent = agent_with("");
    let ctx = send(json!({}));
    assert_eq!(
        ids(&agent, &ctx),
        [
            "role",
            "capability.payments",
            "capability.customer_authentication",
            "capability.external_consult",
            "capability.end_session",
            "capability.orders",
            "tenant_instructions",
            "tenant_instructions.end",
            "platform_context"
        ]
    );
    let assembly = agent.assemble(&ctx).unwrap();
    let platform = assembly.block("platform_context").unwrap();
    assert_eq!(platform.stability, Stability::Volatile);
    // 23:30 at UTC-5 is 04:30 the next day in UTC, labelled as such.
    assert!(
        platform.text.contains("2026-12-01 04:30 UTC (Tuesday)"),
        "{}",
        platform.text
    );
    assert_eq!(assembly.volatile(), platform.text);
    let text = system(&agent, &ctx);
    assert!(text.starts_with("You answer the phone for a bakery.\nThe caller is not verified."));
    assert!(text.ends_with(&platform.text));
    assert!(text.contains("state the amount in euros"));
    assert!(text.contains("Take orders for the Canal Street shop with `place_order`."));
    // The payments guidance's first rule keeps card numbers away from the model.
    let payments = &assembly.block("capability.payments").unwrap().text;
    let first_rule = payments.lines().nth(1).unwrap();
    assert!(first_rule.starts_with("1. Card numbers") && first_rule.contains("never pass through"));
}

#[test]
fn off_removes_only_the_text_and_the_tools_still_register() {
    let agent = agent_with("");
    let every = json!({"capabilities": {
        "payments": {"mode": "off"}, "customer_authentication": {"mode": "off"},
        "external_consult": {"mode": "off"}, "end_session": {"mode": "off"}, "orders": {"mode": "off"}
    }});
    let on = agent.assemble(&send(json!({}))).unwrap();
    let off = agent
        .assemble(&send(json!({"auto_injections": every})))
        .unwrap();
    let tools =
        |a: &promptstack_core::Assembly| a.toolset().names().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(tools(&on), tools(&off));
    assert!(tools(&off).contains(&"take_card_payment".to_owned()));
    assert!(tools(&off).contains(&"place_order".to_owned()));
    for block in off.blocks().filter(|b| b.id.starts_with("capability.")) {
        assert_eq!(block.override_state, OverrideState::Off);
        assert!(matches!(
            &block.state,
            BlockState::Excluded { reason: Exclusion::Override { key } } if key.ends_with(".mode")
        ));
    }
}

#[test]
fn a_malformed_override_ships_the_default_text_never_silence() {
    let agent = agent_with("");
    let default = agent.assemble(&send(json!({}))).unwrap();
    for broken in [
        json!({"mode": "of"}),
        json!({"mode": "custom"}),
        json!({"mode": "custom", "text": ""}),
        json!({"mode": ["off"]}),
        json!("off"),
        json!({"text": "no mode"}),
        json!({"mode": "custom", "text": "Reads {{capability_config.missing}}."}),
    ] {
        let ctx = send(
            json!({"auto_injections": {"capabilities": {"payments": broken.clone(), "orders": broken.clone()}}}),
        );
        let assembly = agent.assemble(&ctx).unwrap();
        for id in ["capability.payments", "capability.orders"] {
            let block = assembly.block(id).unwrap();
            assert!(block.is_included(), "{broken}: {id}");
            assert_eq!(
                block.text,
                default.block(id).unwrap().text,
                "{broken}: {id}"
            );
            assert_eq!(
                block.override_state,
                OverrideState::FallbackAfterMalformed,
                "{broken}"
            );
        }
        let found = codes(&agent, &ctx);
        assert!(found.contains(&"malformed-override"), "{broken}: {found:?}");
        assert!(
            found.contains(&"compliance-override"),
            "{broken}: {found:?}"
        );
    }
}

#[test]
fn custom_text_is_substituted_and_marked() {
    let agent = agent_with("");
    let ctx = send(json!({"auto_injections": {"capabilities": {
        "orders": {"mode": "custom", "text": "Orders go to {{ capability_config.shop }}."}
    }}}));
    let assembly = agent.assemble(&ctx).unwrap();
    let block = assembly.block("capability.orders").unwrap();
    assert_eq!(block.text, "Orders go to the Canal Street shop.");
    assert_eq!(block.override_state, OverrideState::Custom);
    assert_eq!(block.trust, promptstack_core::spec::Trust::Author);
}

#[test]
fn subagent_prompts_share_capability_text_with_per_prompt_visibility() {
    let agent = agent_with(
        r#"
[auto_injections.capabilities.customer_authentication]
main = false
subagents = { support = false }
[auto_injections.capabilities.end_session]
subagents = { billing = false }
"#,
    );
    let main = agent.assemble(&send(json!({}))).unwrap();
    let billing = agent.assemble(&send(json!({"topic": "billing"}))).unwrap();
    let support = agent.assemble(&send(json!({"topic": "support"}))).unwrap();
    let included = |a: &promptstack_core::Assembly, id: &str| a.block(id).unwrap().is_included();
    assert!(!included(&main, "capability.customer_authentication"));
    assert!(included(&billing, "capability.customer_authentication"));
    assert!(!included(&support, "capability.customer_authentication"));
    assert!(included(&main, "capability.end_session"));
    assert!(!included(&billing, "capability.end_session"));
    assert!(included(&support, "capability.end_session"));
    // Shared text: the same bytes wherever the block is visible.
    assert_eq!(
        main.block("capability.payments").unwrap().text,
        billing.block("capability.payments").unwrap().text
    );
    // The subagent's prompt replaces the main prompt's authored text.
    let text = billing.compose("main").unwrap().system;
    assert!(text.starts_with("You handle billing questions.\n\nTaking payments"));
    assert!(!text.contains("bakery"));
    assert!(!included(&billing, "role"));
    assert!(matches!(
        &billing.block("capability.end_session").unwrap().state,
        BlockState::Excluded { reason: Exclusion::Scope { prompt } } if prompt == "subagent `billing`"
    ));
    let err = agent
        .assemble(&send(json!({"topic": "sales"})))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("billing, support"), "{err}");
}

#[test]
fn tenant_instructions_fail_open_and_never_trail() {
    let agent = agent_with("[auto_injections]\nplatform_context = false\n");
    let ok = agent.assemble(&send(json!({}))).unwrap();
    assert!(
        ok.block("tenant_instructions")
            .unwrap()
            .text
            .ends_with("Mention the loyalty card.")
    );
    let text = ok.compose("main").unwrap().system;
    assert!(text.ends_with("do not override the platform's safety and compliance rules."));
    for (tenant, reason) in [
        (
            json!({"enabled": false, "text": "", "unavailable": "timed out"}),
            "unavailable: timed out",
        ),
        (
            json!({"enabled": false, "text": "Switched off."}),
            "switched off in the tenant's settings",
        ),
        (
            json!({"enabled": true, "text": "   "}),
            "the tenant has no instructions",
        ),
        (json!(null), "no tenant instructions were supplied"),
    ] {
        let ctx = send(json!({"tenant_instructions": tenant}));
        let assembly = agent.assemble(&ctx).unwrap();
        let block = assembly.block("tenant_instructions").unwrap();
        assert!(!block.is_included());
        assert!(
            matches!(&block.state, BlockState::Excluded { reason: Exclusion::Disabled { reason: r } } if r == reason)
        );
        assert!(assembly.block("tenant_instructions.end").is_none());
        let unavailable = codes(&agent, &ctx).contains(&"tenant-instructions-unavailable");
        assert_eq!(unavailable, reason.starts_with("unavailable"));
    }
    // Suppressed by the stage: off, not disabled.
    let ctx = send(json!({"auto_injections": {"tenant_instructions": false}}));
    let assembly = agent.assemble(&ctx).unwrap();
    assert_eq!(
        assembly
            .block("tenant_instructions")
            .unwrap()
            .override_state,
        OverrideState::Off
    );
    // With every capability off and no platform context, the closer still ends the prompt.
    let ctx = send(
        json!({"auto_injections": {"platform_context": false, "capabilities": {
            "payments": {"mode": "off"}, "customer_authentication": {"mode": "off"},
            "external_consult": {"mode": "off"}, "end_session": {"mode": "off"}, "orders": {"mode": "off"}
        }}}),
    );
    let text = agent
        .assemble(&ctx)
        .unwrap()
        .compose("main")
        .unwrap()
        .system;
    assert!(text.ends_with("safety and compliance rules."), "{text}");
}

/// The template-resolution carry: whether the authored text is a template (here with a
/// conditional that resolves differently per send) or literal text, every appended block follows
/// it, in order, in the composed prompt.
#[test]
fn appended_blocks_survive_template_resolution_templated_and_untemplated() {
    for (name, authored) in [
        (
            "templated",
            "template = \"Hi.{% if variables.verified %} Verified.{% endif %}\"",
        ),
        ("untemplated", "text = \"Hi.\""),
    ] {
        let spec = STAGE.replacen(
            "template = \"\"\"\nYou answer the phone for a bakery.\n{% if variables.verified %}\nThe caller is verified.\n{% else %}\nThe caller is not verified.\n{% endif %}\"\"\"",
            authored,
            1,
        );
        assert_ne!(spec, STAGE, "{name}: the replacement must apply");
        let agent = Agent::from_source_with_registry(
            spec.as_bytes(),
            "s.toml",
            SpecFormat::Toml,
            &registry(),
        )
        .unwrap();
        for verified in [false, true] {
            let ctx = send(json!({"variables": {"verified": verified}}));
            let assembly = agent.assemble(&ctx).unwrap();
            let appended: Vec<&str> = assembly
                .blocks()
                .filter(|b| b.is_included() && b.id.as_ref() != "role")
                .map(|b| b.text.as_str())
                .collect();
            assert_eq!(appended.len(), 8, "{name}");
            let authored = &assembly.block("role").unwrap().text;
            let expected = format!("{authored}\n\n{}", appended.join("\n\n"));
            assert_eq!(assembly.compose("main").unwrap().system, expected, "{name}");
            let expected_authored = if name == "templated" && verified {
                "Hi. Verified."
            } else {
                "Hi."
            };
            assert_eq!(authored, expected_authored, "{name}");
        }
    }
}

#[test]
fn the_preview_uses_the_live_builders_and_keeps_removed_blocks() {
    let agent = agent_with("");
    let ctx = send(
        json!({"topic": "billing", "auto_injections": {"platform_context": false, "capabilities": {
            "payments": {"mode": "off"},
            "end_session": {"subagents": {"billing": false}},
            "orders": {"mode": "custom", "text": "Custom orders text."},
            "sms_reminders": {"mode": "off"}
        }}}),
    );
    let preview = agent.preview_injections(&ctx).unwrap();
    let assembly = agent.assemble(&ctx).unwrap();
    for entry in &preview {
        match assembly.block(&entry.id) {
            Some(block) if block.is_included() => {
                assert_eq!(block.text, entry.text, "{}", entry.id)
            }
            Some(block) => assert!(!block.is_included()),
            None => assert_eq!(entry.id, "capability.sms_reminders"),
        }
    }
    let by_id = |id: &str| preview.iter().find(|p| p.id == id).unwrap();
    assert_eq!(by_id("capability.payments").state, PreviewState::Removed);
    assert!(
        by_id("capability.payments")
            .text
            .starts_with("Taking payments")
    );
    assert!(by_id("capability.payments").compliance);
    assert_eq!(by_id("capability.payments").tools, ["take_card_payment"]);
    assert_eq!(
        by_id("capability.end_session").state,
        PreviewState::Excluded
    );
    assert_eq!(by_id("capability.orders").state, PreviewState::Custom);
    assert_eq!(
        by_id("capability.customer_authentication").state,
        PreviewState::Default
    );
    assert_eq!(by_id("platform_context").state, PreviewState::Removed);
    assert!(by_id("platform_context").text.contains("UTC"));
    assert_eq!(
        by_id("capability.sms_reminders").state,
        PreviewState::Excluded
    );
    assert_eq!(
        by_id("capability.sms_reminders").override_state,
        OverrideState::Off
    );
}

#[test]
fn stage_errors_are_located() {
    for (extra_stage, code) in [
        ("capabilities = [\"paymnets\"]", "unknown-capability"),
        (
            "capabilities = [\"capability:nowhere\"]",
            "unknown-capability",
        ),
        (
            "capabilities = [\"end_session\", \"end_session\"]",
            "duplicate-id",
        ),
        (
            "capabilities = [\"external_consult\"]\ncapability_configs = { external_consult = { role = \"both\" } }",
            "bad-value",
        ),
        ("capabilities = [\"capability:orders\"]", "bad-value"),
    ] {
        let spec = format!(
            "spec_version = 1\nname = \"s\"\n[[blocks]]\nid = \"a\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"A.\"\n[targets.main]\nsystem = [\"@body\"]\n[stage]\n{extra_stage}\n"
        );
        let err = Agent::from_source_with_registry(
            spec.as_bytes(),
            "s.toml",
            SpecFormat::Toml,
            &registry(),
        )
        .unwrap_err();
        let found: Vec<_> = err.diagnostics.iter().map(|d| d.code).collect();
        assert!(found.contains(&code), "{extra_stage}: {found:?}");
        assert!(
            err.diagnostics.iter().all(|d| d.location.is_some()),
            "{err}"
        );
    }
}

mod decision_properties {
    use proptest::prelude::*;

    use super::*;

    fn config() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-2i64..3).prop_map(|n| json!(n)),
            prop_oneof![
                Just("off"),
                Just("custom"),
                Just("default"),
                Just("of"),
                Just(""),
                Just("Text.")
            ]
            .prop_map(|s| json!(s)),
        ];
        let keys = prop_oneof![
            Just("platform_context"),
            Just("tenant_instructions"),
            Just("capabilities"),
            Just("payments"),
            Just("end_session"),
            Just("mode"),
            Just("text"),
            Just("main"),
            Just("subagents"),
            Just("billing"),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(keys.clone(), inner, 0..5).prop_map(|m| {
                    Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        })
    }

    fn at<'a>(config: &'a Value, path: &[&str]) -> Option<&'a Value> {
        path.iter().try_fold(config, |v, k| v.as_object()?.get(*k))
    }

    proptest! {
        /// Overrides never silence by accident: a block is off, or hidden in a prompt, only where
        /// the configuration says so literally; custom text ships only from a non-empty string.
        #[test]
        fn only_literal_switches_suppress(config in config()) {
            let overrides = Overrides::read(Some(&config));
            let platform = overrides.decide(Injectable::PlatformContext);
            prop_assert_eq!(
                platform.state == OverrideState::Off,
                at(&config, &["platform_context"]) == Some(&Value::Bool(false))
            );
            let tenant = overrides.decide(Injectable::TenantInstructions);
            prop_assert_eq!(
                tenant.state == OverrideState::Off,
                at(&config, &["tenant_instructions"]) == Some(&Value::Bool(false))
            );
            for slug in ["payments", "end_session"] {
                let d = overrides.decide(Injectable::Capability { slug, compliance: slug == "payments" });
                let entry = ["capabilities", slug];
                let mode = at(&config, &[entry[0], entry[1], "mode"]);
                prop_assert_eq!(d.state == OverrideState::Off, mode == Some(&json!("off")));
                prop_assert_eq!(
                    !d.visible_in(Prompt::Main),
                    at(&config, &[entry[0], entry[1], "main"]) == Some(&Value::Bool(false))
                );
                prop_assert_eq!(
                    !d.visible_in(Prompt::Subagent("billing")),
                    at(&config, &[entry[0], entry[1], "subagents", "billing"]) == Some(&Value::Bool(false))
                );
                if d.state == OverrideState::Custom {
                    prop_assert_eq!(mode, Some(&json!("custom")));
                    prop_assert!(d.custom_text.as_deref().is_some_and(|t| !t.trim().is_empty()));
                }
                if d.state == OverrideState::FallbackAfterMalformed {
                    prop_assert!(!d.diagnostics.is_empty());
                }
                if slug == "payments" && (d.state != OverrideState::Default || d.is_scoped()) {
                    prop_assert!(d.diagnostics.iter().any(|x| x.code == "compliance-override"));
                }
            }
        }
    }
}

#[test]
fn spec_overrides_are_checked_at_compile_time_with_locations_and_reported_once() {
    let agent = agent_with(
        r#"
[auto_injections]
platform_context = "no"
[auto_injections.capabilities.payments]
mode = "of"
[auto_injections.capabilities.sms]
mode = "off"
"#,
    );
    let lint: Vec<_> = agent
        .lint()
        .iter()
        .map(|d| (d.code, d.location.as_ref().map(|l| l.line)))
        .collect();
    assert!(lint.contains(&("malformed-override", Some(42))), "{lint:?}");
    assert!(lint.contains(&("malformed-override", Some(44))), "{lint:?}");
    assert!(lint.iter().any(|(c, _)| *c == "compliance-override"));
    assert!(
        lint.iter()
            .any(|(c, l)| *c == "leftover-override" && l.is_some())
    );
    let assembly = agent.assemble(&send(json!({}))).unwrap();
    let malformed = assembly
        .diagnostics()
        .filter(|d| d.code == "malformed-override")
        .count();
    assert_eq!(malformed, 2, "reported once, not again per assembly");
    // Without a stage, overrides do nothing, and lint says so.
    let spec = "spec_version = 1\nname = \"s\"\n[[blocks]]\nid = \"a\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"A.\"\n[targets.main]\nsystem = [\"@body\"]\n[auto_injections]\nplatform_context = false\n";
    let agent = Agent::from_source(spec.as_bytes(), "s.toml", SpecFormat::Toml).unwrap();
    assert_eq!(agent.lint()[0].code, "overrides-without-stage");
}
