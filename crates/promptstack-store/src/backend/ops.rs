//! Every store operation, written once over the parent module's `Db`, `Handle`, lock statements
//! and `announce`: `backend::sqlite` and `backend::postgres` each compile this file, so the two
//! backends run the same SQL (`$N` placeholders are valid in both) and differ only where the
//! parent says so.
//!
//! Every statement that reads an object joins through `tenants.slug`, so a caller's tenant is
//! part of every lookup. Writes run in one transaction with their audit entry and announcement.

use sqlx::Row;
use sqlx::query::Query;

use super::{Db, Handle, LOCK_AGENT, LOCK_TENANT, announce};
use crate::backend::{Move, SettingsWrite, Written, from_micros, now_micros};
use crate::config::StoreConfig;
use crate::error::{Error, Result};
use crate::key::{ApiKey, KeyInfo, NewKey, Presented, Principal};
use crate::name::{AgentName, KeyId, LabelName, Role, Tenant, VersionId};
use crate::notify::{Change, ChangeKind};
use crate::record::{
    AgentInfo, AuditAction, AuditEntry, Cursor, Expected, Label, LabelMove, NewVersion, Page,
    PageRequest, Published, Settings, SettingsScope, Version, VersionInfo,
};

pub(super) type Tx = sqlx::Transaction<'static, Db>;
pub(super) type DbRow = <Db as sqlx::Database>::Row;
/// A statement and the parameters bound to it so far.
pub(super) type DbQuery<'q> = Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>;

/// One audit entry, written in the transaction of the write it records.
pub(super) struct Audit<'a> {
    pub(super) tenant_id: i64,
    pub(super) at: i64,
    pub(super) actor: Option<&'a KeyId>,
    pub(super) action: AuditAction,
    pub(super) object: String,
    pub(super) from: Option<String>,
    pub(super) to: Option<String>,
}

