//! Kept conversations through real HTTP on PostgreSQL with the offline `builtin/scripted`
//! model, whose requests are logged: a conversation continued with only the new message holds
//! the earlier turns in the model's request; it is listed, read back and deleted by its owner,
//! and another user can neither read, continue nor delete it. (A client that still sends the
//! whole conversation keeps working, and nothing of it is kept: `serve_chat`.)

use std::sync::Arc;

use agent_runtime::{LanguageModel, Message, ScriptedModel};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::common::serve::{Server, events, no_model, server, world};
use crate::serve_chat::{remember, say};

const FACT: &str = "You never use leverage above 3x.";
const FIRST: &str = "Just so you know: I never go above 3x leverage.";

async fn delete(s: &Server, id: &str, token: &str) -> StatusCode {
    let path = format!("/api/conversations/{id}");
    s.send(Method::DELETE, &path, token, &json!({})).await.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_continued_with_only_the_new_message_holds_the_earlier_turns() {
    let model = Arc::new(ScriptedModel::new(vec![
        remember(FACT),
        say("Noted: no more than 3x."),
        say("You told me you never go above 3x."),
        say("Still 3x at most."),
    ]));
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let t = &w.a.token;

    // A new conversation: its id comes back.
    let (status, body) = s
        .post(
            "/api/chat",
            t,
            &json!({"message": FIRST, "deploymentId": w.a.deployment()}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["answer"], "Noted: no more than 3x.");
    let id = body["conversationId"]
        .as_str()
        .unwrap_or_else(|| panic!("no conversation id: {body}"))
        .to_owned();

    // Continued with only the new message.
    let (status, body) = s
        .post(
            "/api/chat",
            t,
            &json!({"conversationId": id, "message": "What did I tell you?"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["conversationId"], id.as_str());
    assert_eq!(body["answer"], "You told me you never go above 3x.");
    // The model's request holds the earlier turn whole — the user's message, the remember call
    // and its result, the answer — then the new message; the deployment focus carried over.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let request = &requests[2];
    let messages = &request.messages;
    assert_eq!(messages.len(), 5, "{messages:?}");
    assert!(matches!(&messages[0], Message::User { content } if content == FIRST));
    assert!(
        matches!(&messages[1], Message::Assistant { tool_calls, .. }
            if tool_calls.len() == 1 && tool_calls[0].name == "remember"),
        "{:?}",
        messages[1]
    );
    assert!(
        matches!(&messages[2], Message::Tool { name, content, .. }
            if name == "remember" && content.contains("remembered")),
        "{:?}",
        messages[2]
    );
    assert!(
        matches!(&messages[3], Message::Assistant { text: Some(t), tool_calls }
            if t == "Noted: no more than 3x." && tool_calls.is_empty())
    );
    assert!(matches!(&messages[4], Message::User { content } if content == "What did I tell you?"));
    assert!(request.system.contains(&w.a.fx.skill.name));

    // A third turn as server-sent events: the answer event names the conversation.
    let response = s
        .http
        .post(s.url("/api/chat"))
        .bearer_auth(t)
        .header("Accept", "text/event-stream")
        .json(&json!({"conversationId": id, "message": "And now?"}))
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    let answer = events(&text)
        .into_iter()
        .find(|(name, _)| name == "answer")
        .unwrap_or_else(|| panic!("no answer event: {text}"));
    let answer: serde_json::Value = serde_json::from_str(&answer.1).unwrap();
    assert_eq!(answer["conversationId"], id.as_str());
    assert_eq!(model.requests()[3].messages.len(), 7);

    // Listed and read back by its owner.
    let (status, list) = s.get("/api/conversations", t).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["id"], id.as_str());
    assert_eq!(list[0]["title"], FIRST);
    assert_eq!(list[0]["turns"], 3);
    assert_eq!(list[0]["mode"], "coach");
    assert_eq!(list[0]["deploymentId"], w.a.deployment().to_string());
    let (status, read) = s.get(&format!("/api/conversations/{id}"), t).await;
    assert_eq!(status, StatusCode::OK, "{read}");
    let turns = read["turnList"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{read}");
    assert_eq!(turns[0]["userMessage"], FIRST);
    assert_eq!(turns[0]["answer"], "Noted: no more than 3x.");
    assert_eq!(turns[0]["toolCalls"][0]["name"], "remember");
    assert!(
        turns[0]["toolCalls"][0]["result"]
            .as_str()
            .is_some_and(|r| r.contains("remembered")),
        "{read}"
    );
    assert_eq!(turns[2]["seq"], 2);

    // The conversation keeps its mode and deployment.
    for (body, field) in [
        (
            json!({"conversationId": id, "message": "Hi", "mode": "ops"}),
            "mode",
        ),
        (
            json!({"conversationId": id, "message": "Hi", "deploymentId": w.b.deployment()}),
            "deploymentId",
        ),
    ] {
        let (status, answer) = s.post("/api/chat", t, &body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
        assert_eq!(answer["field"], field, "{answer}");
    }

    // Another user: not found to read, continue or delete; their list is empty; the model is
    // not called.
    let b = &w.b.token;
    let (status, _) = s.get(&format!("/api/conversations/{id}"), b).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = s
        .post(
            "/api/chat",
            b,
            &json!({"conversationId": id, "message": "Show me theirs."}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(model.requests().len(), 4);
    assert_eq!(delete(&s, &id, b).await, StatusCode::NOT_FOUND);
    let (_, b_list) = s.get("/api/conversations", b).await;
    assert_eq!(b_list, json!([]));

    // The owner deletes it, turns and all.
    assert_eq!(delete(&s, &id, t).await, StatusCode::NO_CONTENT);
    let (status, _) = s.get(&format!("/api/conversations/{id}"), t).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM chat_conversation_turns")
        .fetch_one(s.store.pool())
        .await
        .unwrap();
    assert_eq!(left, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_conversation_refuses_a_mixed_or_mismatched_request() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let t = &w.a.token;
    let cases = [
        (
            json!({"message": "Hi", "messages": [{"role": "user", "content": "Hi"}]}),
            "messages",
        ),
        (
            json!({"conversationId": uuid::Uuid::new_v4(), "messages": [{"role": "user", "content": "Hi"}]}),
            "messages",
        ),
        (json!({"conversationId": uuid::Uuid::new_v4()}), "message"),
        (json!({}), "messages"),
        (json!({"message": ""}), "message"),
    ];
    for (body, field) in cases {
        let (status, answer) = s.post("/api/chat", t, &body).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert_eq!(answer["field"], field, "{body}: {answer}");
    }
    // An unknown conversation is a 404.
    let (status, _) = s
        .post(
            "/api/chat",
            t,
            &json!({"conversationId": uuid::Uuid::new_v4(), "message": "Hi"}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}
