//! The cache planner: where a request's cache breakpoints go, and what the request will cost.
//!
//! A request is a sequence of [`PlanUnit`]s in the provider's prefix order (for Anthropic: tools, then
//! system text blocks, then message content blocks). Some units close a stability boundary
//! ([`Boundary`]): the end of the tools, of the agent-wide system text, of the tenant-wide text, of
//! the stable half, of the previous request (the history), and the request's tail. The planner
//! places breakpoints only on such boundaries, never where the prefix is shorter than the model's
//! minimum, within the breakpoint budget, with lifetimes chosen from the expected gap between
//! requests (longer lifetimes first), and adds intermediate breakpoints so that no breakpoint is
//! further than the provider's lookback window from the previous one.
//!
//! [`CacheState`] replays requests against the rules to tell what each one reads from the cache,
//! writes to it, and pays for.

use std::collections::HashMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::fingerprint::Fingerprint;
use crate::provider::rules::Rule;

/// A stability boundary a unit closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// The end of the tool definitions.
    Tools,
    /// The end of the leading system text that only the platform and the author control: the same
    /// for every tenant and user of the agent.
    Agent,
    /// The end of the leading stable text up to tenant-controlled blocks: the same for every user
    /// of a tenant.
    Tenant,
    /// The end of the stable half: the same for every send of a thread.
    Stable,
    /// The end of what the previous request of the thread sent (before the latest answer).
    History,
    /// A breakpoint inside a long run of messages, to stay within the lookback window.
    Intermediate,
    /// The end of the request.
    Tail,
}

impl Boundary {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Boundary::Tools => "tools",
            Boundary::Agent => "agent",
            Boundary::Tenant => "tenant",
            Boundary::Stable => "stable",
            Boundary::History => "history",
            Boundary::Intermediate => "intermediate",
            Boundary::Tail => "tail",
        }
    }
}

/// Which part of a request a unit is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Region {
    /// Tool definitions.
    Tools,
    /// System text.
    System,
    /// Conversation messages.
    Messages,
}

/// One cacheable piece of a request, in prefix order.
#[derive(Debug, Clone, Serialize)]
pub struct PlanUnit {
    /// Where it is in the request body (a JSON pointer).
    pub at: String,
    /// What it holds: a tool name, the ids of the system blocks in it, or a message label.
    pub label: String,
    /// Its region.
    pub region: Region,
    /// Its tokens (exact for the model's own encoding, else an o200k estimate).
    pub tokens: u32,
    /// The boundary it closes, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary: Option<Boundary>,
    /// Whether the provider accepts a breakpoint on it.
    pub markable: bool,
    /// The identity of the prefix ending with this unit (XXH3-128 chained over canonical bytes).
    #[serde(skip)]
    pub prefix: u128,
    /// The unit's canonical JSON, without cache markers.
    #[serde(skip)]
    pub bytes: String,
}

/// A placed breakpoint.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Breakpoint {
    /// The index of the unit it closes.
    pub unit: usize,
    /// The unit's place in the body.
    pub at: String,
    /// Why it is there.
    pub boundary: Boundary,
    /// The lifetime asked for (the provider's literal).
    pub ttl: String,
    /// Tokens of the prefix it closes.
    pub prefix_tokens: u32,
    /// SHA-256 of the prefix it closes (format, model and the canonical bytes of every unit up to
    /// and including this one): equal fingerprints mean equal prefixes.
    pub fingerprint: Fingerprint,
}

/// A boundary the planner left without a breakpoint, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// The boundary.
    pub boundary: Boundary,
    /// Tokens of the prefix it would close.
    pub prefix_tokens: u32,
    /// Why it has no breakpoint.
    pub reason: String,
}

/// Token counts of one request by how the provider bills them, and the price relative to sending
/// every token uncached.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct Cost {
    /// Tokens billed at the base input price.
    pub uncached: u32,
    /// Tokens written to the cache (billed at the write multiplier).
    pub written: u32,
    /// Tokens read from the cache (billed at the read multiplier).
    pub read: u32,
    /// The write surcharge, in base-price tokens (written × multiplier, summed per lifetime).
    pub write_units: f64,
    /// The price of the request in base-price tokens.
    pub price: f64,
    /// The price of the request divided by the price of all its tokens uncached.
    pub relative: f64,
}

