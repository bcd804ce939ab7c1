//! `POST /api/chat` through real HTTP on PostgreSQL with the offline `builtin/scripted` model:
//! a turn that calls `remember` stores the fact as the user (it shows in `GET /api/facts` and
//! in the audit trail), the next turn's system prompt shows it, each turn's usage is recorded,
//! and the same turn streams as server-sent events.

use std::sync::Arc;

use agent_runtime::{LanguageModel, ModelResponse, ScriptedModel, Usage};
use model::test_support::{answer, tool_call, tool_turn};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;

use crate::common::serve::{events, server, world};

pub(crate) fn remember(fact: &str) -> ModelResponse {
    ModelResponse {
        usage: Usage {
            input: 1200,
            output: 40,
            cache_read: 0,
            cache_write: 0,
        },
        ..tool_turn(vec![tool_call(
            "call_1",
            "remember",
            json!({"fact": fact, "topic": "risk", "confidence": "asserted"}).to_string(),
        )])
    }
}

pub(crate) fn say(text: &str) -> ModelResponse {
    ModelResponse {
        usage: Usage {
            input: 1300,
            output: 12,
            cache_read: 0,
            cache_write: 0,
        },
        ..answer(text)
    }
}

const FACT: &str = "You never use leverage above 3x.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_chat_remembers_through_the_api_and_records_the_turn() {
    let model = Arc::new(ScriptedModel::new(vec![
        remember(FACT),
        say("Noted: no more than 3x."),
        say("Welcome back."),
    ]));
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let t = &w.a.token;

    let (status, body) = s
        .post(
            "/api/chat",
            t,
            &json!({
                "messages": [{"role": "user", "content": "Just so you know: I never go above 3x leverage."}],
                "mode": "coach",
                "deploymentId": w.a.deployment(),
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["answer"], "Noted: no more than 3x.");
    assert_eq!(body["model"], "builtin/scripted");
    assert!(body["error"].is_null(), "{body}");
    let steps = body["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{body}");
    assert_eq!(steps[0]["toolCalls"][0]["name"], "remember");
    assert_eq!(
        steps[0]["toolCalls"][0]["outcome"]["status"], "ok",
        "{body}"
    );
    assert_eq!(body["usage"]["input"], 2500);
    assert_eq!(body["usage"]["output"], 52);
    // The deployment focus reached the prompt.
    let first = &model.requests()[0];
    assert!(
        first.system.contains(&w.a.fx.skill.name),
        "{}",
        first.system
    );

    // The fact, as the user sees it, and its audit trail.
    let (_, facts) = s.get("/api/facts", t).await;
    let fact = facts
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["fact"] == FACT)
        .unwrap_or_else(|| panic!("remembered fact missing: {facts}"));
    assert_eq!(fact["source"], "chat");
    assert_eq!(fact["confidence"], "asserted");
    let id = fact["id"].as_str().unwrap();
    let (status, changes) = s.get(&format!("/api/facts/{id}/changes"), t).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(changes.as_array().unwrap().len(), 1);
    assert_eq!(changes[0]["op"], "insert");
    assert_eq!(changes[0]["actor"], "chat-agent");
    assert_eq!(changes[0]["dbRole"], "authenticated");
    assert_eq!(changes[0]["jwtSub"], w.a.user().to_string());
    // B does not see it.
    let (_, b_facts) = s.get("/api/facts", &w.b.token).await;
    assert!(!b_facts.to_string().contains(FACT));

    // The next conversation's system prompt knows it.
    let (status, body) = s
        .post(
            "/api/chat",
            t,
            &json!({"messages": [
                {"role": "user", "content": "Hi"},
                {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Back again."}
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["answer"], "Welcome back.");
    // The whole conversation in `messages`: nothing of it is kept.
    assert!(body["conversationId"].is_null(), "{body}");
    let (_, kept) = s.get("/api/conversations", t).await;
    assert_eq!(kept, json!([]));
    let third = &model.requests()[2];
    assert!(
        third.system.contains("## What I know about you"),
        "{}",
        third.system
    );
    assert!(third.system.contains(FACT), "{}", third.system);
    assert_eq!(third.messages.len(), 3, "the history went along");

    // The script is spent: the model fails, the answer says so (502), and the turn is recorded.
    let (status, body) = s
        .post(
            "/api/chat",
            t,
            &json!({"messages": [{"role": "user", "content": "And now?"}]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("exhausted"),
        "{body}"
    );

    let rows = sqlx::query(
        "SELECT model, steps, input_tokens, output_tokens, cost_usd::text AS cost, error \
         FROM chat_turns WHERE user_id = $1 ORDER BY at",
    )
    .bind(w.a.user())
    .fetch_all(s.pg.pool())
    .await
    .unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].get::<String, _>("model"), "builtin/scripted");
    assert_eq!(rows[0].get::<i32, _>("steps"), 2);
    assert_eq!(rows[0].get::<i64, _>("input_tokens"), 2500);
    assert_eq!(rows[0].get::<i64, _>("output_tokens"), 52);
    assert_eq!(rows[0].get::<String, _>("cost"), "0");
    assert!(rows[0].get::<Option<String>, _>("error").is_none());
    assert!(
        rows[2]
            .get::<Option<String>, _>("error")
            .unwrap()
            .contains("exhausted")
    );
    let b_turns =
        s.pg.count(&format!(
            "SELECT count(*) FROM chat_turns WHERE user_id = '{}'",
            w.b.user()
        ))
        .await;
    assert_eq!(b_turns, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_streams_its_steps_and_final_text_as_server_sent_events() {
    let model = Arc::new(ScriptedModel::new(vec![remember(FACT), say("Noted.")]));
    let s = server(model as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;

    let response = s
        .http
        .post(s.url("/api/chat"))
        .bearer_auth(&w.a.token)
        .header("accept", "text/event-stream")
        .json(&json!({"messages": [{"role": "user", "content": "Never above 3x for me."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = response.text().await.unwrap();
    let events = events(&text);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["step", "toolResult", "step", "answer", "done"],
        "{text}"
    );

    let step0: Value = serde_json::from_str(&events[0].1).unwrap();
    assert_eq!(step0["index"], 0);
    assert_eq!(step0["toolCalls"][0]["name"], "remember");
    assert_eq!(step0["toolCalls"][0]["arguments"]["fact"], FACT);
    let result: Value = serde_json::from_str(&events[1].1).unwrap();
    assert_eq!(result["name"], "remember");
    assert!(
        result["content"].as_str().unwrap().contains("id"),
        "{result}"
    );
    let step1: Value = serde_json::from_str(&events[2].1).unwrap();
    assert_eq!(step1["text"], "Noted.");
    let answer: Value = serde_json::from_str(&events[3].1).unwrap();
    assert_eq!(answer["answer"], "Noted.");
    assert_eq!(answer["steps"].as_array().unwrap().len(), 2);
    assert_eq!(events[4].1, "[DONE]");

    // The streamed turn stored its fact and its record like the JSON one.
    let (_, facts) = s.get("/api/facts", &w.a.token).await;
    assert!(facts.to_string().contains(FACT), "{facts}");
    let turns =
        s.pg.count(&format!(
            "SELECT count(*) FROM chat_turns WHERE user_id = '{}'",
            w.a.user()
        ))
        .await;
    assert_eq!(turns, 1);
}