pub(super) async fn audit(tx: &mut Tx, entry: Audit<'_>) -> Result<()> {
    sqlx::query(
        "INSERT INTO audit (tenant_id, at, actor, action, object, from_value, to_value) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(entry.tenant_id)
    .bind(entry.at)
    .bind(entry.actor.map(KeyId::as_str))
    .bind(entry.action.as_str())
    .bind(entry.object)
    .bind(entry.from)
    .bind(entry.to)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Records the write, announces its change, and commits: the end of every announced write.
async fn commit(mut tx: Tx, entry: Audit<'_>, change: &Change) -> Result<()> {
    audit(&mut tx, entry).await?;
    announce(&mut tx, change).await?;
    tx.commit().await?;
    Ok(())
}

/// An optional key id column (`created_by`, `updated_by`, `actor`).
pub(super) fn key_column(row: &DbRow, column: &str) -> Result<Option<KeyId>> {
    row.try_get::<Option<String>, _>(column)?
        .map(KeyId::from_db)
        .transpose()
}

/// The tenant's row id, locked for the rest of the transaction where the backend locks rows.
pub(super) async fn lock_tenant(tx: &mut Tx, tenant: &Tenant) -> Result<i64> {
    sqlx::query(LOCK_TENANT)
        .bind(tenant.as_str())
        .fetch_optional(&mut **tx)
        .await?
        .map(|row| row.try_get::<i64, _>(0))
        .transpose()?
        .ok_or_else(|| Error::not_found(format!("no tenant {tenant}")))
}

/// The row id of the tenant's agent; `None` when the tenant has no such agent.
pub(super) async fn agent_id(
    tx: &mut Tx,
    tenant_id: i64,
    agent: &AgentName,
) -> Result<Option<i64>> {
    let found = sqlx::query("SELECT id FROM agents WHERE tenant_id = $1 AND name = $2")
        .bind(tenant_id)
        .bind(agent.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    Ok(found.map(|row| row.try_get(0)).transpose()?)
}

/// Whether the agent (by row id) has the version `id`.
pub(super) async fn version_exists(tx: &mut Tx, agent_id: i64, id: &VersionId) -> Result<bool> {
    let found = sqlx::query("SELECT 1 FROM versions WHERE agent_id = $1 AND version_id = $2")
        .bind(agent_id)
        .bind(id.as_str())
        .fetch_optional(&mut **tx)
        .await?;
    Ok(found.is_some())
}

/// A quota checked in a write's transaction: what it counts, its limit in the configuration
/// and how it refuses.
#[derive(Debug, Clone, Copy)]
pub(super) enum Quota {
    VersionsPerAgent,
    AgentsPerTenant,
    KeysPerTenant,
    LabelsPerAgent,
    ActiveRunsPerTenant,
    CredentialsPerTenant,
}

impl Quota {
    /// The count, its one parameter the owner's row id.
    const fn count_sql(self) -> &'static str {
        match self {
            Quota::VersionsPerAgent => "SELECT COUNT(*) FROM versions WHERE agent_id = $1",
            Quota::AgentsPerTenant => "SELECT COUNT(*) FROM agents WHERE tenant_id = $1",
            Quota::KeysPerTenant => {
                "SELECT COUNT(*) FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL"
            }
            Quota::LabelsPerAgent => "SELECT COUNT(*) FROM labels WHERE agent_id = $1",
            Quota::ActiveRunsPerTenant => {
                "SELECT COUNT(*) FROM eval_runs WHERE tenant_id = $1 \
                 AND state IN ('queued', 'running')"
            }
            Quota::CredentialsPerTenant => "SELECT COUNT(*) FROM credentials WHERE tenant_id = $1",
        }
    }

    /// The most rows the configuration allows.
    const fn most(self, config: &StoreConfig) -> usize {
        match self {
            Quota::VersionsPerAgent => config.max_versions_per_agent,
            Quota::AgentsPerTenant => config.max_agents_per_tenant,
            Quota::KeysPerTenant => config.max_keys_per_tenant,
            Quota::LabelsPerAgent => config.max_labels_per_agent,
            Quota::ActiveRunsPerTenant => config.max_active_runs_per_tenant,
            Quota::CredentialsPerTenant => config.max_credentials_per_tenant,
        }
    }

    /// The refusal when `owner` already has `count` rows.
    fn refusal(self, owner: &dyn std::fmt::Display, count: i64) -> Error {
        match self {
            Quota::VersionsPerAgent => Error::quota(format!(
                "agent {owner} has {count} versions, the most allowed (`max_versions_per_agent`)"
            )),
            Quota::AgentsPerTenant => Error::quota(format!(
                "tenant {owner} has {count} agents, the most allowed (`max_agents_per_tenant`)"
            )),
            Quota::KeysPerTenant => Error::quota(format!(
                "tenant {owner} has {count} keys that are not revoked, the most allowed \
                 (`max_keys_per_tenant`); revoke one first"
            )),
            Quota::LabelsPerAgent => Error::invalid(format!(
                "agent {owner} already has {count} labels, the most allowed"
            )),
            Quota::ActiveRunsPerTenant => Error::quota(format!(
                "tenant {owner} has {count} eval runs queued or running, the most allowed \
                 (`max_active_runs_per_tenant`); wait for one to finish or cancel one"
            )),
            Quota::CredentialsPerTenant => Error::quota(format!(
                "tenant {owner} has {count} credentials, the most allowed \
                 (`max_credentials_per_tenant`); delete one first"
            )),
        }
    }
}

/// Refuses when `owner` (its row `id`) already has as many rows as `quota` allows.
pub(super) async fn within(
    tx: &mut Tx,
    quota: Quota,
    config: &StoreConfig,
    id: i64,
    owner: &(dyn std::fmt::Display + Sync),
) -> Result<()> {
    let count: i64 = sqlx::query(quota.count_sql())
        .bind(id)
        .fetch_one(&mut **tx)
        .await?
        .try_get(0)?;
    let most = i64::try_from(quota.most(config)).unwrap_or(i64::MAX);
    if count >= most {
        return Err(quota.refusal(owner, count));
    }
    Ok(())
}

/// The quotas a new version must fit: versions per agent, agents per tenant and the bytes of
/// versions a tenant stores. Republishing a version that exists adds nothing and passes.
async fn check_publish_quotas(
    tx: &mut Tx,
    config: &StoreConfig,
    tenant_id: i64,
    tenant: &Tenant,
    agent: &AgentName,
    id: &VersionId,
    size: usize,
) -> Result<()> {
    match agent_id(tx, tenant_id, agent).await? {
        Some(agent_id) => {
            if version_exists(tx, agent_id, id).await? {
                return Ok(());
            }
            within(tx, Quota::VersionsPerAgent, config, agent_id, agent).await?;
        }
        None => {
            within(tx, Quota::AgentsPerTenant, config, tenant_id, tenant).await?;
        }
    }
    let stored = stored_bytes(tx, tenant_id).await?;
    if stored.saturating_add(size as u64) > config.max_tenant_bytes {
        return Err(Error::new(
            crate::error::ErrorKind::TooLarge,
            format!(
                "tenant {tenant} stores {stored} bytes of versions and eval results; this \
                 version of {size} bytes would pass the quota of {} bytes (`max_tenant_bytes`)",
                config.max_tenant_bytes
            ),
        ));
    }
    Ok(())
}

/// The bytes a tenant stores: its versions' bundles and its eval runs' result rows.
pub(super) async fn stored_bytes(tx: &mut Tx, tenant_id: i64) -> Result<u64> {
    let stored: i64 = sqlx::query(
        "SELECT CAST(COALESCE((SELECT SUM(v.size) FROM versions v \
         JOIN agents a ON a.id = v.agent_id WHERE a.tenant_id = $1), 0) \
         + COALESCE((SELECT SUM(r.result_bytes) FROM eval_runs r WHERE r.tenant_id = $1), 0) \
         AS BIGINT)",
    )
    .bind(tenant_id)
    .fetch_one(&mut **tx)
    .await?
    .try_get(0)?;
    Ok(u64::try_from(stored).unwrap_or(0))
}

/// Creates the tenant if it does not exist; its row id and whether it was created.
async fn ensure_tenant(tx: &mut Tx, tenant: &Tenant, at: i64) -> Result<(i64, bool)> {
    let inserted = sqlx::query(
        "INSERT INTO tenants (slug, created_at) VALUES ($1, $2) \
         ON CONFLICT (slug) DO NOTHING RETURNING id",
    )
    .bind(tenant.as_str())
    .bind(at)
    .fetch_optional(&mut **tx)
    .await?;
    match inserted {
        Some(row) => {
            let id: i64 = row.try_get(0)?;
            audit(
                tx,
                Audit {
                    tenant_id: id,
                    at,
                    actor: None,
                    action: AuditAction::TenantCreate,
                    object: "tenant".into(),
                    from: None,
                    to: Some(tenant.to_string()),
                },
            )
            .await?;
            Ok((id, true))
        }
        None => Ok((lock_tenant(tx, tenant).await?, false)),
    }
}

pub(crate) async fn create_tenant(db: &Handle, tenant: &Tenant) -> Result<bool> {
    let mut tx = db.begin().await?;
    let (_, created) = ensure_tenant(&mut tx, tenant, now_micros()).await?;
    tx.commit().await?;
    Ok(created)
}

// --- keys -------------------------------------------------------------------------------------

const KEY_COLUMNS: &str = "k.id, k.public_id, k.role, k.name, k.created_at, k.revoked_at, t.slug";

fn key_info(row: &DbRow) -> Result<KeyInfo> {
    Ok(KeyInfo {
        id: KeyId::from_db(row.try_get("public_id")?)?,
        tenant: Tenant::from_db(row.try_get("slug")?)?,
        role: Role::from_db(&row.try_get::<String, _>("role")?)?,
        name: row.try_get("name")?,
        created_at: from_micros(row.try_get("created_at")?)?,
        revoked_at: row
            .try_get::<Option<i64>, _>("revoked_at")?
            .map(from_micros)
            .transpose()?,
    })
}

pub(crate) async fn create_key(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    role: Role,
    name: Option<&str>,
) -> Result<NewKey> {
    let key = ApiKey::generate()?;
    let at = now_micros();
    let mut tx = db.begin().await?;
    ensure_tenant(&mut tx, tenant, at).await?;
    // Locked, so that two keys created at once cannot both pass the quota.
    let tenant_id = lock_tenant(&mut tx, tenant).await?;
    within(&mut tx, Quota::KeysPerTenant, config, tenant_id, tenant).await?;
    sqlx::query(
        "INSERT INTO api_keys (public_id, tenant_id, role, name, hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(key.id().as_str())
    .bind(tenant_id)
    .bind(role.as_str())
    .bind(name)
    .bind(&key.hash()[..])
    .bind(at)
    .execute(&mut *tx)
    .await?;
    audit(
        &mut tx,
        Audit {
            tenant_id,
            at,
            actor: None,
            action: AuditAction::KeyCreate,
            object: format!("keys/{}", key.id()),
            from: None,
            to: Some(role.as_str().into()),
        },
    )
    .await?;
    tx.commit().await?;
    let info = KeyInfo {
        id: key.id().clone(),
        tenant: tenant.clone(),
        role,
        name: name.map(str::to_owned),
        created_at: from_micros(at)?,
        revoked_at: None,
    };
    Ok(NewKey { key, info })
}

pub(crate) async fn authenticate(db: &Handle, key: &str) -> Result<Option<Principal>> {
    let Some(presented) = Presented::parse(key) else {
        return Ok(None);
    };
    let row = sqlx::query(
        "SELECT k.hash, k.role, k.revoked_at, t.slug FROM api_keys k \
         JOIN tenants t ON t.id = k.tenant_id WHERE k.public_id = $1",
    )
    .bind(presented.id.as_str())
    .fetch_optional(db.reader())
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let hash: Vec<u8> = row.try_get("hash")?;
    // The hash is compared before anything else is looked at, so a revoked key and a wrong
    // secret cost the same.
    let matches = presented.matches(&hash);
    let revoked = row.try_get::<Option<i64>, _>("revoked_at")?.is_some();
    if !matches || revoked {
        return Ok(None);
    }
    Ok(Some(Principal {
        tenant: Tenant::from_db(row.try_get("slug")?)?,
        role: Role::from_db(&row.try_get::<String, _>("role")?)?,
        key_id: presented.id,
    }))
}

pub(crate) async fn keys(
    db: &Handle,
    config: &StoreConfig,
    tenant: Option<&Tenant>,
    page: &PageRequest,
) -> Result<Page<KeyInfo>> {
    let listing = Listing::new(config, page);
    let sql = format!(
        "SELECT {KEY_COLUMNS} FROM api_keys k JOIN tenants t ON t.id = k.tenant_id \
         WHERE ($1 IS NULL OR t.slug = $1) AND k.id > $2 ORDER BY k.id LIMIT $3"
    );
    let query = sqlx::query(&sql)
        .bind(tenant.map(Tenant::as_str))
        .bind(listing.seq_or(0)?);
    listing
        .fetch(db, query, |row| {
            Ok((Cursor::from_seq(row.try_get("id")?), key_info(row)?))
        })
        .await
}

pub(crate) async fn revoke_key(
    db: &Handle,
    tenant: Option<&Tenant>,
    id: &KeyId,
    by: Option<&KeyId>,
) -> Result<Written<(KeyInfo, bool)>> {
    let mut tx = db.begin().await?;
    let sql = format!(
        "SELECT {KEY_COLUMNS}, k.tenant_id FROM api_keys k JOIN tenants t ON t.id = k.tenant_id \
         WHERE k.public_id = $1 AND ($2 IS NULL OR t.slug = $2)"
    );
    let row = sqlx::query(&sql)
        .bind(id.as_str())
        .bind(tenant.map(Tenant::as_str))
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| Error::not_found(format!("no key {id}")))?;
    let mut info = key_info(&row)?;
    if info.revoked_at.is_some() {
        return Ok(Written::unchanged((info, false)));
    }
    let tenant_id: i64 = row.try_get("tenant_id")?;
    let at = now_micros();
    sqlx::query("UPDATE api_keys SET revoked_at = $1 WHERE public_id = $2")
        .bind(at)
        .bind(id.as_str())
        .execute(&mut *tx)
        .await?;
    let change = Change {
        tenant: info.tenant.clone(),
        agent: None,
        kind: ChangeKind::KeyRevoked,
    };
    commit(
        tx,
        Audit {
            tenant_id,
            at,
            actor: by,
            action: AuditAction::KeyRevoke,
            object: format!("keys/{id}"),
            from: Some("active".into()),
            to: Some("revoked".into()),
        },
        &change,
    )
    .await?;
    info.revoked_at = Some(from_micros(at)?);
    Ok(Written::changed((info, true), change))
}

// --- agents and versions ----------------------------------------------------------------------

const VERSION_COLUMNS: &str =
    "v.seq, v.version_id, v.content_type, v.size, v.created_at, v.created_by, v.warnings";

fn version_info(agent: &AgentName, row: &DbRow) -> Result<VersionInfo> {
    let warnings: String = row.try_get("warnings")?;
    Ok(VersionInfo {
        agent: agent.clone(),
        id: VersionId::from_db(row.try_get("version_id")?)?,
        content_type: row.try_get("content_type")?,
        size: u64::try_from(row.try_get::<i64, _>("size")?)
            .map_err(|_| Error::internal("the database holds a negative bundle size"))?,
        created_at: from_micros(row.try_get("created_at")?)?,
        created_by: key_column(row, "created_by")?,
        warnings: serde_json::from_str(&warnings)
            .map_err(|_| Error::internal("the database holds malformed warnings"))?,
    })
}

pub(crate) async fn publish(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    agent: &AgentName,
    version: &NewVersion,
    warnings: &str,
    by: Option<&KeyId>,
) -> Result<Written<Published>> {
    let (id, content_type, bundle, _) = version.parts();
    let at = now_micros();
    let mut tx = db.begin().await?;
    let tenant_id = lock_tenant(&mut tx, tenant).await?;
    // The tenant's row is locked: the quotas below hold against concurrent publishes.
    check_publish_quotas(&mut tx, config, tenant_id, tenant, agent, id, bundle.len()).await?;
    sqlx::query(
        "INSERT INTO agents (tenant_id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, name) DO NOTHING",
    )
    .bind(tenant_id)
    .bind(agent.as_str())
    .bind(at)
    .execute(&mut *tx)
    .await?;
    let agent_id: i64 = sqlx::query("SELECT id FROM agents WHERE tenant_id = $1 AND name = $2")
        .bind(tenant_id)
        .bind(agent.as_str())
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
    let size = i64::try_from(bundle.len()).map_err(|_| Error::invalid("bundle too large"))?;
    let inserted = sqlx::query(
        "INSERT INTO versions \
         (agent_id, version_id, content_type, bundle, size, created_at, created_by, warnings) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (agent_id, version_id) DO NOTHING RETURNING seq",
    )
    .bind(agent_id)
    .bind(id.as_str())
    .bind(content_type)
    .bind(bundle)
    .bind(size)
    .bind(at)
    .bind(by.map(KeyId::as_str))
    .bind(warnings)
    .fetch_optional(&mut *tx)
    .await?;
    if inserted.is_none() {
        let sql = format!(
            "SELECT {VERSION_COLUMNS}, v.bundle FROM versions v WHERE v.agent_id = $1 AND v.version_id = $2"
        );
        let row = sqlx::query(&sql)
            .bind(agent_id)
            .bind(id.as_str())
            .fetch_one(&mut *tx)
            .await?;
        let existing: Vec<u8> = row.try_get("bundle")?;
        let info = version_info(agent, &row)?;
        if existing != bundle || info.content_type != content_type {
            return Err(Error::conflict(format!(
                "version {id} of agent {agent} already exists with different content"
            )));
        }
        return Ok(Written::unchanged(Published {
            version: info,
            created: false,
        }));
    }
    let change = Change {
        tenant: tenant.clone(),
        agent: Some(agent.clone()),
        kind: ChangeKind::Published,
    };
    commit(
        tx,
        Audit {
            tenant_id,
            at,
            actor: by,
            action: AuditAction::Publish,
            object: format!("agents/{agent}/versions/{id}"),
            from: None,
            to: Some(id.to_string()),
        },
        &change,
    )
    .await?;
    let info = VersionInfo {
        agent: agent.clone(),
        id: id.clone(),
        content_type: content_type.to_owned(),
        size: bundle.len() as u64,
        created_at: from_micros(at)?,
        created_by: by.cloned(),
        warnings: serde_json::from_str(warnings)
            .map_err(|_| Error::internal("warnings did not read back"))?,
    };
    Ok(Written::changed(
        Published {
            version: info,
            created: true,
        },
        change,
    ))
}

pub(crate) async fn agents(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    page: &PageRequest,
) -> Result<Page<AgentInfo>> {
    let listing = Listing::new(config, page);
    let query = sqlx::query(
        "SELECT a.name, a.created_at FROM agents a JOIN tenants t ON t.id = a.tenant_id \
         WHERE t.slug = $1 AND a.name > $2 ORDER BY a.name LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(listing.name_or_empty(AgentName::parse)?);
    listing
        .fetch(db, query, |row| {
            let name = AgentName::from_db(row.try_get("name")?)?;
            let cursor = Cursor::from_name(name.as_str());
            Ok((
                cursor,
                AgentInfo {
                    name,
                    created_at: from_micros(row.try_get("created_at")?)?,
                },
            ))
        })
        .await
}

/// Whether the tenant has this agent; listings of an unknown agent are `NotFound`, not empty.
pub(super) async fn agent_exists(db: &Handle, tenant: &Tenant, agent: &AgentName) -> Result<()> {
    let found = sqlx::query(
        "SELECT a.id FROM agents a JOIN tenants t ON t.id = a.tenant_id \
         WHERE t.slug = $1 AND a.name = $2",
    )
    .bind(tenant.as_str())
    .bind(agent.as_str())
    .fetch_optional(db.reader())
    .await?;
    match found {
        Some(_) => Ok(()),
        None => Err(Error::not_found(format!("no agent {agent}"))),
    }
}

pub(crate) async fn versions(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    agent: &AgentName,
    page: &PageRequest,
) -> Result<Page<VersionInfo>> {
    let listing = Listing::new(config, page);
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM versions v JOIN agents a ON a.id = v.agent_id \
         JOIN tenants t ON t.id = a.tenant_id \
         WHERE t.slug = $1 AND a.name = $2 AND v.seq < $3 ORDER BY v.seq DESC LIMIT $4"
    );
    let query = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(agent.as_str())
        .bind(listing.seq_or(i64::MAX)?);
    let found = listing
        .fetch(db, query, |row| {
            Ok((
                Cursor::from_seq(row.try_get("seq")?),
                version_info(agent, row)?,
            ))
        })
        .await?;
    if found.items.is_empty() {
        agent_exists(db, tenant, agent).await?;
    }
    Ok(found)
}

pub(crate) async fn version(
    db: &Handle,
    tenant: &Tenant,
    agent: &AgentName,
    id: &VersionId,
) -> Result<Version> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS}, v.bundle FROM versions v JOIN agents a ON a.id = v.agent_id \
         JOIN tenants t ON t.id = a.tenant_id \
         WHERE t.slug = $1 AND a.name = $2 AND v.version_id = $3"
    );
    let row = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(agent.as_str())
        .bind(id.as_str())
        .fetch_optional(db.reader())
        .await?
        .ok_or_else(|| Error::not_found(format!("no version {id} of agent {agent}")))?;
    Ok(Version {
        info: version_info(agent, &row)?,
        bundle: row.try_get("bundle")?,
    })
}

