//! Bad request bodies through real HTTP: 400 (not JSON, a bad id) or 422 naming the field
//! (bounds from `types`, the ones the database checks), as the JSON error shape; never a 500.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::serve::{answer, no_model, server, world};

fn field(body: &Value) -> &str {
    body["field"].as_str().unwrap_or("<none>")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_bodies_are_400_or_422_naming_the_field() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let t = &w.a.token;
    let fact = format!("/api/facts/{}", w.a.fact.id);
    let archive = format!("/api/facts/{}/archive", w.a.fact.id);
    let long = "x".repeat(501);
    let cases: Vec<(&str, String, Value, StatusCode, &str)> = vec![
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": "abc"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "fact",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": long}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "fact",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"topic": "risk"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "fact",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": "Never trades alts", "topic": "t".repeat(33)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "topic",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": "Never trades alts", "topic": ""}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "topic",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": "Never trades alts", "confidence": "sure"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "confidence",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": 42}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "fact",
        ),
        (
            "POST",
            "/api/facts".into(),
            json!({"fact": "Never trades alts", "source": "chat"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "source",
        ),
        (
            "PATCH",
            fact.clone(),
            json!({}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "body",
        ),
        (
            "PATCH",
            fact.clone(),
            json!({"fact": "no"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "fact",
        ),
        (
            "PATCH",
            fact.clone(),
            json!({"topic": "t".repeat(40)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "topic",
        ),
        (
            "PATCH",
            fact.clone(),
            json!({"confidence": "maybe"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "confidence",
        ),
        (
            "POST",
            archive.clone(),
            json!({}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "reason",
        ),
        (
            "POST",
            archive.clone(),
            json!({"reason": "agent_forget"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "reason",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": []}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "messages",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "messages",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": [{"role": "user", "content": ""}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "messages[0].content",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": [{"role": "system", "content": "obey"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "messages[0].role",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": [{"role": "assistant", "content": "hi"}]}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "messages",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": [{"role": "user", "content": "hi"}], "mode": "trade"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "mode",
        ),
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": [{"role": "user", "content": "hi"}], "deploymentId": "nope"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "deploymentId",
        ),
        // One spelling per field: the snake_case one is an unknown field.
        (
            "POST",
            "/api/chat".into(),
            json!({"messages": [{"role": "user", "content": "hi"}],
                   "deployment_id": "00000000-0000-0000-0000-000000000000"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "deployment_id",
        ),
    ];
    for (method, path, body, want, want_field) in cases {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let (status, answer) = s.send(method.clone(), &path, t, &body).await;
        assert_eq!(status, want, "{method} {path} {body}: {answer}");
        assert_eq!(
            field(&answer),
            want_field,
            "{method} {path} {body}: {answer}"
        );
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{answer}"
        );
    }

    // Not JSON at all, or no JSON content type: 400 / 415, still the JSON error shape.
    let (status, body) = answer(
        s.http
            .post(s.url("/api/facts"))
            .bearer_auth(t)
            .header("content-type", "application/json")
            .body("{\"fact\": ")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].is_string());
    let (status, body) = answer(
        s.http
            .post(s.url("/api/facts"))
            .bearer_auth(t)
            .body("fact=hello")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{body}");
    assert!(body["error"].is_string());

    // Too large a body (axum's 2 MB limit): 413, as JSON. The server closes that connection
    // after answering, so the request goes on a client of its own: the shared client would
    // otherwise try its next request on the closed connection.
    let (status, body) = answer(
        reqwest::Client::new()
            .post(s.url("/api/facts"))
            .bearer_auth(t)
            .json(&json!({"fact": "x".repeat(3 << 20)}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert!(body["error"].is_string());

    // A malformed id in the path or a bad query parameter: 400 as JSON.
    let (status, body) = s.get("/api/deployments/not-a-uuid/memory", t).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].is_string());
    let (status, body) = s.get("/api/facts?archived=perhaps", t).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"].is_string());

    // Nothing of the above was stored.
    let (_, body) = s.get("/api/facts?archived=true", t).await;
    assert_eq!(body.as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body[0]["fact"], w.a.fact.fact.as_str());

    // The bounds are characters, as the database counts them (`char_length`): 500 two-byte
    // characters are accepted by the API and stored; 501 are refused, 3 too.
    let (status, body) = s
        .post("/api/facts", t, &json!({"fact": "é".repeat(500)}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = s
        .post("/api/facts", t, &json!({"fact": "é".repeat(501)}))
        .await;
    assert_eq!(
        (status, field(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "fact")
    );
    let (status, body) = s.post("/api/facts", t, &json!({"fact": "ééé"})).await;
    assert_eq!(
        (status, field(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "fact")
    );
    let (_, body) = s.get("/api/facts", t).await;
    assert_eq!(body.as_array().unwrap().len(), 2, "{body}");

    // A valid token of a user this database does not know: reads are empty, a write is a 422
    // saying why, never a 500.
    let stranger = s
        .auth
        .mint(
            uuid::Uuid::new_v4(),
            chrono::Duration::hours(1),
            chrono::Utc::now(),
        )
        .unwrap();
    let (status, body) = s.get("/api/facts", &stranger).await;
    assert_eq!((status, body), (StatusCode::OK, json!([])));
    let (status, body) = s
        .post("/api/facts", &stranger, &json!({"fact": "Who am I, even?"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("token's user"),
        "{body}"
    );
}
