//! The runner's own cost per scenario turn, model time excluded: the chat-assistant example's
//! research scenario (its full spec, a search round with two scripted sources, then a cited
//! answer) against an endpoint that answers at once. One iteration is one whole turn: two
//! requests rendered, two streams read, one tool call through the Turn and the fence, the answer
//! processed and four assertions decided.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use promptstack_core::{Agent, SpecFormat};
use promptstack_eval::endpoint::{Call, Endpoint, Reply, ReplyFuture};
use promptstack_eval::run::{RunOptions, Runner, VersionAgent};
use promptstack_eval::suite::Suite;

const SEARCH: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"search\",\"arguments\":\"{\\\"query\\\":\\\"heat pump costs uk\\\"}\"}}]},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4000,\"completion_tokens\":20}}\n\ndata: [DONE]\n\n";

const ANSWER: &str = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Installation costs fell after the grant rose [1], and the release notes say so too [2].\"},\"finish_reason\":null}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":4200,\"completion_tokens\":30}}\n\ndata: [DONE]\n\n";

struct Instant;

impl Endpoint for Instant {
    fn exchange<'a>(&'a self, call: Call<'a>) -> ReplyFuture<'a> {
        let answered = call.body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        let body = if answered { ANSWER } else { SEARCH };
        Box::pin(std::future::ready(Ok(Reply {
            status: 200,
            body: body.as_bytes().to_vec(),
            first_byte: None,
            elapsed: Duration::ZERO,
            attempts: 1,
        })))
    }
}

fn bench(c: &mut Criterion) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chat-assistant");
    let spec = std::fs::read(folder.join("agent.toml")).unwrap();
    let agent = Agent::from_source(&spec, "agent.toml", SpecFormat::Toml).unwrap();
    let suite = std::fs::read(folder.join("evals/citations.toml")).unwrap();
    let suite = Suite::parse(&suite, "citations.toml").unwrap();
    let runner = Runner::new(
        &suite,
        "citations",
        &folder,
        vec![VersionAgent {
            name: "current".into(),
            agent,
        }],
        BTreeMap::from([("local".to_owned(), Arc::new(Instant) as Arc<dyn Endpoint>)]),
        RunOptions {
            scenarios: vec!["research-cites-sources".into()],
            repeats: Some(1),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let run = futures::executor::block_on(runner.run()).unwrap();
    assert!(run.rows[0].passed, "{:#?}", run.rows[0]);
    let mut group = c.benchmark_group("runner");
    group.bench_function("scenario turn (2 steps, 1 tool call)", |b| {
        b.iter(|| futures::executor::block_on(runner.run()).unwrap())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