// --- labels -----------------------------------------------------------------------------------

fn label(agent: &AgentName, row: &DbRow) -> Result<Label> {
    Ok(Label {
        agent: agent.clone(),
        name: LabelName::from_db(row.try_get("name")?)?,
        version: VersionId::from_db(row.try_get("version_id")?)?,
        updated_at: from_micros(row.try_get("updated_at")?)?,
        updated_by: key_column(row, "updated_by")?,
    })
}

pub(crate) async fn labels(db: &Handle, tenant: &Tenant, agent: &AgentName) -> Result<Vec<Label>> {
    let rows = sqlx::query(
        "SELECT l.name, l.version_id, l.updated_at, l.updated_by FROM labels l \
         JOIN agents a ON a.id = l.agent_id JOIN tenants t ON t.id = a.tenant_id \
         WHERE t.slug = $1 AND a.name = $2 ORDER BY l.name",
    )
    .bind(tenant.as_str())
    .bind(agent.as_str())
    .fetch_all(db.reader())
    .await?;
    if rows.is_empty() {
        agent_exists(db, tenant, agent).await?;
    }
    rows.iter().map(|row| label(agent, row)).collect()
}

pub(crate) async fn label_of(
    db: &Handle,
    tenant: &Tenant,
    agent: &AgentName,
    name: &LabelName,
) -> Result<Label> {
    let row = sqlx::query(
        "SELECT l.name, l.version_id, l.updated_at, l.updated_by FROM labels l \
         JOIN agents a ON a.id = l.agent_id JOIN tenants t ON t.id = a.tenant_id \
         WHERE t.slug = $1 AND a.name = $2 AND l.name = $3",
    )
    .bind(tenant.as_str())
    .bind(agent.as_str())
    .bind(name.as_str())
    .fetch_optional(db.reader())
    .await?
    .ok_or_else(|| Error::not_found(format!("no label {name} on agent {agent}")))?;
    label(agent, &row)
}

