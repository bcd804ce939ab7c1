//! `GET /api/deployments/{id}/memory` through real HTTP on PostgreSQL: the closed trades, the
//! notes history (active and superseded), and the latest tick's prompt with its token counts.

use live_runner::serve::api::count_tokens;
use reqwest::StatusCode;

use db::TickStore;
use db::test_support::at;

use crate::common::serve::{no_model, server, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_shows_trades_notes_and_the_latest_prompt_with_token_counts() {
    let s = server(no_model()).await;
    let w = world(&s).await;
    let a = &w.a;

    let (status, body) = s
        .get(
            &format!("/api/deployments/{}/memory", a.deployment()),
            &a.token,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["deployment"]["id"], a.deployment().to_string());
    assert_eq!(body["skillName"], a.fx.skill.name.as_str());

    let closed = body["closedTrades"].as_array().unwrap();
    assert_eq!(closed.len(), 1, "{body}");
    assert_eq!(closed[0]["id"], a.closed.id.to_string());
    assert_eq!(closed[0]["status"], "closed");
    assert!(body["openTrades"].as_array().unwrap().is_empty());

    let notes = body["notes"].as_array().unwrap();
    assert_eq!(notes.len(), 2, "{body}");
    assert_eq!(notes[0]["lessonsText"], "- second lesson");
    assert_eq!(notes[0]["status"], "active");
    assert_eq!(notes[1]["lessonsText"], "- first lesson");
    assert_eq!(notes[1]["status"], "superseded");

    let latest = s
        .store
        .list_snapshots(a.deployment(), 1)
        .await
        .unwrap()
        .remove(0);
    assert_eq!(latest.tick_at, at(60));
    let prompt = &body["prompt"];
    assert_eq!(prompt["source"], "latest_decision_snapshot");
    assert_eq!(prompt["asOf"], "2026-06-04T11:00:00Z");
    assert_eq!(prompt["snapshotId"], latest.id.to_string());
    assert_eq!(prompt["systemPrompt"], latest.system_prompt.as_str());
    assert_eq!(prompt["userMessage"], latest.context.as_str());
    assert_eq!(prompt["tokenizer"], "o200k_base");
    let system_tokens = count_tokens(&latest.system_prompt);
    assert!(system_tokens > 0);
    assert_eq!(prompt["systemPromptTokens"], system_tokens);
    assert_eq!(prompt["userMessageTokens"], count_tokens(&latest.context));
}
