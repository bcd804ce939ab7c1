//! The chat coach remembers and forgets across conversations (ADR-0020), on SQLite and
//! PostgreSQL, through a scripted offline model.

use agent_runtime::{Message, ModelResponse, RunOptions, ScriptedModel, Usage};
use chat::{
    CHAT_TOOL_CAP, ChatStore, ChatTurn, ChatTurnOutput, DEFAULT_CHAT_MAX_STEPS, FactOp,
    FixedMarket, GET_MY_DEPLOYMENTS, run_chat_turn,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use db::FactStore;
use db::test_support::pg::TestDatabase;
use model::test_support::{self, tool_call, tool_turn};
use prompt_compose::{ChatMode, Tier};
use tools::{Preloaded, RunMode};
use types::{ArchiveReason, FactChangeOp};
use uuid::Uuid;

const FACT: &str = "You never take leverage above 3x.";

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 8, 14, 32, 0).unwrap()
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ModelResponse {
    ModelResponse {
        usage: Usage {
            input: 1_000,
            output: 50,
            cache_read: 0,
            cache_write: 0,
        },
        ..tool_turn(vec![tool_call(id, name, args.to_string())])
    }
}

pub(crate) fn answer(text: &str) -> ModelResponse {
    ModelResponse {
        usage: Usage {
            input: 1_200,
            output: 30,
            cache_read: 0,
            cache_write: 0,
        },
        ..test_support::answer(text)
    }
}

pub(crate) fn turn(
    user_id: Uuid,
    n: u128,
    history: Vec<Message>,
    text: &str,
    at: DateTime<Utc>,
) -> ChatTurn {
    ChatTurn {
        turn_id: Uuid::from_u128(0xC0 + n),
        user_id,
        conversation_id: None,
        tier: Tier::Pro,
        mode: ChatMode::Coach,
        focus: None,
        history,
        user_message: text.to_owned(),
        now: at,
        max_steps: DEFAULT_CHAT_MAX_STEPS,
        run_mode: RunMode::Trade,
        options: RunOptions::default(),
    }
}

pub(crate) async fn run<S: ChatStore>(
    store: &S,
    model: &ScriptedModel,
    t: ChatTurn,
) -> ChatTurnOutput {
    run_chat_turn(store, model, &FixedMarket::from(Preloaded::new()), t)
        .await
        .expect("turn")
}

