//! Sources the model may cite, in the snapshot format persisted on an assistant message.
//!
//! The Turn's source registry (in `promptstack-core`) produces a [`SourceSnapshot`]; the stream
//! processor and the citation scorer read one. Numbers are one-based and never renumbered within a conversation.

use serde::{Deserialize, Serialize};

/// One source the model may cite as `[index]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// The citation number, starting at 1, stable for the whole conversation.
    pub index: u32,
    /// The URL as the tool first reported it.
    pub url: String,
    /// The best title known for the page, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

/// The sources of a conversation so far, as persisted on an assistant message's metadata.
///
/// Serialised as `{"sources": [{"index": 1, "url": "…", "title": "…"}, …]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceSnapshot {
    /// Every source issued so far, in index order.
    pub sources: Vec<Source>,
}

impl SourceSnapshot {
    /// Looks a source up by its citation number (not by its position in the list).
    pub fn get(&self, index: u32) -> Option<&Source> {
        self.sources.iter().find(|s| s.index == index)
    }
}
