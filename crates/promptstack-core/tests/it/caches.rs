//! The agent's caches: one owner, one `clear`, one `stats`, and one build for concurrent cold
//! sends with the same stable inputs.

#![allow(clippy::disallowed_methods)]

use std::sync::{Arc, Barrier};

use promptstack_core::provider::{Format, RequestOptions, Rules};
use promptstack_core::{Agent, SendContext, SpecFormat};

use crate::support::{chat_agent, chat_send, fresh_request};

/// A stable block slow enough to render that sixteen threads started together overlap.
const SLOW_SPEC: &str = include_str!("../data/specs/slow.toml");

const SLOW_SEND: &str = r#"{
  "now": "2026-11-30T09:15:00+01:00",
  "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"}
}"#;

#[test]
fn concurrent_cold_sends_build_the_stable_part_once() {
    let agent =
        Arc::new(Agent::from_source(SLOW_SPEC.as_bytes(), "slow.toml", SpecFormat::Toml).unwrap());
    let ctx = Arc::new(SendContext::from_json(SLOW_SEND.as_bytes(), "send.json").unwrap());
    const THREADS: usize = 16;
    let start = Arc::new(Barrier::new(THREADS));
    let stables: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (agent, ctx, start) = (agent.clone(), ctx.clone(), start.clone());
                scope.spawn(move || {
                    start.wait();
                    agent.assemble(&ctx).unwrap().stable().to_owned()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        stables.iter().all(|s| s == "You are GPT-4o."),
        "{stables:?}"
    );
    let stats = agent.cache_stats();
    assert_eq!(stats.stable_misses, 1, "{stats:?}");
    assert_eq!(stats.stable_hits, THREADS as u64 - 1, "{stats:?}");
}

#[test]
fn a_failed_build_fails_every_waiter_with_its_own_error() {
    let spec = SLOW_SPEC.replace("You are {{ model.name }}.", "{{ model.missing.field }}");
    let agent =
        Arc::new(Agent::from_source(spec.as_bytes(), "slow.toml", SpecFormat::Toml).unwrap());
    let ctx = Arc::new(SendContext::from_json(SLOW_SEND.as_bytes(), "send.json").unwrap());
    let start = Arc::new(Barrier::new(4));
    let errors: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let (agent, ctx, start) = (agent.clone(), ctx.clone(), start.clone());
                scope.spawn(move || {
                    start.wait();
                    agent.assemble(&ctx).unwrap_err().to_string()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(
        errors
            .iter()
            .all(|e| e == &errors[0] && e.contains("intro")),
        "{errors:?}"
    );
    // Nothing failed was cached: the stable cache holds no entry and no build is left in flight.
    assert_eq!(agent.cache_stats().stable_hits, 0);
}

#[test]
fn clear_forgets_every_cache_and_stats_cover_them_all() {
    let agent = chat_agent();
    let ctx = chat_send("mcp");
    let options = RequestOptions::new(Format::Anthropic, "legacy");
    let send = || {
        let assembly = agent.assemble(&ctx).unwrap();
        fresh_request(&agent, &assembly, &options).unwrap();
    };
    send();
    let cold = agent.cache_stats();
    assert!(cold.stable_misses == 1 && cold.mcp_misses == 1, "{cold:?}");
    assert!(
        cold.volatile_misses > 0 && cold.tool_unit_misses > 0 && cold.tokenized > 0,
        "{cold:?}"
    );
    send();
    let warm = agent.cache_stats();
    assert_eq!(warm.stable_misses, cold.stable_misses);
    assert_eq!(warm.mcp_misses, cold.mcp_misses);
    assert_eq!(warm.volatile_misses, cold.volatile_misses);
    assert_eq!(warm.tool_unit_misses, cold.tool_unit_misses);
    assert_eq!(warm.tokenized, cold.tokenized);
    assert!(warm.stable_hits == 1 && warm.mcp_hits == 1, "{warm:?}");
    assert!(
        warm.volatile_hits > 0 && warm.tool_unit_hits > 0 && warm.token_hits > 0,
        "{warm:?}"
    );
    agent.clear_caches();
    send();
    let cleared = agent.cache_stats();
    assert_eq!(cleared.stable_misses, 2 * cold.stable_misses);
    assert_eq!(cleared.mcp_misses, 2 * cold.mcp_misses);
    assert_eq!(cleared.volatile_misses, 2 * cold.volatile_misses);
    assert_eq!(cleared.tool_unit_misses, 2 * cold.tool_unit_misses);
    assert_eq!(cleared.tokenized, 2 * cold.tokenized);
}

#[test]
fn clones_of_an_agent_share_its_program_and_caches() {
    let original = chat_agent();
    let ctx = chat_send("mcp");
    let cold = original.assemble(&ctx).unwrap();
    assert_eq!(original.cache_stats().stable_misses, 1);

    let clone = original.clone();
    let warm = std::thread::spawn(move || clone.assemble(&ctx).unwrap().stable().to_owned())
        .join()
        .unwrap();
    assert_eq!(warm, cold.stable());
    let stats = original.cache_stats();
    assert_eq!(stats.stable_misses, 1, "{stats:?}");
    assert_eq!(stats.stable_hits, 1, "{stats:?}");
}

#[test]
fn a_clone_with_its_own_template_memory_gets_caches_of_its_own() {
    let original = chat_agent();
    let ctx = chat_send("mcp");
    original.assemble(&ctx).unwrap();
    let resized = original.clone().with_template_memory(1 << 20);
    assert_eq!(resized.template_memory(), 1 << 20);
    assert_eq!(original.template_memory(), Agent::DEFAULT_TEMPLATE_MEMORY);
    assert_eq!(resized.cache_stats().stable_misses, 0);
    resized.assemble(&ctx).unwrap();
    assert_eq!(resized.cache_stats().stable_misses, 1);
    assert_eq!(original.cache_stats().stable_hits, 0);
}

#[test]
fn a_cancelled_simulation_stops_before_its_next_turn() {
    use promptstack_core::provider::sim::{SimCancel, SimConfig};
    let agent = chat_agent();
    let sends = vec![chat_send("research")];
    let config = |cancel: SimCancel| SimConfig {
        turns: 3,
        gap_seconds: 60,
        request: RequestOptions::new(Format::Anthropic, "cached".to_owned()),
        mcp_failure_rate: 0.0,
        seed: 1,
        cancel,
    };
    let report = agent
        .simulate_cache(&sends, Rules::bundled(), &config(SimCancel::new()))
        .unwrap();
    assert_eq!(report.per_turn.len(), 3);
    let cancel = SimCancel::new();
    let config = config(cancel.clone());
    cancel.cancel();
    let error = agent
        .simulate_cache(&sends, Rules::bundled(), &config)
        .unwrap_err();
    assert_eq!(error.kind(), promptstack_core::ErrorKind::Request);
    assert!(
        error.to_string().contains("cancelled after 0 turns"),
        "{error}"
    );
    assert_ne!(SimCancel::new(), SimCancel::new());
    assert_eq!(cancel, cancel.clone());
}