async fn remember_then_forget<S: ChatStore>(store: &S) {
    let fx = db::test_support::seed(store).await.expect("seed");
    let user = fx.user.id;

    // Conversation 1: the user states a constraint; the coach remembers it.
    let model = ScriptedModel::new(vec![
        call(
            "c1",
            "remember",
            serde_json::json!({"fact": FACT, "topic": "risk", "confidence": "asserted"}),
        ),
        answer("Noted: no leverage above 3x."),
    ])
    .with_id("anthropic/claude-sonnet-4-5");
    let first = run(
        store,
        &model,
        turn(user, 1, Vec::new(), "I never go above 3x.", now()),
    )
    .await;
    assert!(first.run.error.is_none(), "{:?}", first.run.error);
    assert!(!first.system_prompt.contains("## What I know about you"));
    assert_eq!(model.requests().len(), 2);
    assert_eq!(first.run.usage.input, 2_200);
    assert_eq!(first.run.usage.output, 80);
    assert!(first.run.cost_known, "usage is priced");
    assert!(first.run.cost_usd > rust_decimal::Decimal::ZERO);
    let [FactOp::Remember { id: fact_id, .. }] = first.applied.as_slice() else {
        panic!("one remember applied: {:?}", first.applied)
    };
    let fact_id = *fact_id;
    // The conversation so far: user, assistant(call), tool result, assistant(answer).
    assert_eq!(first.messages.len(), 4);
    // The model got the fact's handle, the fact_id it shows beside the fact from now on.
    let handle = types::FactHandle::of(fact_id).to_string();
    assert!(
        matches!(&first.messages[2], Message::Tool { content, .. }
            if content.contains(&format!("\"fact_id\":\"{handle}\""))),
        "{:?}",
        first.messages[2]
    );

    // Conversation 2: the fact is in the system prompt; the user corrects it, the coach forgets.
    let later = now() + Duration::days(3);
    let model = ScriptedModel::new(vec![
        call(
            "c2",
            "forget",
            serde_json::json!({"fact_id": handle, "reason": "user_corrected"}),
        ),
        answer("Forgotten."),
    ]);
    let second = run(
        store,
        &model,
        turn(user, 2, Vec::new(), "Actually 5x is fine now.", later),
    )
    .await;
    assert!(second.run.error.is_none(), "{:?}", second.run.error);
    assert!(
        second.system_prompt.contains(&format!(
            "## What I know about you\n- [risk] {FACT} (fact_id {handle})"
        )),
        "{}",
        second.system_prompt
    );
    assert_eq!(second.facts_injected.len(), 1);
    // Referenced when it was written; forgotten in the turn that showed it, so not marked
    // again (in the returned copy or in the store).
    assert_eq!(second.facts_injected[0].last_referenced_at, Some(now()));
    let stored = store.list_facts(user, true).await.unwrap();
    assert_eq!(stored[0].last_referenced_at, Some(now()));

    // Conversation 3: the fact is gone from the prompt.
    let model = ScriptedModel::new(vec![answer("Hello again.")]);
    let third = run(
        store,
        &model,
        turn(user, 3, Vec::new(), "Hi", later + Duration::hours(1)),
    )
    .await;
    assert!(!third.system_prompt.contains("## What I know about you"));
    assert!(!third.system_prompt.contains(FACT));

    // The audit trail holds both changes.
    let changes = store.fact_changes(fact_id).await.unwrap();
    let ops: Vec<FactChangeOp> = changes.iter().map(|c| c.op).collect();
    assert_eq!(ops, [FactChangeOp::Insert, FactChangeOp::Archive]);
    assert_eq!(changes[0].new_fact.as_deref(), Some(FACT));
    assert_eq!(changes[0].actor.as_deref(), Some("chat-agent"));
    assert_eq!(
        changes[1].reason.as_deref(),
        Some(ArchiveReason::UserCorrected.as_str())
    );
    let all = store.list_facts(user, true).await.unwrap();
    assert_eq!(all[0].archived_reason, Some(ArchiveReason::UserCorrected));
}

async fn read_only_and_errors_write_nothing<S: ChatStore>(store: &S) {
    let fx = db::test_support::seed(store).await.expect("seed");
    let user = fx.user.id;
    // Read-only: the registry's guard refuses remember; the model is told, nothing is stored.
    let model = ScriptedModel::new(vec![
        call("c1", "remember", serde_json::json!({"fact": FACT})),
        answer("I cannot remember in this session."),
    ]);
    let mut t = turn(user, 10, Vec::new(), "remember this", now());
    t.run_mode = RunMode::ReadOnly;
    let out = run(store, &model, t).await;
    assert!(out.applied.is_empty());
    let tool_result = &model.requests()[1].messages[2];
    assert!(
        matches!(tool_result, Message::Tool { content, .. } if content.contains("read-only")),
        "{tool_result:?}"
    );
    // A run that ends in error (the script runs out after remember) writes nothing either.
    let model = ScriptedModel::new(vec![call(
        "c1",
        "remember",
        serde_json::json!({"fact": FACT}),
    )]);
    let out = run(
        store,
        &model,
        turn(user, 11, Vec::new(), "remember this", now()),
    )
    .await;
    assert!(out.run.error.is_some());
    assert!(out.applied.is_empty());
    assert!(store.list_facts(user, true).await.unwrap().is_empty());
    // Bounds: a 3-character fact is refused back to the model.
    let model = ScriptedModel::new(vec![
        call("c1", "remember", serde_json::json!({"fact": "abc"})),
        answer("ok"),
    ]);
    let out = run(store, &model, turn(user, 12, Vec::new(), "x", now())).await;
    assert!(out.applied.is_empty());
    // Another user's fact cannot be forgotten.
    let other = db::User {
        id: Uuid::from_u128(0xBEEF),
        email: None,
    };
    store.upsert_user(&other).await.unwrap();
    let theirs = store
        .remember(
            &db::NewFact {
                id: Uuid::from_u128(0xFAC7),
                user_id: other.id,
                skill_id: None,
                fact: "Someone else's fact.".into(),
                source: types::FactSource::Profile,
                confidence: types::FactConfidence::Asserted,
                topic: None,
                actor: "profile".into(),
            },
            now(),
        )
        .await
        .unwrap();
    let model = ScriptedModel::new(vec![
        call("c1", "forget", serde_json::json!({"fact_id": theirs.id})),
        answer("ok"),
    ]);
    let out = run(
        store,
        &model,
        turn(user, 13, Vec::new(), "forget it", now()),
    )
    .await;
    assert!(out.applied.is_empty());
    assert!(store.list_facts(other.id, false).await.unwrap().len() == 1);
}

