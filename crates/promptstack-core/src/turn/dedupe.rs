//! Identical calls of a cacheable tool share one execution within a turn.
//!
//! Calls are identical when their [call keys](super::budget::call_key) are equal: the same
//! identity the budgets use, so a call that shares an execution is exactly a call that costs
//! nothing. The first call of a key *drives* the execution, and only after its `admit` check (the
//! budget charge) passed; identical calls arriving while it runs wait for
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

/// How a call went through the dedupe cache.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// This call drove an execution.
    Ran(Shared),
    /// This call reused the outcome of an identical call's execution.
    Reused(Shared),
    /// `admit` refused the execution this call would have driven: nothing ran.
    Refused,
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
    /// Runs `start()` unless an identical call is running or has succeeded.
    ///
    /// Before this call drives an execution, `admit()` is asked under the cache's lock (so no
    /// identical call can slip in between the decision and the entry); when it refuses, nothing
    /// runs. A call that takes over from a cancelled driver is asked again: every execution is
    /// admitted once.
    pub(crate) async fn run<A, F, Fut>(&self, key: String, mut admit: A, start: F) -> Outcome
    where
        A: FnMut() -> bool,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<ToolOutput, ToolFailure>>,
    {
        let sender = loop {
            let role = {
                let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
                match entries.get(&key) {
                    Some(Entry::Done(output)) => return Outcome::Reused(Ok(Arc::clone(output))),
                    Some(Entry::Running(receiver)) => Role::Wait(receiver.clone()),
                    None if !admit() => return Outcome::Refused,
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
                        Ok(Slot::Finished(shared)) => return Outcome::Reused(shared),
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
        Outcome::Ran(outcome)
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
