//! What every handler shares: the store, the caches in front of it, the limits and the metrics.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt as _;
use promptstack::{Agent, SendContext};
use promptstack_eval::run::Runner;
use promptstack_store::{
    AgentName, ChangeKind, ErrorKind, LabelName, Notification, Principal, RunId, Store, Tenant,
    VersionId,
};
use tokio::time::Instant;

use crate::config::ServerConfig;
use crate::metrics::Metrics;

/// The shared state of a server: cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) config: ServerConfig,
    pub(crate) metrics: Metrics,
    pub(crate) compiled: Bounded<(Tenant, AgentName, VersionId), Compiled>,
    /// Sends read lately, by their exact text (a thread's sends repeat: previews, retries, a
    /// request and a render of the same send).
    pub(crate) sends: KeptSends,
    pub(crate) labels: TtlCache<(Tenant, AgentName, LabelName), VersionId>,
    pub(crate) settings: TtlCache<(Tenant, Option<AgentName>), Option<serde_json::Value>>,
    pub(crate) keys: TtlCache<[u8; 32], Arc<Principal>>,
    pub(crate) rate: RateLimiter,
    /// The permits of the streams running now.
    pub(crate) streams: Arc<tokio::sync::Semaphore>,
    /// The permits of engine work (compiling, linting, assembling, simulating) running now on
    /// the blocking pool: twice the cores, so that the async workers stay free for `/healthz`
    /// and the cheap routes.
    pub(crate) engine: Arc<tokio::sync::Semaphore>,
    /// The permits of bodies over the limit being read and thrown away after their 413.
    pub(crate) drains: Arc<tokio::sync::Semaphore>,
    /// Each tenant's share of `engine`: the runs it may have there at once.
    pub(crate) shares: Shares,
    /// Digests of keys the store did not know, briefly, so that repeating a bad key costs no
    /// store read.
    pub(crate) failed_keys: FailedKeys,
    /// The budget of failed authentications across all callers.
    pub(crate) failures: FailureBudget,
    /// The last `/readyz` answer and when it was read.
    pub(crate) ready: Mutex<Option<(Instant, Result<(), String>)>>,
    /// The eval runs prepared on this instance.
    pub(crate) eval_runners: Runners,
    /// Wakes this instance's idle eval workers.
    pub(crate) eval_wake: tokio::sync::Notify,
}

const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<AppState>();
};

impl AppState {
    /// A state over `store`. Call [`AppState::watch`] on a tokio runtime to drop cached entries
    /// when the store announces changes.
    pub fn new(store: Store, config: ServerConfig) -> AppState {
        let ttl = config.ttl;
        let breaker = Arc::new(Breaker::default());
        AppState {
            inner: Arc::new(Inner {
                store,
                metrics: Metrics::default(),
                compiled: Bounded::new(config.compiled_versions),
                sends: KeptSends::default(),
                labels: TtlCache::new(ttl, Arc::clone(&breaker)),
                settings: TtlCache::new(ttl, Arc::clone(&breaker)),
                // Keys that authenticated before an outage keep working through it, like the labels
                // and settings they read (renders of cached versions must keep answering); a key
                // the store has answered "not found" for is dropped at once and never comes back.
                keys: TtlCache::new(ttl.min(Duration::from_secs(60)), breaker),
                rate: RateLimiter::new(config.rate_per_second, config.rate_burst),
                streams: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
                drains: Arc::new(tokio::sync::Semaphore::new(crate::MAX_DRAINS)),
                failed_keys: FailedKeys::default(),
                failures: FailureBudget::default(),
                ready: Mutex::new(None),
                eval_runners: Runners::default(),
                eval_wake: tokio::sync::Notify::new(),
                engine: Arc::new(tokio::sync::Semaphore::new(engine_runs())),
                shares: Shares::new(match config.tenant_engine_share {
                    0 => (engine_runs() / 2).max(1),
                    runs => runs,
                }),
                config,
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Subscribes to the store's changes and spawns the task that drops the cached entries they
    /// make stale (every entry on a gap). The task ends when the store's last handle is dropped.
    ///
    /// # Errors
    ///
    /// The subscription could not be made (PostgreSQL's listener connection).
    pub async fn watch(&self) -> promptstack_store::Result<()> {
        let mut subscription = self.inner.store.subscribe().await?;
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            while let Some(notification) = subscription.next().await {
                let Some(inner) = weak.upgrade() else { break };
                inner.apply(&notification);
            }
        });
        Ok(())
    }
}

impl Inner {
    fn apply(&self, notification: &Notification) {
        match notification {
            Notification::Change(change) => {
                let tenant = &change.tenant;
                match (&change.kind, &change.agent) {
                    (ChangeKind::Label(label), Some(agent)) => {
                        self.labels
                            .expire(&(tenant.clone(), agent.clone(), label.clone()))
                    }
                    (ChangeKind::Settings, agent) => {
                        self.settings.expire(&(tenant.clone(), agent.clone()))
                    }
                    // A revoked key must not keep working from a last good value.
                    (ChangeKind::KeyRevoked, _) => {
                        self.keys.retain(|_, (p, _)| &p.tenant != tenant)
                    }
                    _ => {}
                }
            }
            // Changes may have been missed: re-read everything, but keep the values as the last
            // good ones (the gap is often the store going away).
            _ => {
                self.labels.expire_all();
                self.settings.expire_all();
                self.keys.expire_all();
            }
        }
        self.metrics.invalidations.fetch_add(1, Ordering::Relaxed);
    }
}

/// How many runs of engine work the blocking pool holds at once: twice the cores.
pub(crate) fn engine_runs() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 2
}

/// Each tenant's share of the engine's blocking pool: a semaphore per tenant with work running
/// or waiting, dropped once the tenant has none.
pub(crate) struct Shares {
    runs: usize,
    tenants: Mutex<HashMap<Tenant, Arc<tokio::sync::Semaphore>>>,
}

impl Shares {
    fn new(runs: usize) -> Shares {
        Shares {
            runs: runs.max(1),
            tenants: Mutex::new(HashMap::new()),
        }
    }

