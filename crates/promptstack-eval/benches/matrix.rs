//! A thousand scenario runs at concurrency 64 against a fake endpoint that takes a fixed time per
//! call: how far the run's wall time is above its model time.
//!
//! The model time of the run is what an ideal harness would take: every call's latency, 64 calls
//! at a time, nothing else (`runs × calls per run × latency / 64`). The fake endpoint answers each
//! call after `PROMPTSTACK_BENCH_MODEL_MS` milliseconds (default 1000, a fast hosted model's
//! time to a short answer) on a timer thread of its own, so the runner's own work and the model's
//! time overlap as they do against a real endpoint. Each scenario run is the chat-assistant
//! example's research scenario: a search round with two scripted sources, then a cited answer.
//!
//! `cargo bench -p promptstack-eval --bench matrix` (one run; prints the figures).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::channel::oneshot;
use promptstack_core::{Agent, SpecFormat};
use promptstack_eval::endpoint::{
    Call, Endpoint, EndpointError, EndpointErrorKind, Reply, ReplyFuture,
};
use promptstack_eval::run::{RunOptions, Runner, VersionAgent};
use promptstack_eval::suite::Suite;

const SEARCH: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":\"{\\\"query\\\":\\\"heat pump costs uk\\\"}\"}}]},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4000,\"completion_tokens\":20}}\n\ndata: [DONE]\n\n";

const ANSWER: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Installation costs fell after the grant rose [1], and the release notes say so too [2].\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4200,\"completion_tokens\":30}}\n\ndata: [DONE]\n\n";

const RUNS: usize = 1000;
const CONCURRENCY: u32 = 64;
const CALLS_PER_RUN: u32 = 2;

/// Answers after a fixed latency, timed on a thread of its own.
struct Slow(Duration);

impl Endpoint for Slow {
    fn exchange<'a>(&'a self, call: Call<'a>) -> ReplyFuture<'a> {
        let answered = call.body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let body = if answered { ANSWER } else { SEARCH };
        let (tx, rx) = oneshot::channel();
        let latency = self.0;
        std::thread::spawn(move || {
            std::thread::sleep(latency);
            let _ = tx.send(());
        });
        Box::pin(async move {
            rx.await
                .map_err(|_| EndpointError::new(EndpointErrorKind::Connect, "timer lost"))?;
            Ok(Reply {
                status: 200,
                body: body.as_bytes().to_vec(),
                first_byte: Some(latency),
                elapsed: latency,
                attempts: 1,
            })
        })
    }
}

fn main() {
    let latency_ms: u64 = std::env::var("PROMPTSTACK_BENCH_MODEL_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let latency = Duration::from_millis(latency_ms);
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let spec = std::fs::read(folder.join("agent.toml")).unwrap();
    let agent = Agent::from_source(&spec, "agent.toml", SpecFormat::Toml).unwrap();
    let suite = std::fs::read(folder.join("evals/citations.toml")).unwrap();
    let mut suite = Suite::parse(&suite, "citations.toml").unwrap();
    // Ten copies of the research scenario × 100 repetitions: a thousand scenario runs.
    let research = suite
        .scenarios
        .iter()
        .find(|s| s.name == "research-cites-sources")
        .unwrap()
        .clone();
    suite.scenarios = (0..10)
        .map(|i| {
            let mut scenario = research.clone();
            scenario.name = format!("research-{i}");
            scenario
        })
        .collect();
    suite.matrix.concurrency = CONCURRENCY;
    suite.matrix.repeats = 100;
    let endpoint: Arc<dyn Endpoint> = Arc::new(Slow(latency));
    let runner = Runner::new(
        &suite,
        "matrix",
        &folder,
        vec![VersionAgent {
            name: "current".into(),
            agent,
        }],
        BTreeMap::from([("local".to_owned(), endpoint)]),
        RunOptions::default(),
    )
    .unwrap();
    assert_eq!(runner.total(), RUNS);
    let started = Instant::now();
    let run = futures::executor::block_on(runner.run()).unwrap();
    let wall = started.elapsed();
    assert_eq!(run.rows.len(), RUNS);
    assert!(run.rows.iter().all(|r| r.passed), "{:#?}", run.rows[0]);
    let model = latency * CALLS_PER_RUN * (RUNS as u32) / CONCURRENCY;
    println!(
        "{RUNS} scenario runs, concurrency {CONCURRENCY}, {latency_ms} ms per call: wall {:.3} s, \
         model time {:.3} s, wall / model time {:.4} (+{:.2} %)",
        wall.as_secs_f64(),
        model.as_secs_f64(),
        wall.as_secs_f64() / model.as_secs_f64(),
        (wall.as_secs_f64() / model.as_secs_f64() - 1.0) * 100.0
    );
}
