//! Every cache of an agent, in one owner: the stable parts, the volatile-unit memo, the resolved
//! MCP listings, the tool units of requests and the token-count memo.
//!
//! [`Caches::clear`] forgets all of them and [`Caches::stats`] reports all of them. Each cache is
//! bounded by a number of entries (the constants below, listed in ARCHITECTURE.md, "Inside the core"); an
//! entry's own size is bounded by the limits on what produced it (`docs/limits.md`).
//!
//! No lock is held while anything is rendered, serialised or tokenised: a lock guards only a
//! lookup or an insertion. Concurrent cold sends with the same stable key build the stable part
//! once (single flight): the first builds without holding a lock, the others wait for its result.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use minijinja::value::Value;
use serde::Serialize;

use crate::block::{Block, Verdict};
use crate::context::ModelDescriptor;
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::fingerprint::Fingerprint;
use crate::hash::Key;
use crate::tokens::{Counting, Encoding, TokenCount, TokenCounter};
use crate::toolset::{Tool, Toolset};

/// How many distinct stable parts an agent keeps (one per live thread configuration, roughly);
/// the oldest is dropped first.
pub(crate) const STABLE_CAPACITY: usize = 64;

/// Beyond this many rendered volatile units the memo starts over.
pub(crate) const VOLATILE_CAPACITY: usize = 4096;

/// How many distinct sets of MCP listings an agent keeps resolved; the oldest is dropped first.
pub(crate) const MCP_CAPACITY: usize = 8;

/// Beyond this many tool units (format × encoding × tool) the memo starts over.
pub(crate) const TOOL_UNITS_CAPACITY: usize = 4096;

// What the caches hold.

/// A send's MCP tools and its `mcp` template root.
pub(crate) struct McpResolved {
    pub mcp: crate::toolset::ResolvedMcp,
    pub root: Value,
}