    /// How many runs one tenant may have at once.
    pub(crate) fn runs(&self) -> usize {
        self.runs
    }

    /// The semaphore of `tenant`'s share. Tenants that hold no permit and that nobody waits on
    /// are forgotten first, so the map holds only tenants with work in flight.
    pub(crate) fn of(&self, tenant: &Tenant) -> Arc<tokio::sync::Semaphore> {
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = tenants.get(tenant) {
            return Arc::clone(found);
        }
        let runs = self.runs;
        tenants.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < runs);
        let made = Arc::new(tokio::sync::Semaphore::new(runs));
        tenants.insert(tenant.clone(), Arc::clone(&made));
        made
    }
}

/// A value from a [`TtlCache`], and why it may be stale.
pub(crate) struct Cached<V> {
    pub(crate) value: V,
    /// Set when the store could not be read and the last good value was used.
    pub(crate) stale: Option<String>,
}

/// How long reads with a last good value skip the store after it was found unreachable, so that
/// an outage costs one timeout, not one per cached entry.
const BREAK_FOR: Duration = Duration::from_secs(5);

/// Remembers that the store was unreachable.
#[derive(Default)]
pub(crate) struct Breaker {
    down_until: Mutex<Option<Instant>>,
}

impl Breaker {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.down_until.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_open(&self) -> bool {
        self.lock().is_some_and(|until| Instant::now() < until)
    }

    fn trip(&self) {
        *self.lock() = Some(Instant::now() + BREAK_FOR);
    }

    fn reset(&self) {
        *self.lock() = None;
    }
}

/// A map whose entries are fresh for `ttl`; an expired entry is kept as the last good value for
/// when the store cannot be read.
pub(crate) struct TtlCache<K, V> {
    ttl: Duration,
    breaker: Arc<Breaker>,
    entries: Mutex<Entries<K, V>>,
}

/// The entries, each with when it was read (`None`: expired), and the generations that tell a
/// read whether the cache changed while it was in flight.
struct Entries<K, V> {
    map: HashMap<K, (V, Option<Instant>)>,
    /// Bumped by every expiry and removal: a read begun before one does not cache what it read
    /// as fresh.
    generation: u64,
    /// Bumped by every removal: a read begun before one does not keep what it read at all.
    removals: u64,
}

/// How many entries a [`TtlCache`] holds before the expired ones are swept.
const SWEEP_AT: usize = 10_000;

