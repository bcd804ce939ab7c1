//! Alert channels over real HTTP on PostgreSQL: `GET/POST /api/alerts/channels`, `DELETE
//! /api/alerts/channels/{id}`, `POST …/{id}/test` and `GET /api/alerts/deliveries` as the
//! caller under row-level security — a URL path, an HMAC secret or a bot token is never in an
//! answer or a page, a bad channel is a 422 naming its field, another user's channel a 404 —
//! and the `/alerts` page's plain forms behind the cross-origin guard.

use reqwest::StatusCode;
use reqwest::header::LOCATION;
use serde_json::json;

use crate::common::serve::{Server, no_model, page, post_form, server, world};

const SECRETS: [&str; 3] = [
    "whsec-s3cret-key",
    "777:bot-s3cret-token",
    "/T0/B0/slack-s3cret",
];

fn no_secret(text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "a secret ({s}) shown back: {text}");
    }
}

async fn delete(s: &Server, path: &str, token: &str) -> StatusCode {
    s.http
        .delete(s.url(path))
        .bearer_auth(token)
        .send()
        .await
        .expect("DELETE")
        .status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_are_added_listed_tested_and_deleted_without_showing_a_secret() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);
    let path = "/api/alerts/channels";

    let (code, hook) = s
        .post(
            path,
            &a.token,
            &json!({"name": "ops hook", "kind": "webhook", "url": "https://hooks.example.com/in",
                    "secret": SECRETS[0], "events": ["order_executed", "halt"]}),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{hook}");
    assert_eq!(hook["target"], "https://hooks.example.com");
    assert_eq!(hook["secretSet"], true);
    assert_eq!(hook["events"], json!(["order_executed", "halt"]));
    let (code, tg) = s
        .post(
            path,
            &a.token,
            &json!({"name": "phone", "kind": "telegram", "botToken": SECRETS[1],
                    "chatId": "-10042", "events": ["position_closed"]}),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{tg}");
    assert_eq!(tg["target"], "Telegram chat -10042");
    let (code, slack) = s
        .post(
            path,
            &a.token,
            &json!({"name": "team", "kind": "slack",
                    "url": format!("https://hooks.slack.example{}", SECRETS[2]),
                    "events": ["rejection"]}),
        )
        .await;
    assert_eq!(code, StatusCode::CREATED, "{slack}");
    assert_eq!(slack["secretSet"], false);
    for body in [&hook, &tg, &slack] {
        no_secret(&body.to_string());
    }

    let (code, listed) = s.get(path, &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(listed.as_array().unwrap().len(), 3);
    no_secret(&listed.to_string());
    let (_, theirs) = s.get(path, &b.token).await;
    assert_eq!(theirs, json!([]));

    // Bad channels: 422 naming the field; nothing stored.
    for (body, field) in [
        (
            json!({"name": "x", "kind": "pager", "events": ["halt"]}),
            "kind",
        ),
        (
            json!({"name": "x", "kind": "slack", "url": "ftp://h/x", "events": ["halt"]}),
            "url",
        ),
        (
            json!({"name": "x", "kind": "webhook", "url": "https://h.example/x", "events": ["halt"]}),
            "secret",
        ),
        (
            json!({"name": "x", "kind": "telegram", "botToken": "1:a", "events": ["halt"]}),
            "chatId",
        ),
        (
            json!({"name": "x", "kind": "discord", "url": "https://h.example/x", "events": ["nope"]}),
            "events",
        ),
        (
            json!({"name": "x", "kind": "discord", "url": "https://h.example/x", "events": []}),
            "events",
        ),
        (
            json!({"name": "a\u{0}b", "kind": "discord", "url": "https://h.example/x", "events": ["halt"]}),
            "name",
        ),
    ] {
        let (code, e) = s.post(path, &a.token, &body).await;
        assert_eq!(code, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {e}");
        assert_eq!(e["field"], field, "{body}: {e}");
    }

    // A test message: queued for the runner's worker; the deliveries list shows it pending.
    let hook_id = hook["id"].as_str().unwrap();
    let (code, queued) = s
        .post_empty(&format!("{path}/{hook_id}/test"), &a.token)
        .await;
    assert_eq!(code, StatusCode::ACCEPTED, "{queued}");
    let (code, sent) = s.get("/api/alerts/deliveries", &a.token).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(sent[0]["id"], queued["deliveryId"]);
    assert_eq!(sent[0]["kind"], "test");
    assert_eq!(sent[0]["status"], "pending");
    let (code, _) = s
        .post_empty(&format!("{path}/{hook_id}/test"), &b.token)
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND, "another user's channel");
    let (_, none) = s.get("/api/alerts/deliveries", &b.token).await;
    assert_eq!(none, json!([]));

    // Delete: only the owner's; then gone.
    assert_eq!(
        delete(&s, &format!("{path}/{hook_id}"), &b.token).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        delete(&s, &format!("{path}/{hook_id}"), &a.token).await,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        delete(&s, &format!("{path}/{hook_id}"), &a.token).await,
        StatusCode::NOT_FOUND
    );
    let (_, listed) = s.get(path, &a.token).await;
    assert_eq!(listed.as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alerts_page_adds_tests_and_deletes_with_plain_forms() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let a = &w.a;
    let own = s.base.clone();
    let alerts_page = || page(&s, "/alerts", &a.token);
    let (code, body) = alerts_page().await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains(r#"<a href="/alerts" id="nav-alerts">"#));
    assert!(body.contains(r#"id="no-channels""#));

    let form = [
        ("name", "phone"),
        ("kind", "telegram"),
        ("secret", SECRETS[1]),
        ("chat_id", "-100777"),
        ("event", "halt"),
        ("event", "lesson_held"),
    ];
    // From another origin (another port of this host): refused, nothing added.
    let other = own.replace("127.0.0.1", "localhost");
    let r = post_form(&s, "/alerts/channels", &a.token, &form, &other).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let (_, listed) = s.get("/api/alerts/channels", &a.token).await;
    assert_eq!(listed, json!([]));

    let r = post_form(&s, "/alerts/channels", &a.token, &form, &own).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()[LOCATION], "/alerts?done=added");
    let (_, listed) = s.get("/api/alerts/channels", &a.token).await;
    assert_eq!(listed[0]["events"], json!(["halt", "lesson_held"]));
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    let (code, body) = alerts_page().await;
    assert_eq!(code, StatusCode::OK);
    assert!(body.contains("Telegram chat -100777"), "{body}");
    assert!(body.contains("set (hidden)"));
    no_secret(&body);

    // A bad one: the page again, 422, with the message.
    let r = post_form(
        &s,
        "/alerts/channels",
        &a.token,
        &[
            ("name", "x"),
            ("kind", "webhook"),
            ("url", "https://h.example/x"),
            ("event", "halt"),
        ],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.text().await.unwrap().contains("secret: required"));

    let r = post_form(
        &s,
        &format!("/alerts/channels/{id}/test"),
        &a.token,
        &[],
        &own,
    )
    .await;
    assert_eq!(r.headers()[LOCATION], "/alerts?done=tested");
    let (_, body) = page(&s, "/alerts?done=tested", &a.token).await;
    assert!(body.contains("Test message queued"));
    assert!(
        body.contains(r#"<span class="badge status-pending">pending</span>"#),
        "{body}"
    );

    let r = post_form(
        &s,
        &format!("/alerts/channels/{id}/delete"),
        &a.token,
        &[],
        &own,
    )
    .await;
    assert_eq!(r.headers()[LOCATION], "/alerts?done=deleted");
    let r = post_form(
        &s,
        &format!("/alerts/channels/{id}/delete"),
        &a.token,
        &[],
        &own,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let (_, listed) = s.get("/api/alerts/channels", &a.token).await;
    assert_eq!(listed, json!([]));
}