/// The summary of the rules row a plan used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleSummary {
    /// The provider family.
    pub provider: &'static str,
    /// The row's model pattern.
    pub models: String,
    /// The minimum cacheable prefix.
    pub min_tokens: u32,
    /// Where the row's numbers come from.
    pub source: String,
    /// The date of that documentation.
    pub date: String,
}

/// Where a request's breakpoints go and what it costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CachePlan {
    /// The version of the rules table used.
    pub rules_version: String,
    /// The row used.
    pub rule: RuleSummary,
    /// The breakpoints, in request order.
    pub breakpoints: Vec<Breakpoint>,
    /// Boundaries left without a breakpoint.
    pub skipped: Vec<Skipped>,
    /// Automatic retention asked for (OpenAI `prompt_cache_retention`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<String>,
    /// Tokens of the whole request (tools, system text and messages).
    pub total_tokens: u32,
    /// The cost with nothing cached (the first request of a thread).
    pub cold: Cost,
    /// The cost of sending the same request again right after (everything this request
    /// writes is cached).
    pub repeat: Cost,
}

/// A breakpoint chosen by [`place`], before fingerprints are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placed {
    pub unit: usize,
    pub boundary: Boundary,
    /// Index into the rule's `ttls`.
    pub ttl: usize,
}

/// Chooses the breakpoints of a request.
///
/// `gap_seconds` is the expected time until the thread's next request; `tool_turn` says the
/// request continues a tool-call turn (its next request follows within seconds).
///
/// The tail is marked even when per-send system text precedes the messages (so that the next
/// send cannot reuse them): a tool-call continuation of the same send can, and writing costs
/// 0.25× more than sending uncached while reading saves 0.9×, so it pays off once more than
/// about one turn in five calls a tool.
pub(crate) fn place(
    units: &[PlanUnit],
    rule: &Rule,
    gap_seconds: Option<u32>,
    tool_turn: bool,
) -> (Vec<Placed>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    if !rule.explicit_breakpoints || rule.max_breakpoints == 0 || rule.ttls.is_empty() {
        return (Vec::new(), skipped);
    }
    let prefix = prefix_tokens(units);
    let usable = |i: usize| units[i].markable && prefix[i] >= rule.min_tokens;
    // Every boundary, checked once.
    let mut candidates: Vec<(usize, Boundary)> = Vec::new();
    for (i, unit) in units.iter().enumerate() {
        let Some(boundary) = unit.boundary else {
            continue;
        };
        if !unit.markable {
            skipped.push(Skipped {
                boundary,
                prefix_tokens: prefix[i],
                reason: "the provider accepts no breakpoint on this part of the request".into(),
            });
        } else if prefix[i] < rule.min_tokens {
            skipped.push(Skipped {
                boundary,
                prefix_tokens: prefix[i],
                reason: format!(
                    "the prefix is below the model's minimum of {} tokens",
                    rule.min_tokens
                ),
            });
        } else {
            candidates.push((i, boundary));
        }
    }
    let budget = rule.max_breakpoints as usize;
    let mut chain: Vec<(usize, Boundary)> = Vec::new();
    if let Some(&(tail, _)) = candidates.iter().find(|(_, b)| *b == Boundary::Tail) {
        chain.push((tail, Boundary::Tail));
        // Bridge back to where the previous request ended (or the stable half, for a first
        // request) in hops no longer than the lookback window.
        let anchor = candidates
            .iter()
            .find(|(_, b)| *b == Boundary::History)
            .or_else(|| candidates.iter().rev().find(|(i, _)| *i < tail))
            .map(|&(i, _)| i);
        let window = rule.lookback_blocks as usize;
        if let (Some(anchor), true) = (anchor, window > 0) {
            let mut current = tail;
            while current > anchor && current - anchor > window {
                let from = current - window;
                // The earliest usable unit the current breakpoint can still reach.
                let Some(next) = (from..current).find(|&i| usable(i)) else {
                    break;
                };
                chain.push((next, Boundary::Intermediate));
                current = next;
            }
            if anchor < tail
                && candidates
                    .iter()
                    .any(|&(i, b)| i == anchor && b == Boundary::History)
            {
                chain.push((anchor, Boundary::History));
            }
        } else if let Some(&(history, _)) = candidates.iter().find(|(_, b)| *b == Boundary::History)
        {
            chain.push((history, Boundary::History));
        }
    }
    // The tail and the breakpoints nearest to it first: they serve the next request.
    chain.sort_by_key(|c| std::cmp::Reverse(c.0));
    chain.dedup_by_key(|c| c.0);
    let dropped = chain.len().saturating_sub(budget);
    for &(i, boundary) in chain.iter().skip(budget) {
        skipped.push(Skipped {
            boundary,
            prefix_tokens: prefix[i],
            reason: format!("over the budget of {budget} breakpoints"),
        });
    }
    chain.truncate(chain.len() - dropped);
    let mut chosen = chain;
    for wanted in [
        Boundary::Stable,
        Boundary::Tools,
        Boundary::Tenant,
        Boundary::Agent,
    ] {
        for &(i, boundary) in candidates.iter().filter(|(_, b)| *b == wanted) {
            if chosen.iter().any(|c| c.0 == i) {
                continue;
            }
            if chosen.len() >= budget {
                skipped.push(Skipped {
                    boundary,
                    prefix_tokens: prefix[i],
                    reason: format!("over the budget of {budget} breakpoints"),
                });
                continue;
            }
            chosen.push((i, boundary));
        }
    }
    chosen.sort_by_key(|c| c.0);
    let long = rule
        .ttl_for_gap(gap_seconds)
        .and_then(|t| rule.ttls.iter().position(|x| x == t))
        .unwrap_or(0);
    let mut placed: Vec<Placed> = chosen
        .into_iter()
        .map(|(unit, boundary)| Placed {
            unit,
            boundary,
            // Inside a tool-call turn the next request follows within seconds.
            ttl: if boundary == Boundary::Intermediate && tool_turn {
                0
            } else {
                long
            },
        })
        .collect();
    // Providers require longer lifetimes before shorter ones.
    for i in (0..placed.len().saturating_sub(1)).rev() {
        placed[i].ttl = placed[i].ttl.max(placed[i + 1].ttl);
    }
    (placed, skipped)
}

