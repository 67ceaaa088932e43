//! Identical calls of a cacheable tool share one execution within a turn.
//!
//! The first call of a key *drives* the execution; identical calls arriving while it runs wait for
//! its outcome, and calls arriving after it succeeded get the stored output. A failure is handed to
//! every waiting call and then evicted, so the next identical call runs again. If the driving call
//! is cancelled (its future dropped), its entry is removed and one waiting call takes over.
//!
//! Only tokio's sync primitives are used (a `watch` channel per in-flight key), so the core stays
//! free of any runtime, timer or IO. The map's lock is a short, synchronous critical section that
//! is never held across an `.await`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use super::{ToolFailure, ToolOutput};

/// The shared outcome of one execution.
pub(crate) type Shared = Result<Arc<ToolOutput>, ToolFailure>;

#[derive(Debug, Clone)]
enum Slot {
    Pending,
    Finished(Shared),
    Abandoned,
}

#[derive(Debug)]
enum Entry {
    Running(watch::Receiver<Slot>),
    Done(Arc<ToolOutput>),
}

/// The per-turn dedupe cache.
#[derive(Debug, Default)]
pub(crate) struct Dedupe {
    entries: Mutex<HashMap<String, Entry>>,
}

enum Role {
    Drive(watch::Sender<Slot>),
    Wait(watch::Receiver<Slot>),
}

impl Dedupe {
    /// Runs `start()` unless an identical call is running or has succeeded; returns the outcome
    /// and whether it came from another call's execution.
    pub(crate) async fn run<F, Fut>(&self, key: String, start: F) -> (Shared, bool)
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<ToolOutput, ToolFailure>>,
    {
        let sender = loop {
            let role = {
                let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
                match entries.get(&key) {
                    Some(Entry::Done(output)) => return (Ok(Arc::clone(output)), true),
                    Some(Entry::Running(receiver)) => Role::Wait(receiver.clone()),
                    None => {
                        let (sender, receiver) = watch::channel(Slot::Pending);
                        entries.insert(key.clone(), Entry::Running(receiver));
                        Role::Drive(sender)
                    }
                }
            };
            match role {
                Role::Drive(sender) => break sender,
                Role::Wait(mut receiver) => {
                    let outcome = receiver
                        .wait_for(|slot| !matches!(slot, Slot::Pending))
                        .await
                        .map(|slot| slot.clone());
                    match outcome {
                        Ok(Slot::Finished(shared)) => return (shared, true),
                        // The driving call was cancelled: try to become the driver.
                        Ok(Slot::Abandoned | Slot::Pending) | Err(_) => continue,
                    }
                }
            }
        };

        let mut guard = DriveGuard {
            dedupe: self,
            key,
            sender: Some(sender),
        };
        let outcome = start().await.map(Arc::new);
        guard.finish(outcome.clone());
        (outcome, false)
    }
}

/// Owns the driving role of one key; releases it to waiting calls even if the driver is dropped.
struct DriveGuard<'a> {
    dedupe: &'a Dedupe,
    key: String,
    sender: Option<watch::Sender<Slot>>,
}

impl DriveGuard<'_> {
    fn finish(&mut self, outcome: Shared) {
        let Some(sender) = self.sender.take() else {
            return;
        };
        {
            let mut entries = self
                .dedupe
                .entries
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match &outcome {
                Ok(output) => {
                    entries.insert(self.key.clone(), Entry::Done(Arc::clone(output)));
                }
                Err(_) => {
                    entries.remove(&self.key);
                }
            }
        }
        sender.send_replace(Slot::Finished(outcome));
    }
}

impl Drop for DriveGuard<'_> {
    fn drop(&mut self) {
        if let Some(sender) = self.sender.take() {
            // Remove the entry before waking the waiters, so that one of them becomes the driver.
            self.dedupe
                .entries
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.key);
            sender.send_replace(Slot::Abandoned);
        }
    }
}
