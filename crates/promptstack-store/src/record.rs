//! What the store holds and hands back: agents, versions, labels, settings, audit entries, and
//! the pages they are listed in.

use std::fmt;

use jiff::Timestamp;

use crate::error::{Error, Result};
use crate::name::{AgentName, KeyId, LabelName, VersionId};

/// An agent of a tenant: a name under which versions are published.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentInfo {
    /// The agent's name.
    pub name: AgentName,
    /// When its first version was published.
    pub created_at: Timestamp,
}

/// A version to publish: the bundle's bytes, what they are, and what publishing found.
#[derive(Debug, Clone, PartialEq)]
pub struct NewVersion {
    id: VersionId,
    content_type: String,
    bundle: Vec<u8>,
    warnings: serde_json::Value,
}

impl NewVersion {
    /// A version `id` (the SHA-256 of the canonical bundle, computed by the caller) of `bundle`,
    /// whose media type is `content_type` (e.g. `application/json`). No warnings.
    pub fn new(id: VersionId, content_type: impl Into<String>, bundle: Vec<u8>) -> NewVersion {
        NewVersion {
            id,
            content_type: content_type.into(),
            bundle,
            warnings: serde_json::Value::Array(Vec::new()),
        }
    }

    /// Sets the warnings publishing found (any JSON; stored as given).
    pub fn warnings(mut self, warnings: serde_json::Value) -> NewVersion {
        self.warnings = warnings;
        self
    }

    /// The version's id.
    pub fn id(&self) -> &VersionId {
        &self.id
    }

    pub(crate) fn parts(&self) -> (&VersionId, &str, &[u8], &serde_json::Value) {
        (&self.id, &self.content_type, &self.bundle, &self.warnings)
    }
}

/// A published version without its bundle, as listed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct VersionInfo {
    /// The agent it belongs to.
    pub agent: AgentName,
    /// Its id.
    pub id: VersionId,
    /// The bundle's media type, as given at publish time.
    pub content_type: String,
    /// The bundle's length in bytes.
    pub size: u64,
    /// When it was published.
    pub created_at: Timestamp,
    /// The key that published it; `None` when the operator did (CLI, `serve --examples`).
    pub created_by: Option<KeyId>,
    /// The warnings publishing found, as given.
    pub warnings: serde_json::Value,
}

/// A published version with its bundle.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Version {
    /// Everything but the bytes.
    pub info: VersionInfo,
    /// The bundle, byte for byte as published.
    pub bundle: Vec<u8>,
}

/// The answer to a publish.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Published {
    /// The version as stored (the existing one when it was already published).
    pub version: VersionInfo,
    /// Whether this call created it; `false` when the same bundle was published before.
    pub created: bool,
}

/// What a label must point at for a move to go ahead (compare-and-set).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Expected {
    /// Move whatever the label points at now, creating it if absent.
    #[default]
    Any,
    /// The label must not exist yet.
    Absent,
    /// The label must point at this version.
    Version(VersionId),
}

/// A label: a named pointer from an agent to one of its versions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Label {
    /// The agent.
    pub agent: AgentName,
    /// The label's name.
    pub name: LabelName,
    /// The version it points at.
    pub version: VersionId,
    /// When it was last moved.
    pub updated_at: Timestamp,
    /// The key that last moved it; `None` for the operator.
    pub updated_by: Option<KeyId>,
}

/// The answer to a label move.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LabelMove {
    /// The label after the move.
    pub label: Label,
    /// What it pointed at before (`None` if it was created).
    pub from: Option<VersionId>,
    /// Whether anything changed; a move to the version the label already points at changes
    /// nothing and writes no audit entry.
    pub changed: bool,
}

/// Whose settings: the tenant's own, or one agent's within the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SettingsScope {
    /// The tenant's settings (e.g. its instructions).
    Tenant,
    /// One agent's settings within the tenant (e.g. its `[auto_injections]` overrides).
    Agent(AgentName),
}

impl SettingsScope {
    /// The agent column: `''` for the tenant.
    pub(crate) fn column(&self) -> &str {
        match self {
            SettingsScope::Tenant => "",
            SettingsScope::Agent(agent) => agent.as_str(),
        }
    }

    pub(crate) fn agent(&self) -> Option<&AgentName> {
        match self {
            SettingsScope::Tenant => None,
            SettingsScope::Agent(agent) => Some(agent),
        }
    }

    pub(crate) fn object(&self) -> String {
        match self {
            SettingsScope::Tenant => "settings".to_owned(),
            SettingsScope::Agent(agent) => format!("agents/{agent}/settings"),
        }
    }
}

/// A settings document and its revision.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// Whose settings these are.
    pub scope: SettingsScope,
    /// The document (a JSON object), as written.
    pub document: serde_json::Value,
    /// 1 for the first write, one more for each write after.
    pub revision: u64,
    /// When it was last written.
    pub updated_at: Timestamp,
    /// The key that last wrote it; `None` for the operator.
    pub updated_by: Option<KeyId>,
}

