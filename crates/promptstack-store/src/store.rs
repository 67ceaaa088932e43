//! [`Store`]: the handle every caller holds, and every operation on it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

use tokio::sync::{Mutex, broadcast, oneshot};

use crate::backend::{Written, postgres, sqlite};
use crate::config::{Backend, Location, StoreConfig};
use crate::credential::{CredentialInfo, CredentialKey, Secret};
use crate::error::{Error, Result};
use crate::eval::{ActiveRun, CellResult, Claim, ClaimedCell, NewRun, RunInfo, RunState};

/// The most bytes the note of a forced label move may hold.
pub const MAX_FORCE_NOTE: usize = 16 * 1024;
use crate::key::{KeyInfo, NewKey, Principal};
use crate::name::{
    AgentName, CredentialName, KeyId, KeyName, LabelName, Role, RunId, Tenant, VersionId,
};
use crate::notify::{self, Notification, Subscription};
use crate::record::{
    AgentInfo, AuditEntry, Expected, Label, LabelMove, NewVersion, Page, PageRequest, Published,
    Settings, SettingsScope, Version, VersionInfo,
};

/// The longest content type a version may declare, in bytes.
const MAX_CONTENT_TYPE: usize = 255;

/// The store: a cheap-to-clone handle on one database, SQLite or PostgreSQL.
///
/// Every read takes the tenant and finds only that tenant's objects: another tenant's agent,
/// version, label, settings, audit entry or key is [`ErrorKind::NotFound`] (or absent from a
/// listing), never a different error. The one cross-tenant path is [`Store::admin`], for the
/// operator's `keys` command. Every write commits together with its audit entry, and returns
/// only after the commit: an `Ok` is an acknowledged, durable write. Every operation is bounded
/// by [`StoreConfig::operation_timeout`] and fails with [`ErrorKind::Unavailable`] past it.
///
/// [`ErrorKind::NotFound`]: crate::ErrorKind::NotFound
/// [`ErrorKind::Unavailable`]: crate::ErrorKind::Unavailable
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// Why an enum and not a trait object: the backends are a closed set of two, the operations are
/// one text compiled for each (`backend/ops.rs`), and callers get one concrete, `Clone` type
/// with plain `async fn`s rather than boxed futures behind `dyn`.
enum Db {
    Sqlite(sqlite::Handle),
    Postgres(postgres::Handle),
}

struct Inner {
    db: Db,
    config: StoreConfig,
    location: Location,
    changes: broadcast::Sender<Notification>,
    /// Dropping this stops the PostgreSQL listener task; `None` until the first subscription.
    listener: Mutex<Option<oneshot::Sender<()>>>,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
};

/// Runs one operation of a backend module (`ops`, `eval_ops` or `credential_ops`) on whichever
/// backend the store has.
macro_rules! dispatch {
    ($store:expr, $module:ident::$op:ident($($arg:expr),* $(,)?)) => {
        match &$store.inner.db {
            Db::Sqlite(db) => sqlite::$module::$op(db, $($arg),*).await,
            Db::Postgres(db) => postgres::$module::$op(db, $($arg),*).await,
        }
    };
}

impl Store {
    /// Opens the store at `location` (see [`Location::parse`]) with the default bounds, and
    /// brings its schema up to date.
    ///
    /// # Errors
    ///
    /// `Invalid` for a malformed location, `Unavailable` when the database cannot be reached
    /// within the acquire timeout, `Internal` when a migration fails.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn example() -> promptstack_store::Result<()> {
    /// let store = promptstack_store::Store::open("promptstack-data/promptstack.db").await?;
    /// # Ok(()) }
    /// ```
    pub async fn open(location: &str) -> Result<Store> {
        Store::open_with(Location::parse(location)?, StoreConfig::default()).await
    }

