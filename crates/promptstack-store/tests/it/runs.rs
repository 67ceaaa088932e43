//! Conformance cases of eval runs: creating, claiming, leases, completing, cancelling, quotas and
//! isolation; and, on PostgreSQL, two instances sharing one run's cells.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use promptstack_store::{
    AuditAction, ClaimedCell, ErrorKind, NewRun, PageRequest, Principal, RunId, RunInfo, RunRef,
    RunState, Store, StoreConfig, Tenant,
};
use serde_json::json;

use crate::support::{Harness, agent, by, kind, one_version_run, principal, publish_all, vid};

const LEASE: Duration = Duration::from_secs(60);

/// A run of agent `chat` over versions 1 and 2 (three references, one repeated), `models`
/// models, two scenarios and `repeats` repetitions: 2 × models × 2 × repeats cells.
fn new_run(models: usize, repeats: u32) -> NewRun {
    NewRun::new(
        agent("chat"),
        "evals/smoke.toml",
        vec![
            RunRef {
                reference: "production".into(),
                version: vid(1),
            },
            RunRef {
                reference: "staging".into(),
                version: vid(2),
            },
            RunRef {
                reference: vid(1).to_string(),
                version: vid(1),
            },
        ],
        (0..models).map(|m| format!("model-{m}")).collect(),
        vec!["greeting".into(), "refund".into()],
        repeats,
    )
}

async fn setup(store: &Store, prefix: &str) -> Principal {
    let (who, _) = principal(store, prefix).await;
    publish_all(store, &who, &agent("chat"), &[1, 2]).await;
    who
}

/// The next claimable cell of `run` for `worker`, when there is one.
async fn claim(
    store: &Store,
    tenant: &Tenant,
    run: &RunId,
    worker: &str,
    lease: Duration,
) -> Option<ClaimedCell> {
    store.claim_cell(tenant, run, worker, lease).await.unwrap()
}

async fn create(store: &Store, who: &Principal, models: usize, repeats: u32) -> RunInfo {
    store
        .create_run(&who.tenant, &new_run(models, repeats), by(who))
        .await
        .unwrap()
}

