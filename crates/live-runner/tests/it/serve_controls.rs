//! The controls over real HTTP on PostgreSQL: `POST /api/deployments/{id}/pause|resume|stop`
//! and `GET …/controls` as the caller under row-level security (another user's deployment is a
//! 404), each change audited with the caller's id; the deployment page's buttons; and the
//! cross-origin guard: a state change from another origin — another port of the same host
//! included — changes nothing, on the API and on the pages' forms.

use db::{ControlStore, DeploymentStatus, FactStore, RegistryStore};
use reqwest::StatusCode;
use reqwest::header::{COOKIE, LOCATION};
use serde_json::{Value, json};

use crate::common::serve::{Server, no_model, server, world};

async fn status(s: &Server, id: uuid::Uuid) -> DeploymentStatus {
    s.store.get_deployment(id).await.expect("deployment").status
}

async fn audit_rows(s: &Server, id: uuid::Uuid) -> i64 {
    s.pg.count(&format!(
        "SELECT count(*) FROM deployment_controls WHERE deployment_id = '{id}'"
    ))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_pauses_resumes_and_stops_as_the_caller_with_its_audit_row() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let base = format!("/api/deployments/{}", a.deployment());

    // An empty body is a control without a reason.
    let (code, body) = s.post_empty(&format!("{base}/pause"), &a.token).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["action"], "pause");
    assert_eq!(body["fromStatus"], "active");
    assert_eq!(body["toStatus"], "paused");
    assert_eq!(body["requestedBy"], a.user().to_string());
    assert_eq!(body["reason"], Value::Null);
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Paused);

    // Paused already: 409 naming the status, nothing written.
    let (code, body) = s.post_empty(&format!("{base}/pause"), &a.token).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("is paused"),
        "{body}"
    );
    assert_eq!(audit_rows(&s, a.deployment()).await, 1);

    // Bad bodies: 422 naming the field; nothing changes.
    for (bad, field) in [
        (json!({"flatten": true}), "flatten"),
        (json!({"reason": ""}), "reason"),
        (json!({"reason": "a\u{0}b"}), "reason"),
        (json!({"reason": "x".repeat(501)}), "reason"),
        (json!({"why": "typo"}), "why"),
    ] {
        let (code, body) = s.post(&format!("{base}/resume"), &a.token, &bad).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
        assert_eq!(body["field"], field, "{bad}: {body}");
    }
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Paused);

    let (code, body) = s
        .post(
            &format!("{base}/resume"),
            &a.token,
            &json!({"reason": "after the CPI print"}),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["reason"], "after the CPI print");
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Active);

    // Another user's deployment: 404 for every route, nothing changed or shown.
    let theirs = format!("/api/deployments/{}", a.deployment());
    for action in ["pause", "resume", "stop"] {
        let (code, body) = s.post_empty(&format!("{theirs}/{action}"), &b.token).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{action}: {body}");
    }
    let (code, _) = s.get(&format!("{theirs}/controls"), &b.token).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Active);
    let (code, _) = s
        .post_empty("/api/deployments/not-a-uuid/pause", &a.token)
        .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    let (code, _) = s.post_empty(&format!("{base}/pause"), "not-a-token").await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);

    // Stop with flatten: the flatten is pending until a runner does it.
    let (code, body) = s
        .post(
            &format!("{base}/stop"),
            &a.token,
            &json!({"flatten": true, "reason": "kill switch"}),
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["flatten"], true);
    assert_eq!(body["toStatus"], "stopped");
    let (code, body) = s.post_empty(&format!("{base}/resume"), &a.token).await;
    assert_eq!(code, StatusCode::CONFLICT, "{body}");
    assert!(body["error"].as_str().unwrap().contains("final"), "{body}");

    let (code, body) = s.get(&format!("{base}/controls"), &a.token).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "stopped");
    assert_eq!(body["flatten"]["attempts"], 0);
    assert_eq!(body["flatten"]["doneAt"], Value::Null);
    let actions: Vec<&str> = body["controls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, vec!["stop", "resume", "pause"], "newest first");
    // The audit rows name the caller, in the database too.
    assert_eq!(
        s.pg.count(&format!(
            "SELECT count(*) FROM deployment_controls WHERE deployment_id = '{}' \
             AND requested_by = '{}'",
            a.deployment(),
            a.user()
        ))
        .await,
        3
    );
    // B's own deployment is untouched and B's trail empty.
    let (code, body) = s
        .get(
            &format!("/api/deployments/{}/controls", b.deployment()),
            &b.token,
        )
        .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(body["status"], "active");
    assert_eq!(body["flatten"], Value::Null);
    assert!(body["controls"].as_array().unwrap().is_empty());
}

/// A client that does not follow redirects.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

/// `POST path` with the cookie, the form and these extra headers.
async fn post_cookie(
    s: &Server,
    path: &str,
    token: &str,
    form: &[(&str, &str)],
    headers: &[(&str, String)],
) -> reqwest::Response {
    let mut r = http()
        .post(s.url(path))
        .header(COOKIE, format!("token={token}"))
        .form(form);
    for (k, v) in headers {
        r = r.header(*k, v.as_str());
    }
    r.send().await.expect("POST")
}

