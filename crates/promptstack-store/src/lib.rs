//! promptstack's store: tenants, API keys, versioned agents, labels, settings and an audit log,
//! on an SQLite file or a PostgreSQL database, behind one [`Store`].
//!
//! ```text
//! Location::parse ─► Store::open ─► migrations ─► Store (cheap to clone)
//!                                                   │ authenticate(key) → Principal
//!                                                   │ publish / versions / version
//!                                                   │ move_label (compare-and-set, audited)
//!                                                   │ put_settings (revisioned, audited)
//!                                                   │ audit, keys
//!                                                   │ create_run / claim_cell / complete_cell
//!                                                   │ put_credential / use_credential
//!                                                   └ subscribe() → Change | Gap
//! ```
//!
//! Three rules hold everywhere: keys are stored only as hashes; every read is scoped to a
//! tenant (another tenant's object is `NotFound`); a write is acknowledged only after it
//! committed, together with its audit entry. See `docs/store.md` for the data model, the
//! durability settings and the failure modes.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> promptstack_store::Result<()> {
//! use promptstack_store::{Expected, LabelName, NewVersion, Role, Store, Tenant, VersionId};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let store = Store::open(dir.path().join("promptstack.db").to_str().unwrap()).await?;
//! let tenant = Tenant::parse("acme")?;
//! let key = store.create_key(&tenant, Role::Admin, None).await?;
//! let me = store.authenticate(key.key.expose()).await?.expect("a fresh key authenticates");
//!
//! let agent = "chat".parse()?;
//! let id = VersionId::parse(&"ab".repeat(32))?;
//! let bundle = NewVersion::new(id.clone(), "application/json", b"{}".to_vec());
//! store.publish(&me.tenant, &agent, &bundle, Some(&me.key_id)).await?;
//! let production = LabelName::parse("production")?;
//! store
//!     .move_label(&me.tenant, &agent, &production, &id, &Expected::Absent, Some(&me.key_id))
//!     .await?;
//! assert_eq!(store.label(&me.tenant, &agent, &production).await?.version, id);
//! # Ok(()) }
//! ```

mod backend;
mod config;
mod credential;
mod error;
mod eval;
mod key;
mod name;
mod notify;
mod record;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use config::{Backend, DATABASE_FILE, Location, StoreConfig};
pub use credential::{CREDENTIALS_KEY_ENV, CredentialInfo, CredentialKey, Secret};
pub use error::{Error, ErrorKind, Result};
pub use eval::{
    ActiveRun, Cell, CellResult, Claim, ClaimedCell, LEASE_BOUNDS, MAX_RUN_MESSAGE, MAX_RUN_MODELS,
    MAX_RUN_REFS, MAX_RUN_REPEATS, MAX_RUN_SCENARIOS, MAX_RUN_TEXT, NewRun, RunInfo, RunProgress,
    RunRef, RunState,
};
pub use key::{ApiKey, KeyInfo, NewKey, Principal};
pub use name::{
    AgentName, CredentialName, KeyId, KeyName, LabelName, Role, RunId, Tenant, VersionId,
};
pub use notify::{Change, ChangeKind, Gap, Notification, Subscription};
pub use record::{
    AgentInfo, AuditAction, AuditEntry, Cursor, Expected, Label, LabelMove, NewVersion, Page,
    PageRequest, Published, Settings, SettingsScope, Version, VersionInfo,
};
pub use store::{Admin, MAX_FORCE_NOTE, Store};
