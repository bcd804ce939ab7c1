//! The `annotate` memory tool over a real store: an outcome is named as the recall tools list
//! it (its short id) or by its full UUID; an unknown or ambiguous short id, or another user's
//! outcome, is an error the model reads.

use std::sync::Arc;

use db::test_support::{at, sample_outcome_rows, sample_snapshot, seed, tick_record};
use db::{MemoryScope, OutcomeStore, OutcomeWrites, SqliteStore, TickRecord, TickStore};
use serde_json::{Value, json};
use tick::{ANNOTATE, memory_tools};
use tools::Tool;
use types::FixedClock;
use uuid::Uuid;

/// Records an outcome of `deployment` at `minutes` with the id `id`.
async fn outcome(store: &SqliteStore, deployment: Uuid, id: Uuid, minutes: i64) {
    let snapshot = sample_snapshot(deployment, at(minutes));
    let (market, mut outcome) = sample_outcome_rows(&snapshot);
    outcome.id = id;
    store
        .record_tick(&TickRecord {
            outcomes: OutcomeWrites {
                snapshots: vec![market],
                outcomes: vec![outcome],
                scores: vec![],
            },
            ..tick_record(snapshot)
        })
        .await
        .expect("record");
}

fn annotate(tools: &[Arc<dyn Tool>]) -> &Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == ANNOTATE)
        .expect("annotate")
}

#[tokio::test]
async fn annotate_takes_an_outcome_id_as_the_recall_tools_list_it() {
    let store = SqliteStore::connect("sqlite::memory:")
        .await
        .expect("store");
    let mine = seed(&store).await.unwrap();
    let theirs = seed(&store).await.unwrap();
    let id = |text: &str| Uuid::parse_str(text).unwrap();
    let single = id("1234abcd-0000-4000-8000-000000000001");
    let twin_a = id("5678ef01-0000-4000-8000-000000000001");
    let twin_b = id("5678ef01-0000-4000-8000-000000000002");
    let other_users = id("9abc0def-0000-4000-8000-000000000001");
    outcome(&store, mine.deployment.id, single, 0).await;
    outcome(&store, mine.deployment.id, twin_a, 60).await;
    outcome(&store, mine.deployment.id, twin_b, 120).await;
    outcome(&store, theirs.deployment.id, other_users, 0).await;

    let schema = memory_tools(
        store.clone(),
        MemoryScope::User(mine.user.id),
        Arc::new(FixedClock(at(300))),
        false,
    );
    let tool = annotate(&schema);
    let described = tool.parameters()["properties"]["outcome_id"].to_string();
    assert!(
        described.contains("as the recall tools list it"),
        "{described}"
    );
    assert!(tool.description().contains("as the recall tools list it"));

    for scope in [
        MemoryScope::User(mine.user.id),
        MemoryScope::Deployment(mine.deployment.id),
    ] {
        let tools = memory_tools(store.clone(), scope, Arc::new(FixedClock(at(300))), false);
        let tool = annotate(&tools);
        let call = async |args: Value| tool.call_async(args).await;
        let on_single = async || {
            let stored = store.annotations(mine.deployment.id, 100).await.unwrap();
            stored
                .iter()
                .filter(|a| a.target == db::AnnotationTarget::Outcome(single))
                .count()
        };
        let before = on_single().await;

        // The short id, in any case, with or without a hyphen, and the full UUID.
        for given in ["1234abcd", "1234ABCD-0000", &single.to_string()] {
            let done = call(json!({"outcome_id": given, "text": "news-driven"}))
                .await
                .unwrap_or_else(|e| panic!("{given}: {e}"));
            assert_eq!(done["deployment_id"], json!(mine.deployment.id), "{done}");
        }
        assert_eq!(on_single().await, before + 3);

        // Unknown: the error names the id.
        let unknown = call(json!({"outcome_id": "0badf00d", "text": "x"}))
            .await
            .expect_err("unknown");
        assert!(
            unknown.to_string().contains("no outcome 0badf00d"),
            "{unknown}"
        );
        // Ambiguous: the error lists the full ids.
        let ambiguous = call(json!({"outcome_id": "5678ef01", "text": "x"}))
            .await
            .expect_err("ambiguous");
        let text = ambiguous.to_string();
        assert!(text.contains("ambiguous"), "{text}");
        assert!(
            text.contains(&twin_a.to_string()) && text.contains(&twin_b.to_string()),
            "{text}"
        );
        // A longer prefix tells them apart.
        call(json!({"outcome_id": "5678ef01-0000-4000-8000-00000000000", "text": "x"}))
            .await
            .expect_err("still both");
        call(json!({"outcome_id": twin_b.simple().to_string(), "text": "x"}))
            .await
            .expect("the full id without hyphens");
        // Another user's outcome, by its short id or its full id: as if it did not exist.
        for given in ["9abc0def".to_owned(), other_users.to_string()] {
            let refused = call(json!({"outcome_id": given, "text": "not mine"}))
                .await
                .expect_err("another user's");
            assert!(refused.to_string().contains("no outcome"), "{refused}");
        }
        // Fewer than 8 hex digits, or not hex.
        for given in ["1234abc", "1234abcz"] {
            let refused = call(json!({"outcome_id": given, "text": "x"}))
                .await
                .expect_err(given);
            assert!(refused.to_string().contains("outcome_id"), "{refused}");
        }
    }
    assert!(
        store
            .annotations(theirs.deployment.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
}
