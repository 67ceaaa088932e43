//! The Turn runtime: dedupe, budgets, the source registry, and their behaviour under concurrency.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use promptstack_core::canonical_url::url_key;
use promptstack_core::stream::{Source, SourceSnapshot};
use promptstack_core::turn::{
    CallStatus, ClassBudgetConfig, ExecuteFuture, Registration, ResultOrigin, ResultWrapper,
    SourceRegistry, ToolExecutor, ToolFailure, ToolInvocation, ToolOutput, Turn, TurnConfig,
    TurnErrorKind, TurnTool, UnfencedForTests,
};
use proptest::prelude::*;
use serde_json::{Value, json};

/// An executor that records every execution, yields `delay` times (from the input) so that calls
/// interleave, fails when the input says so, and reports the input's `url` as a source.
#[derive(Default)]
struct Scripted {
    runs: Mutex<Vec<Value>>,
}

impl Scripted {
    fn runs(&self) -> Vec<Value> {
        self.runs.lock().unwrap().clone()
    }

    fn runs_of(&self, input: &Value) -> usize {
        self.runs().iter().filter(|v| *v == input).count()
    }
}

impl ToolExecutor for Scripted {
    fn execute<'a>(&'a self, call: ToolInvocation<'a>) -> ExecuteFuture<'a> {
        Box::pin(async move {
            self.runs.lock().unwrap().push(call.input.clone());
            let delay = call.input["delay"].as_u64().unwrap_or(0);
            for _ in 0..delay {
                tokio::task::yield_now().await;
            }
            if call.input["fail"] == json!(true) {
                return Err(ToolFailure::new(format!(
                    "{} could not reach the page",
                    call.name
                )));
            }
            let mut output = ToolOutput::new();
            if let Some(url) = call.input["url"].as_str() {
                let title = call.input["title"].as_str();
                output = if call.name == "fetch" {
                    output.fetched_source(url, title, format!("content of {url}"))
                } else {
                    output.source(url, title, format!("snippet of {url}"))
                };
            } else {
                output = output.text(format!("results for {}", call.input["query"]));
            }
            Ok(output)
        })
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

struct Fixture {
    turn: Turn,
    search: Arc<Scripted>,
    fetch: Arc<Scripted>,
    note: Arc<Scripted>,
}

/// The default configuration with a `web` budget class of `auto` calls a turn.
fn web_budget(auto: u32) -> TurnConfig {
    let mut config = TurnConfig::default();
    config.budgets.classes.insert(
        "web".into(),
        ClassBudgetConfig {
            auto,
            intents: BTreeMap::new(),
            promote: None,
        },
    );
    config
}

fn fixture(config: &TurnConfig, message: &str, seed: Option<SourceSnapshot>) -> Fixture {
    let search = Arc::new(Scripted::default());
    let fetch = Arc::new(Scripted::default());
    let note = Arc::new(Scripted::default());
    let mut builder = Turn::builder(config, Arc::new(UnfencedForTests))
        .user_message(message)
        .tool(
            TurnTool::new("search")
                .cacheable()
                .budget_class("web")
                .untrusted(),
            search.clone(),
        )
        .tool(
            TurnTool::new("fetch")
                .cacheable()
                .budget_class("web")
                .untrusted(),
            fetch.clone(),
        )
        .tool(TurnTool::new("note"), note.clone());
    if let Some(seed) = seed {
        builder = builder.sources(seed);
    }
    Fixture {
        turn: builder.build().unwrap(),
        search,
        fetch,
        note,
    }
}

#[test]
fn a_result_is_labelled_and_carries_the_remaining_line() {
    let f = fixture(&TurnConfig::default(), "hello", None);
    let result = block_on(f.turn.call(
        "search",
        &json!({"query": "rust", "url": "https://example.com/a", "title": "A"}),
    ))
    .unwrap();
    insta::assert_snapshot!(result.text, @r"
    [Source 1] (cite as [1])
    snippet of https://example.com/a

    Web calls remaining this turn: 4
    ");
    assert_eq!(result.status, CallStatus::Completed);
    assert_eq!(result.sources[0].index, Some(1));
    let note = block_on(f.turn.call("note", &json!({"text": "x"}))).unwrap();
    assert_eq!(note.budget, None);
    assert!(!note.text.contains("remaining"));
}

#[test]
fn intent_selects_the_cap_and_promotion_applies_once() {
    let config = TurnConfig::default();
    assert_eq!(
        fixture(&config, "what is rust?", None).turn.cap("web"),
        Some(5)
    );
    assert_eq!(
        fixture(&config, "/search rust", None).turn.cap("web"),
        Some(12)
    );
    assert_eq!(
        fixture(&config, "please /translate then /Research", None)
            .turn
            .cap("web"),
        Some(30)
    );
    assert_eq!(
        fixture(&config, "see https://x.org/research", None)
            .turn
            .cap("web"),
        Some(5)
    );
    // The intent is read with the same tokens templates see: a file name is not one.
    assert_eq!(
        fixture(&config, "open /research.md", None).turn.cap("web"),
        Some(5)
    );

    let f = fixture(&config, "rust?", None);
    assert!(!f.turn.skill_loaded("writing"));
    assert!(f.turn.skill_loaded("research"));
    assert_eq!(f.turn.cap("web"), Some(30));
    assert!(!f.turn.skill_loaded("research"));
    assert_eq!(f.turn.cap("web"), Some(30));

    let f = fixture(&config, "/research rust", None);
    assert!(
        !f.turn.skill_loaded("research"),
        "already at the research cap"
    );
}

#[test]
fn exhaustion_is_a_result_and_withdraws_only_budgeted_tools() {
    let f = fixture(&TurnConfig::default(), "hi", None);
    block_on(async {
        for i in 0..5 {
            let r = f
                .turn
                .call("search", &json!({"query": format!("q{i}")}))
                .await
                .unwrap();
            assert_eq!(r.budget.as_ref().unwrap().remaining, 4 - i);
        }
        assert_eq!(f.turn.withdrawn_tools(), ["fetch", "search"]);
        let refused = f
            .turn
            .call("fetch", &json!({"url": "https://a.com"}))
            .await
            .unwrap();
        assert_eq!(refused.status, CallStatus::BudgetExhausted);
        assert!(
            refused.text.ends_with("Web calls remaining this turn: 0"),
            "{}",
            refused.text
        );
        assert!(f.fetch.runs().is_empty(), "a refused call must not run");
        // A repeat of a charged call is free even at the floor.
        let repeat = f
            .turn
            .call("search", &json!({"query": "Q0"}))
            .await
            .unwrap();
        assert_eq!(repeat.status, CallStatus::Completed);
        assert!(!repeat.budget.unwrap().charged);
        // The unbudgeted tool still works.
        let note = f.turn.call("note", &json!({})).await.unwrap();
        assert_eq!(note.status, CallStatus::Completed);
        // Promotion reopens capacity and brings the tools back.
        assert!(f.turn.skill_loaded("research"));
        assert!(f.turn.withdrawn_tools().is_empty());
        assert_eq!(f.turn.remaining("web"), Some(25));
    });
}

#[test]
fn identical_calls_after_canonicalisation_cost_nothing() {
    let f = fixture(&TurnConfig::default(), "", None);
    block_on(async {
        let calls = [
            ("search", json!({"query": "Rust  Async\n"})),
            ("search", json!({"query": "rust async"})),
            ("fetch", json!({"url": "HTTPS://Example.com/Docs/#top"})),
            (
                "fetch",
                json!({"url": "https://example.com/Docs?utm_source=x"}),
            ),
        ];
        let mut charged = Vec::new();
        for (tool, input) in &calls {
            charged.push(
                f.turn
                    .call(tool, input)
                    .await
                    .unwrap()
                    .budget
                    .unwrap()
                    .charged,
            );
        }
        assert_eq!(charged, [true, false, true, false]);
        assert_eq!(f.turn.remaining("web"), Some(3));
        // Dedupe uses the same identity: a differently spelled query shares the execution.
        assert_eq!(f.search.runs().len(), 1);
        assert_eq!(f.fetch.runs().len(), 1);
    });
}

#[test]
fn a_failed_call_is_charged_and_its_retry_runs_and_is_charged_again() {
    let f = fixture(&TurnConfig::default(), "", None);
    block_on(async {
        let input = json!({"query": "down", "fail": true});
        let first = f.turn.call("search", &input).await.unwrap();
        assert_eq!(first.status, CallStatus::Failed);
        assert!(
            first
                .text
                .starts_with("The tool failed: search could not reach the page")
        );
        assert!(first.text.ends_with("Web calls remaining this turn: 4"));
        let second = f.turn.call("search", &input).await.unwrap();
        assert_eq!(second.status, CallStatus::Failed);
        assert!(second.budget.unwrap().charged);
        assert_eq!(
            f.search.runs_of(&input),
            2,
            "a failure is evicted from the dedupe cache"
        );
        assert_eq!(f.turn.remaining("web"), Some(3));
    });
}

#[test]
fn concurrent_identical_calls_share_one_execution_but_non_cacheable_ones_do_not() {
    let f = fixture(&TurnConfig::default(), "", None);
    block_on(async {
        let input = json!({"query": "shared", "delay": 5});
        let results = join_all((0..8).map(|_| f.turn.call("search", &input))).await;
        assert_eq!(f.search.runs_of(&input), 1);
        assert_eq!(
            results
                .iter()
                .filter(|r| r.as_ref().unwrap().deduplicated)
                .count(),
            7
        );
        let note = json!({"delay": 3});
        join_all((0..4).map(|_| f.turn.call("note", &note))).await;
        assert_eq!(f.note.runs_of(&note), 4);
        // A failure is shared by the calls that waited for it, then evicted.
        let failing = json!({"query": "x", "fail": true, "delay": 4});
        let results = join_all((0..3).map(|_| f.turn.call("search", &failing))).await;
        assert!(
            results
                .iter()
                .all(|r| r.as_ref().unwrap().status == CallStatus::Failed)
        );
        assert_eq!(f.search.runs_of(&failing), 1);
        f.turn.call("search", &failing).await.unwrap();
        assert_eq!(f.search.runs_of(&failing), 2);
    });
}

/// Regression (issue 17.1): dedupe keyed on the exact input while budgets keyed on the normalised
/// one, so after a cap of 3 was used up, differently spelled repeats ran again without being
/// charged.
#[test]
fn spelling_variants_neither_run_again_nor_bypass_an_exhausted_budget() {
    let config = web_budget(3);
    let f = fixture(&config, "", None);
    block_on(async {
        let first = [
            ("search", json!({"query": "foo bar"})),
            ("search", json!({"query": "rust"})),
            ("fetch", json!({"url": "https://example.com/docs"})),
        ];
        for (tool, input) in &first {
            let r = f.turn.call(tool, input).await.unwrap();
            assert!(r.budget.unwrap().charged);
        }
        assert_eq!(f.turn.remaining("web"), Some(0));
        let variants = [
            ("search", json!({"query": " Foo  Bar "})),
            ("search", json!({"query": "FOO BAR"})),
            ("search", json!({"query": "\tRust\n"})),
            ("fetch", json!({"url": "HTTPS://EXAMPLE.com/docs/"})),
            ("fetch", json!({"url": "https://example.com/docs#intro"})),
            (
                "fetch",
                json!({"url": "https://example.com/docs?utm_source=x"}),
            ),
            (
                "fetch",
                json!({"url": "https://example.com/docs?utm_medium=y&utm_campaign=z"}),
            ),
        ];
        for (tool, input) in &variants {
            let r = f.turn.call(tool, input).await.unwrap();
            assert_eq!(r.status, CallStatus::Completed, "{input}");
            assert!(r.deduplicated, "{input} ran again");
            assert!(!r.budget.unwrap().charged);
        }
        assert_eq!(f.search.runs().len(), 2);
        assert_eq!(f.fetch.runs().len(), 1);
        // A new query is refused and does not run.
        let refused = f
            .turn
            .call("search", &json!({"query": "something else"}))
            .await
            .unwrap();
        assert_eq!(refused.status, CallStatus::BudgetExhausted);
        assert_eq!(f.search.runs().len(), 2);
    });
}

/// Regression (issue 17.6): the call that used the last allowed call said only "remaining this
/// turn: 0"; it must tell the model plainly that no further calls of the class will run.
#[test]
fn the_last_allowed_call_tells_the_model_to_answer() {
    let config = web_budget(2);
    let f = fixture(&config, "", None);
    let notice = "That was the last web call allowed this turn: no further web calls will run. \
                  Answer from the information you already have.";
    block_on(async {
        let first = f.turn.call("search", &json!({"query": "a"})).await.unwrap();
        assert!(!first.budget.as_ref().unwrap().last_allowed);
        assert!(!first.text.contains("last web call"), "{}", first.text);
        let last = f
            .turn
            .call("fetch", &json!({"url": "https://example.com/"}))
            .await
            .unwrap();
        assert!(last.budget.as_ref().unwrap().last_allowed);
        assert!(
            last.text
                .ends_with(&format!("{notice}\n\nWeb calls remaining this turn: 0")),
            "{}",
            last.text
        );
        // A repeat shares the execution: nothing new is charged, and nothing new is announced.
        let repeat = f.turn.call("search", &json!({"query": "A"})).await.unwrap();
        assert!(repeat.deduplicated);
        assert!(!repeat.text.contains(notice));
        let refused = f.turn.call("search", &json!({"query": "b"})).await.unwrap();
        assert_eq!(refused.status, CallStatus::BudgetExhausted);
        assert!(!refused.budget.unwrap().last_allowed);
    });
}

/// A repeat served from dedupe after the budget is spent gets the first call's content byte for
/// byte (its source label included), with the budget line as it stands now: `0`, not the count
/// the first call read. A stale count would tell the model it may still search, after a refusal
/// said it may not.
#[test]
fn a_repeat_after_the_budget_is_spent_reads_the_budget_as_it_is_now() {
    let config = web_budget(2);
    let f = fixture(&config, "", None);
    let page = json!({"query": "heat pumps", "url": "https://example.com/pumps", "title": "Pumps"});
    block_on(async {
        let first = f.turn.call("search", &page).await.unwrap();
        insta::assert_snapshot!(first.text, @r"
        [Source 1] (cite as [1])
        snippet of https://example.com/pumps

        Web calls remaining this turn: 1
        ");
        let last = f
            .turn
            .call("fetch", &json!({"url": "https://example.com/other"}))
            .await
            .unwrap();
        assert!(last.budget.as_ref().unwrap().last_allowed);
        let refused = f
            .turn
            .call("search", &json!({"query": "more"}))
            .await
            .unwrap();
        assert_eq!(refused.status, CallStatus::BudgetExhausted);

        let repeat = f.turn.call("search", &page).await.unwrap();
        insta::assert_snapshot!(repeat.text, @r"
        [Source 1] (cite as [1])
        snippet of https://example.com/pumps

        Web calls remaining this turn: 0
        ");
        assert_eq!(repeat.status, CallStatus::Completed);
        assert!(repeat.deduplicated);
        let budget = repeat.budget.as_ref().unwrap();
        assert_eq!(
            (budget.charged, budget.remaining, budget.last_allowed),
            (false, 0, false)
        );
        // The content is the first call's; only the line the Turn adds is current, and there is
        // exactly one.
        let content = |text: &str| text.rsplit_once("\n\n").unwrap().0.to_owned();
        assert_eq!(content(&repeat.text), content(&first.text));
        assert_eq!(repeat.text.matches("calls remaining this turn").count(), 1);
        assert!(!repeat.text.contains("last web call"));
        assert_eq!(f.search.runs_of(&page), 1, "the repeat did not run");
        assert_eq!(f.turn.remaining("web"), Some(0));
    });
}

#[test]
fn a_non_cacheable_budgeted_tool_is_charged_for_every_run() {
    let lookup = Arc::new(Scripted::default());
    let turn = Turn::builder(&TurnConfig::default(), Arc::new(UnfencedForTests))
        .tool(TurnTool::new("lookup").budget_class("web"), lookup.clone())
        .build()
        .unwrap();
    block_on(async {
        for expected in [4, 3] {
            let r = turn
                .call("lookup", &json!({"query": "same"}))
                .await
                .unwrap();
            let budget = r.budget.unwrap();
            assert!(budget.charged);
            assert_eq!(budget.remaining, expected);
        }
        assert_eq!(lookup.runs().len(), 2);
    });
}

/// An executor that waits for a permit before answering, to hold an execution in flight.
struct Gated {
    gate: tokio::sync::Semaphore,
    runs: Mutex<usize>,
}

impl ToolExecutor for Gated {
    fn execute<'a>(&'a self, _call: ToolInvocation<'a>) -> ExecuteFuture<'a> {
        Box::pin(async move {
            *self.runs.lock().unwrap() += 1;
            self.gate.acquire().await.unwrap().forget();
            Ok(ToolOutput::new().text("done"))
        })
    }
}

#[test]
fn a_cancelled_driver_hands_the_execution_to_a_waiting_call() {
    let gated = Arc::new(Gated {
        gate: tokio::sync::Semaphore::new(0),
        runs: Mutex::new(0),
    });
    let turn = Turn::builder(&TurnConfig::default(), Arc::new(UnfencedForTests))
        .tool(TurnTool::new("slow").cacheable(), gated.clone())
        .build()
        .unwrap();
    block_on(async {
        let input = json!({"q": 1});
        let mut first = Box::pin(turn.call("slow", &input));
        let mut second = Box::pin(turn.call("slow", &input));
        assert!(futures::poll!(first.as_mut()).is_pending());
        assert!(futures::poll!(second.as_mut()).is_pending());
        assert_eq!(*gated.runs.lock().unwrap(), 1);
        drop(first);
        gated.gate.add_permits(1);
        let result = second.await.unwrap();
        assert_eq!(result.status, CallStatus::Completed);
        assert_eq!(*gated.runs.lock().unwrap(), 2);
        // The output is now cached for the rest of the turn.
        assert!(turn.call("slow", &input).await.unwrap().deduplicated);
        assert_eq!(*gated.runs.lock().unwrap(), 2);
    });
}

/// A wrapper that makes its work visible, to check what is and is not wrapped.
struct Marking;

impl ResultWrapper for Marking {
    fn wrap(&self, content: &str, provenance: &ResultOrigin<'_>) -> String {
        format!(
            "<<{} {}>>{content}<<end>>",
            provenance.tool,
            provenance.url.unwrap_or("-")
        )
    }
}

#[test]
fn untrusted_content_is_wrapped_and_the_turn_own_lines_are_not() {
    let search = Arc::new(Scripted::default());
    let turn = Turn::builder(&TurnConfig::default(), Arc::new(Marking))
        .tool(
            TurnTool::new("search").budget_class("web").untrusted(),
            search.clone(),
        )
        .tool(TurnTool::new("note"), search)
        .build()
        .unwrap();
    block_on(async {
        let r = turn
            .call("search", &json!({"url": "https://a.com/x"}))
            .await
            .unwrap();
        insta::assert_snapshot!(r.text, @r"
        [Source 1] (cite as [1])
        <<search https://a.com/x>>snippet of https://a.com/x<<end>>

        Web calls remaining this turn: 4
        ");
        let failed = turn.call("search", &json!({"fail": true})).await.unwrap();
        assert!(
            failed.text.starts_with("<<search ->>The tool failed"),
            "{}",
            failed.text
        );
        let trusted = turn.call("note", &json!({"query": "q"})).await.unwrap();
        assert_eq!(trusted.text, "results for \"q\"");
    });
}

#[test]
fn sources_are_reused_enriched_and_capped() {
    let config = TurnConfig {
        source_cap: 2,
        ..TurnConfig::default()
    };
    let f = fixture(&config, "/research", None);
    block_on(async {
        let a = json!({"url": "https://a.com/page/", "title": "from search"});
        f.turn.call("search", &a).await.unwrap();
        f.turn
            .call(
                "fetch",
                &json!({"url": "https://A.com/page#top", "title": "Real title"}),
            )
            .await
            .unwrap();
        f.turn
            .call(
                "search",
                &json!({"url": "https://a.com/page", "title": "other snippet"}),
            )
            .await
            .unwrap();
        assert_eq!(
            f.turn.source(1).unwrap().title.as_deref(),
            Some("Real title")
        );
        assert_eq!(f.turn.source(1).unwrap().url, "https://a.com/page/");
        f.turn
            .call("search", &json!({"url": "https://b.com"}))
            .await
            .unwrap();
        let over = f
            .turn
            .call("search", &json!({"url": "https://c.com"}))
            .await
            .unwrap();
        assert_eq!(over.sources[0].index, None);
        assert!(over.text.starts_with(
            "[Source not numbered] (this conversation reached its limit of 2 sources"
        ));
        assert!(!over.text.contains("[Source 3]"));
        let again = f
            .turn
            .call("fetch", &json!({"url": "https://b.com/"}))
            .await
            .unwrap();
        assert_eq!(again.sources[0].index, Some(2));
        let snapshot = f.turn.sources_snapshot();
        assert_eq!(snapshot.sources.len(), 2);
        assert_eq!(
            serde_json::to_value(&snapshot).unwrap(),
            json!({"sources": [
                {"index": 1, "url": "https://a.com/page/", "title": "Real title"},
                {"index": 2, "url": "https://b.com"}
            ]})
        );
    });
}

#[test]
fn seeding_continues_numbering_and_looks_up_by_number() {
    let seed = SourceSnapshot {
        sources: vec![
            Source {
                index: 5,
                url: "https://e.com".into(),
                title: None,
            },
            Source {
                index: 2,
                url: "https://b.com".into(),
                title: Some("B".into()),
            },
        ],
    };
    let mut registry = SourceRegistry::seeded(&seed, 200);
    assert_eq!(registry.get(5).unwrap().url, "https://e.com");
    assert_eq!(registry.get(1), None);
    assert_eq!(
        registry.register("https://B.com/#x", None, false),
        Registration::Numbered {
            index: 2,
            new: false
        }
    );
    assert_eq!(
        registry.register("https://new.com", None, false),
        Registration::Numbered {
            index: 6,
            new: true
        }
    );
    assert_eq!(registry.index_of("https://new.com/"), Some(6));
}

#[test]
fn builder_refuses_bad_tools() {
    let config = TurnConfig::default();
    let exec: Arc<dyn ToolExecutor> = Arc::new(Scripted::default());
    let build = |tools: Vec<TurnTool>| {
        let mut b = Turn::builder(&config, Arc::new(UnfencedForTests));
        for t in tools {
            b = b.tool(t, exec.clone());
        }
        b.build()
            .map(|_| ())
            .map_err(|e| (e.kind().clone(), e.to_string()))
    };
    let (kind, _) = build(vec![TurnTool::new("web search")]).unwrap_err();
    assert!(matches!(kind, TurnErrorKind::InvalidToolName(_)));
    let (kind, message) = build(vec![TurnTool::new("a"), TurnTool::new("a")]).unwrap_err();
    assert_eq!(kind, TurnErrorKind::DuplicateTool("a".into()));
    assert_eq!(message, "tool `a` is registered twice");
    let (_, message) = build(vec![TurnTool::new("a").budget_class("mail")]).unwrap_err();
    assert_eq!(
        message,
        "tool `a` draws from budget class `mail`, which the configuration does not declare"
    );

    let mut bad = TurnConfig::default();
    bad.budgets
        .classes
        .get_mut("web")
        .unwrap()
        .promote
        .as_mut()
        .unwrap()
        .intent = "deep".into();
    let err = Turn::builder(&bad, Arc::new(UnfencedForTests))
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "budget class `web` is promoted to intent `deep`, which it does not declare"
    );

    let turn = Turn::builder(&config, Arc::new(UnfencedForTests))
        .build()
        .unwrap();
    let err = block_on(turn.call("nope", &json!({}))).unwrap_err();
    assert_eq!(err.kind(), &TurnErrorKind::UnknownTool("nope".into()));
}

#[test]
fn config_round_trips_and_has_a_schema() {
    let config: TurnConfig = toml::from_str(
        "source_cap = 50\n[budgets.web]\nauto = 2\nintents = { deep = 9 }\npromote = { skill = \"dig\", intent = \"deep\" }\n",
    )
    .unwrap();
    assert_eq!(config.source_cap, 50);
    assert_eq!(config.budgets.classes["web"].intents["deep"], 9);
    let default: TurnConfig = serde_json::from_str("{}").unwrap();
    assert_eq!(default, TurnConfig::default());
    assert_eq!(
        default.budgets.classes["web"],
        ClassBudgetConfig::default_web()
    );
    let schema = serde_json::to_value(schemars::schema_for!(TurnConfig)).unwrap();
    assert!(schema.to_string().contains("source_cap"));
}

/// One scripted call of the concurrency property.
#[derive(Debug, Clone)]
struct PlannedCall {
    tool: &'static str,
    key: u8,
    pre_yields: u8,
}

fn planned_calls() -> impl Strategy<Value = Vec<PlannedCall>> {
    let call = (
        prop_oneof![Just("search"), Just("fetch"), Just("note")],
        0u8..6,
        0u8..4,
    )
        .prop_map(|(tool, key, pre_yields)| PlannedCall {
            tool,
            key,
            pre_yields,
        });
    prop::collection::vec(call, 1..30)
}

/// The input of a planned call: its key decides spelling variants, delay and whether it fails.
fn planned_input(call: &PlannedCall, variant: bool) -> Value {
    let query = if variant {
        format!("  Topic {} ", call.key)
    } else {
        format!("topic {}", call.key)
    };
    json!({
        "query": query,
        "url": format!("https://site{}.com/p", call.key % 4),
        "delay": u64::from(call.key % 3) * 2,
        "fail": call.key == 5,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn budgets_hold_and_dedupe_runs_once_under_any_interleaving(
        calls in planned_calls(),
        cap in 0u32..6,
        variants in prop::collection::vec(any::<bool>(), 30),
    ) {
        let config = web_budget(cap);
        let f = fixture(&config, "", None);
        let results = block_on(join_all(calls.iter().enumerate().map(|(i, call)| {
            let input = planned_input(call, variants[i]);
            let turn = &f.turn;
            async move {
                for _ in 0..call.pre_yields {
                    tokio::task::yield_now().await;
                }
                (call.clone(), input.clone(), turn.call(call.tool, &input).await.unwrap())
            }
        })));

        let charged = results.iter().filter(|(_, _, r)| r.budget.as_ref().is_some_and(|b| b.charged)).count();
        prop_assert!(charged as u32 <= cap, "charged {} over cap {}", charged, cap);
        prop_assert_eq!(f.turn.remaining("web"), Some(cap - charged as u32));
        for (call, _, result) in &results {
            if let Some(budget) = &result.budget {
                let line = format!("Web calls remaining this turn: {}", budget.remaining);
                prop_assert!(result.text.ends_with(&line), "{}", result.text);
            }
            if call.tool == "note" {
                prop_assert!(result.budget.is_none());
                prop_assert_eq!(result.status, if call.key == 5 { CallStatus::Failed } else { CallStatus::Completed });
            }
        }
        // Budgeted executions only happen for charged calls.
        prop_assert_eq!(f.search.runs().len() + f.fetch.runs().len(), charged);
        // A cacheable input that never fails ran at most once; a non-cacheable one ran per call.
        for (tool, exec) in [("search", &f.search), ("fetch", &f.fetch)] {
            let mut per_input: HashMap<String, usize> = HashMap::new();
            for run in exec.runs() {
                *per_input.entry(run.to_string()).or_default() += 1;
            }
            for (input, runs) in per_input {
                if !input.contains("\"fail\":true") {
                    prop_assert_eq!(runs, 1, "{} ran {} times for {}", tool, runs, input);
                }
            }
        }
        let notes = results.iter().filter(|(c, _, _)| c.tool == "note").count();
        prop_assert_eq!(f.note.runs().len(), notes);
    }

    /// Issue 17.1: for any sequence of calls, in any spelling, sequential or concurrent, a
    /// budgeted tool runs at most its cap times: every execution is charged, and every call that
    /// was not charged either shared an execution (a dedupe hit) or was refused.
    #[test]
    fn executions_never_exceed_the_cap_whatever_the_spelling(
        calls in prop::collection::vec((0u8..3, 0u8..5, 0u8..4, any::<bool>()), 1..30),
        cap in 0u32..6,
        concurrent in any::<bool>(),
    ) {
        let config = web_budget(cap);
        let executors: Vec<Arc<Scripted>> = (0..3).map(|_| Arc::new(Scripted::default())).collect();
        let turn = Turn::builder(&config, Arc::new(UnfencedForTests))
            .tool(TurnTool::new("search").cacheable().budget_class("web"), executors[0].clone())
            .tool(TurnTool::new("fetch").cacheable().budget_class("web"), executors[1].clone())
            .tool(TurnTool::new("lookup").budget_class("web"), executors[2].clone())
            .build()
            .unwrap();
        let spell_query = |topic: u8, spelling: u8| match spelling {
            0 => format!("topic {topic}"),
            1 => format!("  Topic   {topic} "),
            2 => format!("TOPIC {topic}\n"),
            _ => format!("\ttopic {topic}"),
        };
        let spell_url = |topic: u8, spelling: u8| match spelling {
            0 => format!("https://site{topic}.com/page"),
            1 => format!("HTTPS://SITE{topic}.com/page/"),
            2 => format!("https://site{topic}.com/page#part"),
            _ => format!("https://site{topic}.com/page?utm_source=feed&utm_medium=x"),
        };
        let inputs: Vec<(&str, Value)> = calls
            .iter()
            .map(|&(tool, topic, spelling, delayed)| {
                let name = ["search", "fetch", "lookup"][usize::from(tool)];
                let delay = if delayed { 2 } else { 0 };
                let input = if name == "fetch" {
                    json!({"url": spell_url(topic, spelling), "delay": delay, "fail": topic == 4})
                } else {
                    json!({"query": spell_query(topic, spelling), "delay": delay, "fail": topic == 4})
                };
                (name, input)
            })
            .collect();
        let results: Vec<_> = if concurrent {
            block_on(join_all(inputs.iter().map(|(name, input)| turn.call(name, input))))
        } else {
            block_on(async {
                let mut results = Vec::new();
                for (name, input) in &inputs {
                    results.push(turn.call(name, input).await);
                }
                results
            })
        };
        let results: Vec<_> = results.into_iter().map(Result::unwrap).collect();
        let executions: usize = executors.iter().map(|e| e.runs().len()).sum();
        let charged = results.iter().filter(|r| r.budget.as_ref().is_some_and(|b| b.charged)).count();
        let dedupe_hits = results.iter().filter(|r| r.deduplicated).count();
        let refused = results.iter().filter(|r| r.status == CallStatus::BudgetExhausted).count();
        prop_assert!(executions as u32 <= cap, "{} executions over a cap of {}", executions, cap);
        prop_assert_eq!(executions, charged, "every execution is charged, and only executions");
        prop_assert!(executions <= cap as usize + dedupe_hits);
        prop_assert_eq!(executions + dedupe_hits + refused, results.len());
        prop_assert_eq!(turn.remaining("web"), Some(cap - charged as u32));
        prop_assert!(results.iter().filter(|r| r.deduplicated).all(|r| !r.budget.as_ref().unwrap().charged));
        // Exactly the call that used the last allowed call says so.
        let announced = results.iter().filter(|r| r.budget.as_ref().unwrap().last_allowed).count();
        prop_assert_eq!(announced, usize::from(cap > 0 && charged == cap as usize));
        for r in &results {
            prop_assert_eq!(
                r.text.contains("That was the last web call allowed this turn"),
                r.budget.as_ref().unwrap().last_allowed
            );
        }
        prop_assert_eq!(executors[2].runs().len(), results.iter().zip(&inputs).filter(|(r, (n, _))| *n == "lookup" && r.status != CallStatus::BudgetExhausted).count());
        // The turn's record, scored, tells the same story.
        let scored = promptstack_core::stream::score_tool_calls(&turn.record());
        prop_assert_eq!(scored.calls as usize, results.len());
        let web = scored.per_class.get("web").cloned().unwrap_or_default();
        prop_assert_eq!(web.executed as usize, executions);
        prop_assert_eq!(web.deduplicated as usize, dedupe_hits);
        prop_assert_eq!(web.refused as usize, refused);
        prop_assert_eq!(web.exhausted, refused > 0 || (cap > 0 && charged == cap as usize));
    }

    #[test]
    fn a_url_keeps_its_number_for_the_whole_conversation(
        turns in prop::collection::vec(prop::collection::vec((0u8..12, 0u8..4), 0..12), 1..6),
        cap in 1u32..10,
    ) {
        let spell = |site: u8, variant: u8| match variant {
            0 => format!("https://site{site}.com/page"),
            1 => format!("HTTPS://Site{site}.com/page/"),
            2 => format!("https://site{site}.com/page#s{variant}"),
            _ => format!("https://site{site}.com/page?utm_source=x"),
        };
        let config = TurnConfig { source_cap: cap, ..TurnConfig::default() };
        let mut persisted: Option<SourceSnapshot> = None;
        let mut numbers: BTreeMap<String, u32> = BTreeMap::new();
        for calls in &turns {
            let f = fixture(&config, "/research", persisted.clone());
            for (site, variant) in calls {
                let url = spell(*site, *variant);
                let r = block_on(f.turn.call("fetch", &json!({"url": url, "query": variant}))).unwrap();
                let key = url_key(&url);
                match (r.sources[0].index, numbers.get(&key)) {
                    (Some(n), Some(&known)) => prop_assert_eq!(n, known),
                    (Some(n), None) => {
                        prop_assert!(n <= cap);
                        prop_assert!(!numbers.values().any(|&m| m == n), "number {} reused", n);
                        numbers.insert(key, n);
                    }
                    (None, known) => {
                        prop_assert!(known.is_none());
                        prop_assert_eq!(numbers.len() as u32, cap);
                        prop_assert!(!r.text.contains("(cite as"));
                    }
                }
            }
            let snapshot = f.turn.sources_snapshot();
            for source in &snapshot.sources {
                prop_assert_eq!(numbers.get(&url_key(&source.url)), Some(&source.index));
                prop_assert_eq!(snapshot.get(source.index), Some(source));
            }
            persisted = Some(snapshot);
        }
    }
}

#[test]
// The test plays the application, which owns the runtime and may spawn calls onto it.
#[allow(clippy::disallowed_methods)]
fn budgets_hold_on_a_multi_threaded_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let config = TurnConfig::default();
    let f = fixture(&config, "/search", None);
    let turn = Arc::new(f.turn);
    let results = runtime.block_on(async {
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let turn = Arc::clone(&turn);
                tokio::spawn(async move {
                    let input = json!({"query": format!("q{}", i % 20), "delay": i % 4});
                    turn.call("search", &input).await.unwrap()
                })
            })
            .collect();
        join_all(tasks).await
    });
    let charged = results
        .iter()
        .filter(|r| r.as_ref().unwrap().budget.as_ref().unwrap().charged)
        .count();
    assert_eq!(charged, 12);
    assert_eq!(turn.remaining("web"), Some(0));
    let mut per_input: HashMap<String, usize> = HashMap::new();
    for run in f.search.runs() {
        *per_input.entry(run.to_string()).or_default() += 1;
    }
    assert!(per_input.values().all(|&n| n == 1), "{per_input:?}");
    assert_eq!(per_input.len(), 12);
}

/// Issue 17.9: a tool declares the fence kind of its results and the Turn fences with it: a page
/// reader's pages as `web_content`, a file reader's files as `file_content`; parts without an
/// origin, and tools that declare nothing, as `tool_result`.
#[test]
fn results_are_fenced_with_the_kind_the_tool_declares() {
    use promptstack_core::fence::{Fence, FixedNonce, Nonce};
    use promptstack_core::turn::FnExecutor;
    use promptstack_core::{Agent, SpecFormat};

    let spec = r#"
spec_version = 1
name = "readers"

tools = [
    { name = "read_page", description = "Read a page. If it fails, say so.", parameters = { type = "object", properties = { url = { type = "string" } } }, results = "untrusted", fence = "web_content" },
    { name = "read_file", description = "Read a file. If it fails, say so.", parameters = { type = "object", properties = { path = { type = "string" } } }, results = "untrusted", fence = "file_content" },
    { name = "lookup", description = "Look something up. If it fails, say so.", parameters = { type = "object", properties = { q = { type = "string" } } }, results = "untrusted" },
]

[[blocks]]
id = "intro"
trust = "author"
stability = "stable"
text = "Read carefully."

[targets.main]
system = ["@body"]
"#;
    let agent = Agent::from_source(spec.as_bytes(), "readers.toml", SpecFormat::Toml).unwrap();
    let ctx = promptstack_core::SendContext::from_json(
        br#"{"now": "2026-11-30T09:15:00Z", "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"}}"#,
        "send.json",
    )
    .unwrap();
    let assembly = agent.assemble(&ctx).unwrap();
    let fence = Arc::new(Fence::new(FixedNonce::new(
        Nonce::parse("0123456789abcdef").unwrap(),
    )));
    let turn = agent
        .turn_builder(&assembly, fence, |tool| {
            let executor: Arc<dyn ToolExecutor> = match tool.name.as_str() {
                "read_page" => Arc::new(FnExecutor::new(|_: Value| async {
                    Ok(ToolOutput::new()
                        .fetched_source("https://example.com/a", Some("A"), "page text")
                        .text("loaded in 20 ms"))
                })),
                "read_file" => Arc::new(FnExecutor::new(|_: Value| async {
                    Ok(ToolOutput::new().source("docs/notes.md", None, "file text"))
                })),
                _ => Arc::new(FnExecutor::new(|_: Value| async {
                    Ok(ToolOutput::new().text("an answer"))
                })),
            };
            Some(executor)
        })
        .unwrap()
        .build()
        .unwrap();
    block_on(async {
        let page = turn.call("read_page", &json!({})).await.unwrap();
        assert!(
            page.text.contains(
                "<<<web_content_0123456789abcdef origin=\"https://example.com\" tool=\"read_page\">>>\npage text\n<<<end_web_content_0123456789abcdef>>>"
            ),
            "{}",
            page.text
        );
        assert!(
            page.text.contains(
                "<<<tool_result_0123456789abcdef tool=\"read_page\">>>\nloaded in 20 ms\n"
            ),
            "{}",
            page.text
        );
        let file = turn.call("read_file", &json!({})).await.unwrap();
        assert!(
            file.text.contains(
                "<<<file_content_0123456789abcdef origin=\"file:docs/notes.md\" tool=\"read_file\">>>\nfile text\n"
            ),
            "{}",
            file.text
        );
        let plain = turn.call("lookup", &json!({})).await.unwrap();
        assert!(
            plain
                .text
                .starts_with("<<<tool_result_0123456789abcdef tool=\"lookup\">>>\nan answer\n"),
            "{}",
            plain.text
        );
    });
}

/// Issue 17.15: the Turn exports its record, and `score_tool_calls` counts calls per class and
/// tool, duplicates and budget exhaustion from it.
#[test]
fn the_turn_record_scores_calls_duplicates_and_exhaustion() {
    let config = web_budget(2);
    let f = fixture(&config, "", None);
    block_on(async {
        for (tool, input) in [
            ("search", json!({"query": "rust"})),
            ("search", json!({"query": " Rust "})),
            ("note", json!({"text": "a"})),
            ("note", json!({"text": "a"})),
            ("fetch", json!({"url": "https://example.com/"})),
            ("fetch", json!({"url": "https://example.com/other"})),
        ] {
            f.turn.call(tool, &input).await.unwrap();
        }
    });
    let record = f.turn.record();
    let json = serde_json::to_value(&record).unwrap();
    assert_eq!(
        json["calls"][1],
        json!({"tool": "search", "class": "web", "status": "completed", "deduplicated": true, "duplicate": true})
    );
    let score = promptstack_core::stream::score_tool_calls(&record);
    assert_eq!(score.calls, 6);
    assert_eq!(
        score.duplicates, 2,
        "the respelled search and the repeated note"
    );
    assert_eq!(score.refused, 1);
    assert_eq!(score.per_tool["fetch"], 2);
    let web = &score.per_class["web"];
    assert_eq!(
        (web.calls, web.executed, web.deduplicated, web.refused),
        (4, 2, 1, 1)
    );
    assert!(web.exhausted);
}