/// What an audit entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AuditAction {
    /// A tenant was created (by the first key made for it).
    TenantCreate,
    /// A key was created; `to` is its role.
    KeyCreate,
    /// A key was revoked.
    KeyRevoke,
    /// A version was published; `to` is its id.
    Publish,
    /// A label moved; `from` and `to` are version ids.
    LabelMove,
    /// Settings were written; `from` and `to` are revisions.
    SettingsWrite,
    /// An eval run was created; `to` is its suite.
    EvalRunCreate,
    /// An eval run was cancelled; `from` is the state it was in.
    EvalRunCancel,
    /// A credential was written; only its name is recorded (in `object`).
    CredentialWrite,
    /// A credential was deleted; only its name is recorded (in `object`).
    CredentialDelete,
    /// A label was moved past its gate by an admin (recorded with the move's `label.move`);
    /// `from` is the version it pointed at, `to` the reason and the comparison overridden, as
    /// JSON.
    LabelForce,
}

impl AuditAction {
    const ALL: [AuditAction; 11] = [
        AuditAction::TenantCreate,
        AuditAction::KeyCreate,
        AuditAction::KeyRevoke,
        AuditAction::Publish,
        AuditAction::LabelMove,
        AuditAction::SettingsWrite,
        AuditAction::EvalRunCreate,
        AuditAction::EvalRunCancel,
        AuditAction::CredentialWrite,
        AuditAction::CredentialDelete,
        AuditAction::LabelForce,
    ];

    /// The action's stable name (`label.move`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            AuditAction::TenantCreate => "tenant.create",
            AuditAction::KeyCreate => "key.create",
            AuditAction::KeyRevoke => "key.revoke",
            AuditAction::Publish => "version.publish",
            AuditAction::LabelMove => "label.move",
            AuditAction::SettingsWrite => "settings.write",
            AuditAction::EvalRunCreate => "eval.run.create",
            AuditAction::EvalRunCancel => "eval.run.cancel",
            AuditAction::CredentialWrite => "credential.write",
            AuditAction::CredentialDelete => "credential.delete",
            AuditAction::LabelForce => "label.force",
        }
    }

    pub(crate) fn from_db(text: &str) -> Result<AuditAction> {
        AuditAction::ALL
            .into_iter()
            .find(|action| action.as_str() == text)
            .ok_or_else(|| Error::internal("the database holds an unknown audit action"))
    }
}

impl fmt::Display for AuditAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One audited write: who, when, what, from what, to what.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditEntry {
    /// When it was committed.
    pub at: Timestamp,
    /// The key that made it; `None` for the operator.
    pub actor: Option<KeyId>,
    /// What was done.
    pub action: AuditAction,
    /// What it was done to, as a path: `agents/NAME/labels/LABEL`, `agents/NAME/versions/ID`,
    /// `settings`, `agents/NAME/settings`, `keys/ID`, `tenant`, `agents/NAME/evals/RUN`,
    /// `credentials/NAME`.
    pub object: String,
    /// The value before, when there was one.
    pub from: Option<String>,
    /// The value after, when there is one.
    pub to: Option<String>,
}

/// Where a listing continues: an opaque token handed back with a page.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Cursor(String);

impl Cursor {
    /// Reads a cursor a client sent back. Any text up to 128 bytes is accepted here; a cursor
    /// that does not fit the listing it is used with is an `Invalid` error there.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Invalid`](crate::ErrorKind::Invalid) for an empty or over-long cursor.
    pub fn parse(text: &str) -> Result<Cursor> {
        if text.is_empty() || text.len() > 128 {
            return Err(Error::invalid("the page cursor is malformed"));
        }
        Ok(Cursor(text.to_owned()))
    }

    /// The cursor as text, to send to a client.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn from_seq(seq: i64) -> Cursor {
        Cursor(seq.to_string())
    }

    pub(crate) fn from_name(name: &str) -> Cursor {
        Cursor(name.to_owned())
    }

    pub(crate) fn seq(&self) -> Result<i64> {
        self.0
            .parse::<i64>()
            .ok()
            .filter(|seq| *seq > 0)
            .ok_or_else(|| Error::invalid("the page cursor is malformed"))
    }
}

impl fmt::Debug for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Cursor({:?})", self.0)
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which page of a listing to return.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRequest {
    limit: Option<u32>,
    after: Option<Cursor>,
}

impl PageRequest {
    /// The first page, of the configured default length.
    pub fn first() -> PageRequest {
        PageRequest::default()
    }

    /// Sets the page length; it is cut to the configured maximum, and 0 counts as 1.
    pub fn limit(mut self, limit: u32) -> PageRequest {
        self.limit = Some(limit);
        self
    }

    /// Continues after a cursor from an earlier page.
    pub fn after(mut self, cursor: Cursor) -> PageRequest {
        self.after = Some(cursor);
        self
    }

    pub(crate) fn resolve(&self, default: u32, max: u32) -> (u32, Option<&Cursor>) {
        let limit = self.limit.unwrap_or(default).clamp(1, max.max(1));
        (limit, self.after.as_ref())
    }
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Page<T> {
    /// The items, in the listing's order.
    pub items: Vec<T>,
    /// Where the next page starts; `None` on the last page.
    pub next: Option<Cursor>,
}
