//! The architecture invariants (DESIGN §4.1–4.5) and the fingerprint contract, as properties.
//!
//! Contexts are generated over the chat-assistant example (every field that selects or fills a
//! block varies), and small specs are generated to probe the compile-time rules.

#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeMap;

use promptstack_core::context::{
    Integration, ModelDescriptor, Now, Project, Skill, ToolUsage, UserLocation, UserProfile,
};
use promptstack_core::{Agent, Assembly, Fingerprint, SendContext, SpecFormat};
use proptest::prelude::*;

use crate::support::{chat_agent, chat_send};

fn now_strategy() -> impl Strategy<Value = Now> {
    // 2020-01-01 .. 2030-01-01, offsets from -12h to +14h in quarter hours.
    (1_577_836_800i64..1_893_456_000, -48i32..=56).prop_map(|(seconds, quarters)| {
        Now::new(
            jiff::Timestamp::from_second(seconds).unwrap(),
            jiff::tz::Offset::from_seconds(quarters * 900).unwrap(),
        )
    })
}

fn model_strategy() -> impl Strategy<Value = ModelDescriptor> {
    prop_oneof![
        Just(("gpt-4o", "GPT-4o", "openai", ToolUsage::Native)),
        Just(("gpt-oss-20b", "gpt-oss 20B", "openai", ToolUsage::Native)),
        Just((
            "claude-sonnet-4-5",
            "Claude Sonnet 4.5",
            "anthropic",
            ToolUsage::Native
        )),
        Just(("llama-3.1-8b", "Llama 3.1 8B", "local", ToolUsage::None)),
    ]
    .prop_map(|(id, name, provider, tool_usage)| ModelDescriptor {
        id: id.into(),
        name: name.into(),
        provider: provider.into(),
        tool_usage,
        context_window: None,
    })
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,.'/é日]{0,24}"
}

fn skill_strategy() -> impl Strategy<Value = Skill> {
    ("[a-z]{1,8}", text(), text(), any::<bool>(), any::<bool>()).prop_map(
        |(name, description, instructions, widget, hidden)| Skill {
            name,
            slug: None,
            description,
            instructions,
            tags: if widget {
                vec!["widget".into()]
            } else {
                vec![]
            },
            disable_model_invocation: hidden,
            location: None,
            sites: vec![],
        },
    )
}

fn integration() -> impl Strategy<Value = Option<Integration>> {
    prop_oneof![
        Just(None),
        (any::<bool>(), any::<bool>())
            .prop_map(|(connected, enabled)| Some(Integration { connected, enabled })),
    ]
}

prop_compose! {
    fn context_strategy()(
        now in now_strategy(),
        model in model_strategy(),
        web in proptest::option::of(any::<bool>()),
        tasks in any::<bool>(),
        google in integration(),
        microsoft in integration(),
        name in proptest::option::of(text()),
        location in proptest::option::of((proptest::option::of(text()), proptest::option::of(prop_oneof![Just(0.0), -90.0f64..90.0]), proptest::option::of(prop_oneof![Just(0.0), -180.0f64..180.0]))),
        units in proptest::option::of(prop_oneof![Just("metric".to_owned()), Just("imperial".to_owned())]),
        language in proptest::option::of(prop_oneof![Just("English".to_owned()), Just("Spanish".to_owned()), Just(String::new())]),
        app_language in proptest::option::of(prop_oneof![Just("German".to_owned()), Just("Japanese".to_owned())]),
        project in proptest::option::of(("[A-Za-z ]{1,12}", proptest::option::of(text()), any::<bool>())),
        skills in proptest::collection::vec(skill_strategy(), 0..4),
        message in proptest::option::of(("[a-z ]{0,12}", proptest::option::of("[a-z]{1,8}"))),
        voice in proptest::option::of(any::<bool>()),
        answers in proptest::collection::vec((text(), text()), 0..3),
    ) -> SendContext {
        let mut settings = BTreeMap::new();
        if let Some(web) = web {
            settings.insert("web_tools".to_owned(), serde_json::Value::Bool(web));
        }
        settings.insert("experimental_tasks".to_owned(), serde_json::Value::Bool(tasks));
        let mut integrations = BTreeMap::new();
        if let Some(g) = google { integrations.insert("google".to_owned(), g); }
        if let Some(m) = microsoft { integrations.insert("microsoft".to_owned(), m); }
        let mut variables = BTreeMap::new();
        if let Some(voice) = voice {
            variables.insert("voice_mode".to_owned(), serde_json::Value::Bool(voice));
        }
        if !answers.is_empty() {
            variables.insert(
                "ask_answers".to_owned(),
                serde_json::Value::Array(
                    answers.into_iter().map(|(q, a)| serde_json::json!({"question": q, "answer": a})).collect(),
                ),
            );
        }
        let user_message = message.map(|(text, slug)| match slug {
            Some(slug) => format!("/{slug} {text}"),
            None => text,
        });
        let mut ctx = SendContext::new(now, model)
            .with_settings(settings)
            .with_integrations(integrations)
            .with_user(UserProfile {
                name,
                location: location.map(|(name, latitude, longitude)| UserLocation { name, latitude, longitude }),
                units,
                language,
                app_language,
            })
            .with_skills(skills)
            .with_variables(variables);
        *ctx.project = project.map(|(name, instructions, has_sibling_threads)| Project { name, instructions, has_sibling_threads });
        ctx.user_message = user_message;
        ctx
    }
}