impl<K: Eq + Hash + Clone, V: Clone> TtlCache<K, V> {
    fn new(ttl: Duration, breaker: Arc<Breaker>) -> Self {
        TtlCache {
            ttl,
            breaker,
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                generation: 0,
                removals: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries<K, V>> {
        // Entries are replaced whole, so a poisoned lock still holds consistent data.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The fresh value, or the store's answer (cached), or — when the store is unavailable —
    /// the last good value marked stale.
    ///
    /// An answer read while an expiry happened is returned but not cached as fresh: the expiry
    /// may announce a change the read did not see. It is kept as the last good value when the
    /// key has none (the expiry may have been another key's, and without it an outage right
    /// after would find no value at all), unless an entry was removed meanwhile: a revoked entry
    /// must not come back. Any answer but "unavailable" drops the last good value, so that a
    /// deleted or revoked entry cannot come back during a later outage.
    pub(crate) async fn get<F>(&self, key: &K, fetch: F) -> promptstack_store::Result<Cached<V>>
    where
        F: Future<Output = promptstack_store::Result<V>>,
    {
        let (last, generation, removals) = {
            let entries = self.lock();
            (
                entries.map.get(key).cloned(),
                entries.generation,
                entries.removals,
            )
        };
        if let Some((value, Some(fetched))) = &last
            && fetched.elapsed() < self.ttl
        {
            return Ok(Cached {
                value: value.clone(),
                stale: None,
            });
        }
        let stale = |value: V, why: &dyn std::fmt::Display| Cached {
            value,
            stale: Some(format!(
                "the store cannot be read ({why}); the last value read is used"
            )),
        };
        if self.breaker.is_open()
            && let Some((value, _)) = &last
        {
            return Ok(stale(value.clone(), &"it was unreachable moments ago"));
        }
        match fetch.await {
            Ok(value) => {
                self.breaker.reset();
                let mut guard = self.lock();
                let entries = &mut *guard;
                // Fresh when nothing changed meanwhile; else only the last good value of a key
                // that has none, and nothing if an entry was removed meanwhile.
                let fresh = entries.generation == generation;
                if fresh || (entries.removals == removals && !entries.map.contains_key(key)) {
                    if entries.map.len() >= SWEEP_AT {
                        let ttl = self.ttl;
                        entries
                            .map
                            .retain(|_, (_, at)| at.is_some_and(|at| at.elapsed() < ttl));
                        if entries.map.len() >= SWEEP_AT {
                            entries.map.clear();
                        }
                    }
                    entries
                        .map
                        .insert(key.clone(), (value.clone(), fresh.then(Instant::now)));
                }
                Ok(Cached { value, stale: None })
            }
            Err(error) if error.kind() == ErrorKind::Unavailable => {
                self.breaker.trip();
                match last {
                    Some((value, _)) => Ok(stale(value, &error)),
                    None => Err(error),
                }
            }
            Err(error) => {
                let mut guard = self.lock();
                guard.generation += 1;
                guard.removals += 1;
                guard.map.remove(key);
                Err(error)
            }
        }
    }

    /// The value of `key` when it was read within the TTL.
    pub(crate) fn fresh(&self, key: &K) -> Option<V> {
        self.lock()
            .map
            .get(key)
            .filter(|(_, at)| at.is_some_and(|at| at.elapsed() < self.ttl))
            .map(|(value, _)| value.clone())
    }

    /// Makes the entry re-read on its next use, keeping its value as the last good one.
    pub(crate) fn expire(&self, key: &K) {
        let mut guard = self.lock();
        guard.generation += 1;
        if let Some((_, at)) = guard.map.get_mut(key) {
            *at = None;
        }
    }

    /// [`TtlCache::expire`] for every entry.
    pub(crate) fn expire_all(&self) {
        let mut guard = self.lock();
        guard.generation += 1;
        for (_, at) in guard.map.values_mut() {
            *at = None;
        }
    }

    /// Keeps only the entries `keep` accepts.
    pub(crate) fn retain(&self, keep: impl FnMut(&K, &mut (V, Option<Instant>)) -> bool) {
        let mut guard = self.lock();
        guard.generation += 1;
        guard.removals += 1;
        guard.map.retain(keep);
    }
}

/// A map of at most `capacity` entries; inserting into a full map evicts the least recently
/// used entry.
pub(crate) struct Bounded<K, V> {
    capacity: usize,
    entries: Mutex<LruMap<K, V>>,
}

/// The entries with the tick each was last used at, and the clock.
type LruMap<K, V> = (HashMap<K, (V, u64)>, u64);

impl<K: Eq + Hash + Clone, V: Clone> Bounded<K, V> {
    fn new(capacity: usize) -> Self {
        Bounded {
            capacity: capacity.max(1),
            entries: Mutex::new((HashMap::new(), 0)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruMap<K, V>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn get(&self, key: &K) -> Option<V> {
        let mut guard = self.lock();
        let (entries, clock) = &mut *guard;
        *clock += 1;
        let now = *clock;
        entries.get_mut(key).map(|(value, used)| {
            *used = now;
            value.clone()
        })
    }

    pub(crate) fn insert(&self, key: K, value: V) {
        let mut guard = self.lock();
        let (entries, clock) = &mut *guard;
        *clock += 1;
        if entries.len() >= self.capacity
            && !entries.contains_key(&key)
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(key, (value, *clock));
    }

    pub(crate) fn fold<A>(&self, init: A, mut f: impl FnMut(A, &V) -> A) -> A {
        self.lock()
            .0
            .values()
            .fold(init, |acc, (value, _)| f(acc, value))
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().0.len()
    }
}

/// How many sends [`KeptSends`] holds.
const SENDS_KEPT: usize = 256;

/// The longest send text [`KeptSends`] holds: with [`SENDS_KEPT`], at most 2 MiB of text and
/// the sends read from it.
pub(crate) const KEPT_SEND_BYTES: usize = 8 * 1024;

/// Sends read lately, each with the tenant, the version it was read for and the exact text it was
/// read from, so that the same text sent again for the same version is not read again (reading
/// depends on nothing else). A kept send also keeps the digests of its facts, so assembling it
/// again hashes them no more. At most [`SENDS_KEPT`] sends of at most [`KEPT_SEND_BYTES`] each;
/// a full map forgets an arbitrary one. Keyed by a keyed hash and checked byte for byte, so a
/// collision costs a read and never returns another send; the tenant is part of the key, so one
/// tenant's sends never answer another's.
pub(crate) struct KeptSends {
    hasher: std::hash::RandomState,
    entries: Mutex<HashMap<u64, KeptSend>>,
}

struct KeptSend {
    tenant: Tenant,
    version: VersionId,
    text: Box<[u8]>,
    send: Arc<SendContext>,
}

impl Default for KeptSends {
    fn default() -> Self {
        KeptSends {
            hasher: std::hash::RandomState::new(),
            entries: Mutex::new(HashMap::new()),
        }
    }
}

impl KeptSends {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, KeptSend>> {
        // Entries are replaced whole, so a poisoned lock still holds consistent data.
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key of `text` read for `version` in `tenant`'s request.
    pub(crate) fn key(&self, tenant: &Tenant, version: &VersionId, text: &[u8]) -> u64 {
        use std::hash::{BuildHasher as _, Hasher as _};
        let mut hasher = self.hasher.build_hasher();
        tenant.hash(&mut hasher);
        version.hash(&mut hasher);
        hasher.write(text);
        hasher.finish()
    }

    /// The send read from exactly `text` for `version` in `tenant`'s request, if it is kept.
    pub(crate) fn get(
        &self,
        key: u64,
        tenant: &Tenant,
        version: &VersionId,
        text: &[u8],
    ) -> Option<Arc<SendContext>> {
        self.lock()
            .get(&key)
            .filter(|kept| {
                kept.tenant == *tenant && kept.version == *version && *kept.text == *text
            })
            .map(|kept| Arc::clone(&kept.send))
    }

    /// Keeps `send`, read from `text` (at most [`KEPT_SEND_BYTES`]) for `version`.
    pub(crate) fn insert(
        &self,
        key: u64,
        tenant: &Tenant,
        version: &VersionId,
        text: &[u8],
        send: &Arc<SendContext>,
    ) {
        if text.len() > KEPT_SEND_BYTES {
            return;
        }
        let kept = KeptSend {
            tenant: tenant.clone(),
            version: version.clone(),
            text: text.into(),
            send: Arc::clone(send),
        };
        let mut entries = self.lock();
        if entries.len() >= SENDS_KEPT
            && !entries.contains_key(&key)
            && let Some(&any) = entries.keys().next()
        {
            entries.remove(&any);
        }
        entries.insert(key, kept);
    }

    /// How many sends are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }
}

/// How long a key the store did not know is refused without asking it again.
const FAILED_KEY_FOR: Duration = Duration::from_secs(5);
/// How many failed key digests are remembered.
const FAILED_KEYS: usize = 4096;

/// Digests of keys the store did not know, each for [`FAILED_KEY_FOR`]; at most [`FAILED_KEYS`].
#[derive(Default)]
pub(crate) struct FailedKeys {
    entries: Mutex<HashMap<[u8; 32], Instant>>,
}

impl FailedKeys {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Instant>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn contains(&self, digest: &[u8; 32]) -> bool {
        self.lock()
            .get(digest)
            .is_some_and(|at| at.elapsed() < FAILED_KEY_FOR)
    }

    pub(crate) fn insert(&self, digest: [u8; 32]) {
        let mut entries = self.lock();
        if entries.len() >= FAILED_KEYS {
            entries.retain(|_, at| at.elapsed() < FAILED_KEY_FOR);
            if entries.len() >= FAILED_KEYS {
                entries.clear();
            }
        }
        entries.insert(digest, Instant::now());
    }
}

/// Failed authentications allowed per second across all callers (sustained), and in a burst.
const FAILURES_PER_SECOND: f64 = 10.0;
const FAILURE_BURST: f64 = 100.0;

/// A token bucket of failed authentications: once spent, keys the cache does not know are
/// answered 429 without a store read until it refills.
pub(crate) struct FailureBudget {
    bucket: Mutex<(f64, Instant)>,
}

impl Default for FailureBudget {
    fn default() -> Self {
        FailureBudget {
            bucket: Mutex::new((FAILURE_BURST, Instant::now())),
        }
    }
}

impl FailureBudget {
    fn refilled(&self) -> std::sync::MutexGuard<'_, (f64, Instant)> {
        let mut bucket = self.bucket.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let (tokens, at) = &mut *bucket;
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * FAILURES_PER_SECOND)
            .min(FAILURE_BURST);
        *at = now;
        bucket
    }

    /// `Some(seconds to wait)` when the budget is spent.
    pub(crate) fn spent(&self) -> Option<u64> {
        let bucket = self.refilled();
        (bucket.0 < 1.0).then(|| (((1.0 - bucket.0) / FAILURES_PER_SECOND).ceil() as u64).max(1))
    }

    /// Spends one failure.
    pub(crate) fn record(&self) {
        let mut bucket = self.refilled();
        bucket.0 = (bucket.0 - 1.0).max(0.0);
    }
}

/// A token bucket per key: `rate` tokens a second up to `burst`.
pub(crate) struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: Mutex<HashMap<String, (f64, Instant)>>,
    pub(crate) refused: AtomicU64,
}

impl RateLimiter {
    fn new(rate: u32, burst: u32) -> Self {
        RateLimiter {
            rate: f64::from(rate),
            burst: f64::from(burst.max(1)),
            buckets: Mutex::new(HashMap::new()),
            refused: AtomicU64::new(0),
        }
    }

    /// `Ok` when `key` may make a request now; else the seconds to wait.
    pub(crate) fn check(&self, key: &str) -> Result<(), u64> {
        if self.rate <= 0.0 {
            return Ok(());
        }
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if buckets.len() >= SWEEP_AT && !buckets.contains_key(key) {
            let (rate, burst) = (self.rate, self.burst);
            buckets.retain(|_, (tokens, at)| {
                *tokens + now.duration_since(*at).as_secs_f64() * rate < burst
            });
        }
        let (tokens, at) = buckets.entry(key.to_owned()).or_insert((self.burst, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * self.rate).min(self.burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Ok(())
        } else {
            self.refused.fetch_add(1, Ordering::Relaxed);
            let wait = ((1.0 - *tokens) / self.rate).ceil();
            Err((wait as u64).max(1))
        }
    }
}

/// The eval runs prepared on this instance, each prepared once however many workers ask for it
/// at once.
#[derive(Default)]
pub(crate) struct Runners {
    runs: Mutex<HashMap<(Tenant, RunId), PreparedRunner>>,
}

/// A run's runner, prepared once.
type PreparedRunner = Arc<tokio::sync::OnceCell<Arc<Runner>>>;

/// The most runs kept prepared; past it, those no worker holds are dropped.
const MAX_RUNNERS: usize = 64;

impl Runners {
    /// The run's runner, prepared by `prepare` on first use.
    pub(crate) async fn get<E, F: Future<Output = Result<Arc<Runner>, E>>>(
        &self,
        tenant: &Tenant,
        run: &RunId,
        prepare: impl FnOnce() -> F,
    ) -> Result<Arc<Runner>, E> {
        let cell = {
            let mut runs = self.runs.lock().unwrap_or_else(PoisonError::into_inner);
            if runs.len() >= MAX_RUNNERS {
                runs.retain(|_, cell| Arc::strong_count(cell) > 1);
            }
            Arc::clone(runs.entry((tenant.clone(), run.clone())).or_default())
        };
        cell.get_or_try_init(prepare).await.map(Arc::clone)
    }

    /// Forgets a run (finished, failed or cancelled).
    pub(crate) fn forget(&self, tenant: &Tenant, run: &RunId) {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(tenant.clone(), run.clone()));
    }
}

/// A compiled version, and how long its engine work took lately.
#[derive(Clone)]
pub struct Compiled {
    /// The compiled version.
    pub agent: Arc<Agent>,
    /// How long its engine work took lately.
    pub cost: Arc<Cost>,
}

impl Compiled {
    /// A version just compiled: its cost is not known yet.
    pub fn new(agent: Arc<Agent>) -> Compiled {
        Compiled {
            agent,
            cost: Arc::default(),
        }
    }
}

/// Engine work that took less than this on a version's recent runs is cheaper to do on the
/// request's own thread than to hand to the blocking pool (a hand-off costs two thread wake-ups).
const INLINE_BELOW: Duration = Duration::from_micros(100);

/// How long a version's engine work took lately, in nanoseconds (`u64::MAX` until measured): a
/// run longer than the estimate raises it at once, a shorter one lowers it by an eighth of the
/// difference, so one slow run sends the next several to the blocking pool.
#[derive(Debug)]
pub struct Cost(AtomicU64);

impl Default for Cost {
    fn default() -> Self {
        Cost(AtomicU64::new(u64::MAX))
    }
}

impl Cost {
    pub(crate) fn is_cheap(&self) -> bool {
        u128::from(self.0.load(Ordering::Relaxed)) < INLINE_BELOW.as_nanos()
    }

    pub(crate) fn record(&self, took: Duration) {
        let sample = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                Some(if old == u64::MAX || sample >= old {
                    sample
                } else {
                    old - (old - sample) / 8
                })
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_send_answers_only_its_own_tenant_version_and_text() {
        let kept = KeptSends::default();
        let (a, b) = (
            Tenant::parse("a").expect("tenant"),
            Tenant::parse("b").expect("tenant"),
        );
        let (v1, v2) = (
            VersionId::parse(&"1".repeat(64)).expect("version"),
            VersionId::parse(&"2".repeat(64)).expect("version"),
        );
        let text =
            br#"{"now":"2026-11-30T11:20:00+00:00","model":{"id":"m","name":"M","provider":"p"}}"#;
        let send = Arc::new(SendContext::new(
            "2026-11-30T11:20:00+00:00".parse().expect("now"),
            promptstack::context::ModelDescriptor::new("m", "M", "p"),
        ));
        let key = kept.key(&a, &v1, text);
        assert!(kept.get(key, &a, &v1, text).is_none());
        kept.insert(key, &a, &v1, text, &send);
        let found = kept.get(key, &a, &v1, text).expect("kept");
        assert!(Arc::ptr_eq(&found, &send));
        // Another tenant, version or text is another key; under the same key it is refused.
        assert_ne!(kept.key(&b, &v1, text), key);
        assert_ne!(kept.key(&a, &v2, text), key);
        assert!(kept.get(key, &b, &v1, text).is_none());
        assert!(kept.get(key, &a, &v2, text).is_none());
        assert!(kept.get(key, &a, &v1, b"{}").is_none());
        // Texts over the bound are not kept, and the map never holds more than its bound.
        let long = vec![b' '; KEPT_SEND_BYTES + 1];
        kept.insert(kept.key(&a, &v1, &long), &a, &v1, &long, &send);
        assert_eq!(kept.len(), 1);
        for i in 0..SENDS_KEPT * 2 {
            let text = format!("{i}");
            kept.insert(
                kept.key(&a, &v1, text.as_bytes()),
                &a,
                &v1,
                text.as_bytes(),
                &send,
            );
        }
        assert_eq!(kept.len(), SENDS_KEPT);
    }

    fn cache() -> TtlCache<&'static str, u32> {
        TtlCache::new(Duration::from_secs(60), Arc::new(Breaker::default()))
    }

    fn error(kind: ErrorKind) -> promptstack_store::Error {
        promptstack_store::Error::new(kind, "test")
    }

    /// Reads `k` from a store that fails with `kind`.
    async fn read_failing(
        cache: &TtlCache<&'static str, u32>,
        kind: ErrorKind,
    ) -> promptstack_store::Result<Cached<u32>> {
        cache.get(&"k", async { Err(error(kind)) }).await
    }

    /// Asserts that an outage is answered with its own error: `k` has no last good value.
    async fn assert_outage_fails(cache: &TtlCache<&'static str, u32>, why: &str) {
        let outage = read_failing(cache, ErrorKind::Unavailable).await;
        assert_eq!(
            outage.err().map(|e| e.kind()),
            Some(ErrorKind::Unavailable),
            "{why}"
        );
    }

    #[tokio::test]
    async fn an_expiry_during_a_read_is_not_lost() {
        let cache = cache();
        cache.get(&"k", async { Ok(1) }).await.unwrap();
        cache.expire(&"k");
        // The value changes to 3 and is announced while the read of 2 is in flight.
        let read = cache
            .get(&"k", async {
                cache.expire(&"k");
                Ok(2)
            })
            .await
            .unwrap();
        assert_eq!(read.value, 2);
        let next = cache.get(&"k", async { Ok(3) }).await.unwrap();
        assert_eq!(next.value, 3, "the read that raced the expiry was cached");
    }

    #[tokio::test]
    async fn a_retain_or_expire_all_during_a_read_is_not_lost() {
        let cache = cache();
        cache
            .get(&"k", async {
                cache.retain(|_, _| false);
                Ok(1)
            })
            .await
            .unwrap();
        assert_eq!(cache.get(&"k", async { Ok(2) }).await.unwrap().value, 2);
        cache.expire(&"k");
        cache
            .get(&"k", async {
                cache.expire_all();
                Ok(3)
            })
            .await
            .unwrap();
        assert_eq!(cache.get(&"k", async { Ok(4) }).await.unwrap().value, 4);
        // Without an expiry the answer is cached.
        assert_eq!(cache.get(&"k", async { Ok(5) }).await.unwrap().value, 4);
    }

    #[tokio::test]
    async fn a_read_that_raced_another_key_s_expiry_answers_a_later_outage() {
        let cache = cache();
        // Another key's change is announced while this key's first read is in flight.
        let read = cache
            .get(&"k", async {
                cache.expire(&"other");
                Ok(1)
            })
            .await
            .unwrap();
        assert_eq!(read.value, 1);
        // Kept as the last good value only: the next read asks the store.
        assert_eq!(cache.fresh(&"k"), None);
        let outage = read_failing(&cache, ErrorKind::Unavailable)
            .await
            .expect("the value read before the outage answers it");
        assert_eq!(outage.value, 1);
        assert!(outage.stale.is_some());
    }

    #[tokio::test]
    async fn a_read_that_raced_a_removal_is_not_kept() {
        for by_not_found in [false, true] {
            let cache = cache();
            cache
                .get(&"k", async {
                    if by_not_found {
                        // Another read of the key finds it gone.
                        let gone = read_failing(&cache, ErrorKind::NotFound).await;
                        assert!(gone.is_err());
                    } else {
                        // A revocation removes it.
                        cache.retain(|_, _| false);
                    }
                    Ok(1)
                })
                .await
                .unwrap();
            let why = format!(
                "a value read before its removal came back during an outage (by not found: {by_not_found})"
            );
            assert_outage_fails(&cache, &why).await;
        }
    }

    #[tokio::test]
    async fn not_found_drops_the_last_good_value() {
        let cache = cache();
        cache.get(&"k", async { Ok(1) }).await.unwrap();
        cache.expire(&"k");
        let gone = read_failing(&cache, ErrorKind::NotFound).await;
        assert_eq!(gone.err().map(|e| e.kind()), Some(ErrorKind::NotFound));
        assert_outage_fails(
            &cache,
            "a value the store no longer has came back during an outage",
        )
        .await;
    }

    #[tokio::test]
    async fn the_last_good_value_answers_an_outage() {
        let stale = cache();
        stale.get(&"k", async { Ok(1) }).await.unwrap();
        stale.expire(&"k");
        let read = read_failing(&stale, ErrorKind::Unavailable).await.unwrap();
        assert_eq!(read.value, 1);
        assert!(read.stale.is_some());
    }
}
