//! Provider credentials, written once over the parent module's `Db` and `Handle` like `ops.rs`.
//! Only sealed values reach the database (see `credential.rs`); the audit entries name the
//! credential and nothing of its value.

use sqlx::Row;

use super::Handle;
use super::eval_ops::run_row;
use super::ops::{Audit, DbRow, Listing, Quota, audit, key_column, lock_tenant, within};
use crate::backend::{from_micros, now_micros};
use crate::config::StoreConfig;
use crate::credential::{CredentialInfo, CredentialKey, Secret};
use crate::error::{Error, Result};
use crate::name::{CredentialName, KeyId, RunId, Tenant};
use crate::record::{AuditAction, Cursor, Page, PageRequest};

const COLUMNS: &str = "c.name, c.created_at, c.updated_at, c.updated_by, c.last_used_at";

fn info(row: &DbRow) -> Result<CredentialInfo> {
    Ok(CredentialInfo {
        name: CredentialName::from_db(row.try_get("name")?)?,
        created_at: from_micros(row.try_get("created_at")?)?,
        updated_at: from_micros(row.try_get("updated_at")?)?,
        updated_by: key_column(row, "updated_by")?,
        last_used_at: row
            .try_get::<Option<i64>, _>("last_used_at")?
            .map(from_micros)
            .transpose()?,
    })
}

/// The audit entry of a write or delete of credential `name`: its name, and nothing of its value.
fn audit_entry<'a>(
    tenant_id: i64,
    at: i64,
    by: Option<&'a KeyId>,
    action: AuditAction,
    name: &CredentialName,
) -> Audit<'a> {
    Audit {
        tenant_id,
        at,
        actor: by,
        action,
        object: format!("credentials/{name}"),
        from: None,
        to: None,
    }
}

fn no_credential(name: &CredentialName) -> Error {
    Error::not_found(format!("no credential {name}"))
}

pub(crate) async fn put_credential(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    name: &CredentialName,
    sealed: &[u8],
    by: Option<&KeyId>,
) -> Result<(CredentialInfo, bool)> {
    let at = now_micros();
    let mut tx = db.begin().await?;
    // Locked: two writes of new names at once cannot both pass the count.
    let tenant_id = lock_tenant(&mut tx, tenant).await?;
    let exists = sqlx::query("SELECT 1 FROM credentials WHERE tenant_id = $1 AND name = $2")
        .bind(tenant_id)
        .bind(name.as_str())
        .fetch_optional(&mut *tx)
        .await?
        .is_some();
    if !exists {
        within(
            &mut tx,
            Quota::CredentialsPerTenant,
            config,
            tenant_id,
            tenant,
        )
        .await?;
    }
    sqlx::query(
        "INSERT INTO credentials (tenant_id, name, sealed, created_at, updated_at, updated_by) \
         VALUES ($1, $2, $3, $4, $4, $5) \
         ON CONFLICT (tenant_id, name) DO UPDATE SET sealed = excluded.sealed, \
         updated_at = excluded.updated_at, updated_by = excluded.updated_by",
    )
    .bind(tenant_id)
    .bind(name.as_str())
    .bind(sealed)
    .bind(at)
    .bind(by.map(KeyId::as_str))
    .execute(&mut *tx)
    .await?;
    let entry = audit_entry(tenant_id, at, by, AuditAction::CredentialWrite, name);
    audit(&mut tx, entry).await?;
    let sql = format!("SELECT {COLUMNS} FROM credentials c WHERE c.tenant_id = $1 AND c.name = $2");
    let row = sqlx::query(&sql)
        .bind(tenant_id)
        .bind(name.as_str())
        .fetch_one(&mut *tx)
        .await?;
    let written = info(&row)?;
    tx.commit().await?;
    Ok((written, !exists))
}

pub(crate) async fn credentials(
    db: &Handle,
    config: &StoreConfig,
    tenant: &Tenant,
    page: &PageRequest,
) -> Result<Page<CredentialInfo>> {
    let listing = Listing::new(config, page);
    let sql = format!(
        "SELECT {COLUMNS} FROM credentials c JOIN tenants t ON t.id = c.tenant_id \
         WHERE t.slug = $1 AND c.name > $2 ORDER BY c.name LIMIT $3"
    );
    let query = sqlx::query(&sql)
        .bind(tenant.as_str())
        .bind(listing.name_or_empty(CredentialName::parse)?);
    listing
        .fetch(db, query, |row| {
            let item = info(row)?;
            Ok((Cursor::from_name(item.name.as_str()), item))
        })
        .await
}

pub(crate) async fn delete_credential(
    db: &Handle,
    tenant: &Tenant,
    name: &CredentialName,
    by: Option<&KeyId>,
) -> Result<()> {
    let at = now_micros();
    let mut tx = db.begin().await?;
    let tenant_id = lock_tenant(&mut tx, tenant).await?;
    let deleted = sqlx::query("DELETE FROM credentials WHERE tenant_id = $1 AND name = $2")
        .bind(tenant_id)
        .bind(name.as_str())
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if deleted == 0 {
        return Err(no_credential(name));
    }
    let entry = audit_entry(tenant_id, at, by, AuditAction::CredentialDelete, name);
    audit(&mut tx, entry).await?;
    tx.commit().await?;
    Ok(())
}

pub(crate) async fn use_credential(
    db: &Handle,
    tenant: &Tenant,
    run: &RunId,
    name: &CredentialName,
    key: &CredentialKey,
) -> Result<Secret> {
    let mut tx = db.begin().await?;
    let (_, _, state) = run_row(&mut tx, tenant, run).await?;
    if !state.is_active() {
        return Err(Error::conflict(format!(
            "eval run {run} is {state}: credentials are used only by queued or running runs"
        )));
    }
    let row = sqlx::query(
        "UPDATE credentials SET last_used_at = $1 \
         WHERE tenant_id = (SELECT id FROM tenants WHERE slug = $2) AND name = $3 \
         RETURNING sealed",
    )
    .bind(now_micros())
    .bind(tenant.as_str())
    .bind(name.as_str())
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| no_credential(name))?;
    let sealed: Vec<u8> = row.try_get("sealed")?;
    let secret = key.open(tenant, name, &sealed)?;
    tx.commit().await?;
    Ok(secret)
}
