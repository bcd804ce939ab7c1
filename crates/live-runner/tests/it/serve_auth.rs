//! Authentication of the chat server through real HTTP: no token, a bad signature, an expired
//! token and a token of another role are 401 with a JSON error; a token works from the
//! `Authorization` header and from the `token` cookie.

use chrono::{Duration, Utc};
use live_runner::serve::Auth;
use live_runner::serve::auth::Claims;
use reqwest::StatusCode;

use crate::common::serve::{answer, no_model, server, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_bad_expired_and_foreign_tokens_are_401_json() {
    let s = server(no_model()).await;
    let w = world(&s).await;

    let (status, body) = answer(s.http.get(s.url("/api/facts")).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"].as_str().unwrap().contains("no token"),
        "{body}"
    );

    let other = Auth::new("a-different-secret-0123456789abcdef").unwrap();
    let forged = other
        .mint(w.a.user(), Duration::hours(1), Utc::now())
        .unwrap();
    let (status, body) = s.get("/api/facts", &forged).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"].as_str().unwrap().contains("signature"),
        "{body}"
    );

    let expired = s
        .auth
        .mint(
            w.a.user(),
            Duration::hours(1),
            Utc::now() - Duration::hours(2),
        )
        .unwrap();
    let (status, body) = s.get("/api/facts", &expired).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        body["error"].as_str().unwrap().contains("expired"),
        "{body}"
    );

    let service = s
        .auth
        .sign(&Claims {
            sub: w.a.user(),
            role: "service_role".into(),
            exp: (Utc::now() + Duration::hours(1)).timestamp(),
            iat: None,
        })
        .unwrap();
    let (status, body) = s.get("/api/facts", &service).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"].as_str().unwrap().contains("role"), "{body}");

    let (status, body) = s.get("/api/facts", "not-a-jwt").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"].is_string(), "{body}");

    // Every user route is behind the token, not only the facts.
    for path in [
        "/api/me".to_owned(),
        format!("/api/deployments/{}/memory", w.a.deployment()),
        format!("/api/facts/{}/changes", w.a.fact.id),
    ] {
        let (status, body) = answer(s.http.get(s.url(&path)).send().await.unwrap()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{path}");
        assert!(body["error"].is_string(), "{path}: {body}");
    }
    let (status, _) = answer(
        s.http
            .post(s.url("/api/chat"))
            .json(&serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_valid_token_works_from_the_header_and_from_the_cookie() {
    let s = server(no_model()).await;
    let w = world(&s).await;

    let (status, body) = s.get("/api/me", &w.a.token).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["userId"], w.a.user().to_string());

    let (status, body) = answer(
        s.http
            .get(s.url("/api/facts"))
            .header("cookie", format!("theme=plain; token={}", w.b.token))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let facts = body.as_array().unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0]["id"], w.b.fact.id.to_string());

    // No auth on the health check; an unknown route is a JSON 404.
    let health = s.http.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let (status, body) = s.get("/api/nothing-here", &w.a.token).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].is_string(), "{body}");
}
