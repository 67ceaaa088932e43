//! The eval workers of one instance: each claims a cell of any tenant's active run under a
//! lease, runs it with the run's prepared runner while renewing the lease, and completes it
//! with its row. Instances share the work through the store alone.
//!
//! ```text
//! worker ─► active runs, tenants in turn ─► claim_cell (lease) ─► runner.run_cell ─► complete_cell
//!                                              ▲  renew every lease/3 ┘  (lost: the cell is dropped)
//!           no cell anywhere ─► sleep `poll` or until a run is created here
//! ```
//!
//! A worker that dies (its instance killed) leaves its cell leased; once the lease runs out,
//! any worker claims it again, and only the latest claim may complete it, so each cell's row is
//! recorded exactly once. Tenants take turns: each claim starts from the next tenant with
//! active runs, so one tenant's large run does not hold back another's.

use std::sync::Arc;

use promptstack_eval::row::{ResultRow, Transcript};
use promptstack_eval::run::RunErrorKind;
use promptstack_store::{ClaimedCell, ErrorKind, PageRequest, RunId, RunState, Tenant};
use tokio::sync::watch;

use super::context::{Unprepared, prepare};
use crate::state::AppState;

/// How many pages of active runs a worker looks through for a cell.
const ACTIVE_PAGES: usize = 5;

/// Spawns this instance's workers; they stop when `stop` turns true (a cell in flight is left
/// to its lease, and claimed again by whoever runs next).
pub(crate) fn spawn(state: &AppState, stop: &watch::Receiver<bool>) {
    let instance = instance_id();
    for slot in 0..state.inner.config.eval.workers {
        let worker = Worker {
            state: state.clone(),
            id: format!("{instance}/{slot}"),
            turn: slot,
        };
        tokio::spawn(worker.work(stop.clone()));
    }
}