/// Everything observable about an assembly, as one comparable value.
fn observe(agent: &Agent, assembly: &Assembly) -> String {
    let mut out = serde_json::to_string(assembly).unwrap();
    for target in agent.target_ids() {
        out.push_str(&serde_json::to_string(&assembly.compose(target).unwrap()).unwrap());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// §4.1: same inputs give byte-identical output — across separately compiled agents, and
    /// whether the stable part is reused or rendered afresh.
    #[test]
    fn determinism(ctx in context_strategy()) {
        let (a, b) = (chat_agent(), chat_agent());
        let first = observe(&a, &a.assemble(&ctx).unwrap());
        prop_assert_eq!(&first, &observe(&a, &a.assemble(&ctx).unwrap()));
        prop_assert_eq!(&first, &observe(&a, &a.assemble_fresh(&ctx).unwrap()));
        prop_assert_eq!(&first, &observe(&b, &b.assemble_fresh(&ctx).unwrap()));
    }

    /// §4.2: changing only the clock, the message and per-send variables leaves the stable half,
    /// every stable block and the fingerprint unchanged; and reusing the stable part gives the
    /// same result as rendering it again.
    #[test]
    fn volatile_isolation(ctx in context_strategy(), later in now_strategy(), message in proptest::option::of("[a-z/ ]{0,16}"), voice in any::<bool>()) {
        let agent = chat_agent();
        let before = agent.assemble(&ctx).unwrap();
        let mut next = ctx.clone();
        next.now = later;
        next.user_message = message;
        next.variables.insert("voice_mode".into(), serde_json::Value::Bool(voice));
        next.variables.remove("ask_answers");
        let after = agent.assemble(&next).unwrap();
        prop_assert_eq!(before.stable(), after.stable());
        prop_assert_eq!(before.fingerprint(), after.fingerprint());
        let stable_blocks = |a: &Assembly| serde_json::to_string(&a.blocks().filter(|b| b.stability == promptstack_core::spec::Stability::Stable).collect::<Vec<_>>()).unwrap();
        prop_assert_eq!(stable_blocks(&before), stable_blocks(&after));
        prop_assert_eq!(observe(&agent, &after), observe(&agent, &agent.assemble_fresh(&next).unwrap()));
    }

    /// §4.3 at run time: no composed system text of the example ends with user-controlled text,
    /// whatever the gates decide; per-send user notes land in the user slot.
    #[test]
    fn no_user_text_trails(ctx in context_strategy()) {
        let agent = chat_agent();
        let assembly = agent.assemble(&ctx).unwrap();
        let last_stable = assembly.blocks().filter(|b| b.range.is_some() && b.stability == promptstack_core::spec::Stability::Stable).last().unwrap();
        prop_assert!(!last_stable.trust.is_user_controlled());
        for target in agent.target_ids() {
            let composition = assembly.compose(target).unwrap();
            let last = composition.parts.iter().rfind(|p| p.slot == promptstack_core::compose::Slot::System).unwrap();
            prop_assert!(!last.trust.is_user_controlled(), "{} ends with {}", target, last.id);
            prop_assert!(composition.system.ends_with(&assembly.block(&last.id).unwrap().text));
        }
    }

    /// §4.5: the stable half appears verbatim at the start of every target that places it, and
    /// every part's range slices out exactly its block's text.
    #[test]
    fn preview_is_wire(ctx in context_strategy()) {
        let agent = chat_agent();
        let assembly = agent.assemble(&ctx).unwrap();
        for target in agent.target_ids() {
            let composition = assembly.compose(target).unwrap();
            prop_assert!(composition.system.starts_with(assembly.stable()));
            prop_assert!(composition.stable_prefix >= assembly.stable().len());
            for part in &composition.parts {
                let text = match part.slot {
                    promptstack_core::compose::Slot::System => &composition.system,
                    promptstack_core::compose::Slot::User => &composition.user,
                };
                prop_assert_eq!(&text[part.range.clone()], assembly.block(&part.id).unwrap().text.as_str());
            }
        }
    }
}

fn model(
    id: &str,
    name: &str,
    provider: &str,
    tools: bool,
    window: Option<u32>,
) -> ModelDescriptor {
    ModelDescriptor {
        id: id.into(),
        name: name.into(),
        provider: provider.into(),
        tool_usage: if tools {
            ToolUsage::Native
        } else {
            ToolUsage::None
        },
        context_window: window,
    }
}

proptest! {
    /// The fingerprint changes if and only if the stable bytes or the model descriptor change.
    #[test]
    fn fingerprint_iff(
        a in ("[ab]{0,3}", "[ab]{1,2}", "[ab]{1,2}", "[ab]{1,2}", any::<bool>(), proptest::option::of(0u32..2)),
        b in ("[ab]{0,3}", "[ab]{1,2}", "[ab]{1,2}", "[ab]{1,2}", any::<bool>(), proptest::option::of(0u32..2)),
    ) {
        let fa = Fingerprint::of_stable(&model(&a.1, &a.2, &a.3, a.4, a.5), &a.0);
        let fb = Fingerprint::of_stable(&model(&b.1, &b.2, &b.3, b.4, b.5), &b.0);
        prop_assert_eq!(fa == fb, a == b);
    }

    /// Through the assembly: a stable input that changes the stable text changes the fingerprint,
    /// and so does a different model; the same inputs keep it.
    #[test]
    fn fingerprint_tracks_stable_inputs(ctx in context_strategy(), other in "[A-Z][a-z]{2,8}") {
        let agent = chat_agent();
        let base = agent.assemble(&ctx).unwrap();
        let mut renamed = ctx.clone();
        renamed.user.name = Some(other.clone());
        let renamed_assembly = agent.assemble(&renamed).unwrap();
        prop_assert_eq!(base.stable() == renamed_assembly.stable(), base.fingerprint() == renamed_assembly.fingerprint());
        let mut remodelled = ctx.clone();
        remodelled.model.context_window = Some(remodelled.model.context_window.unwrap_or(0) + 1);
        prop_assert_ne!(base.fingerprint(), agent.assemble(&remodelled).unwrap().fingerprint());
    }
}

/// A spec with one stable block whose template reads `path`.
fn spec_reading(path: &str, stability: &str, trust: &str) -> String {
    format!(
        r#"spec_version = 1
name = "probe"

[variables.mood]
stability = "volatile"
trust = "platform"
default = "calm"

[variables.tone]
stability = "stable"
trust = "author"
default = "warm"

[[blocks]]
id = "probe"
trust = "{trust}"
stability = "{stability}"
template = "{{{{ {path} }}}}"

[[blocks]]
id = "closing"
trust = "author"
stability = "{stability}"
text = "Be brief."

[targets.system]
system = ["@body"]
"#
    )
}

fn compile_codes(spec: &str) -> Vec<&'static str> {
    match Agent::from_source(spec.as_bytes(), "probe.toml", SpecFormat::Toml) {
        Ok(_) => Vec::new(),
        Err(error) => error.diagnostics.iter().map(|d| d.code).collect(),
    }
}

