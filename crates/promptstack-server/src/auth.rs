//! `Authorization: Bearer KEY`: who a request is, what its role allows, how fast it may go.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use promptstack_store::{Principal, Role};
use sha2::{Digest as _, Sha256};

use crate::problem::Problem;
use crate::state::AppState;

/// The longest `Authorization` header read; a key is far shorter.
const MAX_HEADER: usize = 512;

/// An authenticated request: the key's tenant, role and id.
pub struct Auth(pub Arc<Principal>);

impl Auth {
    /// Refuses unless the key's role is at least `role`.
    pub fn require(&self, role: Role, what: &str) -> Result<(), Problem> {
        // Roles are ordered most powerful first.
        if self.0.role <= role {
            Ok(())
        } else {
            Err(Problem::forbidden(format!(
                "{what} needs an {} key; this key is a {} key",
                role.as_str(),
                self.0.role.as_str()
            )))
        }
    }
}

impl FromRequestParts<AppState> for Auth {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .ok_or_else(Problem::unauthorized)?;
        if header.len() > MAX_HEADER {
            return Err(Problem::unauthorized());
        }
        let text = header.to_str().map_err(|_| Problem::unauthorized())?;
        let key = text
            .strip_prefix("Bearer ")
            .or_else(|| text.strip_prefix("bearer "))
            .ok_or_else(Problem::unauthorized)?
            .trim();
        let inner = &state.inner;
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        let principal = match inner.keys.fresh(&digest) {
            Some(principal) => principal,
            None => authenticate(state, key, digest).await?,
        };
        if let Err(seconds) = inner.rate.check(principal.key_id.as_str()) {
            let mut problem = Problem::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "rate-limited",
                format!(
                    "this key made more than {} requests a second",
                    inner.config.rate_per_second
                ),
            );
            problem.retry_after = Some(seconds);
            return Err(problem);
        }
        crate::engine::note_tenant(&principal.tenant);
        Ok(Auth(principal))
    }
}

/// The key's principal when the cache holds no fresh one: from the store, or the last good value
/// during an outage. A key the store does not know is remembered briefly and spends one unit of
/// the failure budget.
async fn authenticate(
    state: &AppState,
    key: &str,
    digest: [u8; 32],
) -> Result<Arc<Principal>, Problem> {
    let inner = &state.inner;
    // A key the store just said it does not know costs nothing to refuse again (a key the store
    // does not know is never in the cache).
    if inner.failed_keys.contains(&digest) {
        return Err(Problem::unauthorized());
    }
    // Past the budget of failed authentications, a key the cache does not know waits rather than
    // costing a store read.
    if let Some(seconds) = inner.failures.spent() {
        let mut problem = Problem::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "too many requests with unknown keys; try again shortly",
        );
        problem.retry_after = Some(seconds);
        return Err(problem);
    }
    let found = inner
        .keys
        .get(&digest, async {
            match inner.store.authenticate(key).await? {
                Some(principal) => Ok(Arc::new(principal)),
                None => Err(promptstack_store::Error::new(
                    promptstack_store::ErrorKind::NotFound,
                    "no such key",
                )),
            }
        })
        .await;
    match found {
        Ok(cached) => Ok(cached.value),
        Err(error) if error.kind() == promptstack_store::ErrorKind::NotFound => {
            inner.failed_keys.insert(digest);
            inner.failures.record();
            Err(Problem::unauthorized())
        }
        Err(error) => {
            inner
                .metrics
                .store_errors
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(error.into())
        }
    }
}
