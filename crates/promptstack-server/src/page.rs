//! Paging of the listings: the query parameters, their checks and the page the answer holds.
// utoipa's `IntoParams` derive writes the parameter types it is given fully qualified.
#![allow(unused_qualifications)]

use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use promptstack_store::{AgentName, Cursor, PageRequest};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::problem::Problem;

/// The most items one page of a listing holds (the store's default `max_page`); a larger
/// `limit` is refused, as the OpenAPI document states.
pub const MAX_PAGE: u32 = 200;

/// Paging of a listing ordered by when its items were made (versions, the audit log): its
/// cursor is a position, 1 to 18 decimal digits without a leading zero.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// At most this many items: 1 to 200 (default 50). A limit outside that range is refused
    /// (400), never cut.
    #[param(minimum = 1, maximum = 200, default = 50)]
    pub limit: Option<u32>,
    /// The cursor of the previous page's `next` (422 `invalid-cursor` when it is not one).
    #[param(value_type = Option<crate::contract::PositionCursorSchema>, inline)]
    pub after: Option<String>,
}

impl PageQuery {
    pub(crate) fn request(&self) -> Result<PageRequest, Problem> {
        page(self.limit, self.after.as_deref(), |after| {
            let digits = after.bytes().all(|b| b.is_ascii_digit());
            digits && (1..=18).contains(&after.len()) && !after.starts_with('0')
        })
    }
}

/// Paging of a listing ordered by name (agents, credentials): its cursor is the last name of the
/// previous page.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NamePageQuery {
    /// At most this many items: 1 to 200 (default 50). A limit outside that range is refused
    /// (400), never cut.
    #[param(minimum = 1, maximum = 200, default = 50)]
    pub limit: Option<u32>,
    /// The cursor of the previous page's `next` (422 `invalid-cursor` when it is not one).
    #[param(value_type = Option<crate::contract::NameCursorSchema>, inline)]
    pub after: Option<String>,
}

impl NamePageQuery {
    pub(crate) fn request(&self) -> Result<PageRequest, Problem> {
        page(self.limit, self.after.as_deref(), |after| {
            AgentName::parse(after).is_ok()
        })
    }
}

/// A page request of `limit` items after `after`, which `fits` the listing's cursors: a limit
/// outside 1 to [`MAX_PAGE`] is a 400, a cursor that does not fit a 422 `invalid-cursor`.
fn page(
    limit: Option<u32>,
    after: Option<&str>,
    fits: impl Fn(&str) -> bool,
) -> Result<PageRequest, Problem> {
    let mut page = PageRequest::first();
    if let Some(limit) = limit {
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(Problem::bad_request(format!(
                "`limit` must be between 1 and {MAX_PAGE}, got {limit}"
            )));
        }
        page = page.limit(limit);
    }
    if let Some(after) = after {
        let cursor = Cursor::parse(after)
            .ok()
            .filter(|_| fits(after))
            .ok_or_else(|| {
                Problem::unprocessable("invalid-cursor", "the page cursor is malformed")
            })?;
        page = page.after(cursor);
    }
    Ok(page)
}

pub(crate) fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, Problem> {
    query
        .map(|Query(q)| q)
        .map_err(|e| Problem::bad_request(e.body_text()))
}

/// A page of items.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageOf<T> {
    /// The items.
    pub items: Vec<T>,
    /// The cursor of the next page, when there is one.
    pub next: Option<String>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_largest_page_is_the_stores() {
        let config = promptstack_store::StoreConfig::default();
        assert_eq!(super::MAX_PAGE, config.max_page);
    }
}