const VOLATILE_PATHS: &[&str] = &[
    "now.date",
    "now.minute",
    "now.utc.time",
    "user_message.text",
    "user_message.slugs",
    "variables.mood",
];
const STABLE_PATHS: &[&str] = &[
    "model.name",
    "user.name",
    "project.name",
    "language.reply",
    "variables.tone",
    "settings.web_tools",
    "integrations.google.status",
];

proptest! {
    /// §4.2 at compile time: a stable block reading any volatile variable is refused; reading only
    /// stable variables is not; a volatile block may read anything.
    #[test]
    fn volatile_reads_in_stable_blocks_are_refused(volatile in proptest::sample::select(VOLATILE_PATHS), stable in proptest::sample::select(STABLE_PATHS)) {
        prop_assert!(compile_codes(&spec_reading(volatile, "stable", "untrusted")).contains(&"volatile-in-stable"));
        prop_assert!(!compile_codes(&spec_reading(stable, "stable", "untrusted")).contains(&"volatile-in-stable"));
        prop_assert!(!compile_codes(&spec_reading(volatile, "volatile", "untrusted")).contains(&"volatile-in-stable"));
    }

    /// §4.3 at compile time: over random block sequences (random trust, some gated), either the
    /// spec is refused with `trailing-user-text`, or no send can end the stable half with
    /// user-controlled text.
    #[test]
    fn trailing_user_text_is_refused_or_impossible(
        blocks in proptest::collection::vec((0usize..5, proptest::option::of(0usize..3)), 1..6),
        flags in proptest::collection::vec(any::<bool>(), 3),
    ) {
        let trusts = ["platform", "author", "tenant", "user", "untrusted"];
        let mut spec = String::from("spec_version = 1\nname = \"random\"\n");
        for (i, (trust, gate)) in blocks.iter().enumerate() {
            spec.push_str(&format!("\n[[blocks]]\nid = \"b{i}\"\ntrust = \"{}\"\nstability = \"stable\"\ntext = \"block {i}\"\n", trusts[*trust]));
            if let Some(g) = gate {
                spec.push_str(&format!("when = \"settings.f{g} | default(false)\"\n"));
            }
        }
        spec.push_str("\n[targets.system]\nsystem = [\"@stable\"]\n");
        match Agent::from_source(spec.as_bytes(), "random.toml", SpecFormat::Toml) {
            Err(error) => prop_assert!(error.diagnostics.iter().all(|d| d.code == "trailing-user-text"), "{}", error),
            Ok(agent) => {
                let mut ctx: SendContext = serde_json::from_value(serde_json::json!({
                    "now": "2026-11-30T09:00:00Z",
                    "model": {"id": "m", "name": "M", "provider": "p"}
                })).unwrap();
                for (i, flag) in flags.iter().enumerate() {
                    ctx.settings.insert(format!("f{i}"), serde_json::Value::Bool(*flag));
                }
                let assembly = agent.assemble(&ctx).unwrap();
                if let Some(last) = assembly.blocks().filter(|b| b.is_included()).last() {
                    prop_assert!(!last.trust.is_user_controlled());
                }
                let composition = assembly.compose("system").unwrap();
                if let Some(last) = composition.parts.last() {
                    prop_assert!(!last.trust.is_user_controlled());
                }
            }
        }
    }

    /// §4.4: text that names a tool some sends lack is a lint warning unless its block is gated
    /// on that tool; a tool offered on every send may be named freely.
    #[test]
    fn tool_mentions_need_a_gate_on_the_tool(name in "[a-z]{2,6}_[a-z]{2,6}", gated_tool in any::<bool>(), gated_block in any::<bool>()) {
        let tool_gate = if gated_tool { "when = \"settings.on | default(false)\"" } else { "" };
        let block_gate = if gated_block { format!("when = \"'{name}' in tools\"") } else { String::new() };
        let spec = format!(
            "spec_version = 1\nname = \"t\"\n\n[[tools]]\nname = \"{name}\"\ndescription = \"Does a thing. Use it when asked. Retry once on failure.\"\n{tool_gate}\n\n[[blocks]]\nid = \"intro\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"Call {name} when needed.\"\n{block_gate}\n\n[[blocks]]\nid = \"closing\"\ntrust = \"author\"\nstability = \"stable\"\ntext = \"Be brief.\"\n\n[targets.system]\nsystem = [\"@stable\"]\n"
        );
        let agent = Agent::from_source(spec.as_bytes(), "t.toml", SpecFormat::Toml).unwrap();
        let warned = agent.lint().iter().any(|d| d.code == "tool-mention");
        prop_assert_eq!(warned, gated_tool && !gated_block);
    }
}