/// Everything about a send that depends only on its stable inputs.
pub(crate) struct StablePart {
    pub toolset: Arc<Toolset>,
    /// What was decided for the stable body blocks, then the stable target-placed blocks and
    /// notes, in declaration order.
    pub verdicts: Vec<Verdict>,
    /// The stable half: the included stable body blocks, joined.
    pub text: String,
    /// The texts of the included stable target-placed blocks and notes, one after another.
    pub placed: String,
    /// The public blocks, made from the verdicts on first request (see `Assembly::blocks`).
    pub blocks: OnceLock<Vec<Block>>,
    /// The half's token count, counted on first request (nothing on the render path needs it).
    pub tokens: OnceLock<TokenCount>,
    /// The stable half's fingerprint, computed when first asked for (nothing on the render path
    /// needs it).
    pub fingerprint: OnceLock<Fingerprint>,
    /// How the part's tokens are counted, chosen from the model when first needed (a token
    /// count, a limit, the blocks); nothing else on the render path needs it.
    pub counting: OnceLock<Counting>,
    /// Findings of the stable part (the spec's own lint is the agent's).
    pub diagnostics: Vec<Diagnostic>,
    /// The stable template roots built as template values (the model, the user, settings, …),
    /// reused to render the volatile blocks; the roots read from the send itself (skills,
    /// context files, paths, the toolset, variables) are read from each send again.
    pub roots: Vec<(&'static str, Value)>,
    /// What the engine made of the stable roots read from the send, once a volatile render
    /// needed them, so that later sends of the thread do not make them again.
    pub built_roots: OnceLock<Vec<(&'static str, Value)>>,
    /// The bytes of text its templates rendered, which count against the template memory of
    /// every assembly built on it.
    pub rendered: u64,
    /// The model the part was built for (a stable input), shared with the other parts built
    /// for the same model (see [`Caches::model`]).
    pub model: Arc<ModelDescriptor>,
}

impl StablePart {
    /// How the part's tokens are counted: by its model's encoding where bundled.
    pub(crate) fn counting(&self) -> Counting {
        chosen_counting(&self.counting, &self.model)
    }
}

/// The counting kept in `cell`, chosen for `model` on first need: a stable part's, shared by the
/// limits checked while it is written and everything that counts its tokens later.
pub(crate) fn chosen_counting(cell: &OnceLock<Counting>, model: &ModelDescriptor) -> Counting {
    *cell.get_or_init(|| Counting::for_model(model))
}

/// A volatile unit as a send rendered it: what was decided, its text, and the diagnostics it
/// raised.
pub(crate) struct VolatileUnit {
    pub verdict: Verdict,
    pub text: String,
    pub diagnostics: Vec<Diagnostic>,
}

/// A tool definition as a request unit: its JSON, canonical text and tokens.
#[derive(Debug)]
pub(crate) struct ToolUnit {
    pub name: String,
    pub value: serde_json::Value,
    pub bytes: String,
    pub tokens: u32,
}

/// Counters that show how much work the caches saved, since the agent was compiled (clearing the
/// caches does not reset them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[non_exhaustive]
pub struct CacheStats {
    /// Assemblies that reused a stable part (including those that waited for a concurrent build).
    pub stable_hits: u64,
    /// Assemblies that rendered the stable part.
    pub stable_misses: u64,
    /// Volatile units reused from an earlier send.
    pub volatile_hits: u64,
    /// Volatile units rendered.
    pub volatile_misses: u64,
    /// Sends whose MCP listings were already resolved.
    pub mcp_hits: u64,
    /// Sends whose MCP listings were resolved.
    pub mcp_misses: u64,
    /// Tool definitions of requests reused.
    pub tool_unit_hits: u64,
    /// Tool definitions of requests serialised and counted.
    pub tool_unit_misses: u64,
    /// Token counts served from the memo.
    pub token_hits: u64,
    /// Texts actually tokenised (token-count memo misses).
    pub tokenized: u64,
}

/// A hit and a miss counter.
#[derive(Debug, Default)]
struct Counters {
    hits: AtomicU64,
    misses: AtomicU64,
}

impl Counters {
    fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    fn miss(&self) {
        self.misses.fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

/// Locks a cache. Every cache holds only complete entries, so a poisoned lock is still consistent.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The caches of one agent.
#[derive(Default)]
pub(crate) struct Caches {
    stable: Mutex<StableParts>,
    stable_counters: Counters,
    volatile: Mutex<HashMap<Key, Arc<VolatileUnit>>>,
    volatile_counters: Counters,
    mcp: Mutex<VecDeque<(Key, Arc<McpResolved>)>>,
    mcp_counters: Counters,
    /// Tool definitions as request units.
    pub tool_units: ToolUnits,
    /// Token counts by text.
    pub counter: Arc<TokenCounter>,
    /// The model of the last stable part built, which the next part built for the same model
    /// shares (see [`Caches::model`]).
    model: Mutex<Option<Arc<ModelDescriptor>>>,
    /// The toolset of the last stable part built, which the next part shares when it resolved
    /// the same tools (see [`Caches::toolset`]).
    toolset: Mutex<Option<Arc<Toolset>>>,
}

/// The stable parts by key, and the builds in flight.
#[derive(Default)]
struct StableParts {
    entries: VecDeque<(Key, Arc<StablePart>)>,
    in_flight: HashMap<Key, Arc<Flight>>,
}

/// One stable part being built; waiters block on `done` until the builder reports.
#[derive(Default)]
struct Flight {
    state: Mutex<FlightState>,
    done: Condvar,
}

/// Where a build in flight is.
#[derive(Default, Clone)]
enum FlightState {
    #[default]
    Building,
    Built(Arc<StablePart>),
    /// The build failed; each waiter then builds for itself, to get its own located error.
    Failed,
}

impl Flight {
    fn finish(&self, state: FlightState) {
        *lock(&self.state) = state;
        self.done.notify_all();
    }

    /// Blocks until the build ends; the part, or `None` when it failed.
    fn wait(&self) -> Option<Arc<StablePart>> {
        let mut state = lock(&self.state);
        loop {
            match &*state {
                FlightState::Building => {
                    state = self.done.wait(state).unwrap_or_else(|e| e.into_inner());
                }
                FlightState::Built(part) => return Some(part.clone()),
                FlightState::Failed => return None,
            }
        }
    }
}

/// Ends a flight however its build ends (a part, an error, or an unwinding panic), so that
/// waiters never wait forever.
struct FlightGuard<'a> {
    caches: &'a Caches,
    key: Key,
    flight: Arc<Flight>,
    part: Option<Arc<StablePart>>,
}

impl Drop for FlightGuard<'_> {
    fn drop(&mut self) {
        let mut stable = lock(&self.caches.stable);
        stable.in_flight.remove(&self.key);
        if let Some(part) = &self.part {
            if stable.entries.len() >= STABLE_CAPACITY {
                stable.entries.pop_front();
            }
            stable.entries.push_back((self.key, part.clone()));
        }
        drop(stable);
        self.flight.finish(match &self.part {
            Some(part) => FlightState::Built(part.clone()),
            None => FlightState::Failed,
        });
    }
}

/// What a thread asking for a stable part does.
enum Role {
    /// Another thread is building it.
    Wait(Arc<Flight>),
    /// This thread builds it.
    Build(Arc<Flight>),
}

impl Caches {
    /// The stable part for `key`: cached, or built by `build` — once, however many threads ask
    /// for the same key at the same time.
    pub fn stable_part(
        &self,
        key: Key,
        build: impl Fn() -> Result<StablePart, Error>,
    ) -> Result<Arc<StablePart>, Error> {
        loop {
            let role = {
                let mut stable = lock(&self.stable);
                if let Some((_, part)) = stable.entries.iter().find(|(k, _)| *k == key) {
                    self.stable_counters.hit();
                    return Ok(part.clone());
                }
                match stable.in_flight.get(&key) {
                    Some(flight) => Role::Wait(flight.clone()),
                    None => {
                        let flight = Arc::new(Flight::default());
                        stable.in_flight.insert(key, flight.clone());
                        Role::Build(flight)
                    }
                }
            };
            match role {
                Role::Wait(flight) => {
                    if let Some(part) = flight.wait() {
                        self.stable_counters.hit();
                        return Ok(part);
                    }
                    // The build failed: ask again, building if nobody else is.
                }
                Role::Build(flight) => {
                    self.stable_counters.miss();
                    let mut guard = FlightGuard {
                        caches: self,
                        key,
                        flight,
                        part: None,
                    };
                    // No lock is held while the part is rendered.
                    let part = Arc::new(build()?);
                    guard.part = Some(part.clone());
                    return Ok(part);
                }
            }
        }
    }

    /// A volatile unit rendered by an earlier send, with the diagnostics it raised.
    pub fn volatile_unit(&self, key: Key) -> Option<Arc<VolatileUnit>> {
        let found = lock(&self.volatile).get(&key).cloned();
        match found {
            Some(_) => self.volatile_counters.hit(),
            None => self.volatile_counters.miss(),
        }
        found
    }

    /// Remembers a rendered volatile unit.
    pub fn remember_volatile_unit(&self, key: Key, unit: Arc<VolatileUnit>) {
        let mut memo = lock(&self.volatile);
        if memo.len() >= VOLATILE_CAPACITY {
            memo.clear();
        }
        memo.insert(key, unit);
    }

    /// The resolved MCP listings for `key`: cached, or made by `resolve` (without a lock held).
    pub fn mcp(&self, key: Key, resolve: impl FnOnce() -> McpResolved) -> Arc<McpResolved> {
        if let Some((_, found)) = lock(&self.mcp).iter().find(|(k, _)| *k == key) {
            self.mcp_counters.hit();
            return found.clone();
        }
        self.mcp_counters.miss();
        let resolved = Arc::new(resolve());
        let mut memo = lock(&self.mcp);
        if !memo.iter().any(|(k, _)| *k == key) {
            if memo.len() >= MCP_CAPACITY {
                memo.pop_front();
            }
            memo.push_back((key, resolved.clone()));
        }
        resolved
    }

    /// Forgets every reusable result: stable parts, volatile units, MCP listings, tool units and
    /// token counts. Builds in flight finish, and their parts are kept.
    pub fn clear(&self) {
        *lock(&self.model) = None;
        *lock(&self.toolset) = None;
        lock(&self.stable).entries.clear();
        lock(&self.volatile).clear();
        lock(&self.mcp).clear();
        lock(&self.tool_units.memo).clear();
        self.counter.clear();
    }

    /// The model a stable part keeps: the last part's when it is the same model (a comparison
    /// of three short strings), else a copy that the next part may share. A thread's sends, and
    /// most of an agent's, go to one model, so a part is built without copying its strings.
    pub(crate) fn model(&self, model: &ModelDescriptor) -> Arc<ModelDescriptor> {
        let mut last = lock(&self.model);
        match &*last {
            Some(kept) if **kept == *model => Arc::clone(kept),
            _ => {
                let made = Arc::new(model.clone());
                *last = Some(Arc::clone(&made));
                made
            }
        }
    }

    /// The toolset a stable part keeps: the last part's when `made` offers the same tools and
    /// leaves out the same ones for the same reasons, else `made`, which the next part may
    /// share. Most sends of an agent resolve the same toolset, so a part is built without a new
    /// one (and the `tools` root's template value, made once, is shared with it).
    pub(crate) fn toolset(&self, made: Toolset) -> Arc<Toolset> {
        let mut last = lock(&self.toolset);
        match &*last {
            Some(kept) if kept.same_tools(&made) => Arc::clone(kept),
            _ => {
                let made = Arc::new(made);
                *last = Some(Arc::clone(&made));
                made
            }
        }
    }

    /// Counters of every cache.
    pub fn stats(&self) -> CacheStats {
        let (stable_hits, stable_misses) = self.stable_counters.read();
        let (volatile_hits, volatile_misses) = self.volatile_counters.read();
        let (mcp_hits, mcp_misses) = self.mcp_counters.read();
        let (tool_unit_hits, tool_unit_misses) = self.tool_units.counters.read();
        CacheStats {
            stable_hits,
            stable_misses,
            volatile_hits,
            volatile_misses,
            mcp_hits,
            mcp_misses,
            tool_unit_hits,
            tool_unit_misses,
            token_hits: self.counter.memo_hits(),
            tokenized: self.counter.tokenized(),
        }
    }
}

/// The key of a tool unit: the format's name, the encoding and the tool's address.
pub(crate) type ToolUnitKey = (&'static str, Encoding, usize);

/// A tool unit with the tool it was built from (holding the tool keeps its address unique).
pub(crate) type ToolUnitEntry = (Arc<Tool>, Arc<ToolUnit>);

/// Tool units by (format, encoding, tool address). Each entry holds its `Arc<Tool>`, so an address
/// cannot be reused by another tool while its entry lives.
#[derive(Debug, Default)]
pub(crate) struct ToolUnits {
    memo: Mutex<HashMap<ToolUnitKey, ToolUnitEntry>>,
    counters: Counters,
}

impl ToolUnits {
    /// The memoised units of `keys`, in order (`None` for the ones not built yet).
    pub fn get_all(&self, keys: impl Iterator<Item = ToolUnitKey>) -> Vec<Option<Arc<ToolUnit>>> {
        let memo = lock(&self.memo);
        keys.map(|key| {
            let found = memo.get(&key).map(|(_, unit)| unit.clone());
            match found {
                Some(_) => self.counters.hit(),
                None => self.counters.miss(),
            }
            found
        })
        .collect()
    }

    /// Remembers freshly built units.
    pub fn remember(&self, built: Vec<(ToolUnitKey, ToolUnitEntry)>) {
        if built.is_empty() {
            return;
        }
        let mut memo = lock(&self.memo);
        if memo.len() + built.len() > TOOL_UNITS_CAPACITY {
            memo.clear();
        }
        memo.extend(built);
    }
}
