//! The two backends. Each compiles the same operations (`ops.rs`) over its own `Db` type, with
//! its own connection setup, write-transaction start, row locks and change announcement.

// `ops.rs` is compiled once per backend on purpose: one text of every query, two type-checked
// instances, no trait machinery over `sqlx::Database`.
#[allow(clippy::duplicate_mod)]
pub(crate) mod postgres;
#[allow(clippy::duplicate_mod)]
pub(crate) mod sqlite;

use crate::error::{Error, Result};
use crate::name::{AgentName, KeyId, LabelName, Tenant, VersionId};
use crate::notify::Change;
use crate::record::{Expected, SettingsScope};

/// The result of a write and the change it committed, if any, for in-process announcement.
pub(crate) struct Written<T> {
    pub(crate) value: T,
    pub(crate) change: Option<Change>,
}

impl<T> Written<T> {
    pub(crate) fn changed(value: T, change: Change) -> Self {
        Written {
            value,
            change: Some(change),
        }
    }

    pub(crate) fn unchanged(value: T) -> Self {
        Written {
            value,
            change: None,
        }
    }
}

/// Now, in microseconds since the Unix epoch: the store's timestamp column type.
pub(crate) fn now_micros() -> i64 {
    jiff::Timestamp::now().as_microsecond()
}

pub(crate) fn from_micros(micros: i64) -> Result<jiff::Timestamp> {
    jiff::Timestamp::from_microsecond(micros)
        .map_err(|_| Error::internal("the database holds a timestamp out of range"))
}

/// The arguments of a label move.
pub(crate) struct Move<'a> {
    pub(crate) tenant: &'a Tenant,
    pub(crate) agent: &'a AgentName,
    pub(crate) label: &'a LabelName,
    pub(crate) to: &'a VersionId,
    pub(crate) expected: &'a Expected,
    pub(crate) by: Option<&'a KeyId>,
    /// Why a gate was overridden, audited as `label.force` with the move.
    pub(crate) forced: Option<&'a str>,
}

/// The arguments of a settings write; `document` is the serialised form of `value`.
pub(crate) struct SettingsWrite<'a> {
    pub(crate) tenant: &'a Tenant,
    pub(crate) scope: &'a SettingsScope,
    pub(crate) value: &'a serde_json::Value,
    pub(crate) document: &'a str,
    pub(crate) expected_revision: Option<u64>,
    pub(crate) by: Option<&'a KeyId>,
}