pub(crate) async fn move_label(
    db: &Handle,
    config: &StoreConfig,
    m: Move<'_>,
) -> Result<Written<LabelMove>> {
    let Move {
        tenant,
        agent,
        label: name,
        to,
        expected,
        by,
        forced,
    } = m;
    let mut tx = db.begin().await?;
    // Locking the agent's row serialises every move of its labels (PostgreSQL; SQLite's
    // `BEGIN IMMEDIATE` already serialises all writers).
    let row = sqlx::query(LOCK_AGENT)
        .bind(tenant.as_str())
        .bind(agent.as_str())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or_else(|| Error::not_found(format!("no agent {agent}")))?;
    let tenant_id: i64 = row.try_get("tenant_id")?;
    let agent_id: i64 = row.try_get("id")?;
    if !version_exists(&mut tx, agent_id, to).await? {
        return Err(Error::not_found(format!(
            "no version {to} of agent {agent}"
        )));
    }
    let existing = sqlx::query(
        "SELECT name, version_id, updated_at, updated_by FROM labels \
         WHERE agent_id = $1 AND name = $2",
    )
    .bind(agent_id)
    .bind(name.as_str())
    .fetch_optional(&mut *tx)
    .await?
    .map(|row| label(agent, &row))
    .transpose()?;
    let current = existing.as_ref().map(|label| label.version.clone());
    match (expected, &current) {
        (Expected::Any, _) | (Expected::Absent, None) => {}
        (Expected::Version(want), Some(have)) if want == have => {}
        (_, Some(have)) => {
            return Err(Error::conflict(format!(
                "label {name} of agent {agent} points at {have}, not the expected version"
            )));
        }
        (_, None) => {
            return Err(Error::conflict(format!(
                "label {name} of agent {agent} does not exist"
            )));
        }
    }
    if let Some(existing) = existing
        && existing.version == *to
    {
        return Ok(Written::unchanged(LabelMove {
            label: existing,
            from: current,
            changed: false,
        }));
    }
    let at = now_micros();
    if current.is_none() {
        within(&mut tx, Quota::LabelsPerAgent, config, agent_id, agent).await?;
        sqlx::query(
            "INSERT INTO labels (agent_id, name, version_id, updated_at, updated_by) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(agent_id)
        .bind(name.as_str())
        .bind(to.as_str())
        .bind(at)
        .bind(by.map(KeyId::as_str))
        .execute(&mut *tx)
        .await?;
    } else {
        sqlx::query(
            "UPDATE labels SET version_id = $1, updated_at = $2, updated_by = $3 \
             WHERE agent_id = $4 AND name = $5",
        )
        .bind(to.as_str())
        .bind(at)
        .bind(by.map(KeyId::as_str))
        .bind(agent_id)
        .bind(name.as_str())
        .execute(&mut *tx)
        .await?;
    }
    let change = Change {
        tenant: tenant.clone(),
        agent: Some(agent.clone()),
        kind: ChangeKind::Label(name.clone()),
    };
    if let Some(note) = forced {
        audit(
            &mut tx,
            Audit {
                tenant_id,
                at,
                actor: by,
                action: AuditAction::LabelForce,
                object: format!("agents/{agent}/labels/{name}"),
                from: current.as_ref().map(VersionId::to_string),
                to: Some(note.to_owned()),
            },
        )
        .await?;
    }
    commit(
        tx,
        Audit {
            tenant_id,
            at,
            actor: by,
            action: AuditAction::LabelMove,
            object: format!("agents/{agent}/labels/{name}"),
            from: current.as_ref().map(VersionId::to_string),
            to: Some(to.to_string()),
        },
        &change,
    )
    .await?;
    Ok(Written::changed(
        LabelMove {
            label: Label {
                agent: agent.clone(),
                name: name.clone(),
                version: to.clone(),
                updated_at: from_micros(at)?,
                updated_by: by.cloned(),
            },
            from: current,
            changed: true,
        },
        change,
    ))
}

// --- settings ---------------------------------------------------------------------------------

fn revision(value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::internal("the database holds a negative revision"))
}