pub async fn eval_runs_claim_and_complete_every_cell(h: &Harness) {
    let store = h.open().await;
    let who = setup(&store, "runs").await;
    let t = &who.tenant;
    let run = create(&store, &who, 2, 2).await;
    assert_eq!(run.state, RunState::Queued);
    assert_eq!(run.progress.total, 16);
    assert_eq!((run.progress.done, run.progress.failed), (0, 0));
    assert_eq!(run.progress.mean_cell_seconds, None);
    assert_eq!(run.refs.len(), 3);
    assert_eq!(run.created_by.as_ref(), Some(&who.key_id));
    assert!(run.started_at.is_none());
    assert_eq!(store.run(t, &run.id).await.unwrap(), run);
    let created = audit_of(&store, &who, AuditAction::EvalRunCreate).await;
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].object, format!("agents/chat/evals/{}", run.id));

    // Every cell is claimed once while leases hold, in index order.
    let mut claims = Vec::new();
    while let Some(claimed) = claim(&store, t, &run.id, "w1", LEASE).await {
        assert_eq!(claimed.claim.generation(), 1);
        assert_eq!(claimed.claim.worker(), "w1");
        claims.push(claimed);
    }
    assert_eq!(claims.len(), 16);
    let indexes: Vec<u32> = claims.iter().map(|c| c.cell.index).collect();
    assert_eq!(indexes, (0..16).collect::<Vec<_>>());
    let distinct: BTreeSet<_> = claims
        .iter()
        .map(|c| {
            (
                c.cell.version.clone(),
                c.cell.model.clone(),
                c.cell.scenario.clone(),
                c.cell.repetition,
            )
        })
        .collect();
    assert_eq!(distinct.len(), 16, "the cells are the product, once each");
    let running = store.run(t, &run.id).await.unwrap();
    assert_eq!(running.state, RunState::Running);
    assert!(running.started_at.is_some());

    // Completing: every third cell failed; a second completion of a cell is refused.
    for (i, claimed) in claims.iter().enumerate() {
        let row = json!({"cell": claimed.cell.index, "passed": i % 3 != 0});
        let info = store
            .complete_cell(t, &claimed.claim, &row, i % 3 == 0)
            .await
            .unwrap();
        assert_eq!(info.progress.done, i as u64 + 1);
        let again = store.complete_cell(t, &claimed.claim, &row, false).await;
        assert_eq!(kind(again), ErrorKind::Conflict);
        if i < 15 {
            assert_eq!(info.state, RunState::Running);
        }
    }
    let done = store.run(t, &run.id).await.unwrap();
    assert_eq!(done.state, RunState::Done);
    assert_eq!((done.progress.done, done.progress.failed), (16, 6));
    assert!(done.progress.mean_cell_seconds.is_some_and(|s| s >= 0.0));
    assert!(done.finished_at.is_some());
    assert!(claim(&store, t, &run.id, "w1", LEASE).await.is_none());
    assert_eq!(
        kind(store.renew_lease(t, &claims[0].claim, LEASE).await),
        ErrorKind::Conflict
    );

    // The rows read back in cell order, paged.
    let mut rows = Vec::new();
    let mut request = PageRequest::first().limit(5);
    loop {
        let page = store.run_results(t, &run.id, &request).await.unwrap();
        rows.extend(page.items);
        match page.next {
            Some(next) => request = PageRequest::first().limit(5).after(next),
            None => break,
        }
    }
    assert_eq!(rows.len(), 16);
    for (i, result) in rows.iter().enumerate() {
        assert_eq!(result.cell, claims[i].cell);
        assert_eq!(result.row["cell"], json!(i));
        assert_eq!(result.failed, i % 3 == 0);
    }

    // Listing, newest first, per agent or the whole tenant.
    let second = create(&store, &who, 1, 1).await;
    let listed = store
        .runs(t, None, &PageRequest::first().limit(1))
        .await
        .unwrap();
    assert_eq!(listed.items[0].id, second.id);
    let rest = store
        .runs(t, None, &PageRequest::first().after(listed.next.unwrap()))
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);
    assert_eq!(rest.items[0].id, run.id);
    assert!(rest.next.is_none());
    let of_chat = store
        .runs(t, Some(&agent("chat")), &PageRequest::first())
        .await
        .unwrap();
    assert_eq!(of_chat.items.len(), 2);
    assert_eq!(
        kind(
            store
                .runs(t, Some(&agent("nobody")), &PageRequest::first())
                .await
        ),
        ErrorKind::NotFound
    );
    let active = store.active_runs(&PageRequest::first()).await.unwrap();
    assert!(active.items.iter().any(|a| a.run == second.id));
    assert!(!active.items.iter().any(|a| a.run == run.id));
}

