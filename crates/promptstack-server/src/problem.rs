//! Errors as `application/problem+json` (RFC 9457), with the located diagnostics that caused them.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The media type of every error answer.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// An error answer: a problem document (RFC 9457).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem (`about:blank` when the status says it all).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind of problem.
    pub title: &'static str,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong this time.
    pub detail: String,
    /// Located diagnostics (spec errors, lint errors), when there are any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub diagnostics: Vec<serde_json::Value>,
    /// Seconds to wait before retrying (429), also in `Retry-After`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
    /// The gate that refused a move of `production`, with the comparison it read (409
    /// `gate-refused`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub gate: Option<Box<serde_json::Value>>,
}

impl Problem {
    /// A problem with `status`, a type derived from `code` and a detail.
    pub fn new(status: StatusCode, code: &str, detail: impl Into<String>) -> Problem {
        Problem {
            kind: format!("https://promptstack.dev/problems/{code}"),
            title: status.canonical_reason().unwrap_or("Error"),
            status: status.as_u16(),
            detail: detail.into(),
            diagnostics: Vec::new(),
            retry_after: None,
            gate: None,
        }
    }

    /// 400: the request cannot be read.
    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, "bad-request", detail)
    }

    /// 401: no key, or a key that is not valid.
    pub fn unauthorized() -> Problem {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send a valid API key as `Authorization: Bearer KEY`",
        )
    }

    /// 403: the key's role may not do this.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, "forbidden", detail)
    }

    /// 404: no such object in the key's tenant.
    pub fn not_found(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, "not-found", detail)
    }

    /// 422: the request is well-formed but its content is invalid.
    pub fn unprocessable(code: &str, detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::UNPROCESSABLE_ENTITY, code, detail)
    }

    /// 503: the store cannot be reached; nothing was written.
    pub fn unavailable(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::SERVICE_UNAVAILABLE, "store-unavailable", detail)
    }

    /// Adds the gate that refused a move.
    pub fn with_gate(mut self, gate: serde_json::Value) -> Problem {
        self.gate = Some(Box::new(gate));
        self
    }

    /// Adds located diagnostics.
    pub fn with_diagnostics(mut self, diagnostics: Vec<serde_json::Value>) -> Problem {
        self.diagnostics = diagnostics;
        self
    }

    /// The status as a [`StatusCode`].
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl From<promptstack_store::Error> for Problem {
    fn from(error: promptstack_store::Error) -> Problem {
        use promptstack_store::ErrorKind as K;
        match error.kind() {
            K::NotFound => Problem::not_found(error.to_string()),
            K::Conflict => Problem::new(StatusCode::CONFLICT, "conflict", error.to_string()),
            K::Invalid => Problem::unprocessable("invalid", error.to_string()),
            K::TooLarge => Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                error.to_string(),
            ),
            K::Quota => Problem::unprocessable("quota-exceeded", error.to_string()),
            K::Unavailable => Problem::unavailable(format!(
                "the store cannot be reached; nothing was written: {error}"
            )),
            _ => {
                tracing::error!(%error, "store error");
                Problem::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "the store failed; see the server log",
                )
            }
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry = self.retry_after;
        let body = serde_json::to_vec(&self).unwrap_or_else(|_| b"{}".to_vec());
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(seconds) = retry {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A JSON body that failed to parse, as a located 400/422 problem.
pub fn json_rejection(rejection: axum::extract::rejection::JsonRejection) -> Problem {
    use axum::extract::rejection::JsonRejection as R;
    match rejection {
        R::JsonDataError(e) => Problem::unprocessable("invalid-body", body_text(&e)),
        R::JsonSyntaxError(e) => Problem::bad_request(body_text(&e)),
        R::MissingJsonContentType(_) => Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as `Content-Type: application/json`",
        ),
        R::BytesRejection(e) => {
            let status = e.status();
            if status == StatusCode::PAYLOAD_TOO_LARGE {
                Problem::new(
                    status,
                    "too-large",
                    "the request body is larger than the limit",
                )
            } else {
                Problem::new(status, "bad-body", e.body_text())
            }
        }
        other => Problem::bad_request(other.body_text()),
    }
}

fn body_text(error: &dyn std::error::Error) -> String {
    // serde_json's message carries the line and column of the problem.
    match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => error.to_string(),
    }
}

/// `text` cut short and stripped of control characters, for error messages.
pub fn printable(text: &str) -> String {
    text.chars()
        .take(80)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}
