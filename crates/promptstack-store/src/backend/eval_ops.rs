//! Eval runs and their cells, written once over the parent module's `Db` and `Handle` like
//! `ops.rs`; the one backend difference is `SKIP_LOCKED` in the claim.
//!
//! A claim is one `UPDATE … WHERE idx = (SELECT … LIMIT 1 [FOR UPDATE SKIP LOCKED]) RETURNING`:
//! on PostgreSQL concurrent claimers skip the cell another is taking instead of queueing behind
//! it, and the outer `WHERE` repeats the claimability test, which PostgreSQL re-checks on the
//! row's latest version; on SQLite the write transaction (`BEGIN IMMEDIATE`) serialises them.
//! A completion names the claim's generation: a worker whose lease ran out and whose cell was
//! claimed again updates no row and gets `Conflict`. The run's counters move in the completing
//! transaction with one `UPDATE` of the run's row, so the last completion, whichever instance
//! makes it, is the one that sees the count reach the total and marks the run done.

use sqlx::Row;

use super::ops::{
    Audit, DbQuery, DbRow, Listing, Quota, Tx, agent_exists, agent_id, audit, key_column,
    lock_tenant, stored_bytes, version_exists, within,
};
use super::{Db, Handle, SKIP_LOCKED};
use crate::backend::{from_micros, now_micros};
use crate::config::StoreConfig;
use crate::error::{Error, ErrorKind, Result};
use crate::eval::{
    ActiveRun, Cell, CellResult, Claim, ClaimedCell, NewRun, RunInfo, RunProgress, RunRef, RunState,
};
use crate::name::{AgentName, KeyId, RunId, Tenant, VersionId};
use crate::record::{AuditAction, Cursor, Page, PageRequest};

/// Cells inserted per statement: 6 parameters each, well under both backends' limits.
const CELLS_PER_INSERT: usize = 500;

const RUN_COLUMNS: &str = "r.id, r.public_id, a.name AS agent, r.suite, r.refs, r.models, \
     r.scenarios, r.repeats, r.state, r.message, r.created_at, r.created_by, r.started_at, \
     r.finished_at, r.cells_total, r.cells_done, r.cells_failed, r.busy_micros";

const RUN_FROM: &str = "FROM eval_runs r JOIN agents a ON a.id = r.agent_id \
     JOIN tenants t ON t.id = r.tenant_id";

fn count(row: &DbRow, column: &str) -> Result<u64> {
    u64::try_from(row.try_get::<i64, _>(column)?)
        .map_err(|_| Error::internal("the database holds a negative count"))
}

fn json_column<T: serde::de::DeserializeOwned>(row: &DbRow, column: &str) -> Result<T> {
    let text: String = row.try_get(column)?;
    serde_json::from_str(&text).map_err(|_| Error::internal("the database holds a malformed run"))
}

fn optional_time(row: &DbRow, column: &str) -> Result<Option<jiff::Timestamp>> {
    row.try_get::<Option<i64>, _>(column)?
        .map(from_micros)
        .transpose()
}

fn run_info(row: &DbRow) -> Result<RunInfo> {
    let done = count(row, "cells_done")?;
    let busy = count(row, "busy_micros")?;
    Ok(RunInfo {
        id: RunId::from_db(row.try_get("public_id")?)?,
        agent: AgentName::from_db(row.try_get("agent")?)?,
        suite: row.try_get("suite")?,
        refs: json_column::<Vec<RunRef>>(row, "refs")?,
        models: json_column(row, "models")?,
        scenarios: json_column(row, "scenarios")?,
        repeats: u32::try_from(row.try_get::<i64, _>("repeats")?)
            .map_err(|_| Error::internal("the database holds a malformed run"))?,
        state: RunState::from_db(&row.try_get::<String, _>("state")?)?,
        message: row.try_get("message")?,
        created_at: from_micros(row.try_get("created_at")?)?,
        created_by: key_column(row, "created_by")?,
        started_at: optional_time(row, "started_at")?,
        finished_at: optional_time(row, "finished_at")?,
        progress: RunProgress {
            total: count(row, "cells_total")?,
            done,
            failed: count(row, "cells_failed")?,
            #[allow(clippy::cast_precision_loss)]
            mean_cell_seconds: (done > 0).then(|| busy as f64 / done as f64 / 1e6),
        },
    })
}