/// A name for this instance's workers in the store's claims: the process id and a random part.
fn instance_id() -> String {
    let mut bytes = [0u8; 4];
    let random = getrandom::fill(&mut bytes)
        .map(|()| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
        .unwrap_or_default();
    format!("pid{}-{random}", std::process::id())
}

struct Worker {
    state: AppState,
    id: String,
    /// Which tenant goes first in the next search.
    turn: usize,
}

impl Worker {
    async fn work(mut self, mut stop: watch::Receiver<bool>) {
        loop {
            // Stopped, or the server that spawned the worker is gone without saying so.
            if *stop.borrow() || stop.has_changed().is_err() {
                return;
            }
            match self.next().await {
                Ok(Some((tenant, claimed))) => {
                    tokio::select! {
                        () = self.run(&tenant, claimed) => {}
                        _ = stop.changed() => return,
                    }
                }
                Ok(None) => self.idle(&mut stop).await,
                Err(error) => {
                    tracing::warn!(worker = %self.id, %error, "eval worker: the store could not be read");
                    self.idle(&mut stop).await;
                }
            }
        }
    }

    async fn idle(&self, stop: &mut watch::Receiver<bool>) {
        let inner = &self.state.inner;
        tokio::select! {
            () = tokio::time::sleep(inner.config.eval.poll) => {}
            () = inner.eval_wake.notified() => {}
            _ = stop.changed() => {}
        }
    }

    /// Claims a cell of the first tenant in turn that has one.
    async fn next(&mut self) -> promptstack_store::Result<Option<(Tenant, ClaimedCell)>> {
        let store = &self.state.inner.store;
        let mut active = Vec::new();
        let mut page = PageRequest::first().limit(u32::MAX);
        for _ in 0..ACTIVE_PAGES {
            let found = store.active_runs(&page).await?;
            active.extend(found.items);
            match found.next {
                Some(next) => page = PageRequest::first().limit(u32::MAX).after(next),
                None => break,
            }
        }
        // Tenants in order of their oldest active run, each tenant's runs oldest first.
        let mut tenants: Vec<(Tenant, Vec<RunId>)> = Vec::new();
        for run in active {
            match tenants.iter_mut().find(|(t, _)| *t == run.tenant) {
                Some((_, runs)) => runs.push(run.run),
                None => tenants.push((run.tenant, vec![run.run])),
            }
        }
        if tenants.is_empty() {
            return Ok(None);
        }
        let start = self.turn % tenants.len();
        tenants.rotate_left(start);
        let lease = self.state.inner.config.eval.lease;
        for (tenant, runs) in tenants {
            for run in runs {
                match store.claim_cell(&tenant, &run, &self.id, lease).await {
                    Ok(Some(claimed)) => {
                        self.turn = self.turn.wrapping_add(1);
                        return Ok(Some((tenant, claimed)));
                    }
                    Ok(None) => {}
                    // Gone between the listing and the claim.
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(None)
    }

    /// Runs a claimed cell while keeping its lease, and records its row. The cell's engine work
    /// (preparing its run, reading its suite) takes its turns within the run's tenant's share of
    /// the engine, as that tenant's requests do, so one tenant's runs cannot crowd out another's
    /// renders.
    async fn run(&self, tenant: &Tenant, claimed: ClaimedCell) {
        crate::engine::with_tenant_slot(async {
            crate::engine::note_tenant(tenant);
            self.run_in_share(tenant, claimed).await;
        })
        .await;
    }

    async fn run_in_share(&self, tenant: &Tenant, claimed: ClaimedCell) {
        let inner = &self.state.inner;
        let store = &inner.store;
        let run_id = claimed.claim.run().clone();
        let runner = match inner
            .eval_runners
            .get(tenant, &run_id, || prepare(&self.state, tenant, &run_id))
            .await
        {
            Ok(runner) => runner,
            Err(Unprepared::Fails(why)) => {
                self.fail(tenant, &run_id, &why).await;
                return;
            }
            Err(Unprepared::Later(why)) => {
                tracing::warn!(worker = %self.id, run = %run_id, why, "eval worker: the run could not be prepared; its cell waits for its lease");
                return;
            }
        };
        let cell = &claimed.cell;
        let version = cell.version.to_string();
        let work = runner.run_cell(&version, &cell.model, &cell.scenario, cell.repetition);
        let lease = inner.config.eval.lease;
        let renew = async {
            loop {
                tokio::time::sleep(lease / 3).await;
                match store.renew_lease(tenant, &claimed.claim, lease).await {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::Unavailable => {}
                    Err(e) => return e,
                }
            }
        };
        let row = tokio::select! {
            row = work => row,
            lost = renew => {
                tracing::info!(worker = %self.id, run = %run_id, cell = cell.index, error = %lost, "eval worker: the claim was lost; the cell is left to its new holder");
                return;
            }
        };
        match row {
            Ok(row) => self.complete(tenant, &claimed, row).await,
            Err(error) => {
                let why = match error.kind() {
                    RunErrorKind::Input => format!("the run cannot go on: {error}"),
                    _ => format!("a model endpoint failed for every cell: {error}"),
                };
                self.fail(tenant, &run_id, &why).await;
            }
        }
    }

    async fn complete(&self, tenant: &Tenant, claimed: &ClaimedCell, row: ResultRow) {
        let store = &self.state.inner.store;
        let failed = row.error.is_some();
        let mut value = serde_json::to_value(&row).unwrap_or_default();
        let mut outcome = store
            .complete_cell(tenant, &claimed.claim, &value, failed)
            .await;
        if outcome
            .as_ref()
            .is_err_and(|e| e.kind() == ErrorKind::TooLarge)
        {
            // Kept without what was sent and answered; the verdicts and the accounting stay.
            let mut slim = row;
            slim.transcript = Some(Transcript::new(
                "(left out: the result row was larger than the server keeps)",
                "",
            ));
            slim.turn = None;
            value = serde_json::to_value(&slim).unwrap_or_default();
            outcome = store
                .complete_cell(tenant, &claimed.claim, &value, failed)
                .await;
        }
        match outcome {
            Ok(info) if !info.state.is_active() => {
                self.state
                    .inner
                    .eval_runners
                    .forget(tenant, claimed.claim.run());
            }
            Ok(_) => {}
            Err(error) => {
                tracing::info!(worker = %self.id, run = %claimed.claim.run(), cell = claimed.cell.index, %error, "eval worker: the row was not recorded");
                if error.kind() == ErrorKind::Conflict {
                    self.forget_if_over(tenant, claimed.claim.run()).await;
                }
            }
        }
    }

    async fn fail(&self, tenant: &Tenant, run: &RunId, why: &str) {
        let inner = &self.state.inner;
        inner.eval_runners.forget(tenant, run);
        match inner.store.fail_run(tenant, run, why).await {
            Ok(_) => tracing::warn!(run = %run, why, "eval run failed"),
            Err(error) => {
                tracing::info!(run = %run, %error, "eval worker: the run could not be marked failed");
            }
        }
    }

    /// Forgets a run's prepared runner once the run is no longer active.
    async fn forget_if_over(&self, tenant: &Tenant, run: &RunId) {
        let inner = &self.state.inner;
        if let Ok(info) = inner.store.run(tenant, run).await
            && matches!(
                info.state,
                RunState::Done | RunState::Cancelled | RunState::Failed
            )
        {
            inner.eval_runners.forget(tenant, run);
        }
    }
}

/// Wakes this instance's idle workers (a run was just created here).
pub(crate) fn wake(state: &AppState) {
    state.inner.eval_wake.notify_waiters();
}

const _: () = {
    const fn assert_send<T: Send>() {}
    assert_send::<Arc<promptstack_eval::run::Runner>>();
};
