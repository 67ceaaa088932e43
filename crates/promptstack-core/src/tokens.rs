//! Token counts: exact for OpenAI encodings (bundled vocabularies), labelled estimates otherwise.
//!
//! The o200k and cl100k vocabularies are compiled into the binary and loaded lazily, once, on the
//! first count. Counts are memoised by a hash of the text, so a warm re-assembly tokenises only the
//! blocks whose text changed. Below that, a text is counted piece by piece (`pieces`): o200k text
//! is pre-split by hand where it is ASCII, and each thread remembers the counts of recent pieces;
//! every count equals the tokenizer library's own.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::context::ModelDescriptor;

mod pieces;

/// A byte-pair encoding with a bundled vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// `o200k_base` (GPT-4o, GPT-4.1, GPT-5, o-series).
    O200k,
    /// `cl100k_base` (GPT-4, GPT-3.5).
    Cl100k,
}

impl Encoding {
    /// The encoding's usual name.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200k => "o200k_base",
            Encoding::Cl100k => "cl100k_base",
        }
    }

    fn tokenizer(self) -> &'static bpe_openai::Tokenizer {
        match self {
            Encoding::O200k => bpe_openai::o200k_base(),
            Encoding::Cl100k => bpe_openai::cl100k_base(),
        }
    }

    /// Counts tokens exactly, without the text memo of [`TokenCounter`]: the same count as the
    /// tokenizer library's, made faster by a hand-written pre-split of ASCII text and a per-thread
    /// memo of piece counts (bounded: 512 KiB per thread that counts).
    pub fn count(self, text: &str) -> usize {
        pieces::count(self, self.tokenizer(), text)
    }
}

/// How a model's tokens are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Counting {
    /// The encoding used.
    pub encoding: Encoding,
    /// Whether the encoding is the model's own (exact) or a stand-in (estimate).
    pub exact: bool,
}

/// Model id prefixes (lowercase) of OpenAI's o200k models, checked before [`CL100K_MODELS`].
const O200K_MODELS: &[&str] = &[
    "gpt-4o",
    "chatgpt-4o",
    "gpt-4.1",
    "gpt-4.5",
    "gpt-5",
    "o1",
    "o3",
    "o4",
    "gpt-oss",
];

/// Model id prefixes (lowercase) of OpenAI's cl100k models.
const CL100K_MODELS: &[&str] = &["gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada"];

impl Counting {
    /// Chooses the counting for a model: its own encoding where bundled, else an o200k estimate.
    pub fn for_model(model: &ModelDescriptor) -> Self {
        // Compared without regard to ASCII case, without making lowercase copies (this runs on
        // every assembly).
        let id = model.id.rsplit('/').next().unwrap_or(&model.id);
        let starts_with = |prefix: &&str| {
            id.as_bytes()
                .get(..prefix.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
        };
        let openai = ["openai", "azure", "azure_openai"]
            .iter()
            .any(|p| model.provider.eq_ignore_ascii_case(p));
        if openai || starts_with(&"gpt-") {
            if O200K_MODELS.iter().any(starts_with) {
                return Self {
                    encoding: Encoding::O200k,
                    exact: true,
                };
            }
            if CL100K_MODELS.iter().any(starts_with) {
                return Self {
                    encoding: Encoding::Cl100k,
                    exact: true,
                };
            }
        }
        Self {
            encoding: Encoding::O200k,
            exact: false,
        }
    }
}

/// A token count and how it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TokenCount {
    /// The number of tokens.
    pub count: u32,
    /// False when the model's own tokenizer is not bundled and the count is an o200k estimate.
    pub exact: bool,
}

impl TokenCount {
    /// A zero count.
    pub const ZERO: TokenCount = TokenCount {
        count: 0,
        exact: true,
    };

    /// `123` for exact counts, `~123` for estimates.
    pub fn display(&self) -> String {
        if self.exact {
            self.count.to_string()
        } else {
            format!("~{}", self.count)
        }
    }
}