pub async fn eval_cells_are_claimed_again_after_their_lease(h: &Harness) {
    let store = h.open().await;
    let who = setup(&store, "lease").await;
    let t = &who.tenant;
    let run = create(&store, &who, 1, 1).await;
    let short = Duration::from_millis(100);
    let first = claim(&store, t, &run.id, "w1", short).await.unwrap();
    // Renewing keeps it: another worker gets the next cell, not this one.
    store.renew_lease(t, &first.claim, LEASE).await.unwrap();
    let other = claim(&store, t, &run.id, "w2", short).await.unwrap();
    assert_ne!(other.cell.index, first.cell.index);
    // w2 stalls: its lease runs out and w3 takes the cell over.
    tokio::time::sleep(short * 3).await;
    let taken = claim(&store, t, &run.id, "w3", LEASE).await.unwrap();
    assert_eq!(taken.cell, other.cell);
    assert_eq!(taken.claim.generation(), 2);
    // The stale claim can neither renew nor complete.
    assert_eq!(
        kind(store.renew_lease(t, &other.claim, LEASE).await),
        ErrorKind::Conflict
    );
    assert_eq!(
        kind(
            store
                .complete_cell(t, &other.claim, &json!({"by": "w2"}), false)
                .await
        ),
        ErrorKind::Conflict
    );
    store
        .complete_cell(t, &taken.claim, &json!({"by": "w3"}), false)
        .await
        .unwrap();
    // A claim whose lease ran out, but that nobody took over, still completes.
    let lapsed = claim(&store, t, &run.id, "w4", Duration::from_millis(10))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    store
        .complete_cell(t, &lapsed.claim, &json!({"by": "w4"}), false)
        .await
        .unwrap();
    store
        .complete_cell(t, &first.claim, &json!({"by": "w1"}), false)
        .await
        .unwrap();
    let rows = store
        .run_results(t, &run.id, &PageRequest::first())
        .await
        .unwrap()
        .items;
    let by_cell: BTreeMap<u32, String> = rows
        .iter()
        .map(|r| (r.cell.index, r.row["by"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        by_cell.get(&other.cell.index).map(String::as_str),
        Some("w3")
    );
    assert_eq!(
        by_cell.get(&first.cell.index).map(String::as_str),
        Some("w1")
    );
}

pub async fn eval_runs_cancel_and_fail(h: &Harness) {
    let store = h.open().await;
    let who = setup(&store, "cancel").await;
    let t = &who.tenant;
    let run = create(&store, &who, 1, 1).await;
    let held = claim(&store, t, &run.id, "w1", LEASE).await.unwrap();
    let cancelled = store.cancel_run(t, &run.id, by(&who)).await.unwrap();
    assert_eq!(cancelled.state, RunState::Cancelled);
    assert!(cancelled.finished_at.is_some());
    assert!(claim(&store, t, &run.id, "w1", LEASE).await.is_none());
    assert_eq!(
        kind(store.complete_cell(t, &held.claim, &json!({}), false).await),
        ErrorKind::Conflict
    );
    // Again: unchanged, and audited once.
    assert_eq!(
        store.cancel_run(t, &run.id, by(&who)).await.unwrap(),
        cancelled
    );
    let audited = audit_of(&store, &who, AuditAction::EvalRunCancel).await;
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0].from.as_deref(), Some("running"));
    assert_eq!(
        kind(store.fail_run(t, &run.id, "late").await),
        ErrorKind::Conflict
    );

    let second = create(&store, &who, 1, 1).await;
    let failed = store
        .fail_run(
            t,
            &second.id,
            &format!("no credential\n{}", "x".repeat(5000)),
        )
        .await
        .unwrap();
    assert_eq!(failed.state, RunState::Failed);
    let message = failed.message.unwrap();
    assert!(message.starts_with("no credential "), "{message}");
    assert_eq!(message.chars().count(), promptstack_store::MAX_RUN_MESSAGE);
    assert_eq!(
        kind(store.cancel_run(t, &second.id, None).await),
        ErrorKind::Conflict
    );
}