fn cell(row: &DbRow) -> Result<Cell> {
    let malformed = || Error::internal("the database holds a malformed cell");
    Ok(Cell {
        index: u32::try_from(row.try_get::<i64, _>("idx")?).map_err(|_| malformed())?,
        version: VersionId::from_db(row.try_get("version_id")?)?,
        model: row.try_get("model")?,
        scenario: row.try_get("scenario")?,
        repetition: u32::try_from(row.try_get::<i64, _>("repetition")?).map_err(|_| malformed())?,
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::internal(format!("cannot serialise: {e}")))
}

/// A run of the tenant, read with `executor`: the reader, or a write's transaction.
async fn read_run<'c>(
    executor: impl sqlx::Executor<'c, Database = Db>,
    tenant: &Tenant,
    run: &RunId,
) -> Result<RunInfo> {
    let sql = format!("SELECT {RUN_COLUMNS} {RUN_FROM} WHERE t.slug = $1 AND r.public_id = $2");
    let row = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_optional(executor)
        .await?
        .ok_or_else(|| no_run(run))?;
    run_info(&row)
}

fn no_run(run: &RunId) -> Error {
    Error::not_found(format!("no eval run {run}"))
}

/// The row id, tenant row id and state of the tenant's run.
pub(super) async fn run_row(
    tx: &mut Tx,
    tenant: &Tenant,
    run: &RunId,
) -> Result<(i64, i64, RunState)> {
    let row = sqlx::query(
        "SELECT r.id, r.tenant_id, r.state FROM eval_runs r JOIN tenants t ON t.id = r.tenant_id \
         WHERE t.slug = $1 AND r.public_id = $2",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .fetch_optional(&mut **tx)
    .await?
    .ok_or_else(|| no_run(run))?;
    Ok((
        row.try_get("id")?,
        row.try_get("tenant_id")?,
        RunState::from_db(&row.try_get::<String, _>("state")?)?,
    ))
}

pub(crate) async fn create_run(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    run: &NewRun,
    by: Option<&KeyId>,
) -> Result<RunInfo> {
    let cells = run.cells();
    let at = now_micros();
    let id = RunId::generate()?;
    let mut tx = db.begin().await?;
    // The tenant's row is locked: the count of active runs holds against concurrent creates.
    let tenant_id = lock_tenant(&mut tx, tenant).await?;
    let agent_id = agent_id(&mut tx, tenant_id, &run.agent)
        .await?
        .ok_or_else(|| Error::not_found(format!("no agent {}", run.agent)))?;
    for version in run.versions() {
        if !version_exists(&mut tx, agent_id, version).await? {
            return Err(Error::not_found(format!(
                "no version {version} of agent {}",
                run.agent
            )));
        }
    }
    within(
        &mut tx,
        Quota::ActiveRunsPerTenant,
        config,
        tenant_id,
        tenant,
    )
    .await?;
    let total = i64::try_from(cells.len()).map_err(|_| Error::invalid("too many cells"))?;
    let run_id: i64 = sqlx::query(
        "INSERT INTO eval_runs (public_id, tenant_id, agent_id, suite, refs, models, scenarios, \
         repeats, state, created_at, created_by, cells_total) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9, $10, $11) RETURNING id",
    )
    .bind(id.as_str())
    .bind(tenant_id)
    .bind(agent_id)
    .bind(&run.suite)
    .bind(to_json(&run.refs)?)
    .bind(to_json(&run.models)?)
    .bind(to_json(&run.scenarios)?)
    .bind(i64::from(run.repeats))
    .bind(at)
    .bind(by.map(KeyId::as_str))
    .bind(total)
    .fetch_one(&mut *tx)
    .await?
    .try_get(0)?;
    for chunk in cells.chunks(CELLS_PER_INSERT) {
        let mut insert = sqlx::QueryBuilder::<Db>::new(
            "INSERT INTO eval_cells (run_id, idx, version_id, model, scenario, repetition) ",
        );
        insert.push_values(chunk, |mut values, cell| {
            values
                .push_bind(run_id)
                .push_bind(i64::from(cell.index))
                .push_bind(cell.version.as_str())
                .push_bind(cell.model.as_str())
                .push_bind(cell.scenario.as_str())
                .push_bind(i64::from(cell.repetition));
        });
        insert.build().execute(&mut *tx).await?;
    }
    let entry = RunAudit {
        tenant_id,
        at,
        by,
        agent: &run.agent,
        run: &id,
    };
    let created = entry.entry(AuditAction::EvalRunCreate, None, Some(run.suite.clone()));
    audit(&mut tx, created).await?;
    let info = read_run(&mut *tx, tenant, &id).await?;
    tx.commit().await?;
    Ok(info)
}

/// Who changed which eval run, and when: the part its audit entries share.
struct RunAudit<'a> {
    tenant_id: i64,
    at: i64,
    by: Option<&'a KeyId>,
    agent: &'a AgentName,
    run: &'a RunId,
}

