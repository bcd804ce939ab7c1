//! The security headers of every answer — page, API, redirect, error, the stylesheet — set by
//! one middleware over the whole router ([`set`]):
//!
//! - `Content-Security-Policy: ` [`CONTENT_SECURITY_POLICY`]: no script at all (the pages work
//!   without JavaScript), styles from this server's `/static/pages.css` only (no `<style>`, no
//!   `style=""` attribute), forms posting to this server only, and never inside a frame
//!   (`frame-ancestors 'none'`, with `X-Frame-Options: DENY` for older browsers). Inline `<svg>`
//!   is markup, not a resource: a chart drawn with presentation attributes (`fill`, `stroke`)
//!   or the stylesheet's classes renders; one with a `style` attribute does not.
//! - `X-Content-Type-Options: nosniff`: a body is only what its `Content-Type` says.
//! - `Referrer-Policy: no-referrer`: no address of this server leaves in a `Referer`.
//! - `Cache-Control: no-store` unless the handler set one (the pages and the API carry the
//!   user's data; the stylesheet is cacheable).

use axum::extract::Request;
use axum::http::header::CACHE_CONTROL;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

/// The policy of every answer.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
     form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The headers every answer carries, as (name, value; names in lower case).
pub const HEADERS: [(&str, &str); 4] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("x-frame-options", "DENY"),
];

/// The middleware: runs the request, then sets the headers on its answer (replacing any a
/// handler set; `Cache-Control` only when it set none).
pub async fn set(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in HEADERS {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    if !headers.contains_key(CACHE_CONTROL) {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}