/// The tokens of the prefix ending at each unit.
pub(crate) fn prefix_tokens(units: &[PlanUnit]) -> Vec<u32> {
    let mut total = 0u32;
    units
        .iter()
        .map(|u| {
            total = total.saturating_add(u.tokens);
            total
        })
        .collect()
}

/// The chained XXH3-128 identity of a prefix, extended by one unit's canonical bytes.
pub(crate) fn chain(previous: u128, bytes: &[u8]) -> u128 {
    let mut hasher = crate::hash::xxh3_128_hasher();
    hasher.write(&previous.to_le_bytes());
    hasher.write(&(bytes.len() as u64).to_le_bytes());
    hasher.write(bytes);
    hasher.finish_128()
}

/// SHA-256 fingerprints of the prefixes ending at the given unit indices (ascending).
pub(crate) fn fingerprints(domain: &[&str], unit_bytes: &[&str], at: &[usize]) -> Vec<Fingerprint> {
    let mut hasher = Sha256::new();
    hasher.update(b"promptstack/prefix/v1\0");
    for part in domain {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let mut out = Vec::with_capacity(at.len());
    let mut next = 0;
    for (i, bytes) in unit_bytes.iter().enumerate() {
        if next >= at.len() {
            break;
        }
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes.as_bytes());
        while next < at.len() && at[next] == i {
            out.push(Fingerprint::from_digest(hasher.clone().finalize().into()));
            next += 1;
        }
    }
    out
}

/// What a provider's cache holds, as far as the requests replayed into it tell: prefix identities
/// with their expiry times (seconds on the caller's clock) and lifetimes.
#[derive(Debug, Clone, Default)]
pub struct CacheState {
    entries: HashMap<u128, (u64, u32)>,
}

/// Beyond this many entries, expired ones are dropped.
const STATE_SWEEP: usize = 4096;

