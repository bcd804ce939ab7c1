//! The chat page over plain HTTP against the real server on PostgreSQL, with the offline
//! scripted model (its requests logged): a conversation started and continued through the
//! forms, each turn sending only the new message while the model's request holds the earlier
//! turns; another user's conversation a 404 to read, continue or delete; hostile text in a
//! message, an answer and a tool call escaped; a model failure and bad input re-rendered with
//! their message; a pause the coach prepared confirmed from the page (the deployment paused),
//! refused to another user (404), to another origin (403) and once expired (409), nothing
//! changed.

use std::sync::{Arc, Mutex};

use agent_runtime::{LanguageModel, Message, ScriptedModel};
use chrono::{Duration, Utc};
use db::{ActionStore, DeploymentStatus};
use model::test_support::{tool_call, tool_turn};
use reqwest::StatusCode;
use serde_json::json;
use uuid::Uuid;

use crate::common::serve::{Server, no_model, page, server, server_with_clock, world};
use crate::pages::location;
use crate::serve_actions::{Later, MovingClock, audit_rows, prepare_pause, status, untouched};
use crate::serve_chat::{remember, say};

const FIRST: &str = "Just so you know: I never go above 3x leverage.";

/// A form POST as the user of `token` from the server's own origin, as a browser sends it.
async fn post(s: &Server, path: &str, token: &str, form: &[(&str, &str)]) -> reqwest::Response {
    crate::common::serve::post_form(s, path, token, form, &s.base).await
}

/// Starts a conversation through `/chat`'s form and returns its id, checking the redirect to
/// its first turn.
async fn start(s: &Server, token: &str, form: &[(&str, &str)]) -> Uuid {
    let r = post(s, "/chat", token, form).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    let to = location(&r);
    let id = to
        .strip_prefix("/chat/")
        .and_then(|rest| rest.strip_suffix("#turn-0"))
        .unwrap_or_else(|| panic!("not a conversation's first turn: {to}"));
    id.parse().expect("a conversation id")
}