async fn page(s: &Server, path: &str, token: &str) -> (StatusCode, String) {
    let r = http()
        .get(s.url(path))
        .header(COOKIE, format!("token={token}"))
        .send()
        .await
        .expect("GET");
    (r.status(), r.text().await.expect("body"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_from_another_origin_changes_nothing() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let a = &w.a;
    let own = s.base.clone();
    let port: u16 = own.rsplit(':').next().unwrap().parse().unwrap();
    let other_port = format!("http://127.0.0.1:{}", if port == 1 { 2 } else { port - 1 });
    let pause_api = format!("/api/deployments/{}/pause", a.deployment());
    let pause_page = format!("/deployments/{}/pause", a.deployment());
    let facts_before = s.store.list_facts(a.user(), true).await.unwrap().len();

    let attacks: Vec<Vec<(&str, String)>> = vec![
        // Another port of the same host (the same site, not the same origin).
        vec![
            ("origin", other_port.clone()),
            ("sec-fetch-site", "same-site".into()),
        ],
        vec![("origin", other_port.clone())],
        vec![("sec-fetch-site", "same-site".into())],
        // Another site.
        vec![
            ("origin", "http://evil.example".into()),
            ("sec-fetch-site", "cross-site".into()),
        ],
        vec![("origin", "null".into())],
    ];
    for headers in &attacks {
        for path in [&pause_api, &pause_page] {
            let r = post_cookie(&s, path, &a.token, &[("reason", "csrf")], headers).await;
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "{path} {headers:?}");
            let body: Value = r.json().await.expect("JSON error");
            assert!(
                body["error"].as_str().unwrap().contains("another origin"),
                "{body}"
            );
        }
        let r = post_cookie(
            &s,
            "/profile/facts",
            &a.token,
            &[
                ("fact", "Planted by another origin."),
                ("confidence", "asserted"),
            ],
            headers,
        )
        .await;
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "facts {headers:?}");
    }
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Active);
    assert_eq!(audit_rows(&s, a.deployment()).await, 0);
    assert_eq!(
        s.store.list_facts(a.user(), true).await.unwrap().len(),
        facts_before,
        "no fact planted"
    );

    // A bearer token is not the cookie: another origin's page cannot send one.
    let r = http()
        .post(s.url(&pause_api))
        .bearer_auth(&a.token)
        .header("origin", other_port.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Paused);

    // The server's own origin, as a browser sends it.
    let r = post_cookie(
        &s,
        &format!("/deployments/{}/resume", a.deployment()),
        &a.token,
        &[("reason", "")],
        &[("origin", own), ("sec-fetch-site", "same-origin".into())],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(status(&s, a.deployment()).await, DeploymentStatus::Active);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deployment_page_shows_the_status_and_changes_it_with_plain_forms() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let memory = format!("/deployments/{}/memory", a.deployment());
    let own = vec![("origin", s.base.clone())];

    let (code, body) = page(&s, &memory, &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        body.contains(r#"id="status-badge">active</span>"#),
        "{body}"
    );
    assert!(body.contains(r#"id="pause""#) && body.contains(r#"id="stop""#));
    assert!(!body.contains(r#"id="resume""#));
    assert!(!body.contains("<script"), "no JavaScript");

    let r = post_cookie(
        &s,
        &format!("/deployments/{}/pause", a.deployment()),
        &a.token,
        &[("reason", "<b>news</b> at 14:30")],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers().get(LOCATION).unwrap(),
        &format!("{memory}?done=paused")
    );
    let (_, body) = page(&s, &format!("{memory}?done=paused"), &a.token).await;
    assert!(
        body.contains(r#"id="status-badge">paused</span>"#),
        "{body}"
    );
    assert!(body.contains("Paused: no tick until you resume it."));
    assert!(body.contains(r#"id="resume""#) && !body.contains(r#"id="pause""#));
    // The trail: who, what, the reason escaped.
    assert!(body.contains(&a.user().to_string()));
    assert!(body.contains("active → paused"), "{body}");
    assert!(
        body.contains("&lt;b&gt;news&lt;&#x2f;b&gt; at 14:30"),
        "{body}"
    );
    assert!(!body.contains("<b>news</b>"));

    // Refused: the page again with the reason, 409.
    let r = post_cookie(
        &s,
        &format!("/deployments/{}/pause", a.deployment()),
        &a.token,
        &[],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body = r.text().await.unwrap();
    assert!(
        body.contains(r#"id="control-error""#) && body.contains("already paused"),
        "{body}"
    );

    // Stop with the checkbox: the flatten waits for a runner.
    let r = post_cookie(
        &s,
        &format!("/deployments/{}/stop", a.deployment()),
        &a.token,
        &[("flatten", "on"), ("reason", "kill switch")],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let (_, body) = page(&s, &format!("{memory}?done=flattening"), &a.token).await;
    assert!(
        body.contains(r#"id="status-badge">stopped</span>"#),
        "{body}"
    );
    assert!(body.contains("waiting for a runner"), "{body}");
    assert!(!body.contains(r#"id="pause""#) && !body.contains(r#"id="stop""#));
    assert!(!body.contains(r#"id="flatten-now""#), "already asked");
    let flatten = s.store.flatten_state(a.deployment()).await.unwrap();
    assert!(flatten.is_some_and(|f| f.done_at.is_none()));

    // Another user's deployment: a 404 page, nothing changed.
    let r = post_cookie(
        &s,
        &format!("/deployments/{}/pause", b.deployment()),
        &a.token,
        &[],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(status(&s, b.deployment()).await, DeploymentStatus::Active);
    let (code, _) = page(
        &s,
        &format!("/deployments/{}/memory", b.deployment()),
        &a.token,
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}
