//! Every `/api` route with a representative request through real HTTP on PostgreSQL: each JSON
//! body and server-sent event has camelCase keys only (`answer` and `events` walk them), and
//! the keys a client reads are spelled as `docs/http-api.md` shows them.

use std::sync::Arc;

use agent_runtime::{LanguageModel, ScriptedModel};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::common::serve::{events, server, snake_case_keys, world};
use crate::serve_chat::{remember, say};

const FACT: &str = "I never hold over a weekend.";

/// The JSON pointer `at` of `body` is present (not null).
fn has(body: &Value, at: &str) -> bool {
    body.pointer(at).is_some_and(|v| !v.is_null())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_answers_camel_case_keys() {
    let model = Arc::new(ScriptedModel::new(vec![
        remember(FACT),
        say("Noted."),
        remember(FACT),
        say("Noted again."),
    ]));
    let s = server(model as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let t = &w.a.token;
    let chat = json!({
        "messages": [{"role": "user", "content": FACT}],
        "deploymentId": w.a.deployment(),
    });

    let (status, turn) = s.post("/api/chat", t, &chat).await;
    assert_eq!(status, StatusCode::OK, "{turn}");
    let (status, added) = s
        .post(
            "/api/facts",
            t,
            &json!({"fact": "I trade the London session.", "topic": "session"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{added}");
    let fact = added["id"].as_str().unwrap().to_owned();
    let (_, edited) = s
        .patch(
            &format!("/api/facts/{fact}"),
            t,
            &json!({"confidence": "inferred"}),
        )
        .await;
    let (_, archived) = s
        .post(
            &format!("/api/facts/{fact}/archive"),
            t,
            &json!({"reason": "user_corrected"}),
        )
        .await;
    let (_, changes) = s.get(&format!("/api/facts/{fact}/changes"), t).await;
    let (_, facts) = s.get("/api/facts?archived=true", t).await;
    let (_, deployments) = s.get("/api/deployments", t).await;
    let (_, memory) = s
        .get(&format!("/api/deployments/{}/memory", w.a.deployment()), t)
        .await;
    let (_, me) = s.get("/api/me", t).await;
    let (status, refused) = s
        .post("/api/facts", t, &json!({"fact": "x", "topic": "risk"}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{refused}");
    let (status, missing) = s
        .get(&format!("/api/facts/{}/changes", w.b.user()), t)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");

    // The keys a client reads, spelled as the docs show them.
    let bodies: [(&str, &Value, &[&str]); 10] = [
        (
            "POST /api/chat",
            &turn,
            &[
                "/turnId",
                "/costUsd",
                "/factsInjected",
                "/usage/cacheRead",
                "/steps/0/toolCalls/0/arguments/fact",
                "/steps/0/toolCalls/0/outcome/status",
                "/steps/0/usage/cacheWrite",
            ],
        ),
        (
            "POST /api/facts",
            &added,
            &["/userId", "/createdAt", "/lastReferencedAt"],
        ),
        (
            "PATCH /api/facts/{id}",
            &edited,
            &["/confidence", "/createdAt"],
        ),
        (
            "POST /api/facts/{id}/archive",
            &archived,
            &["/archivedAt", "/archivedReason"],
        ),
        (
            "GET /api/facts/{id}/changes",
            &changes,
            &["/0/factId", "/0/dbRole", "/0/jwtSub", "/0/changedAt"],
        ),
        ("GET /api/facts", &facts, &["/0/createdAt"]),
        (
            "GET /api/deployments",
            &deployments,
            &["/0/skillId", "/0/initialEquityUsd", "/0/equityUsd"],
        ),
        (
            "GET /api/deployments/{id}/memory",
            &memory,
            &[
                "/skillName",
                "/deployment/skillVersion",
                "/closedTrades/0/realizedPnlUsd",
                "/closedTrades/0/entryTickAt",
                "/notes/0/lessonsText",
                "/notes/0/windowStart",
                "/prompt/asOf",
                "/prompt/systemPromptTokens",
            ],
        ),
        ("GET /api/me", &me, &["/userId"]),
        ("422", &refused, &["/error", "/field"]),
    ];
    for (route, body, keys) in bodies {
        assert!(snake_case_keys(body).is_empty(), "{route}: {body}");
        for key in keys {
            assert!(has(body, key), "{route}: {key} in {body}");
        }
    }
    assert!(missing["error"].is_string(), "{missing}");

    // The same turn as server-sent events.
    let text = s
        .http
        .post(s.url("/api/chat"))
        .bearer_auth(t)
        .header("accept", "text/event-stream")
        .json(&chat)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let events = events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["step", "toolResult", "step", "answer", "done"]);
    let step: Value = serde_json::from_str(&events[0].1).unwrap();
    assert!(has(&step, "/toolCalls/0/arguments/fact"), "{step}");
    let result: Value = serde_json::from_str(&events[1].1).unwrap();
    assert!(has(&result, "/callId"), "{result}");
    let answer: Value = serde_json::from_str(&events[3].1).unwrap();
    assert!(has(&answer, "/turnId") && has(&answer, "/steps/0/toolCalls/0/outcome"));
}