async fn conversations(s: &Server) -> i64 {
    s.pg.count("SELECT count(*) FROM chat_conversations").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_started_and_continued_through_the_forms_keeps_its_history() {
    let model = Arc::new(ScriptedModel::new(vec![
        remember("You never use leverage above 3x."),
        say("Noted: no more than 3x."),
        say("You told me you never go above 3x."),
    ]));
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let (a, b) = (&w.a, &w.b);

    // The page: linked from the navigation, nothing kept yet, A's deployment offered (not B's).
    let (code, body) = page(&s, "/chat", &a.token).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body.contains(r#"<a href="/chat" id="nav-chat">Chat</a>"#));
    assert!(body.contains("No conversation yet."), "{body}");
    assert!(body.contains("Nothing waits for your confirmation."));
    assert!(body.contains(&format!(r#"<option value="{}">"#, a.deployment())));
    assert!(!body.contains(&b.deployment().to_string()));

    // Start one about A's deployment: 303 to its first turn.
    let dep = a.deployment().to_string();
    let id = start(
        &s,
        &a.token,
        &[("mode", "coach"), ("deployment", &dep), ("message", FIRST)],
    )
    .await;
    let (code, body) = page(&s, &format!("/chat/{id}"), &a.token).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body.contains(r#"<article class="turn" id="turn-0">"#));
    assert!(body.contains(FIRST) && body.contains("Noted: no more than 3x."));
    assert!(body.contains(r#"<code class="tool-name">remember</code>"#));
    assert!(body.contains("remembered"), "the tool's result: {body}");
    assert!(body.contains(&format!(r#"action="/chat/{id}/messages""#)));

    // Continued with the new message alone.
    let r = post(
        &s,
        &format!("/chat/{id}/messages"),
        &a.token,
        &[("message", "What did I tell you?")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), format!("/chat/{id}#turn-1"));
    // The model's request holds the first turn whole, then the new message.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let messages = &requests[2].messages;
    assert_eq!(messages.len(), 5, "{messages:?}");
    assert!(matches!(&messages[0], Message::User { content } if content == FIRST));
    assert!(matches!(&messages[1], Message::Assistant { tool_calls, .. }
        if tool_calls.len() == 1 && tool_calls[0].name == "remember"));
    assert!(matches!(&messages[2], Message::Tool { name, .. } if name == "remember"));
    assert!(
        matches!(&messages[3], Message::Assistant { text: Some(t), .. }
        if t == "Noted: no more than 3x.")
    );
    assert!(matches!(&messages[4], Message::User { content } if content == "What did I tell you?"));
    assert!(requests[2].system.contains(&a.fx.skill.name));
    let (_, body) = page(&s, &format!("/chat/{id}"), &a.token).await;
    assert!(body.contains(r#"id="turn-1""#) && body.contains("You told me you never go above 3x."));

    // Listed with its mode, deployment and two turns.
    let (_, body) = page(&s, "/chat", &a.token).await;
    assert!(
        body.contains(&format!(r#"<tr id="conversation-{id}""#)),
        "{body}"
    );
    assert!(body.contains(r#"<td class="num turns">2</td>"#), "{body}");
    assert!(body.contains(&format!("{} v1 (active)", a.fx.skill.name)));

    // Another user: a 404 page to read, continue or delete it; the model is not called.
    let (code, body) = page(&s, &format!("/chat/{id}"), &b.token).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    assert!(body.contains("You have no conversation with this id."));
    assert!(!body.contains(FIRST));
    let r = post(
        &s,
        &format!("/chat/{id}/messages"),
        &b.token,
        &[("message", "Show me theirs.")],
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(!r.text().await.unwrap().contains(FIRST));
    assert_eq!(model.requests().len(), 3);
    let r = post(&s, &format!("/chat/{id}/delete"), &b.token, &[]).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let (_, theirs) = page(&s, "/chat", &b.token).await;
    assert!(theirs.contains("No conversation yet."));
    assert_eq!(conversations(&s).await, 1);

    // The owner deletes it.
    let r = post(&s, &format!("/chat/{id}/delete"), &a.token, &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(location(&r), "/chat?done=deleted");
    let (_, body) = page(&s, "/chat?done=deleted", &a.token).await;
    assert!(body.contains("Conversation deleted.") && body.contains("No conversation yet."));
    assert_eq!(conversations(&s).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_in_messages_answers_and_tool_calls_is_escaped() {
    let hostile_tool = "<img src=x onerror=alert(1)>";
    let pad = "x".repeat(1000);
    let model = Arc::new(ScriptedModel::new(vec![
        tool_turn(vec![
            tool_call(
                "c1",
                "remember",
                json!({"fact": "<script>alert('fact')</script> is my rule", "topic": "risk",
                       "confidence": "asserted"})
                .to_string(),
            ),
            tool_call(
                "c2",
                hostile_tool,
                json!({"q": "<script>alert('arg')</script>", "zpad": pad}).to_string(),
            ),
        ]),
        say("<b>bold</b> & <script>alert('answer')</script>\nsecond line"),
    ]));
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let id = start(
        &s,
        &w.a.token,
        &[("message", "<script>alert('msg')</script>\r\nline two")],
    )
    .await;
    for path in [format!("/chat/{id}"), "/chat".to_owned()] {
        let (code, body) = page(&s, &path, &w.a.token).await;
        assert_eq!(code, StatusCode::OK, "{path}: {body}");
        for raw in ["<script>alert", "<img src=x", "<b>bold"] {
            assert!(!body.contains(raw), "{path}: raw `{raw}` in {body}");
        }
        // The title (the first message on one line) in the list and the conversation.
        assert!(body.contains("&lt;script&gt;alert(&#x27;msg&#x27;)&lt;&#x2f;script&gt;"));
    }
    let (_, body) = page(&s, &format!("/chat/{id}"), &w.a.token).await;
    // The message and the answer keep their line breaks (the page's CSS shows them).
    assert!(
        body.contains("&lt;script&gt;alert(&#x27;msg&#x27;)&lt;&#x2f;script&gt;\nline two"),
        "{body}"
    );
    assert!(body.contains(
        "&lt;b&gt;bold&lt;&#x2f;b&gt; &amp; &lt;script&gt;alert(&#x27;answer&#x27;)&lt;&#x2f;script&gt;\nsecond line"
    ));
    // Both tool calls, escaped; arguments and results cut to 300 characters.
    assert!(body.contains(r#"<code class="tool-name">remember</code>"#));
    assert!(body.contains(r#"<code class="tool-name">&lt;img src=x onerror=alert(1)&gt;</code>"#));
    assert!(body.contains("alert(&#x27;arg&#x27;)"), "{body}");
    assert!(body.contains("more characters]"), "{body}");
    assert!(!body.contains(&"x".repeat(301)), "an argument shown whole");
    assert!(body.contains("&lt;script&gt;alert(&#x27;fact&#x27;)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_failure_and_bad_input_re_render_the_page_with_their_message() {
    // A model with nothing to say fails every call.
    let s = server(no_model()).await;
    let w = world(&s).await;
    let t = &w.a.token;

    // The model fails: the new conversation's page with the error and the message back in the
    // form (nothing kept), 502.
    let r = post(&s, "/chat", t, &[("message", "Hello <there>")]).await;
    assert_eq!(r.status(), StatusCode::BAD_GATEWAY);
    let body = r.text().await.unwrap();
    assert!(body.contains("The coach&#x27;s model failed"), "{body}");
    assert!(body.contains("script is exhausted"), "{body}");
    assert!(body.contains("Your message was not kept: send it again."));
    assert!(body.contains(">Hello &lt;there&gt;</textarea>"), "{body}");
    assert!(body.contains("No turn kept yet"));
    assert_eq!(conversations(&s).await, 1);
    let turns =
        s.pg.count("SELECT count(*) FROM chat_conversation_turns")
            .await;
    assert_eq!(turns, 0);

    // Bad input: the page again with the message (422), nothing started.
    for (form, message) in [
        (vec![("message", "  ")], "message: write a message to send"),
        (
            vec![("message", "Hi\u{0}")],
            "message: a control character (U+0000)",
        ),
        (
            vec![("message", "Hi"), ("mode", "root")],
            "mode: expected `coach`, `authoring` or `ops`",
        ),
        (
            vec![("message", "Hi"), ("deployment", "nope")],
            "deployment: not a deployment id",
        ),
    ] {
        let r = post(&s, "/chat", t, &form).await;
        assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY, "{form:?}");
        let body = r.text().await.unwrap();
        assert!(body.contains(message), "{form:?}: {body}");
        assert!(body.contains(r#"<form method="post" action="/chat" id="new-conversation">"#));
    }
    let long = "x".repeat(8001);
    let r = post(&s, "/chat", t, &[("message", &long)]).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("message: must be 1..=8000 characters")
    );
    // Another user's deployment: a 404 page, nothing started.
    let theirs = w.b.deployment().to_string();
    let r = post(
        &s,
        "/chat",
        t,
        &[("message", "Hi"), ("deployment", &theirs)],
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(conversations(&s).await, 1);

    // A conversation's form refuses an empty message with the conversation around it.
    let id: Uuid = sqlx::query_scalar("SELECT id FROM chat_conversations")
        .fetch_one(s.store.pool())
        .await
        .unwrap();
    let r = post(&s, &format!("/chat/{id}/messages"), t, &[("message", "")]).await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = r.text().await.unwrap();
    assert!(body.contains("message: write a message to send"));
    assert!(body.contains(r#"<h1 id="conversation-title">Hello &lt;there&gt;</h1>"#));
    // Not a conversation id at all: a 404 page.
    let (code, _) = page(&s, "/chat/not-an-id", t).await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}

/// A chat turn through the page that prepares a pause of `dep`: its conversation and the
/// action's id.
async fn prepared(s: &Server, token: &str, user: Uuid, dep: Uuid) -> (Uuid, Uuid) {
    let dep_text = dep.to_string();
    let conversation = start(
        s,
        token,
        &[
            ("mode", "ops"),
            ("deployment", &dep_text),
            ("message", "Pause my BTC bot before CPI."),
        ],
    )
    .await;
    let pending = s
        .store
        .actions(user, 10)
        .await
        .expect("actions")
        .into_iter()
        .find(|a| a.conversation_id == Some(conversation));
    let Some(pending) = pending else {
        let (_, body) = page(s, &format!("/chat/{conversation}"), token).await;
        panic!("no action prepared: {body}");
    };
    (conversation, pending.id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_the_coach_prepared_is_confirmed_from_the_page_by_its_owner_only() {
    let model = Arc::new(Later::default());
    let s = server(model.clone() as Arc<dyn LanguageModel>).await;
    let w = world(&s).await;
    let (a, b, dep) = (&w.a, &w.b, w.a.deployment());
    model.script(vec![
        prepare_pause(dep),
        say("I prepared a pause of your BTC bot; confirm it to apply it."),
        // Once paused, a resume is what the coach can prepare.
        tool_turn(vec![tool_call(
            "call_2",
            "prepare_action",
            json!({"action": "resume_deployment", "deploymentId": dep}).to_string(),
        )]),
        say("Prepared a resume."),
    ]);
    let (conversation, action) = prepared(&s, &a.token, a.user(), dep).await;
    untouched(&s, dep).await;

    // Shown in its conversation and on /chat, with Confirm and Discard.
    let confirm = format!("/chat/actions/{action}/confirm");
    for path in [format!("/chat/{conversation}"), "/chat".to_owned()] {
        let (code, body) = page(&s, &path, &a.token).await;
        assert_eq!(code, StatusCode::OK);
        assert!(
            body.contains(&format!(r#"<tr id="action-{action}""#)),
            "{path}: {body}"
        );
        assert!(body.contains(&format!(r#"action="{confirm}""#)), "{path}");
        assert!(
            body.contains("Pause deployment &quot;BTC breakout&quot; v1"),
            "{path}: {body}"
        );
    }

    // Another user: 404 pages for confirm and discard; another origin: 403. Nothing changes.
    for verb in ["confirm", "discard"] {
        let r = post(&s, &format!("/chat/actions/{action}/{verb}"), &b.token, &[]).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{verb}");
        assert!(
            r.text()
                .await
                .unwrap()
                .contains("You have no action with this id.")
        );
    }
    let r =
        crate::common::serve::post_form(&s, &confirm, &a.token, &[], "http://evil.example").await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    untouched(&s, dep).await;

    // The owner confirms: paused, audited; back to the conversation with the notice.
    let r = post(&s, &confirm, &a.token, &[]).await;
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        location(&r),
        format!("/chat/{conversation}?done=paused#actions")
    );
    assert_eq!(status(&s, dep).await, DeploymentStatus::Paused);
    assert_eq!(audit_rows(&s, dep).await, 1);
    let (_, body) = page(&s, &format!("/chat/{conversation}?done=paused"), &a.token).await;
    assert!(body.contains("Confirmed: the deployment is paused; no tick until you resume it."));
    assert!(body.contains(r#"<span class="badge status-confirmed">confirmed</span>"#));
    assert!(
        !body.contains(&format!(r#"action="{confirm}""#)),
        "decided: no button"
    );
    let (_, body) = page(&s, "/chat", &a.token).await;
    assert!(body.contains("Nothing waits for your confirmation."));

    // Decided already: the conversation again with why (409), nothing more written.
    let r = post(&s, &confirm, &a.token, &[]).await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let body = r.text().await.unwrap();
    assert!(body.contains("already confirmed"), "{body}");
    assert!(body.contains(r#"id="conversation-title""#));
    assert_eq!(audit_rows(&s, dep).await, 1);

    // A resume, discarded from the page: nothing changes.
    let (second_conversation, second) = prepared(&s, &a.token, a.user(), dep).await;
    let r = post(
        &s,
        &format!("/chat/actions/{second}/discard"),
        &a.token,
        &[],
    )
    .await;
    assert_eq!(
        location(&r),
        format!("/chat/{second_conversation}?done=discarded#actions")
    );
    let stored = s.store.action(a.user(), second).await.unwrap();
    assert_eq!(stored.status, db::ActionStatus::Discarded);
    assert_eq!(stored.kind, db::ActionKind::ResumeDeployment);
    assert_eq!(status(&s, dep).await, DeploymentStatus::Paused);
    assert_eq!(audit_rows(&s, dep).await, 1);
    let (_, body) = page(
        &s,
        &format!("/chat/{second_conversation}?done=discarded"),
        &a.token,
    )
    .await;
    assert!(body.contains("Discarded: nothing changed."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_action_is_refused_from_the_page_and_changes_nothing() {
    let clock = Arc::new(MovingClock(Mutex::new(Utc::now())));
    let model = Arc::new(Later::default());
    let s = server_with_clock(model.clone() as Arc<dyn LanguageModel>, clock.clone()).await;
    let w = world(&s).await;
    let (a, dep) = (&w.a, w.a.deployment());
    model.script(vec![prepare_pause(dep), say("Prepared.")]);
    let (conversation, action) = prepared(&s, &a.token, a.user(), dep).await;

    clock.advance(Duration::minutes(16));
    let (_, body) = page(&s, &format!("/chat/{conversation}"), &a.token).await;
    assert!(
        body.contains(r#"<span class="badge status-expired">expired</span>"#),
        "{body}"
    );
    for verb in ["confirm", "discard"] {
        let r = post(&s, &format!("/chat/actions/{action}/{verb}"), &a.token, &[]).await;
        assert_eq!(r.status(), StatusCode::CONFLICT, "{verb}");
        let body = r.text().await.unwrap();
        assert!(body.contains("expired"), "{verb}: {body}");
        assert!(body.contains(r#"<p class="error" id="error">"#));
    }
    untouched(&s, dep).await;
}