impl CacheState {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replays one request sent at `now` (seconds): what it reads, writes and pays, and the
    /// entries it leaves behind.
    pub(crate) fn apply(
        &mut self,
        units: &[PlanUnit],
        placed: &[Placed],
        rule: &Rule,
        retention: Option<u32>,
        now: u64,
    ) -> Cost {
        if self.entries.len() > STATE_SWEEP {
            self.entries.retain(|_, (expires, _)| *expires > now);
        }
        let prefix = prefix_tokens(units);
        let total = prefix.last().copied().unwrap_or(0);
        let live = |state: &Self, i: usize| {
            state
                .entries
                .get(&units[i].prefix)
                .is_some_and(|(expires, _)| *expires > now)
        };
        let mut cost = Cost::default();
        if !placed.is_empty() {
            // Explicit breakpoints: each looks back over its window for the longest live entry.
            let window = rule.lookback_blocks as usize;
            let mut hit: Option<usize> = None;
            for p in placed {
                let from = if window == 0 {
                    0
                } else {
                    (p.unit + 1).saturating_sub(window)
                };
                if let Some(i) = (from..=p.unit).rev().find(|&i| live(self, i)) {
                    hit = hit.max(Some(i));
                }
            }
            let read_end = hit.map_or(0, |i| prefix[i]);
            cost.read = read_end;
            let mut start = read_end;
            for p in placed {
                let end = prefix[p.unit];
                if end > start {
                    let written = end - start;
                    cost.written += written;
                    cost.write_units += f64::from(written) * rule.ttls[p.ttl].write;
                    start = end;
                }
            }
            cost.uncached = total - start;
            if let Some(i) = hit
                && let Some(entry) = self.entries.get_mut(&units[i].prefix)
            {
                entry.0 = now + u64::from(entry.1);
            }
            for p in placed {
                let seconds = rule.ttls[p.ttl].seconds;
                let entry = self
                    .entries
                    .entry(units[p.unit].prefix)
                    .or_insert((0, seconds));
                entry.1 = entry.1.max(seconds);
                entry.0 = entry.0.max(now + u64::from(seconds));
            }
        } else if rule.automatic {
            // Automatic prefix caching: the longest live prefix, rounded down to the step.
            let seconds = retention.unwrap_or(rule.automatic_seconds);
            let matched = (0..units.len())
                .rev()
                .find(|&i| live(self, i))
                .map_or(0, |i| prefix[i]);
            let step = rule.automatic_step.max(1);
            let read = if matched >= rule.min_tokens {
                matched / step * step
            } else {
                0
            };
            cost.read = read;
            cost.uncached = total - read;
            for (i, unit) in units.iter().enumerate() {
                if prefix[i] >= rule.min_tokens {
                    let entry = self.entries.entry(unit.prefix).or_insert((0, seconds));
                    entry.0 = entry.0.max(now + u64::from(seconds));
                }
            }
        } else {
            cost.uncached = total;
        }
        let price = f64::from(cost.uncached) + cost.write_units + f64::from(cost.read) * rule.read;
        cost.price = (price * 100.0).round() / 100.0;
        // Four decimals: enough for a price ratio, and stable in reports.
        cost.relative = if total == 0 {
            1.0
        } else {
            (price / f64::from(total) * 10_000.0).round() / 10_000.0
        };
        cost
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::provider::rules::{Family, Ttl};

    fn rule(min_tokens: u32, max_breakpoints: u32, lookback_blocks: u32) -> Rule {
        Rule {
            provider: Family::Anthropic,
            models: "*".into(),
            min_tokens,
            explicit_breakpoints: true,
            max_breakpoints,
            lookback_blocks,
            ttls: vec![
                Ttl {
                    name: "5m".into(),
                    seconds: 300,
                    write: 1.25,
                },
                Ttl {
                    name: "1h".into(),
                    seconds: 3600,
                    write: 2.0,
                },
            ],
            read: 0.1,
            automatic: false,
            automatic_step: 1,
            automatic_seconds: 0,
            retention: Vec::new(),
            cached_content_seconds: None,
            source: "test".into(),
            date: "2026-11-30".into(),
        }
    }

    fn boundary() -> impl Strategy<Value = Option<Boundary>> {
        prop_oneof![
            4 => Just(None),
            1 => Just(Some(Boundary::Tools)),
            1 => Just(Some(Boundary::Agent)),
            1 => Just(Some(Boundary::Tenant)),
            1 => Just(Some(Boundary::Stable)),
            1 => Just(Some(Boundary::History)),
        ]
    }

    fn units() -> impl Strategy<Value = Vec<PlanUnit>> {
        prop::collection::vec((0u32..800, boundary(), any::<bool>()), 1..80).prop_map(|raw| {
            let count = raw.len();
            raw.into_iter()
                .enumerate()
                .map(|(i, (tokens, boundary, markable))| PlanUnit {
                    at: format!("/u/{i}"),
                    label: String::new(),
                    region: Region::Messages,
                    tokens,
                    boundary: if i + 1 == count {
                        Some(Boundary::Tail)
                    } else {
                        boundary
                    },
                    markable,
                    prefix: i as u128,
                    bytes: String::new(),
                })
                .collect()
        })
    }

    proptest! {
        /// Breakpoints sit only on markable boundary units whose prefix reaches the minimum,
        /// within the budget, once per unit, longer lifetimes first.
        #[test]
        fn breakpoints_respect_the_rules(
            units in units(),
            min in 0u32..4096,
            budget in 1u32..6,
            lookback in 0u32..25,
            gap in proptest::option::of(0u32..7200),
            tool_turn in any::<bool>(),
        ) {
            let rule = rule(min, budget, lookback);
            let (placed, _) = place(&units, &rule, gap, tool_turn);
            let prefix = prefix_tokens(&units);
            prop_assert!(placed.len() <= budget as usize);
            for p in &placed {
                prop_assert!(prefix[p.unit] >= min, "below the minimum");
                prop_assert!(units[p.unit].markable);
                prop_assert!(units[p.unit].boundary.is_some() || p.boundary == Boundary::Intermediate);
            }
            for pair in placed.windows(2) {
                prop_assert!(pair[0].unit < pair[1].unit);
                prop_assert!(rule.ttls[pair[0].ttl].seconds >= rule.ttls[pair[1].ttl].seconds);
            }
        }

        /// With budget to spare, consecutive message breakpoints are never further apart than the
        /// lookback window, so the tail can reach the previous request's entry.
        #[test]
        fn the_tail_reaches_the_history_within_the_window(
            tokens in prop::collection::vec(1u32..50, 30..120),
            history_at in 0usize..25,
        ) {
            let count = tokens.len();
            let units: Vec<PlanUnit> = tokens.iter().enumerate().map(|(i, &t)| PlanUnit {
                at: String::new(),
                label: String::new(),
                region: Region::Messages,
                tokens: t,
                boundary: if i + 1 == count { Some(Boundary::Tail) } else if i == history_at { Some(Boundary::History) } else { None },
                markable: true,
                prefix: i as u128,
                bytes: String::new(),
            }).collect();
            let rule = rule(0, 64, 20);
            let (placed, _) = place(&units, &rule, None, true);
            let chain: Vec<usize> = placed.iter().filter(|p| p.unit >= history_at).map(|p| p.unit).collect();
            prop_assert_eq!(chain.first().copied(), Some(history_at));
            prop_assert_eq!(chain.last().copied(), Some(count - 1));
            for pair in chain.windows(2) {
                prop_assert!(pair[1] - pair[0] <= 20, "{:?}", chain);
            }
        }

        /// Prefix fingerprints are equal exactly when the prefixes' bytes are.
        #[test]
        fn fingerprints_equal_iff_prefixes_equal(
            a in prop::collection::vec("[ab]{0,3}", 1..6),
            b in prop::collection::vec("[ab]{0,3}", 1..6),
        ) {
            let all_a: Vec<usize> = (0..a.len()).collect();
            let all_b: Vec<usize> = (0..b.len()).collect();
            let ra: Vec<&str> = a.iter().map(String::as_str).collect();
            let rb: Vec<&str> = b.iter().map(String::as_str).collect();
            let fa = fingerprints(&["anthropic", "m"], &ra, &all_a);
            let fb = fingerprints(&["anthropic", "m"], &rb, &all_b);
            for i in 0..a.len() {
                for j in 0..b.len() {
                    prop_assert_eq!(fa[i] == fb[j], a[..=i] == b[..=j], "{:?} {:?} {} {}", a, b, i, j);
                }
            }
            let other = fingerprints(&["gemini", "m"], &ra, &all_a);
            prop_assert_ne!(fa[0], other[0]);
        }
    }

    #[test]
    fn repeat_reads_what_the_first_request_wrote() {
        let units: Vec<PlanUnit> = (0..5)
            .map(|i| PlanUnit {
                at: String::new(),
                label: String::new(),
                region: Region::System,
                tokens: 600,
                boundary: (i == 4).then_some(Boundary::Stable),
                markable: true,
                prefix: i,
                bytes: String::new(),
            })
            .collect();
        let rule = rule(1024, 4, 20);
        let (placed, _) = place(&units, &rule, Some(60), false);
        assert_eq!(placed.len(), 1);
        let mut state = CacheState::new();
        let cold = state.apply(&units, &placed, &rule, None, 0);
        assert_eq!((cold.written, cold.read), (3000, 0));
        let warm = state.apply(&units, &placed, &rule, None, 100);
        assert_eq!((warm.written, warm.read), (0, 3000));
        // Past the 5-minute lifetime (refreshed at 100 s) the entry is gone.
        let expired = state.apply(&units, &placed, &rule, None, 100 + 301);
        assert_eq!(expired.read, 0);
    }
}