impl<'a> RunAudit<'a> {
    /// The audit entry of `action`, from `from` to `to`.
    fn entry(&self, action: AuditAction, from: Option<String>, to: Option<String>) -> Audit<'a> {
        Audit {
            tenant_id: self.tenant_id,
            at: self.at,
            actor: self.by,
            action,
            object: format!("agents/{}/evals/{}", self.agent, self.run),
            from,
            to,
        }
    }
}

pub(crate) async fn run(db: &Handle, tenant: &Tenant, run: &RunId) -> Result<RunInfo> {
    read_run(db.reader(), tenant, run).await
}

pub(crate) async fn runs(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    agent: Option<&AgentName>,
    page: &PageRequest,
) -> Result<Page<RunInfo>> {
    let listing = Listing::new(config, page);
    let sql = format!(
        "SELECT {RUN_COLUMNS} {RUN_FROM} WHERE t.slug = $1 AND ($2 IS NULL OR a.name = $2) \
         AND r.id < $3 ORDER BY r.id DESC LIMIT $4"
    );
    let query = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(agent.map(AgentName::as_str))
        .bind(listing.seq_or(i64::MAX)?);
    let found = listing
        .fetch(db, query, |row| {
            Ok((Cursor::from_seq(row.try_get("id")?), run_info(row)?))
        })
        .await?;
    if found.items.is_empty()
        && let Some(agent) = agent
    {
        agent_exists(db, tenant, agent).await?;
    }
    Ok(found)
}

pub(crate) async fn active_runs(
    db: &Handle,
    config: &StoreConfig,
    page: &PageRequest,
) -> Result<Page<ActiveRun>> {
    let listing = Listing::new(config, page);
    let query = sqlx::query(
        "SELECT r.id, r.public_id, t.slug FROM eval_runs r JOIN tenants t ON t.id = r.tenant_id \
         WHERE r.state IN ('queued', 'running') AND r.id > $1 ORDER BY r.id LIMIT $2",
    )
    .bind(listing.seq_or(0)?);
    listing
        .fetch(db, query, |row| {
            Ok((
                Cursor::from_seq(row.try_get("id")?),
                ActiveRun {
                    tenant: Tenant::from_db(row.try_get("slug")?)?,
                    run: RunId::from_db(row.try_get("public_id")?)?,
                },
            ))
        })
        .await
}