#[tokio::test]
async fn sqlite_remember_then_forget() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    remember_then_forget(&store).await;
}

#[tokio::test]
async fn postgres_remember_then_forget() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    remember_then_forget(&store).await;
}

#[tokio::test]
async fn sqlite_refusals_write_nothing() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    read_only_and_errors_write_nothing(&store).await;
}

#[tokio::test]
async fn postgres_refusals_write_nothing() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    read_only_and_errors_write_nothing(&store).await;
}

/// The whole first request of a turn with facts: system prompt, history, user message, tools.
#[tokio::test]
async fn full_turn_prompt_snapshot() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let fx = db::test_support::seed(&store).await.expect("seed");
    for (i, (topic, text, confidence)) in [
        (
            "risk",
            "You don't take leverage above 5x.",
            types::FactConfidence::Asserted,
        ),
        (
            "symbols",
            "You trade BTC and ETH only, no alts.",
            types::FactConfidence::Asserted,
        ),
        (
            "session",
            "You usually trade during the US morning.",
            types::FactConfidence::Inferred,
        ),
    ]
    .into_iter()
    .enumerate()
    {
        store
            .remember(
                &db::NewFact {
                    id: Uuid::from_u128(0xF0 + i as u128),
                    user_id: fx.user.id,
                    skill_id: None,
                    fact: text.into(),
                    source: types::FactSource::Chat,
                    confidence,
                    topic: Some(topic.into()),
                    actor: "chat-agent".into(),
                },
                now() - Duration::days(10 - i as i64),
            )
            .await
            .unwrap();
    }
    let history = vec![
        Message::User {
            content: "How did my EURUSD deployment do last week?".into(),
        },
        Message::Assistant {
            text: Some("Three trades, two winners; net +$41.20.".into()),
            tool_calls: Vec::new(),
        },
    ];
    let model = ScriptedModel::new(vec![answer("Sure.")]);
    let out = run(
        &store,
        &model,
        turn(
            fx.user.id,
            20,
            history,
            "Any central-bank decision today?",
            now(),
        ),
    )
    .await;
    let request = &model.requests()[0];
    let mut text = format!("=== system\n{}\n", request.system);
    for m in &request.messages {
        text.push_str(&format!("=== {}\n", serde_json::to_string(m).unwrap()));
    }
    text.push_str("=== tools\n");
    for t in &request.tools {
        text.push_str(&format!(
            "{}: {}\n  {}\n",
            t.name,
            t.description,
            serde_json::to_string(&t.parameters).unwrap()
        ));
    }
    insta::assert_snapshot!("full_turn_prompt", text);
    assert_eq!(out.system_prompt, request.system);
    assert!(request.tools.len() <= CHAT_TOOL_CAP);
    assert!(request.tools.iter().any(|t| t.name == GET_MY_DEPLOYMENTS));
}