/// Memoised token counting, shared by every assembly of one agent.
#[derive(Debug, Default)]
pub struct TokenCounter {
    memo: Mutex<HashMap<(Encoding, u128), u32>>,
    tokenized: AtomicU64,
    hits: AtomicU64,
}

/// Beyond this many memoised texts the memo starts over, bounding memory on long-running servers.
const MEMO_LIMIT: usize = 65_536;

impl TokenCounter {
    /// Counts `text`, tokenising it only if this exact text was not counted before.
    pub fn count(&self, counting: Counting, text: &str) -> TokenCount {
        if text.is_empty() {
            return TokenCount {
                count: 0,
                exact: counting.exact,
            };
        }
        let key = (
            counting.encoding,
            twox_hash::XxHash3_128::oneshot(text.as_bytes()),
        );
        if let Some(&count) = self.lock().get(&key) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return TokenCount {
                count,
                exact: counting.exact,
            };
        }
        let count = u32::try_from(counting.encoding.count(text)).unwrap_or(u32::MAX);
        self.tokenized.fetch_add(1, Ordering::Relaxed);
        let mut memo = self.lock();
        if memo.len() >= MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, count);
        TokenCount {
            count,
            exact: counting.exact,
        }
    }

    /// Forgets every memoised count, so the next count of any text tokenises it again; the
    /// calling thread also forgets its memoised piece counts (other threads keep theirs: they
    /// change no count, only how fast one is made).
    pub fn clear(&self) {
        self.lock().clear();
        pieces::forget();
    }

    /// How many counts the memo served since this counter was made.
    pub fn memo_hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// How many texts were actually tokenised (memo misses) since this counter was made.
    pub fn tokenized(&self) -> u64 {
        self.tokenized.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Encoding, u128), u32>> {
        // A poisoned memo only ever holds complete entries, so it is safe to keep using.
        self.memo.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The case-insensitive comparison decides as comparing lowercase copies does.
        #[test]
        fn counting_ignores_ascii_case_as_lowercasing_does(
            id in "([a-zA-Z]{0,3}/)?(gpt|GPT|o|O|chatgpt|Text-Embedding|x)[-.]?[0-9a-zA-Zé.-]{0,6}",
            provider in "(OpenAI|openai|Azure|azure_OPENAI|anthropic|é)",
        ) {
            let by_copies = |model: &ModelDescriptor| {
                let id = model.id.to_ascii_lowercase();
                let id = id.rsplit('/').next().unwrap_or(&id).to_owned();
                let provider = model.provider.to_ascii_lowercase();
                let openai = matches!(provider.as_str(), "openai" | "azure" | "azure_openai");
                match (
                    openai || id.starts_with("gpt-"),
                    O200K_MODELS.iter().any(|p| id.starts_with(p)),
                    CL100K_MODELS.iter().any(|p| id.starts_with(p)),
                ) {
                    (true, true, _) => (Encoding::O200k, true),
                    (true, false, true) => (Encoding::Cl100k, true),
                    _ => (Encoding::O200k, false),
                }
            };
            let model = ModelDescriptor::new(id, "m", provider);
            let counting = Counting::for_model(&model);
            proptest::prop_assert_eq!((counting.encoding, counting.exact), by_copies(&model));
        }
    }

    #[test]
    fn known_counts() {
        // Reference values from the published o200k and cl100k vocabularies.
        assert_eq!(Encoding::O200k.count("hello world"), 2);
        assert_eq!(Encoding::Cl100k.count("hello world"), 2);
        assert_eq!(Encoding::O200k.count(""), 0);
    }

    #[test]
    fn memo_counts_each_text_once() {
        let counter = TokenCounter::default();
        let counting = Counting {
            encoding: Encoding::O200k,
            exact: true,
        };
        let a = counter.count(counting, "The quick brown fox");
        let b = counter.count(counting, "The quick brown fox");
        assert_eq!(a, b);
        assert_eq!(counter.tokenized(), 1);
        counter.count(counting, "jumps over the lazy dog");
        assert_eq!(counter.tokenized(), 2);
    }
}
