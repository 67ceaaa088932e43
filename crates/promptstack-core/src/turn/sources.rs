//! The source registry: one citation number per page for a whole conversation.
//!
//! Sources are keyed by [`url_key`] (the canonical-URL function), so a page found by a search and
//! later fetched keeps its number, and a fetch may enrich the title in place. The registry is seeded
//! from the [`SourceSnapshot`] persisted on the conversation's previous assistant message, so an old
//! `[Source 2]` still means the same page: numbers continue, they never restart or get reused.
//!
//! Past the cap no number is issued at all (a number that cannot resolve is worse than none); the
//! caller tells the model so. A URL that already has a number keeps it past the cap.

use std::collections::{BTreeMap, HashMap};

use crate::canonical_url::url_key;
use crate::stream::{Source, SourceSnapshot};

/// The outcome of registering a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// The source has this number; `new` is false when the URL already had it.
    Numbered {
        /// The citation number.
        index: u32,
        /// Whether the number was issued by this registration.
        new: bool,
    },
    /// The conversation has reached its cap: the source got no number.
    CapReached {
        /// The cap that was reached.
        cap: u32,
    },
}

impl Registration {
    /// The citation number, if one was issued (now or earlier).
    pub fn index(self) -> Option<u32> {
        match self {
            Self::Numbered { index, .. } => Some(index),
            Self::CapReached { .. } => None,
        }
    }
}

/// Citation numbers for a conversation, keyed by canonical URL.
#[derive(Debug, Clone)]
pub struct SourceRegistry {
    cap: u32,
    by_key: HashMap<String, u32>,
    sources: BTreeMap<u32, Source>,
    next: u32,
}

impl SourceRegistry {
    /// An empty registry (the first source of the conversation will be `1`).
    pub fn new(cap: u32) -> Self {
        Self {
            cap,
            by_key: HashMap::new(),
            sources: BTreeMap::new(),
            next: 1,
        }
    }

    /// A registry that continues the numbering of a persisted snapshot.
    ///
    /// Every snapshot entry stays resolvable under its own number. The next number is one past the
    /// highest seen, so numbers are never reused even if the snapshot has gaps. If two entries
    /// share a number the first is kept; if two numbers share a URL, the URL maps to the lower one.
    pub fn seeded(snapshot: &SourceSnapshot, cap: u32) -> Self {
        let mut registry = Self::new(cap);
        for source in &snapshot.sources {
            if registry.sources.contains_key(&source.index) {
                continue;
            }
            registry.sources.insert(source.index, source.clone());
            let key = url_key(&source.url);
            registry
                .by_key
                .entry(key)
                .and_modify(|i| *i = (*i).min(source.index))
                .or_insert(source.index);
            registry.next = registry.next.max(source.index.saturating_add(1));
        }
        registry
    }

    /// Numbers `url`, reusing its number if it has one.
    ///
    /// A non-empty `title` fills a missing title; it replaces an existing one only when
    /// `authoritative` (e.g. the page's own title from a fetch, after a search snippet's title).
    pub fn register(
        &mut self,
        url: &str,
        title: Option<&str>,
        authoritative: bool,
    ) -> Registration {
        let title = title.map(str::trim).filter(|t| !t.is_empty());
        let key = url_key(url);
        if let Some(&index) = self.by_key.get(&key) {
            if let (Some(source), Some(title)) = (self.sources.get_mut(&index), title)
                && (source.title.is_none() || authoritative)
            {
                source.title = Some(title.to_owned());
            }
            return Registration::Numbered { index, new: false };
        }
        if self.next > self.cap {
            return Registration::CapReached { cap: self.cap };
        }
        let index = self.next;
        self.next += 1;
        self.by_key.insert(key, index);
        self.sources.insert(
            index,
            Source {
                index,
                url: url.trim().to_owned(),
                title: title.map(str::to_owned),
            },
        );
        Registration::Numbered { index, new: true }
    }

    /// The source cited as `[index]` (by number, not by position).
    pub fn get(&self, index: u32) -> Option<&Source> {
        self.sources.get(&index)
    }

    /// The number of a URL (compared canonically), if it has one.
    pub fn index_of(&self, url: &str) -> Option<u32> {
        self.by_key.get(&url_key(url)).copied()
    }

    /// How many sources are resolvable.
    pub fn len(&self) -> usize {
        self.sources.len()
    }

    /// Whether no source is resolvable.
    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The cap on numbers for this conversation.
    pub fn cap(&self) -> u32 {
        self.cap
    }

    /// Every source, in number order, for the assistant message's metadata.
    pub fn snapshot(&self) -> SourceSnapshot {
        SourceSnapshot {
            sources: self.sources.values().cloned().collect(),
        }
    }
}
