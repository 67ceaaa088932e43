//! Change notification: what changed, and how subscribers hear of it.
//!
//! Every committed write that can make a cached render stale is announced as a [`Change`].
//! On PostgreSQL the announcement is a `NOTIFY` sent inside the writing transaction (so it is
//! delivered on commit, never for a rolled-back write) and heard by every store instance on a
//! `LISTEN` connection; on SQLite it is sent in-process after the commit. Changes can be missed:
//! the listener connection can drop, a subscriber can fall behind. Each such hole is reported as
//! a [`Gap`], after which a consumer should drop every cached entry (its TTL bounds staleness
//! while no notification arrives at all).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{BoxStream, Stream};
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::{broadcast, oneshot};

use crate::name::{AgentName, LabelName, Tenant};

/// The PostgreSQL channel the store announces changes on.
pub(crate) const CHANNEL: &str = "promptstack_changes";

/// A committed change.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The tenant whose data changed.
    pub tenant: Tenant,
    /// The agent whose data changed; `None` for tenant-wide changes (tenant settings, keys).
    pub agent: Option<AgentName>,
    /// What changed.
    pub kind: ChangeKind,
}

/// What kind of change.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeKind {
    /// A version was published.
    Published,
    /// A label moved (or was created).
    Label(LabelName),
    /// Settings were written (the tenant's when `agent` is `None`).
    Settings,
    /// A key was revoked.
    KeyRevoked,
}

impl Change {
    /// The NOTIFY payload: a small JSON object, well under PostgreSQL's 8000-byte cap because
    /// every field is a bounded name.
    pub(crate) fn to_payload(&self) -> String {
        let (kind, label) = match &self.kind {
            ChangeKind::Published => ("published", None),
            ChangeKind::Label(label) => ("label", Some(label.as_str())),
            ChangeKind::Settings => ("settings", None),
            ChangeKind::KeyRevoked => ("key_revoked", None),
        };
        serde_json::json!({
            "tenant": self.tenant,
            "agent": self.agent,
            "kind": kind,
            "label": label,
        })
        .to_string()
    }

    /// Reads a payload; `None` for anything this version did not write (another process may
    /// NOTIFY on the channel), which the listener reports as a gap.
    pub(crate) fn from_payload(payload: &str) -> Option<Change> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Payload {
            tenant: Tenant,
            agent: Option<AgentName>,
            kind: String,
            label: Option<LabelName>,
        }
        let payload: Payload = serde_json::from_str(payload).ok()?;
        let kind = match (payload.kind.as_str(), payload.label) {
            ("published", None) => ChangeKind::Published,
            ("label", Some(label)) => ChangeKind::Label(label),
            ("settings", None) => ChangeKind::Settings,
            ("key_revoked", None) => ChangeKind::KeyRevoked,
            _ => return None,
        };
        Some(Change {
            tenant: payload.tenant,
            agent: payload.agent,
            kind,
        })
    }
}

/// What a subscriber receives.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notification {
    /// A committed change.
    Change(Change),
    /// Changes may have been missed: drop every cached entry.
    Gap(Gap),
}

/// Why changes may have been missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Gap {
    /// The PostgreSQL listener connection dropped; until it is back, changes of other
    /// instances are not heard (the consumer's TTL bounds staleness).
    ListenerLost,
    /// The listener is listening again; changes made while it was away were not heard.
    ListenerRestored,
    /// This subscriber fell more than the configured buffer behind.
    Lagged,
    /// Something that is not a change of this store was announced on the channel.
    Unreadable,
}

/// A stream of [`Notification`]s, from the moment of subscribing. It ends when every handle of
/// the store has been dropped.
pub struct Subscription {
    inner: BoxStream<'static, Notification>,
}

impl Subscription {
    pub(crate) fn new(receiver: broadcast::Receiver<Notification>) -> Subscription {
        let inner = futures::stream::unfold(receiver, |mut receiver| async move {
            let notification = match receiver.recv().await {
                Ok(notification) => notification,
                Err(broadcast::error::RecvError::Lagged(_)) => Notification::Gap(Gap::Lagged),
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            Some((notification, receiver))
        });
        Subscription {
            inner: Box::pin(inner),
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Subscription")
    }
}

impl Stream for Subscription {
    type Item = Notification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Notification>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// The longest pause between two attempts to re-establish the listener.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Runs the PostgreSQL listener until `stop` fires or the pool closes: forwards each
/// notification, reports every loss and every recovery as a gap, and reconnects with a capped
/// exponential backoff. `ready` learns the outcome of the first `LISTEN`.
pub(crate) async fn listen(
    pool: PgPool,
    sender: broadcast::Sender<Notification>,
    mut stop: oneshot::Receiver<()>,
    ready: oneshot::Sender<Result<(), crate::Error>>,
) {
    let mut ready = Some(ready);
    let mut backoff = Duration::from_millis(50);
    loop {
        let connected = tokio::select! {
            _ = &mut stop => return,
            connected = connect(&pool) => connected,
        };
        let mut listener = match connected {
            Ok(listener) => listener,
            Err(error) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(Err(error));
                    return;
                }
                if pool.is_closed() {
                    return;
                }
                tracing::warn!(error = %error, "store listener cannot reconnect");
                tokio::select! {
                    _ = &mut stop => return,
                    _ = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        match ready.take() {
            Some(ready) => {
                let _ = ready.send(Ok(()));
            }
            None => {
                tracing::info!("store listener restored");
                let _ = sender.send(Notification::Gap(Gap::ListenerRestored));
            }
        }
        backoff = Duration::from_millis(50);
        loop {
            let received = tokio::select! {
                _ = &mut stop => return,
                received = listener.try_recv() => received,
            };
            match received {
                Ok(Some(notification)) => {
                    let message = match Change::from_payload(notification.payload()) {
                        Some(change) => Notification::Change(change),
                        None => Notification::Gap(Gap::Unreadable),
                    };
                    let _ = sender.send(message);
                }
                // `Ok(None)`: the connection dropped; `Err`: it broke in another way. Either
                // way, start over on a fresh connection under our own backoff.
                Ok(None) | Err(_) => {
                    if pool.is_closed() {
                        return;
                    }
                    tracing::warn!("store listener lost its connection");
                    let _ = sender.send(Notification::Gap(Gap::ListenerLost));
                    break;
                }
            }
        }
    }
}

async fn connect(pool: &PgPool) -> Result<PgListener, crate::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    // Reconnection is ours (above), so that a recovery is always reported.
    listener.eager_reconnect(false);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_round_trip() {
        let change = Change {
            tenant: Tenant::parse("acme").unwrap(),
            agent: Some(AgentName::parse("chat").unwrap()),
            kind: ChangeKind::Label(LabelName::parse("production").unwrap()),
        };
        assert_eq!(Change::from_payload(&change.to_payload()), Some(change));
        let change = Change {
            tenant: Tenant::parse("acme").unwrap(),
            agent: None,
            kind: ChangeKind::Settings,
        };
        assert_eq!(Change::from_payload(&change.to_payload()), Some(change));
    }

    #[test]
    fn foreign_payloads_are_refused() {
        for payload in [
            "",
            "hello",
            r#"{"tenant":"Acme","agent":null,"kind":"settings","label":null}"#,
            r#"{"tenant":"acme","agent":null,"kind":"label","label":null}"#,
            r#"{"tenant":"acme","agent":null,"kind":"settings","label":null,"x":1}"#,
        ] {
            assert_eq!(Change::from_payload(payload), None, "{payload}");
        }
    }
}
