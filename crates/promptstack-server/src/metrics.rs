//! Prometheus counters: requests by route and status, latencies, cache hits of the stable part,
//! store errors.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency histogram bounds, in seconds.
const BUCKETS: [f64; 10] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5,
];

#[derive(Default)]
struct Route {
    by_status: BTreeMap<u16, u64>,
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// The server's counters.
#[derive(Default)]
pub(crate) struct Metrics {
    routes: Mutex<BTreeMap<String, Route>>,
    pub(crate) store_errors: AtomicU64,
    pub(crate) invalidations: AtomicU64,
    pub(crate) stale_answers: AtomicU64,
    pub(crate) tenant_busy: AtomicU64,
}

impl Metrics {
    /// Records one request. `route` is the matched route template (bounded: never the raw path).
    pub(crate) fn record(&self, route: &str, status: u16, elapsed: Duration) {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        // The route's entry exists after its first request: look it up without allocating.
        if !routes.contains_key(route) {
            routes.insert(route.to_owned(), Route::default());
        }
        let Some(entry) = routes.get_mut(route) else {
            return;
        };
        *entry.by_status.entry(status).or_default() += 1;
        let seconds = elapsed.as_secs_f64();
        for (bucket, bound) in entry.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        entry.count += 1;
        entry.sum += seconds;
    }

    /// The Prometheus text exposition.
    pub(crate) fn render(&self, stable_hits: u64, stable_misses: u64, compiled: usize) -> String {
        let mut out = String::new();
        let routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        out.push_str(
            "# HELP promptstack_http_requests_total Requests answered, by route and status.\n",
        );
        out.push_str("# TYPE promptstack_http_requests_total counter\n");
        for (route, r) in routes.iter() {
            for (status, n) in &r.by_status {
                let _ = writeln!(
                    out,
                    "promptstack_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        out.push_str(
            "# HELP promptstack_http_request_duration_seconds Request latency, by route.\n",
        );
        out.push_str("# TYPE promptstack_http_request_duration_seconds histogram\n");
        for (route, r) in routes.iter() {
            for (n, bound) in r.buckets.iter().zip(BUCKETS) {
                let _ = writeln!(
                    out,
                    "promptstack_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "promptstack_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {}",
                r.count
            );
            let _ = writeln!(
                out,
                "promptstack_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                r.sum
            );
            let _ = writeln!(
                out,
                "promptstack_http_request_duration_seconds_count{{route=\"{route}\"}} {}",
                r.count
            );
        }
        let counters = [
            (
                "promptstack_stable_part_hits_total",
                "Assemblies that reused a cached stable part (versions in memory).",
                stable_hits,
            ),
            (
                "promptstack_stable_part_misses_total",
                "Assemblies that rendered the stable part (versions in memory).",
                stable_misses,
            ),
            (
                "promptstack_store_errors_total",
                "Store operations that failed.",
                self.store_errors.load(Ordering::Relaxed),
            ),
            (
                "promptstack_cache_invalidations_total",
                "Change notifications applied to the caches.",
                self.invalidations.load(Ordering::Relaxed),
            ),
            (
                "promptstack_stale_answers_total",
                "Answers given from the last good value while the store could not be read.",
                self.stale_answers.load(Ordering::Relaxed),
            ),
            (
                "promptstack_tenant_busy_total",
                "Requests answered 429 because their tenant's share of the engine stayed taken.",
                self.tenant_busy.load(Ordering::Relaxed),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP promptstack_compiled_versions Compiled versions held in memory.\n# TYPE promptstack_compiled_versions gauge\npromptstack_compiled_versions {compiled}"
        );
        out
    }
}