pub async fn eval_run_quotas_and_validation(h: &Harness) {
    // 8 cells per run, 2 active runs, rows of 64 bytes, 40 stored bytes (versions are 7 each).
    let store = h
        .open_with(
            StoreConfig::default()
                .eval_quotas(8, 2, 64)
                .quotas(10, 10, 10, 40),
        )
        .await;
    let who = setup(&store, "rquota").await;
    let t = &who.tenant;
    assert_eq!(
        kind(store.create_run(t, &new_run(1, 3), by(&who)).await),
        ErrorKind::Quota,
        "12 cells"
    );
    let first = create(&store, &who, 1, 2).await;
    let second = create(&store, &who, 1, 1).await;
    assert_eq!(
        kind(store.create_run(t, &new_run(1, 1), by(&who)).await),
        ErrorKind::Quota,
        "a third active run"
    );
    store.cancel_run(t, &second.id, None).await.unwrap();
    create(&store, &who, 1, 1).await;

    let claimed = claim(&store, t, &first.id, "w", LEASE).await.unwrap();
    let big = json!({"pad": "x".repeat(64)});
    assert_eq!(
        kind(store.complete_cell(t, &claimed.claim, &big, false).await),
        ErrorKind::TooLarge
    );
    // 14 bytes of versions stored: a row of 20 fits, the next one of 20 does not (54 > 40).
    let row = json!({"pad": "x".repeat(10)});
    assert_eq!(serde_json::to_string(&row).unwrap().len(), 20);
    store
        .complete_cell(t, &claimed.claim, &row, false)
        .await
        .unwrap();
    let next = claim(&store, t, &first.id, "w", LEASE).await.unwrap();
    assert_eq!(
        kind(store.complete_cell(t, &next.claim, &row, false).await),
        ErrorKind::TooLarge
    );
    // Nothing was recorded: the cell is still held and the count unchanged.
    assert_eq!(store.run(t, &first.id).await.unwrap().progress.done, 1);
    // And the stored rows count against publishing too: 7 + 7 + 20 + 7 > 40.
    let publish = store
        .publish(t, &agent("chat"), &crate::support::bundle(3), by(&who))
        .await;
    assert_eq!(kind(publish), ErrorKind::TooLarge);

    // Validation and lookups.
    let unknown = one_version_run("chat", 99, &["m"]);
    assert_eq!(
        kind(store.create_run(t, &unknown, None).await),
        ErrorKind::NotFound
    );
    let no_agent = one_version_run("ghost", 1, &["m"]);
    assert_eq!(
        kind(store.create_run(t, &no_agent, None).await),
        ErrorKind::NotFound
    );
    let no_models = one_version_run("chat", 1, &[]);
    assert_eq!(
        kind(store.create_run(t, &no_models, None).await),
        ErrorKind::Invalid
    );
    for (worker, lease) in [
        ("", LEASE),
        ("w\n", LEASE),
        ("w", Duration::ZERO),
        ("w", Duration::from_secs(86_400)),
    ] {
        assert_eq!(
            kind(store.claim_cell(t, &first.id, worker, lease).await),
            ErrorKind::Invalid,
            "{worker:?} {lease:?}"
        );
    }
    let missing = RunId::parse("0123456789abcdef").unwrap();
    assert_eq!(
        kind(store.claim_cell(t, &missing, "w", LEASE).await),
        ErrorKind::NotFound
    );
}

pub async fn eval_runs_are_isolated_by_tenant(h: &Harness) {
    let store = h.open().await;
    let a = setup(&store, "riso-a").await;
    let b = setup(&store, "riso-b").await;
    let run = create(&store, &b, 1, 1).await;
    let claimed = claim(&store, &b.tenant, &run.id, "w", LEASE).await.unwrap();
    let t = &a.tenant;
    let page = PageRequest::first();
    assert_eq!(kind(store.run(t, &run.id).await), ErrorKind::NotFound);
    assert!(store.runs(t, None, &page).await.unwrap().items.is_empty());
    assert_eq!(
        kind(store.cancel_run(t, &run.id, None).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.fail_run(t, &run.id, "x").await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.claim_cell(t, &run.id, "w", LEASE).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.renew_lease(t, &claimed.claim, LEASE).await),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(
            store
                .complete_cell(t, &claimed.claim, &json!({}), false)
                .await
        ),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(store.run_results(t, &run.id, &page).await),
        ErrorKind::NotFound
    );
    // B's own calls still work, and the workers' listing names B's run under B.
    store
        .complete_cell(&b.tenant, &claimed.claim, &json!({}), false)
        .await
        .unwrap();
    let active = store.active_runs(&page).await.unwrap();
    assert!(
        active
            .items
            .iter()
            .any(|r| r.run == run.id && r.tenant == b.tenant)
    );
}

