//! The latest discovery result of every configured server, and the background retry of failures.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use futures::future::join_all;

use super::{
    DiscoveryConfig, McpFailure, McpFailureStage, McpServerConfig, McpServerListing,
    McpServerStatus, discover_server,
};

/// How failed servers are retried in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The wait before the first retry.
    pub first_delay: Duration,
    /// The longest wait between retries (the wait doubles after each round up to this).
    pub max_delay: Duration,
    /// Stop after this many rounds even if servers still fail (`None`: until all succeed).
    pub max_rounds: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            max_rounds: None,
        }
    }
}

/// The MCP servers of an application and what their latest discovery found.
///
/// Cheap to clone (shared state). A send reads [`listings`](Self::listings) without waiting for
/// any server: a server that failed, or was never discovered, is reported as failed and skipped,
/// while [`retry_failed`](Self::retry_failed) brings it back in the background.
#[derive(Debug, Clone)]
pub struct McpDirectory {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    servers: Vec<McpServerConfig>,
    config: DiscoveryConfig,
    listings: Mutex<BTreeMap<String, McpServerListing>>,
}

impl McpDirectory {
    /// A directory of `servers`, none discovered yet.
    pub fn new(servers: Vec<McpServerConfig>, config: DiscoveryConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                servers,
                config,
                listings: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// Discovers every server (concurrently) and records the results.
    pub async fn refresh_all(&self) -> Vec<McpServerListing> {
        refresh(&self.inner, |_| true).await;
        self.listings()
    }

    /// Rediscovers the servers whose latest discovery failed or never ran. Returns how many
    /// servers are still failing afterwards.
    pub async fn refresh_failed(&self) -> usize {
        refresh_failed(&self.inner).await
    }

    /// The latest listing of every server, in configuration order. A server never discovered is
    /// reported as failed at the connect stage.
    pub fn listings(&self) -> Vec<McpServerListing> {
        let listings = self
            .inner
            .listings
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.inner
            .servers
            .iter()
            .map(|server| {
                listings
                    .get(&server.name)
                    .cloned()
                    .unwrap_or_else(|| McpServerListing {
                        server: server.name.clone(),
                        title: None,
                        status: McpServerStatus::Failed {
                            failure: McpFailure {
                                stage: McpFailureStage::Connect,
                                timed_out: false,
                                message: "not discovered yet".to_owned(),
                            },
                        },
                    })
            })
            .collect()
    }

    /// A future that retries failed servers until all succeed, the policy's rounds run out, or
    /// every handle to this directory is dropped.
    ///
    /// Nothing is spawned here: the application runs the future on the runtime it owns, for
    /// example `tokio::spawn(directory.retry_failed(RetryPolicy::default()))`. It needs tokio's
    /// time driver. It holds only a weak reference, so it never keeps the directory alive.
    pub fn retry_failed(&self, policy: RetryPolicy) -> impl Future<Output = ()> + Send + 'static {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        async move {
            let mut delay = policy.first_delay;
            let mut rounds = 0u32;
            loop {
                if policy.max_rounds.is_some_and(|max| rounds >= max) {
                    return;
                }
                tokio::time::sleep(delay).await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                if refresh_failed(&inner).await == 0 {
                    return;
                }
                rounds += 1;
                delay = (delay * 2).min(policy.max_delay);
            }
        }
    }
}

async fn refresh_failed(inner: &Inner) -> usize {
    let failed: Vec<String> = {
        let listings = inner
            .listings
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        failing(&inner.servers, &listings)
            .map(|s| s.name.clone())
            .collect()
    };
    refresh(inner, |server| failed.contains(&server.name)).await
}

/// Rediscovers the servers selected by `which`; returns how many servers are failing afterwards.
async fn refresh(inner: &Inner, which: impl Fn(&McpServerConfig) -> bool) -> usize {
    let selected: Vec<&McpServerConfig> = inner.servers.iter().filter(|s| which(s)).collect();
    let results = join_all(selected.iter().map(|s| discover_server(s, &inner.config))).await;
    let mut listings = inner
        .listings
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    for listing in results {
        listings.insert(listing.server.clone(), listing);
    }
    failing(&inner.servers, &listings).count()
}

/// The servers whose listing is not ready: failed, or never discovered.
fn failing<'a>(
    servers: &'a [McpServerConfig],
    listings: &'a BTreeMap<String, McpServerListing>,
) -> impl Iterator<Item = &'a McpServerConfig> {
    servers.iter().filter(|s| {
        !matches!(
            listings.get(&s.name).map(|l| &l.status),
            Some(McpServerStatus::Ready { .. })
        )
    })
}