pub(crate) async fn settings(
    db: &Handle,
    tenant: &Tenant,
    scope: &SettingsScope,
) -> Result<Option<Settings>> {
    let row = sqlx::query(
        "SELECT s.document, s.revision, s.updated_at, s.updated_by FROM settings s \
         JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.agent = $2",
    )
    .bind(tenant.as_str())
    .bind(scope.column())
    .fetch_optional(db.reader())
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let document: String = row.try_get("document")?;
    Ok(Some(Settings {
        scope: scope.clone(),
        document: serde_json::from_str(&document)
            .map_err(|_| Error::internal("the database holds a malformed settings document"))?,
        revision: revision(row.try_get("revision")?)?,
        updated_at: from_micros(row.try_get("updated_at")?)?,
        updated_by: key_column(&row, "updated_by")?,
    }))
}

pub(crate) async fn put_settings(db: &Handle, w: SettingsWrite<'_>) -> Result<Written<Settings>> {
    let mut tx = db.begin().await?;
    // Locking the tenant's row serialises settings writes, the first one included.
    let tenant_id = lock_tenant(&mut tx, w.tenant).await?;
    let current = sqlx::query("SELECT revision FROM settings WHERE tenant_id = $1 AND agent = $2")
        .bind(tenant_id)
        .bind(w.scope.column())
        .fetch_optional(&mut *tx)
        .await?
        .map(|row| row.try_get::<i64, _>(0))
        .transpose()?
        .map(revision)
        .transpose()?
        .unwrap_or(0);
    if let Some(expected) = w.expected_revision
        && expected != current
    {
        return Err(Error::conflict(format!(
            "{} are at revision {current}, not {expected}",
            w.scope.object()
        )));
    }
    let next = current + 1;
    let next_db = i64::try_from(next).map_err(|_| Error::internal("settings revision overflow"))?;
    let at = now_micros();
    sqlx::query(
        "INSERT INTO settings (tenant_id, agent, document, revision, updated_at, updated_by) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (tenant_id, agent) DO UPDATE SET document = excluded.document, \
         revision = excluded.revision, updated_at = excluded.updated_at, \
         updated_by = excluded.updated_by",
    )
    .bind(tenant_id)
    .bind(w.scope.column())
    .bind(w.document)
    .bind(next_db)
    .bind(at)
    .bind(w.by.map(KeyId::as_str))
    .execute(&mut *tx)
    .await?;
    let change = Change {
        tenant: w.tenant.clone(),
        agent: w.scope.agent().cloned(),
        kind: ChangeKind::Settings,
    };
    commit(
        tx,
        Audit {
            tenant_id,
            at,
            actor: w.by,
            action: AuditAction::SettingsWrite,
            object: w.scope.object(),
            from: (current > 0).then(|| current.to_string()),
            to: Some(next.to_string()),
        },
        &change,
    )
    .await?;
    Ok(Written::changed(
        Settings {
            scope: w.scope.clone(),
            document: w.value.clone(),
            revision: next,
            updated_at: from_micros(at)?,
            updated_by: w.by.cloned(),
        },
        change,
    ))
}

