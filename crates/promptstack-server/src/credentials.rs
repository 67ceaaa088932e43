//! Provider credentials of the key's tenant: written, listed and deleted by admins; sealed at
//! rest under the server's credentials key (`PROMPTSTACK_CREDENTIALS_KEY`). A value goes in and
//! never comes out: answers, problems, audit entries and log lines carry names and times only.
// utoipa's `path` macro writes the parameter types it is given fully qualified.
#![allow(unused_qualifications)]

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use promptstack_store::Secret;
use promptstack_store::{CREDENTIALS_KEY_ENV, CredentialInfo, CredentialKey, CredentialName, Role};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Auth;
use crate::engine::store_problem;
use crate::page::{NamePageQuery, PageOf, query};
use crate::problem::{Problem, json_rejection, printable};
use crate::state::AppState;

/// A credential as listed: never its value.
#[derive(Debug, Serialize, ToSchema)]
pub struct CredentialView {
    /// Its name.
    pub name: String,
    /// When it was first written (RFC 3339).
    pub created_at: String,
    /// When it was last written (RFC 3339).
    pub updated_at: String,
    /// The key that last wrote it (none for the operator).
    pub updated_by: Option<String>,
    /// When an eval run last used it (RFC 3339).
    pub last_used_at: Option<String>,
}

impl From<&CredentialInfo> for CredentialView {
    fn from(c: &CredentialInfo) -> Self {
        CredentialView {
            name: c.name.to_string(),
            created_at: c.created_at.to_string(),
            updated_at: c.updated_at.to_string(),
            updated_by: c.updated_by.as_ref().map(ToString::to_string),
            last_used_at: c.last_used_at.map(|t| t.to_string()),
        }
    }
}

/// A credential's value to store.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CredentialWrite {
    /// The secret (an API key of a model provider). Stored sealed; never returned.
    #[schema(min_length = 1)]
    pub value: String,
}

impl std::fmt::Debug for CredentialWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CredentialWrite { value: *** }")
    }
}

/// The server's credentials key, or the problem every credentials route answers without one.
fn credentials_key(state: &AppState) -> Result<Arc<CredentialKey>, Problem> {
    state.inner.config.credentials_key.clone().ok_or_else(|| {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "credentials-not-configured",
            format!(
                "this server stores no credentials: start it with {CREDENTIALS_KEY_ENV} set to \
                 32 random bytes in base64 (`openssl rand -base64 32`)"
            ),
        )
    })
}

fn credential_name(name: &str) -> Result<CredentialName, Problem> {
    CredentialName::parse(name)
        .map_err(|_| Problem::not_found(format!("no credential `{}`", printable(name))))
}

/// `PUT /v1/credentials/{name}`: write a provider credential (admins; audited by name).
#[utoipa::path(put, path = "/v1/credentials/{name}", tag = "credentials",
    params(("name" = inline(crate::contract::CredentialNameSchema), Path, description = "The credential's name")),
    request_body = CredentialWrite,
    responses((status = 201, body = CredentialView, description = "Created"),
        (status = 200, body = CredentialView, description = "Replaced"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "The server has no credentials key"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn put_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
    body: Result<Json<CredentialWrite>, JsonRejection>,
) -> Result<Response, Problem> {
    auth.require(Role::Admin, "writing credentials")?;
    let key = credentials_key(&state)?;
    let name = CredentialName::parse(&name)
        .map_err(|e| Problem::unprocessable("invalid-name", e.to_string()))?;
    let Json(body) = body.map_err(json_rejection)?;
    let secret = Secret::new(body.value);
    let (info, created) = state
        .inner
        .store
        .put_credential(&auth.0.tenant, &name, &secret, &key, Some(&auth.0.key_id))
        .await
        .map_err(|e| store_problem(&state, e))?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(CredentialView::from(&info))).into_response())
}

/// `GET /v1/credentials`: the tenant's credentials by name, without values (admins).
#[utoipa::path(get, path = "/v1/credentials", tag = "credentials", params(NamePageQuery),
    responses((status = 200, body = PageOf<CredentialView>),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "The server has no credentials key"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn list_credentials(
    State(state): State<AppState>,
    auth: Auth,
    page: Result<Query<NamePageQuery>, QueryRejection>,
) -> Result<Json<PageOf<CredentialView>>, Problem> {
    auth.require(Role::Admin, "listing credentials")?;
    credentials_key(&state)?;
    let page = query(page)?.request()?;
    let found = state
        .inner
        .store
        .credentials(&auth.0.tenant, &page)
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(Json(PageOf {
        items: found.items.iter().map(CredentialView::from).collect(),
        next: found.next.map(|c| c.as_str().to_owned()),
    }))
}

/// `DELETE /v1/credentials/{name}`: delete a credential (admins; audited by name).
#[utoipa::path(delete, path = "/v1/credentials/{name}", tag = "credentials",
    params(("name" = inline(crate::contract::CredentialNameSchema), Path, description = "The credential's name")),
    responses((status = 204, description = "Deleted"),
        (status = 503, body = Problem, content_type = "application/problem+json", description = "The server has no credentials key"),
        (status = "4XX", body = Problem, content_type = "application/problem+json")),
    security(("bearer" = [])))]
pub async fn delete_credential(
    State(state): State<AppState>,
    auth: Auth,
    Path(name): Path<String>,
) -> Result<StatusCode, Problem> {
    auth.require(Role::Admin, "deleting credentials")?;
    credentials_key(&state)?;
    let name = credential_name(&name)?;
    state
        .inner
        .store
        .delete_credential(&auth.0.tenant, &name, Some(&auth.0.key_id))
        .await
        .map_err(|e| store_problem(&state, e))?;
    Ok(StatusCode::NO_CONTENT)
}
