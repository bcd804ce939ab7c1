//! `terminal::converse` in process on SQLite (the binary's pipe test runs on PostgreSQL): the
//! conversation is kept between lines, a model failure is printed and the loop goes on, `/quit`
//! ends it, each turn is recorded.

use std::sync::Arc;

use agent_runtime::{Message, ScriptedModel};
use db::test_support::seed;
use db::{ChatTurnStore, FactStore};
use live_runner::serve::model::ScriptedResponse;
use live_runner::terminal::{Session, Summary, converse};
use prompt_compose::{ChatMode, Tier};
use types::{Clock, FixedClock};

#[tokio::test]
async fn a_conversation_on_sqlite_keeps_its_history_and_survives_a_model_failure() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let fx = seed(&store).await.unwrap();
    let script: Vec<ScriptedResponse> = serde_json::from_str(
        r#"[
          {"toolCalls": [{"name": "remember", "arguments": {"fact": "You trade only on weekdays.", "topic": "session"}}]},
          {"text": "Noted."},
          {"text": "Still here."}
        ]"#,
    )
    .unwrap();
    let model = Arc::new(ScriptedModel::new(
        script
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.into_response(i))
            .collect(),
    ));
    let clock = FixedClock(db::test_support::at(0));
    let session = Session {
        user_id: fx.user.id,
        mode: ChatMode::Coach,
        focus: None,
        tier: Tier::Pro,
        max_steps: 4,
    };
    let input: &[u8] = b"I only trade on weekdays.\nstill there?\nand now?\n/quit\nnever read\n";
    let mut output = Vec::new();
    let summary = converse(
        &store,
        model.as_ref(),
        &chat::FixedMarket::from(tools::Preloaded::new()),
        &clock,
        &session,
        input,
        &mut output,
    )
    .await
    .unwrap();
    let text = String::from_utf8(output).unwrap();
    // Three turns; the third found the script spent: printed, not fatal.
    assert_eq!(
        summary,
        Summary {
            turns: 3,
            failed: 1
        },
        "{text}"
    );
    assert!(text.contains("coach: Noted."), "{text}");
    assert!(text.contains("coach: Still here."), "{text}");
    assert!(text.contains("(the model failed:"), "{text}");
    assert!(!text.contains("never read"));

    // The second line's turn carried the first turn: user, assistant (remember), tool result,
    // assistant, then the new user message.
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        4,
        "two calls for the first turn, one each after"
    );
    let second = &requests[2].messages;
    assert_eq!(second.len(), 5, "{second:?}");
    assert!(
        matches!(&second[0], Message::User { content } if content == "I only trade on weekdays.")
    );
    assert!(matches!(&second[2], Message::Tool { name, .. } if name == "remember"));
    assert!(matches!(&second[4], Message::User { content } if content == "still there?"));
    // The failed third turn did not join the conversation.
    assert_eq!(requests[3].messages.len(), 7);

    let facts = store.list_facts(fx.user.id, false).await.unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].fact, "You trade only on weekdays.");
    assert_eq!(
        facts[0].confidence,
        types::FactConfidence::Inferred,
        "the tool's default"
    );
    let turns = store.chat_turns(fx.user.id, 10).await.unwrap();
    assert_eq!(turns.len(), 3);
    assert!(
        turns
            .iter()
            .all(|t| t.at == clock.now() && t.mode == "coach")
    );
    assert_eq!(turns.iter().filter(|t| t.error.is_some()).count(), 1);
}