// --- audit ------------------------------------------------------------------------------------

pub(crate) async fn audit_log(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    page: &PageRequest,
) -> Result<Page<AuditEntry>> {
    let listing = Listing::new(config, page);
    let query = sqlx::query(
        "SELECT au.seq, au.at, au.actor, au.action, au.object, au.from_value, au.to_value \
         FROM audit au JOIN tenants t ON t.id = au.tenant_id \
         WHERE t.slug = $1 AND au.seq < $2 ORDER BY au.seq DESC LIMIT $3",
    )
    .bind(tenant.as_str())
    .bind(listing.seq_or(i64::MAX)?);
    listing
        .fetch(db, query, |row| {
            Ok((
                Cursor::from_seq(row.try_get("seq")?),
                AuditEntry {
                    at: from_micros(row.try_get("at")?)?,
                    actor: key_column(row, "actor")?,
                    action: AuditAction::from_db(&row.try_get::<String, _>("action")?)?,
                    object: row.try_get("object")?,
                    from: row.try_get("from_value")?,
                    to: row.try_get("to_value")?,
                },
            ))
        })
        .await
}

/// A listing's page request, resolved against the configured bounds: how many items the page
/// holds and where the listing resumes. Every listing query ends with the row limit as its last
/// parameter, which [`Listing::fetch`] binds.
pub(super) struct Listing<'a> {
    limit: u32,
    after: Option<&'a Cursor>,
}