/// Moves an active run to `to` (cancelled or failed).
pub(crate) async fn finish_run(
    db: &Handle,
    tenant: &Tenant,
    run: &RunId,
    to: RunState,
    message: Option<&str>,
    by: Option<&KeyId>,
) -> Result<RunInfo> {
    let mut tx = db.begin().await?;
    let at = now_micros();
    let (run_id, tenant_id, was) = run_row(&mut tx, tenant, run).await?;
    let finished = was.is_active()
        && sqlx::query(
            "UPDATE eval_runs SET state = $1, finished_at = $2, message = $3 \
             WHERE id = $4 AND state IN ('queued', 'running')",
        )
        .bind(to.as_str())
        .bind(at)
        .bind(message)
        .bind(run_id)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
    let info = read_run(&mut *tx, tenant, run).await?;
    if !finished {
        if info.state == to {
            return Ok(info);
        }
        return Err(Error::conflict(format!(
            "eval run {run} is {}; it cannot become {to}",
            info.state
        )));
    }
    if to == RunState::Cancelled {
        let entry = RunAudit {
            tenant_id,
            at,
            by,
            agent: &info.agent,
            run,
        };
        let (from, to) = (was.as_str().to_owned(), to.as_str().to_owned());
        audit(
            &mut tx,
            entry.entry(AuditAction::EvalRunCancel, Some(from), Some(to)),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(info)
}

pub(crate) async fn claim_cell(
    db: &Handle,
    tenant: &Tenant,
    run: &RunId,
    worker: &str,
    lease_micros: i64,
) -> Result<Option<ClaimedCell>> {
    let mut tx = db.begin().await?;
    let (run_id, _, state) = run_row(&mut tx, tenant, run).await?;
    if !state.is_active() {
        return Ok(None);
    }
    let now = now_micros();
    let until = now.saturating_add(lease_micros);
    let sql = format!(
        "UPDATE eval_cells SET worker = $1, generation = generation + 1, claimed_at = $2, \
         lease_until = $3 \
         WHERE run_id = $4 AND done_at IS NULL AND (lease_until IS NULL OR lease_until < $2) \
         AND idx = (SELECT c.idx FROM eval_cells c WHERE c.run_id = $4 AND c.done_at IS NULL \
           AND (c.lease_until IS NULL OR c.lease_until < $2) \
           AND EXISTS (SELECT 1 FROM eval_runs r WHERE r.id = $4 \
             AND r.state IN ('queued', 'running')) \
           ORDER BY c.idx LIMIT 1{SKIP_LOCKED}) \
         RETURNING idx, version_id, model, scenario, repetition, generation"
    );
    let claimed = sqlx::query(&sql)
        .bind(worker)
        .bind(now)
        .bind(until)
        .bind(run_id)
        .fetch_optional(&mut *tx)
        .await?;
    let Some(row) = claimed else {
        return Ok(None);
    };
    let claimed = ClaimedCell {
        cell: cell(&row)?,
        claim: Claim {
            run: run.clone(),
            cell: u32::try_from(row.try_get::<i64, _>("idx")?)
                .map_err(|_| Error::internal("the database holds a malformed cell"))?,
            generation: row.try_get("generation")?,
            worker: worker.to_owned(),
        },
        lease_until: from_micros(until)?,
    };
    if state == RunState::Queued {
        sqlx::query(
            "UPDATE eval_runs SET state = 'running', started_at = $1 \
             WHERE id = $2 AND state = 'queued'",
        )
        .bind(now)
        .bind(run_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(Some(claimed))
}

/// The test that `claim` still holds its cell, over `eval_cells`: the claim's generation and
/// worker, not yet done. Its parameters are `$1` to `$4`, bound by [`bind_claim`]; a statement
/// numbers its own from `$5`.
const CLAIM_HELD: &str =
    "run_id = $1 AND idx = $2 AND generation = $3 AND worker = $4 AND done_at IS NULL";

/// Binds the parameters of [`CLAIM_HELD`]: the run's row id and the claim.
fn bind_claim<'q>(query: DbQuery<'q>, run_id: i64, claim: &'q Claim) -> DbQuery<'q> {
    query
        .bind(run_id)
        .bind(i64::from(claim.cell))
        .bind(claim.generation)
        .bind(&claim.worker)
}

fn claim_lost(claim: &Claim) -> Error {
    Error::conflict(format!(
        "the claim on cell {} of eval run {} is no longer held (its lease ran out and the cell \
         was claimed again, it was completed, or the run is no longer running)",
        claim.cell, claim.run
    ))
}

pub(crate) async fn renew_lease(
    db: &Handle,
    tenant: &Tenant,
    claim: &Claim,
    lease_micros: i64,
) -> Result<jiff::Timestamp> {
    let mut tx = db.begin().await?;
    let (run_id, _, state) = run_row(&mut tx, tenant, &claim.run).await?;
    if !state.is_active() {
        return Err(claim_lost(claim));
    }
    let until = now_micros().saturating_add(lease_micros);
    let sql = format!("UPDATE eval_cells SET lease_until = $5 WHERE {CLAIM_HELD}");
    let renewed = bind_claim(sqlx::query(&sql), run_id, claim)
        .bind(until)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if renewed != 1 {
        return Err(claim_lost(claim));
    }
    tx.commit().await?;
    from_micros(until)
}

pub(crate) async fn complete_cell(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    claim: &Claim,
    row: &str,
    failed: bool,
) -> Result<RunInfo> {
    let mut tx = db.begin().await?;
    // The tenant's row is locked: the bytes quota holds against concurrent completions and
    // publishes.
    lock_tenant(&mut tx, tenant).await?;
    let (run_id, tenant_id, state) = run_row(&mut tx, tenant, &claim.run).await?;
    if state != RunState::Running {
        return Err(claim_lost(claim));
    }
    let now = now_micros();
    let sql = format!(
        "UPDATE eval_cells SET done_at = $5, failed = $6, result = $7, lease_until = NULL \
         WHERE {CLAIM_HELD} RETURNING claimed_at"
    );
    let completed = bind_claim(sqlx::query(&sql), run_id, claim)
        .bind(now)
        .bind(i64::from(failed))
        .bind(row)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| claim_lost(claim))?;
    let claimed_at: i64 = completed.try_get("claimed_at")?;
    let size = row.len() as u64;
    let stored = stored_bytes(&mut tx, tenant_id).await?;
    if stored.saturating_add(size) > config.max_tenant_bytes {
        return Err(Error::new(
            ErrorKind::TooLarge,
            format!(
                "tenant {tenant} stores {stored} bytes of versions and eval results; this \
                 result row of {size} bytes would pass the quota of {} bytes \
                 (`max_tenant_bytes`)",
                config.max_tenant_bytes
            ),
        ));
    }
    // One statement on the run's row: concurrent completions queue on its lock, and each
    // counts from the latest committed value, so exactly one sees the last cell.
    let updated = sqlx::query(
        "UPDATE eval_runs SET cells_done = cells_done + 1, cells_failed = cells_failed + $1, \
         busy_micros = busy_micros + $2, result_bytes = result_bytes + $3, \
         state = CASE WHEN cells_done + 1 >= cells_total THEN 'done' ELSE state END, \
         finished_at = CASE WHEN cells_done + 1 >= cells_total THEN $4 ELSE finished_at END \
         WHERE id = $5 AND state = 'running'",
    )
    .bind(i64::from(failed))
    .bind(now.saturating_sub(claimed_at).max(0))
    .bind(i64::try_from(size).unwrap_or(i64::MAX))
    .bind(now)
    .bind(run_id)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if updated != 1 {
        // Cancelled or failed since the state was read: the cell's update rolls back too.
        return Err(claim_lost(claim));
    }
    let info = read_run(&mut *tx, tenant, &claim.run).await?;
    tx.commit().await?;
    Ok(info)
}

pub(crate) async fn run_results(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    run: &RunId,
    page: &PageRequest,
) -> Result<Page<CellResult>> {
    let listing = Listing::new(config, page);
    // The cursor is the next index plus one (cursors are positive).
    let from = listing.seq_or(1)? - 1;
    let query = sqlx::query(
        "SELECT c.idx, c.version_id, c.model, c.scenario, c.repetition, c.failed, c.result, \
         c.done_at FROM eval_cells c JOIN eval_runs r ON r.id = c.run_id \
         JOIN tenants t ON t.id = r.tenant_id \
         WHERE t.slug = $1 AND r.public_id = $2 AND c.done_at IS NOT NULL AND c.idx >= $3 \
         ORDER BY c.idx LIMIT $4",
    )
    .bind(tenant.as_str())
    .bind(run.as_str())
    .bind(from);
    let found = listing
        .fetch(db, query, |row| {
            let idx: i64 = row.try_get("idx")?;
            let text: Option<String> = row.try_get("result")?;
            let result = serde_json::from_str(text.as_deref().unwrap_or(""))
                .map_err(|_| Error::internal("the database holds a malformed result row"))?;
            Ok((
                Cursor::from_seq(idx + 2),
                CellResult {
                    cell: cell(row)?,
                    failed: row.try_get::<i64, _>("failed")? != 0,
                    row: result,
                    completed_at: from_micros(row.try_get("done_at")?)?,
                },
            ))
        })
        .await?;
    if found.items.is_empty() {
        let found = sqlx::query(
            "SELECT 1 FROM eval_runs r JOIN tenants t ON t.id = r.tenant_id \
             WHERE t.slug = $1 AND r.public_id = $2",
        )
        .bind(tenant.as_str())
        .bind(run.as_str())
        .fetch_optional(db.reader())
        .await?;
        if found.is_none() {
            return Err(no_run(run));
        }
    }
    Ok(found)
}