    /// Opens the store at `location` with `config`.
    ///
    /// # Errors
    ///
    /// As [`Store::open`].
    pub async fn open_with(location: Location, config: StoreConfig) -> Result<Store> {
        let timeout = config.acquire_timeout + config.operation_timeout;
        let open = async {
            Ok::<_, Error>(match &location {
                Location::Sqlite(path) => Db::Sqlite(sqlite::Handle::open(path, &config).await?),
                Location::Postgres(url) => {
                    Db::Postgres(postgres::Handle::open(url, &config).await?)
                }
            })
        };
        let db = tokio::time::timeout(timeout, open)
            .await
            .map_err(|_| Error::timed_out(timeout))??;
        let (changes, _) = broadcast::channel(config.notification_buffer);
        Ok(Store {
            inner: Arc::new(Inner {
                db,
                config,
                location,
                changes,
                listener: Mutex::new(None),
            }),
        })
    }

    /// Which backend this store runs on.
    pub fn backend(&self) -> Backend {
        self.inner.location.backend()
    }

    /// Where this store lives.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// The bounds this store was opened with.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// Checks that the database answers (for a readiness probe).
    ///
    /// # Errors
    ///
    /// `Unavailable` when it does not.
    pub async fn ping(&self) -> Result<()> {
        self.bounded(async {
            match &self.inner.db {
                Db::Sqlite(db) => {
                    sqlx::query("SELECT 1").execute(db.reader()).await?;
                }
                Db::Postgres(db) => {
                    sqlx::query("SELECT 1").execute(db.reader()).await?;
                }
            }
            Ok(())
        })
        .await
    }

    /// Closes every connection and stops the listener; later operations fail with
    /// `Unavailable`, and subscriptions hear nothing more.
    pub async fn close(&self) {
        self.inner.listener.lock().await.take();
        match &self.inner.db {
            Db::Sqlite(db) => db.close().await,
            Db::Postgres(db) => db.close().await,
        }
    }

    /// Runs an operation under the operation timeout.
    async fn bounded<T>(&self, operation: impl Future<Output = Result<T>>) -> Result<T> {
        let limit = self.inner.config.operation_timeout;
        tokio::time::timeout(limit, operation)
            .await
            .unwrap_or_else(|_| Err(Error::timed_out(limit)))
    }

    /// Runs a write under the operation timeout, and announces its change in-process when the
    /// backend has no `NOTIFY`.
    async fn write<T>(&self, operation: impl Future<Output = Result<Written<T>>>) -> Result<T> {
        let written = self.bounded(operation).await?;
        if let (Db::Sqlite(_), Some(change)) = (&self.inner.db, written.change) {
            // No receiver is not an error: nobody is subscribed.
            let _ = self.inner.changes.send(Notification::Change(change));
        }
        Ok(written.value)
    }

    // --- tenants and keys ---------------------------------------------------------------------

    /// Creates a tenant; `false` when it already existed.
    ///
    /// # Errors
    ///
    /// `Unavailable` when the database cannot be written.
    pub async fn create_tenant(&self, tenant: &Tenant) -> Result<bool> {
        self.bounded(async { dispatch!(self, ops::create_tenant(tenant)) })
            .await
    }