/// Two instances (separate pools) on one database, several workers each, claim the cells of one
/// run; one instance is dropped mid-run with cells claimed. Its cells are claimed again once
/// their short leases run out, and every cell ends completed exactly once; none of the dropped
/// instance's claims can complete afterwards.
pub async fn postgres_two_instances_complete_every_cell_once(h: &Harness) {
    let config = StoreConfig::default().eval_quotas(10_000, 4, 4096);
    let first = h.open_with(config.clone()).await;
    let second = h.open_with(config).await;
    let who = setup(&first, "instances").await;
    let t = who.tenant.clone();
    let run = first
        .create_run(&t, &new_run(5, 6), by(&who))
        .await
        .unwrap(); // 2 × 5 × 2 × 6 = 120 cells
    let total = run.progress.total;
    let lease = Duration::from_millis(300);
    // Completions per cell, across every worker of both instances.
    let completions: Arc<Mutex<BTreeMap<u32, u32>>> = Arc::default();
    let abandoned: Arc<Mutex<Vec<promptstack_store::Claim>>> = Arc::default();

    // The first instance's workers claim cells and never complete some: it dies mid-run.
    let doomed: Vec<_> = (0..3)
        .map(|w| {
            let (store, t, id) = (first.clone(), t.clone(), run.id.clone());
            let (completions, abandoned) = (completions.clone(), abandoned.clone());
            tokio::spawn(async move {
                let worker = format!("first-{w}");
                for n in 0.. {
                    let Some(claimed) = store.claim_cell(&t, &id, &worker, lease).await.unwrap()
                    else {
                        break;
                    };
                    if n >= 3 {
                        // Claimed, then the instance is gone before it completes.
                        abandoned.lock().unwrap().push(claimed.claim);
                        return;
                    }
                    let row = json!({"cell": claimed.cell.index, "by": worker});
                    store
                        .complete_cell(&t, &claimed.claim, &row, false)
                        .await
                        .unwrap();
                    *completions
                        .lock()
                        .unwrap()
                        .entry(claimed.cell.index)
                        .or_default() += 1;
                }
            })
        })
        .collect();
    for task in doomed {
        task.await.unwrap();
    }
    first.close().await;
    drop(first);
    let abandoned = abandoned.lock().unwrap().clone();
    assert_eq!(
        abandoned.len(),
        3,
        "each of the first instance's workers left a cell"
    );

    // The second instance's workers run until no cell is left, waiting out leases.
    let survivors: Vec<_> = (0..4)
        .map(|w| {
            let (store, t, id) = (second.clone(), t.clone(), run.id.clone());
            let completions = completions.clone();
            tokio::spawn(async move {
                let worker = format!("second-{w}");
                loop {
                    match store.claim_cell(&t, &id, &worker, lease).await.unwrap() {
                        Some(claimed) => {
                            let row = json!({"cell": claimed.cell.index, "by": worker});
                            match store.complete_cell(&t, &claimed.claim, &row, false).await {
                                Ok(_) => {
                                    *completions
                                        .lock()
                                        .unwrap()
                                        .entry(claimed.cell.index)
                                        .or_default() += 1;
                                }
                                Err(e) => panic!("a held claim must complete: {e}"),
                            }
                        }
                        None => {
                            let info = store.run(&t, &id).await.unwrap();
                            if info.state == RunState::Done {
                                return;
                            }
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            })
        })
        .collect();
    tokio::time::timeout(Duration::from_secs(60), async {
        for task in survivors {
            task.await.unwrap();
        }
    })
    .await
    .expect("the run finishes");

    let completions = completions.lock().unwrap().clone();
    assert_eq!(completions.len() as u64, total, "every cell completed");
    assert!(
        completions.values().all(|n| *n == 1),
        "no cell completed twice: {completions:?}"
    );
    let info = second.run(&t, &run.id).await.unwrap();
    assert_eq!(info.state, RunState::Done);
    assert_eq!(info.progress.done, total);
    // The dead instance's claims were taken over: they can no longer complete.
    for claim in &abandoned {
        assert_eq!(
            kind(second.complete_cell(&t, claim, &json!({}), false).await),
            ErrorKind::Conflict
        );
    }
    let mut rows = Vec::new();
    let mut request = PageRequest::first().limit(200);
    loop {
        let page = second.run_results(&t, &run.id, &request).await.unwrap();
        rows.extend(page.items);
        match page.next {
            Some(next) => request = PageRequest::first().limit(200).after(next),
            None => break,
        }
    }
    assert_eq!(rows.len() as u64, total);
    for claim in &abandoned {
        let row = &rows[claim.cell() as usize];
        assert!(
            row.row["by"].as_str().unwrap().starts_with("second-"),
            "an abandoned cell was completed by the surviving instance"
        );
    }
}

async fn audit_of(
    store: &Store,
    who: &Principal,
    action: AuditAction,
) -> Vec<promptstack_store::AuditEntry> {
    store
        .audit(&who.tenant, &PageRequest::first().limit(200))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.action == action)
        .collect()
}