impl<'a> Listing<'a> {
    pub(super) fn new(config: &StoreConfig, page: &'a PageRequest) -> Self {
        let (limit, after) = page.resolve(config.default_page, config.max_page);
        Listing { limit, after }
    }

    /// The sequence number the cursor holds, or `first` on the first page.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor that is not a sequence number.
    pub(super) fn seq_or(&self, first: i64) -> Result<i64> {
        Ok(self.after.map(Cursor::seq).transpose()?.unwrap_or(first))
    }

    /// The name the cursor holds, checked by `parse`; empty, before every name, on the first
    /// page.
    ///
    /// # Errors
    ///
    /// `Invalid` for a cursor that `parse` refuses.
    pub(super) fn name_or_empty<N: std::fmt::Display>(
        &self,
        parse: impl FnOnce(&str) -> Result<N>,
    ) -> Result<String> {
        match self.after {
            Some(cursor) => Ok(parse(cursor.as_str())
                .map_err(|_| Error::invalid("the page cursor is malformed"))?
                .to_string()),
            None => Ok(String::new()),
        }
    }

    /// Binds the row limit to `query`, runs it on the reader and cuts the rows to a page,
    /// reading each with its cursor. One row more than the page holds is fetched: it only says
    /// that a next page exists.
    pub(super) async fn fetch<'q, T>(
        &self,
        db: &Handle,
        query: DbQuery<'q>,
        mut read: impl FnMut(&DbRow) -> Result<(Cursor, T)>,
    ) -> Result<Page<T>> {
        let rows = query
            .bind(i64::from(self.limit) + 1)
            .fetch_all(db.reader())
            .await?;
        let limit = self.limit as usize;
        let more = rows.len() > limit;
        let mut items = Vec::with_capacity(rows.len().min(limit));
        let mut last = None;
        for row in rows.iter().take(limit) {
            let (cursor, item) = read(row)?;
            items.push(item);
            last = Some(cursor);
        }
        Ok(Page {
            items,
            next: if more { last } else { None },
        })
    }
}