    /// Creates an API key for `tenant` (creating the tenant if needed) and returns it. The key
    /// itself is in the answer only: the store keeps its hash.
    ///
    /// # Errors
    ///
    /// `Quota` when the tenant already has [`StoreConfig::max_keys_per_tenant`] keys that are
    /// not revoked; `Unavailable` when the database cannot be written.
    pub async fn create_key(
        &self,
        tenant: &Tenant,
        role: Role,
        name: Option<&KeyName>,
    ) -> Result<NewKey> {
        let name = name.map(KeyName::as_str);
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, ops::create_key(config, tenant, role, name)) })
            .await
    }

    /// Who `key` is: `None` for a malformed key, an unknown id, a wrong secret or a revoked
    /// key (the four are not told apart). The secret is checked by hashing and a constant-time
    /// comparison; it is never logged.
    ///
    /// # Errors
    ///
    /// `Unavailable` when the database cannot be read.
    pub async fn authenticate(&self, key: &str) -> Result<Option<Principal>> {
        self.bounded(async { dispatch!(self, ops::authenticate(key)) })
            .await
    }

    /// The keys of `tenant`, oldest first.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor of another listing; `Unavailable`.
    pub async fn keys(&self, tenant: &Tenant, page: &PageRequest) -> Result<Page<KeyInfo>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, ops::keys(config, Some(tenant), page)) })
            .await
    }

    /// Revokes a key of `tenant`: it no longer authenticates. Revoking a revoked key changes
    /// nothing. The answer's flag says whether this call revoked it.
    ///
    /// # Errors
    ///
    /// `NotFound` for a key that is not `tenant`'s; `Unavailable`.
    pub async fn revoke_key(
        &self,
        tenant: &Tenant,
        id: &KeyId,
        by: Option<&KeyId>,
    ) -> Result<(KeyInfo, bool)> {
        self.write(async { dispatch!(self, ops::revoke_key(Some(tenant), id, by)) })
            .await
    }

    /// The operator's view across tenants: listing and revoking any key. Only the `keys`
    /// command uses it; the server never does.
    pub fn admin(&self) -> Admin<'_> {
        Admin { store: self }
    }

    // --- agents and versions ------------------------------------------------------------------

    /// Publishes a version of `agent` (creating the agent on its first version). Publishing the
    /// same id with the same bytes again returns the existing version with `created: false`.
    ///
    /// # Errors
    ///
    /// `TooLarge` for a bundle or warnings over the caps, or a version that would bring the
    /// tenant's stored bytes past [`StoreConfig::max_tenant_bytes`]; `Quota` for a new version
    /// past [`StoreConfig::max_versions_per_agent`] or a new agent past
    /// [`StoreConfig::max_agents_per_tenant`]; `Invalid` for an empty or over-long
    /// content type; `NotFound` for an unknown tenant; `Conflict` when the id already names
    /// different bytes; `Unavailable`.
    pub async fn publish(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        version: &NewVersion,
        by: Option<&KeyId>,
    ) -> Result<Published> {
        let config = &self.inner.config;
        let (_, content_type, bundle, warnings) = version.parts();
        if content_type.is_empty()
            || content_type.len() > MAX_CONTENT_TYPE
            || !content_type
                .bytes()
                .all(|b| b.is_ascii_graphic() || b == b' ')
        {
            return Err(Error::invalid(format!(
                "content type must be 1 to {MAX_CONTENT_TYPE} printable ASCII characters"
            )));
        }
        if bundle.len() > config.max_bundle_bytes {
            return Err(Error::too_large(
                "the bundle",
                bundle.len(),
                config.max_bundle_bytes,
            ));
        }
        let warnings = serde_json::to_string(warnings)
            .map_err(|e| Error::invalid(format!("warnings are not serialisable: {e}")))?;
        if warnings.len() > config.max_warnings_bytes {
            return Err(Error::too_large(
                "the warnings",
                warnings.len(),
                config.max_warnings_bytes,
            ));
        }
        self.write(async {
            dispatch!(
                self,
                ops::publish(config, tenant, agent, version, &warnings, by)
            )
        })
        .await
    }

    /// The agents of `tenant`, by name.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor of another listing; `Unavailable`.
    pub async fn agents(&self, tenant: &Tenant, page: &PageRequest) -> Result<Page<AgentInfo>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, ops::agents(config, tenant, page)) })
            .await
    }

    /// The versions of an agent, newest first, without their bundles.
    ///
    /// # Errors
    ///
    /// `NotFound` for an agent `tenant` does not have; `Invalid` for a cursor of another
    /// listing; `Unavailable`.
    pub async fn versions(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        page: &PageRequest,
    ) -> Result<Page<VersionInfo>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, ops::versions(config, tenant, agent, page)) })
            .await
    }

    /// One version, with its bundle.
    ///
    /// # Errors
    ///
    /// `NotFound` when `tenant` has no such agent or version; `Unavailable`.
    pub async fn version(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        id: &VersionId,
    ) -> Result<Version> {
        self.bounded(async { dispatch!(self, ops::version(tenant, agent, id)) })
            .await
    }

    // --- labels -------------------------------------------------------------------------------

    /// One label of an agent.
    ///
    /// # Errors
    ///
    /// `NotFound` when `tenant` has no such agent or label; `Unavailable`.
    pub async fn label(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        label: &LabelName,
    ) -> Result<Label> {
        self.bounded(async { dispatch!(self, ops::label_of(tenant, agent, label)) })
            .await
    }

    /// Every label of an agent, by name (at most [`StoreConfig::max_labels_per_agent`]).
    ///
    /// # Errors
    ///
    /// `NotFound` when `tenant` has no such agent; `Unavailable`.
    pub async fn labels(&self, tenant: &Tenant, agent: &AgentName) -> Result<Vec<Label>> {
        self.bounded(async { dispatch!(self, ops::labels(tenant, agent)) })
            .await
    }

    /// Points `label` at version `to`, if it points at what `expected` says (compare-and-set).
    /// The move and its audit entry commit together; of several concurrent moves with the same
    /// expectation, exactly one succeeds. Moving a label to the version it already points at
    /// changes nothing (`changed: false`, no audit entry).
    ///
    /// # Errors
    ///
    /// `NotFound` when `tenant` has no such agent or version; `Conflict` when the label does
    /// not point at what `expected` says; `Invalid` when creating the label would pass
    /// [`StoreConfig::max_labels_per_agent`]; `Unavailable`.
    pub async fn move_label(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        label: &LabelName,
        to: &VersionId,
        expected: &Expected,
        by: Option<&KeyId>,
    ) -> Result<LabelMove> {
        self.move_label_with(tenant, agent, label, to, expected, by, None)
            .await
    }

    /// Moves a label as [`Store::move_label`] does, past a gate an admin overrode: `note` (the
    /// reason and the comparison overridden, at most [`MAX_FORCE_NOTE`] bytes) is audited as
    /// `label.force` in the move's own transaction, so the move and why it was forced are
    /// recorded together or not at all.
    ///
    /// # Errors
    ///
    /// As [`Store::move_label`]; `Invalid` for an empty note or one over [`MAX_FORCE_NOTE`].
    // The arguments of `move_label` and the note.
    #[allow(clippy::too_many_arguments)]
    pub async fn force_label(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        label: &LabelName,
        to: &VersionId,
        expected: &Expected,
        by: Option<&KeyId>,
        note: &str,
    ) -> Result<LabelMove> {
        if note.trim().is_empty() || note.len() > MAX_FORCE_NOTE {
            return Err(Error::invalid(format!(
                "the note of a forced move must hold 1 to {MAX_FORCE_NOTE} bytes"
            )));
        }
        self.move_label_with(tenant, agent, label, to, expected, by, Some(note))
            .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn move_label_with(
        &self,
        tenant: &Tenant,
        agent: &AgentName,
        label: &LabelName,
        to: &VersionId,
        expected: &Expected,
        by: Option<&KeyId>,
        forced: Option<&str>,
    ) -> Result<LabelMove> {
        let config = &self.inner.config;
        let request = crate::backend::Move {
            tenant,
            agent,
            label,
            to,
            expected,
            by,
            forced,
        };
        self.write(async { dispatch!(self, ops::move_label(config, request)) })
            .await
    }

    // --- settings -----------------------------------------------------------------------------

    /// The settings of `scope` in `tenant`; `None` when never written (defaults apply).
    ///
    /// # Errors
    ///
    /// `Unavailable`.
    pub async fn settings(
        &self,
        tenant: &Tenant,
        scope: &SettingsScope,
    ) -> Result<Option<Settings>> {
        self.bounded(async { dispatch!(self, ops::settings(tenant, scope)) })
            .await
    }

    /// Writes the settings of `scope`: a JSON object, which becomes the next revision. With
    /// `expected_revision`, the write happens only if the settings are at that revision (0: never
    /// written). The write and its audit entry commit together.
    ///
    /// # Errors
    ///
    /// `Invalid` for a document that is not a JSON object; `TooLarge` past
    /// [`StoreConfig::max_settings_bytes`]; `NotFound` for an unknown tenant; `Conflict` for a
    /// stale `expected_revision`; `Unavailable`.
    pub async fn put_settings(
        &self,
        tenant: &Tenant,
        scope: &SettingsScope,
        document: &serde_json::Value,
        expected_revision: Option<u64>,
        by: Option<&KeyId>,
    ) -> Result<Settings> {
        if !document.is_object() {
            return Err(Error::invalid("a settings document must be a JSON object"));
        }
        let text = serde_json::to_string(document)
            .map_err(|e| Error::invalid(format!("the settings are not serialisable: {e}")))?;
        let cap = self.inner.config.max_settings_bytes;
        if text.len() > cap {
            return Err(Error::too_large("the settings document", text.len(), cap));
        }
        let request = crate::backend::SettingsWrite {
            tenant,
            scope,
            value: document,
            document: &text,
            expected_revision,
            by,
        };
        self.write(async { dispatch!(self, ops::put_settings(request)) })
            .await
    }

    // --- eval runs ----------------------------------------------------------------------------

    /// Creates an eval run of `run`'s agent with every cell (distinct versions × models ×
    /// scenarios × repetitions), in one transaction, audited. The run starts `queued`.
    ///
    /// # Errors
    ///
    /// `Invalid` for a part out of its bounds (see [`NewRun::new`]); `Quota` for more cells
    /// than [`StoreConfig::max_cells_per_run`] or a tenant that already has
    /// [`StoreConfig::max_active_runs_per_tenant`] runs queued or running; `NotFound` for an
    /// unknown tenant, agent or version; `Unavailable`.
    pub async fn create_run(
        &self,
        tenant: &Tenant,
        run: &NewRun,
        by: Option<&KeyId>,
    ) -> Result<RunInfo> {
        let config = &self.inner.config;
        run.check(config.max_cells_per_run)?;
        self.bounded(async { dispatch!(self, eval_ops::create_run(config, tenant, run, by)) })
            .await
    }

    /// A run of `tenant`, with its progress.
    ///
    /// # Errors
    ///
    /// `NotFound` for a run that is not `tenant`'s; `Unavailable`.
    pub async fn run(&self, tenant: &Tenant, run: &RunId) -> Result<RunInfo> {
        self.bounded(async { dispatch!(self, eval_ops::run(tenant, run)) })
            .await
    }

    /// The runs of `tenant` (of one agent, when given), newest first.
    ///
    /// # Errors
    ///
    /// `NotFound` for an unknown agent; `Invalid` for a cursor of another listing;
    /// `Unavailable`.
    pub async fn runs(
        &self,
        tenant: &Tenant,
        agent: Option<&AgentName>,
        page: &PageRequest,
    ) -> Result<Page<RunInfo>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, eval_ops::runs(config, tenant, agent, page)) })
            .await
    }

    /// The runs of every tenant with cells left to claim (queued or running), oldest first:
    /// where a worker looks for work. The only cross-tenant read of runs; what it names is then
    /// claimed with the tenant it names.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor of another listing; `Unavailable`.
    pub async fn active_runs(&self, page: &PageRequest) -> Result<Page<ActiveRun>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, eval_ops::active_runs(config, page)) })
            .await
    }

    /// Cancels a queued or running run, audited: no cell is claimed or completed after it.
    /// Cancelling a cancelled run returns it unchanged.
    ///
    /// # Errors
    ///
    /// `NotFound` for a run that is not `tenant`'s; `Conflict` for a run that is done or
    /// failed; `Unavailable`.
    pub async fn cancel_run(
        &self,
        tenant: &Tenant,
        run: &RunId,
        by: Option<&KeyId>,
    ) -> Result<RunInfo> {
        self.bounded(async {
            dispatch!(
                self,
                eval_ops::finish_run(tenant, run, RunState::Cancelled, None, by)
            )
        })
        .await
    }

    /// Marks a queued or running run failed, with why (cut to [`MAX_RUN_MESSAGE`] characters):
    /// what a runner does when the run cannot go on (its suite cannot be read, its credentials
    /// are missing). No cell is claimed or completed after it.
    ///
    /// [`MAX_RUN_MESSAGE`]: crate::MAX_RUN_MESSAGE
    ///
    /// # Errors
    ///
    /// `NotFound` for a run that is not `tenant`'s; `Conflict` for a run that is done or
    /// cancelled; `Unavailable`.
    pub async fn fail_run(&self, tenant: &Tenant, run: &RunId, message: &str) -> Result<RunInfo> {
        let message: String = message
            .chars()
            .take(crate::eval::MAX_RUN_MESSAGE)
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let message = Some(message.as_str());
        self.bounded(async {
            dispatch!(
                self,
                eval_ops::finish_run(tenant, run, RunState::Failed, message, None)
            )
        })
        .await
    }

    /// Claims the next claimable cell of a run for `worker`, until `lease` from now: a cell
    /// nobody completed whose lease, if any, has run out (its worker died or stalled). The
    /// first claim moves the run from `queued` to `running`. `None` when no cell is claimable
    /// now (all done or leased) or the run is not queued or running.
    ///
    /// # Errors
    ///
    /// `Invalid` for a worker id that is not 1 to 128 printable characters or a lease outside
    /// [`LEASE_BOUNDS`](crate::LEASE_BOUNDS); `NotFound` for a run that is not `tenant`'s;
    /// `Unavailable`.
    pub async fn claim_cell(
        &self,
        tenant: &Tenant,
        run: &RunId,
        worker: &str,
        lease: Duration,
    ) -> Result<Option<ClaimedCell>> {
        crate::eval::check_worker(worker)?;
        let lease = crate::eval::lease_micros(lease)?;
        self.bounded(async { dispatch!(self, eval_ops::claim_cell(tenant, run, worker, lease)) })
            .await
    }

    /// Extends a claim's lease to `lease` from now.
    ///
    /// # Errors
    ///
    /// `Conflict` when the claim is no longer held (the cell was claimed again after the lease
    /// ran out, or completed, or the run is no longer running); `Invalid` for a lease outside
    /// [`LEASE_BOUNDS`](crate::LEASE_BOUNDS); `NotFound`; `Unavailable`.
    pub async fn renew_lease(
        &self,
        tenant: &Tenant,
        claim: &Claim,
        lease: Duration,
    ) -> Result<Timestamp> {
        let lease = crate::eval::lease_micros(lease)?;
        self.bounded(async { dispatch!(self, eval_ops::renew_lease(tenant, claim, lease)) })
            .await
    }

    /// Records a claimed cell's result row, once: only while `claim` is still the cell's latest
    /// claim and the run is running. `failed` says the row records that the cell could not
    /// complete. The last cell completed makes the run `done`. A claim whose lease ran out may
    /// still complete as long as no other worker claimed the cell since.
    ///
    /// # Errors
    ///
    /// `Conflict` when the claim is no longer held (see [`Store::renew_lease`]) — nothing is
    /// recorded; `TooLarge` for a row over [`StoreConfig::max_result_row_bytes`], or one that
    /// would bring the tenant's stored bytes past [`StoreConfig::max_tenant_bytes`];
    /// `NotFound`; `Unavailable`.
    pub async fn complete_cell(
        &self,
        tenant: &Tenant,
        claim: &Claim,
        row: &serde_json::Value,
        failed: bool,
    ) -> Result<RunInfo> {
        let text = serde_json::to_string(row)
            .map_err(|e| Error::invalid(format!("the result row is not serialisable: {e}")))?;
        let config = &self.inner.config;
        let cap = config.max_result_row_bytes;
        if text.len() > cap {
            return Err(Error::too_large("the result row", text.len(), cap));
        }
        self.bounded(async {
            dispatch!(
                self,
                eval_ops::complete_cell(config, tenant, claim, &text, failed)
            )
        })
        .await
    }

    /// The result rows of a run's completed cells, by cell index.
    ///
    /// # Errors
    ///
    /// `NotFound` for a run that is not `tenant`'s; `Invalid` for a cursor of another listing;
    /// `Unavailable`.
    pub async fn run_results(
        &self,
        tenant: &Tenant,
        run: &RunId,
        page: &PageRequest,
    ) -> Result<Page<CellResult>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, eval_ops::run_results(config, tenant, run, page)) })
            .await
    }

    /// The result of one completed cell of a run, by its index; `None` while it is not
    /// completed (or the run has no such cell).
    ///
    /// # Errors
    ///
    /// `NotFound` for a run that is not `tenant`'s; `Unavailable`.
    pub async fn cell_result(
        &self,
        tenant: &Tenant,
        run: &RunId,
        index: u32,
    ) -> Result<Option<CellResult>> {
        // A results cursor is the next index plus one.
        let page = PageRequest::first()
            .limit(1)
            .after(crate::record::Cursor::from_seq(i64::from(index) + 1));
        let found = self.run_results(tenant, run, &page).await?;
        Ok(found.items.into_iter().find(|c| c.cell.index == index))
    }

    // --- provider credentials -----------------------------------------------------------------

    /// Writes credential `name` of `tenant`: `secret` sealed under `key` (AES-256-GCM, a random
    /// nonce, the tenant and the name as associated data), audited by name only. The answer's
    /// flag says whether it was created (not replaced).
    ///
    /// # Errors
    ///
    /// `Invalid` for an empty value; `TooLarge` past [`StoreConfig::max_credential_bytes`];
    /// `Quota` for a new name past [`StoreConfig::max_credentials_per_tenant`]; `NotFound` for
    /// an unknown tenant; `Unavailable`.
    pub async fn put_credential(
        &self,
        tenant: &Tenant,
        name: &CredentialName,
        secret: &Secret,
        key: &CredentialKey,
        by: Option<&KeyId>,
    ) -> Result<(CredentialInfo, bool)> {
        let config = &self.inner.config;
        if secret.is_empty() {
            return Err(Error::invalid("a credential's value must not be empty"));
        }
        if secret.len() > config.max_credential_bytes {
            return Err(Error::too_large(
                "the credential's value",
                secret.len(),
                config.max_credential_bytes,
            ));
        }
        let sealed = key.seal(tenant, name, secret)?;
        self.bounded(async {
            dispatch!(
                self,
                credential_ops::put_credential(config, tenant, name, &sealed, by)
            )
        })
        .await
    }

    /// The credentials of `tenant` by name: names and times, never values.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor of another listing; `Unavailable`.
    pub async fn credentials(
        &self,
        tenant: &Tenant,
        page: &PageRequest,
    ) -> Result<Page<CredentialInfo>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, credential_ops::credentials(config, tenant, page)) })
            .await
    }

    /// Deletes credential `name` of `tenant`, audited by name only.
    ///
    /// # Errors
    ///
    /// `NotFound` for a credential that is not `tenant`'s; `Unavailable`.
    pub async fn delete_credential(
        &self,
        tenant: &Tenant,
        name: &CredentialName,
        by: Option<&KeyId>,
    ) -> Result<()> {
        self.bounded(async { dispatch!(self, credential_ops::delete_credential(tenant, name, by)) })
            .await
    }

    /// Opens credential `name` for a queued or running eval run of the same tenant, and stamps
    /// its last use. The only way back to a value.
    ///
    /// # Errors
    ///
    /// `NotFound` for a run or credential that is not `tenant`'s; `Conflict` for a run that is
    /// done, cancelled or failed; `Internal` when the sealed value does not open under `key`
    /// (another key, or altered); `Unavailable`.
    pub async fn use_credential(
        &self,
        tenant: &Tenant,
        run: &RunId,
        name: &CredentialName,
        key: &CredentialKey,
    ) -> Result<Secret> {
        self.bounded(async {
            dispatch!(self, credential_ops::use_credential(tenant, run, name, key))
        })
        .await
    }

    // --- audit and changes --------------------------------------------------------------------

    /// The audit log of `tenant`, newest first.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor of another listing; `Unavailable`.
    pub async fn audit(&self, tenant: &Tenant, page: &PageRequest) -> Result<Page<AuditEntry>> {
        let config = &self.inner.config;
        self.bounded(async { dispatch!(self, ops::audit_log(config, tenant, page)) })
            .await
    }

    /// Subscribes to committed changes of every tenant, from now on. On PostgreSQL the first
    /// subscription starts the `LISTEN` connection and returns once it listens; later losses
    /// and recoveries arrive as [`Gap`](crate::Gap)s.
    ///
    /// # Errors
    ///
    /// `Unavailable` when the first `LISTEN` fails (a later call tries again).
    pub async fn subscribe(&self) -> Result<Subscription> {
        // Subscribe to the channel first, so nothing sent once listening is missed.
        let receiver = self.inner.changes.subscribe();
        if let Db::Postgres(db) = &self.inner.db {
            let mut listener = self.inner.listener.lock().await;
            if listener.is_none() {
                let (stop, stopped) = oneshot::channel();
                let (ready, listening) = oneshot::channel();
                tokio::spawn(notify::listen(
                    db.listen_pool().clone(),
                    self.inner.changes.clone(),
                    stopped,
                    ready,
                ));
                let limit = self.inner.config.acquire_timeout + self.inner.config.operation_timeout;
                match tokio::time::timeout(limit, listening).await {
                    Ok(Ok(Ok(()))) => *listener = Some(stop),
                    Ok(Ok(Err(error))) => return Err(error),
                    Ok(Err(_)) => return Err(Error::internal("the listener task ended")),
                    Err(_) => return Err(Error::timed_out(limit)),
                }
            }
        }
        Ok(Subscription::new(receiver))
    }
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.inner.location)
            .finish_non_exhaustive()
    }
}

/// The operator's cross-tenant view of keys (see [`Store::admin`]).
#[derive(Debug, Clone, Copy)]
pub struct Admin<'a> {
    store: &'a Store,
}

impl Admin<'_> {
    /// Every key of every tenant, oldest first.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor of another listing; `Unavailable`.
    pub async fn keys(&self, page: &PageRequest) -> Result<Page<KeyInfo>> {
        let store = self.store;
        let config = &store.inner.config;
        store
            .bounded(async { dispatch!(store, ops::keys(config, None, page)) })
            .await
    }

    /// Revokes any key, by id. As [`Store::revoke_key`], recorded in the key's tenant's audit
    /// log with no actor (the operator).
    ///
    /// # Errors
    ///
    /// `NotFound` for an unknown key; `Unavailable`.
    pub async fn revoke_key(&self, id: &KeyId) -> Result<(KeyInfo, bool)> {
        let store = self.store;
        store
            .write(async { dispatch!(store, ops::revoke_key(None, id, None)) })
            .await
    }
}