/// Token counts are made only when asked for, and memoised by text: a warm re-assembly whose
/// counts are all asked for tokenises only the texts that changed, and one nobody asks about
/// tokenises nothing.
#[test]
fn warm_reassembly_recounts_only_changed_blocks() {
    let agent = chat_agent();
    let ctx = chat_send("research");
    // Every block's count and each half's total, asked for.
    let assemble = |ctx: &SendContext| {
        let assembly = agent.assemble_fresh(ctx).unwrap();
        let blocks: Vec<_> = assembly.blocks().map(|b| b.tokens()).collect();
        (blocks, assembly.stable_tokens(), assembly.volatile_tokens())
    };
    let first = assemble(&ctx);
    let counted = agent.tokenized_texts();
    assert!(counted > 0);
    // Everything rendered afresh, nothing changed: nothing is tokenised again.
    assert_eq!(assemble(&ctx), first);
    assert_eq!(agent.tokenized_texts(), counted);
    // One minute later: the date/time note changes, and nothing else.
    let mut later = ctx.clone();
    later.now = Now::new(
        ctx.now.timestamp() + jiff::SignedDuration::from_secs(60),
        ctx.now.offset(),
    );
    assemble(&later);
    assert_eq!(agent.tokenized_texts(), counted + 1);
    // A different user name changes the context block and the stable half's total.
    let mut renamed = later.clone();
    renamed.user.name = Some("Robin".into());
    assemble(&renamed);
    assert_eq!(agent.tokenized_texts(), counted + 3);
    // Assembling counts nothing; a half's total and a block's count are made when asked for,
    // once.
    let mut again = renamed.clone();
    again.user.name = Some("Sam".into());
    let assembly = agent.assemble_fresh(&again).unwrap();
    assert_eq!(agent.tokenized_texts(), counted + 3);
    assert!(assembly.stable_tokens().count > 0);
    assert_eq!(agent.tokenized_texts(), counted + 4);
    let blocks: Vec<_> = assembly.blocks().map(|b| b.tokens()).collect();
    assert_eq!(agent.tokenized_texts(), counted + 5);
    assert_eq!(
        assembly.blocks().map(|b| b.tokens()).collect::<Vec<_>>(),
        blocks
    );
    assert_eq!(agent.tokenized_texts(), counted + 5);
    // With every cache empty, an assembly nobody asks about tokens tokenises nothing.
    agent.clear_caches();
    let cold = agent.assemble(&again).unwrap();
    assert_eq!(agent.tokenized_texts(), counted + 5);
    assert_eq!(cold.fingerprint(), assembly.fingerprint());
    assert_eq!(
        cold.blocks().map(|b| b.tokens()).collect::<Vec<_>>(),
        blocks
    );
    assert!(agent.tokenized_texts() > counted + 5);
}

/// The stable part is reused by its input key; the volatile units by theirs.
#[test]
fn stable_part_is_reused_across_volatile_changes() {
    let agent = chat_agent();
    let ctx = chat_send("voice-slug");
    agent.assemble(&ctx).unwrap();
    let mut later = ctx.clone();
    later.now = Now::new(
        ctx.now.timestamp() + jiff::SignedDuration::from_secs(3600),
        ctx.now.offset(),
    );
    agent.assemble(&later).unwrap();
    let stats = agent.cache_stats();
    assert_eq!((stats.stable_hits, stats.stable_misses), (1, 1));
    let mut other = later.clone();
    other.user.units = Some("imperial".into());
    agent.assemble(&other).unwrap();
    assert_eq!(agent.cache_stats().stable_misses, 2);
}
