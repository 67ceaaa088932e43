//! Per-turn call budgets: their configuration, the intent that selects a cap, and the ledger.
//!
//! A budget belongs to a *class* of tools (e.g. `web`: search and fetch draw from one budget). Its
//! cap depends on the turn's *intent*, named by a `/slug` token in the user message (`/research`
//! buys more calls than a bare question). Loading a configured skill mid-turn promotes the cap,
//! once.
//!
//! **Every execution is charged, and only executions are.** A call of a cacheable tool that
//! shares an earlier identical call's execution (identical by [`call_key`]: the canonical URL,
//! the normalised query) costs nothing, because nothing runs; every other call is charged before
//! its tool runs, so the executions of a class never exceed its cap.
//!
//! A failed call **is charged**: budgets bound the work attempted, and a model retrying a failing
//! fetch must run dry like any other loop. A failure is not kept for reuse, so each retry runs
//! and is charged again (otherwise a failing call could be retried for free, forever).

use crate::spec::turn_config::ClassBudgetConfig;
use serde_json::Value;

use crate::canonical_url::canonicalize_url;

/// The identity of a call, for dedupe and budgets alike: tool name plus the canonicalised input.
///
/// Object keys are sorted; string values that are `http(s)` URLs go through
/// [`canonicalize_url`]; other strings are lowercased with whitespace runs collapsed to one space
/// and trimmed. The encoding is length-prefixed, hence injective over canonical inputs.
pub(crate) fn call_key(tool: &str, input: &Value) -> String {
    let mut key = String::with_capacity(tool.len() + 32);
    key.push_str(tool);
    key.push('\0');
    write_value(input, &mut key);
    key
}

fn write_value(value: &Value, out: &mut String) {
    use std::fmt::Write as _;
    match value {
        Value::Null => out.push('z'),
        Value::Bool(true) => out.push('t'),
        Value::Bool(false) => out.push('f'),
        Value::Number(n) => {
            let _ = write!(out, "n{n};");
        }
        Value::String(s) => write_str(&normalize_string(s), out),
        Value::Array(items) => {
            out.push('[');
            for item in items {
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (k, v) in entries {
                write_str(k, out);
                write_value(v, out);
            }
            out.push('}');
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    use std::fmt::Write as _;
    let _ = write!(out, "s{}:", s.len());
    out.push_str(s);
}

/// A URL through the canonical-URL function; any other text lowercased and whitespace-collapsed.
fn normalize_string(s: &str) -> String {
    let trimmed = s.trim_start().as_bytes();
    let looks_like_url = trimmed.len() >= 7
        && (trimmed[..7].eq_ignore_ascii_case(b"http://")
            || (trimmed.len() >= 8 && trimmed[..8].eq_ignore_ascii_case(b"https://")));
    if looks_like_url && let Ok(url) = canonicalize_url(s) {
        return url.into_string();
    }
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// The live state of one class's budget within a turn.
#[derive(Debug)]
pub(crate) struct ClassLedger {
    pub(crate) cap: u32,
    pub(crate) used: u32,
    promotion: Option<(String, u32)>,
}

impl ClassLedger {
    /// A ledger for `config` under the turn's slugs: the first slug naming one of the class's
    /// intents selects the cap, otherwise `auto`.
    pub(crate) fn new(config: &ClassBudgetConfig, slugs: &[String]) -> Result<Self, String> {
        let cap_of = |intent: &str| {
            config
                .intents
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(intent))
                .map(|(_, cap)| *cap)
        };
        let cap = slugs.iter().find_map(|s| cap_of(s)).unwrap_or(config.auto);
        let promotion = match &config.promote {
            None => None,
            Some(p) => match cap_of(&p.intent) {
                Some(to) => Some((p.skill.to_ascii_lowercase(), to)),
                None => return Err(p.intent.clone()),
            },
        };
        Ok(Self {
            cap,
            used: 0,
            promotion,
        })
    }

    /// Charges one execution if the cap allows it; returns the calls left after it, or `None`
    /// when the cap is reached and the call must not run.
    pub(crate) fn charge(&mut self) -> Option<u32> {
        if self.used < self.cap {
            self.used += 1;
            Some(self.remaining())
        } else {
            None
        }
    }

    pub(crate) fn remaining(&self) -> u32 {
        self.cap.saturating_sub(self.used)
    }

    /// Applies the promotion if `skill` is this class's promoting skill and it has not been
    /// applied yet. Returns whether the cap grew.
    pub(crate) fn promote(&mut self, skill: &str) -> bool {
        match &self.promotion {
            Some((promoting, to)) if promoting.eq_ignore_ascii_case(skill) => {
                let to = *to;
                // Once: the promotion is consumed even when the cap is already at least as high.
                self.promotion = None;
                if to > self.cap {
                    self.cap = to;
                    return true;
                }
                false
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_canonicalise_queries_and_urls() {
        let a = call_key("search", &json!({"query": "  Rust   ASYNC ", "n": 3}));
        let b = call_key("search", &json!({"n": 3, "query": "rust async"}));
        assert_eq!(a, b);
        let c = call_key("fetch", &json!({"url": "HTTPS://Example.com/a/#x"}));
        let d = call_key("fetch", &json!({"url": "https://example.com/a"}));
        assert_eq!(c, d);
        assert_ne!(
            call_key("search", &json!({"q": "a b"})),
            call_key("search", &json!({"q": "ab"}))
        );
        assert_ne!(
            call_key("search", &json!({"q": "a"})),
            call_key("fetch", &json!({"q": "a"}))
        );
    }
}
