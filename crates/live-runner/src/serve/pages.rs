//! The server-rendered HTML pages (`/login`, `/profile/facts`, `/deployments/{id}/memory`):
//! the mount point, filled in by the pages work of issue #14. Pages read through the same
//! [`AppState::store_for`](super::AppState::store_for) as the API (row-level security) and take
//! the caller from the `token` cookie ([`auth::caller_of`](super::auth::caller_of) lets a page
//! answer a missing token with its login form instead of a JSON 401).

use axum::Router;

use super::AppState;

/// The pages' routes, merged at the root by [`super::router`].
pub fn router() -> Router<AppState> {
    Router::new()
}
