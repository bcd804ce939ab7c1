//! The cross-site request guard: a state-changing request (any method but GET, HEAD, OPTIONS)
//! that could be authenticated by the `token` cookie — one without an `Authorization` header,
//! which a page of another origin cannot add — must come from this server's own origin:
//!
//! - `Sec-Fetch-Site`, when the browser sends it, must be `same-origin` (or `none`: typed or
//!   bookmarked by the user). `same-site` is refused: another port of the same host is the same
//!   *site* but not the same *origin*, and a page there must not change anything here.
//! - `Origin`, when sent, must be this server's: `http(s)://` + the request's `Host` exactly
//!   (port included). `null` is refused, except with `Sec-Fetch-Site: same-origin`: a browser
//!   sends `Origin: null` on its own pages' form posts when the page's `Referrer-Policy` is
//!   `no-referrer` (as this server's are), and the `Sec-Fetch-Site` it sends, which no page can
//!   set, says the form is this server's.
//!
//! A request with neither header is not a browser's form or script (browsers send `Origin` on
//! every cross-origin POST): it passes. `SameSite=Lax` on the cookie stays as a second line.
//! Behind a reverse proxy, the proxy must pass the `Host` the browser used.
//!
//! Refused: 403 with the API's JSON error, before any handler runs (nothing is read or written).

use axum::extract::Request;
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN};
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// Why `headers` show a request from another origin, if they do.
///
/// # Errors
/// The reason, for the 403's message.
pub fn check(method: &Method, headers: &HeaderMap) -> Result<(), String> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        || headers.contains_key(AUTHORIZATION)
    {
        return Ok(());
    }
    let mut same_origin = false;
    if let Some(site) = headers.get("sec-fetch-site") {
        match site.to_str().map(str::trim) {
            Ok(s) if s.eq_ignore_ascii_case("same-origin") => same_origin = true,
            Ok(s) if s.eq_ignore_ascii_case("none") => {}
            Ok(s) => {
                return Err(format!(
                    "a state change from another origin is refused (Sec-Fetch-Site: {s})"
                ));
            }
            Err(_) => return Err("a state change with an unreadable Sec-Fetch-Site".to_owned()),
        }
    }
    if let Some(origin) = headers.get(ORIGIN) {
        let origin = origin.to_str().unwrap_or_default().trim();
        // Under `Referrer-Policy: no-referrer` a browser's own same-origin post says `null`.
        if same_origin && origin == "null" {
            return Ok(());
        }
        let host = headers
            .get(HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::trim)
            .unwrap_or_default();
        let own = !host.is_empty()
            && ["http://", "https://"].iter().any(|scheme| {
                origin.len() == scheme.len() + host.len()
                    && origin
                        .get(..scheme.len())
                        .is_some_and(|s| s.eq_ignore_ascii_case(scheme))
                    && origin
                        .get(scheme.len()..)
                        .is_some_and(|h| h.eq_ignore_ascii_case(host))
            });
        if !own {
            return Err(format!(
                "a state change from another origin is refused (Origin: {origin}, this server: {host})"
            ));
        }
    }
    Ok(())
}

/// The guard as a middleware over the whole router (see the module docs).
pub async fn guard(request: Request, next: Next) -> Response {
    match check(request.method(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(why) => {
            tracing::warn!(method = %request.method(), path = %request.uri().path(), %why, "cross-origin request refused");
            ApiError::forbidden(why).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_bytes(v.as_bytes()).unwrap());
        }
        h
    }

    #[test]
    fn only_this_origin_may_change_anything() {
        let post = Method::POST;
        let host = ("host", "127.0.0.1:8080");
        for ok in [
            vec![host],
            vec![host, ("origin", "http://127.0.0.1:8080")],
            vec![host, ("origin", "HTTPS://127.0.0.1:8080")],
            vec![
                host,
                ("sec-fetch-site", "same-origin"),
                ("origin", "http://127.0.0.1:8080"),
            ],
            vec![host, ("sec-fetch-site", "none")],
            // A same-origin form post from a page whose Referrer-Policy is no-referrer.
            vec![host, ("sec-fetch-site", "same-origin"), ("origin", "null")],
            // Not the cookie's: a bearer token cannot come from another origin's page.
            vec![
                host,
                ("origin", "http://evil.test"),
                ("authorization", "Bearer x"),
            ],
        ] {
            assert_eq!(check(&post, &headers(&ok)), Ok(()), "{ok:?}");
        }
        for bad in [
            vec![host, ("origin", "http://127.0.0.1:9999")],
            vec![host, ("origin", "http://evil.test")],
            vec![host, ("origin", "null")],
            vec![host, ("origin", "null"), ("sec-fetch-site", "none")],
            vec![host, ("origin", "null"), ("sec-fetch-site", "cross-site")],
            vec![host, ("origin", "null"), ("sec-fetch-site", "same-site")],
            vec![host, ("origin", "http://127.0.0.1:8080.evil.test")],
            vec![host, ("origin", "ht\u{e9}://127.0.0.1:8080")],
            vec![host, ("sec-fetch-site", "same-site")],
            vec![host, ("sec-fetch-site", "cross-site")],
            vec![("origin", "http://127.0.0.1:8080")],
        ] {
            assert!(check(&post, &headers(&bad)).is_err(), "{bad:?}");
        }
        let evil = headers(&[host, ("origin", "http://evil.test")]);
        assert_eq!(check(&Method::GET, &evil), Ok(()), "reads are not guarded");
        assert!(check(&Method::PATCH, &evil).is_err());
    }
}
