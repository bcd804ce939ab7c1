//! The chat registry's shape.

use std::sync::Arc;

use chat::{
    CHAT_TOOL_CAP, ChatData, ChatToolContext, Journal, chat_registry, exposure::MoveWindow,
};
use chrono::{TimeZone, Utc};
use tools::{Preloaded, RunMode};
use uuid::Uuid;

fn empty_ctx() -> ChatToolContext {
    ChatToolContext {
        data: Arc::new(ChatData {
            user_id: Uuid::from_u128(1),
            now: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            deployments: Vec::new(),
            skill_notes: Vec::new(),
            facts: Vec::new(),
            upcoming: Vec::new(),
            past: Vec::new(),
        }),
        journal: Arc::new(Journal::default()),
        actions: Arc::new(chat::ActionJournal::default()),
        market: Arc::new(Preloaded::new()),
        window: MoveWindow::default(),
        turn_id: Uuid::from_u128(2),
    }
}

/// ADR-0020: the chat registry holds at most 16 tools.
#[test]
fn chat_registry_stays_under_the_cap() {
    let registry = chat_registry(&empty_ctx(), RunMode::Trade);
    assert!(
        registry.tools().len() <= CHAT_TOOL_CAP,
        "the chat registry holds {} tools, over ADR-0020's cap of {CHAT_TOOL_CAP}: {:?}",
        registry.tools().len(),
        registry.names()
    );
    assert_eq!(
        registry.names(),
        [
            "get_my_deployments",
            "get_skill_performance",
            "get_upcoming_events",
            "remember",
            "forget",
            "prepare_action"
        ]
    );
    // No trading tool: the coach cannot propose an order.
    assert!(registry.get(tools::PROPOSE_ORDER).is_none());
}

#[test]
fn read_only_refuses_memory_writes_and_serves_reads() {
    let ctx = empty_ctx();
    let registry = chat_registry(&ctx, RunMode::ReadOnly);
    let err = registry
        .call("remember", serde_json::json!({"fact": "You like BTC."}))
        .unwrap_err();
    assert!(matches!(err, tools::ToolError::ReadOnly { .. }), "{err}");
    assert!(ctx.journal.take().is_empty());
    let ok = registry
        .call("get_my_deployments", serde_json::json!({}))
        .unwrap();
    assert_eq!(ok["deployments"], serde_json::json!([]));
}

#[test]
fn remember_bounds_and_defaults() {
    let ctx = empty_ctx();
    let registry = chat_registry(&ctx, RunMode::Trade);
    for bad in [
        serde_json::json!({"fact": "abc"}),
        serde_json::json!({"fact": "x".repeat(501)}),
        serde_json::json!({"fact": "You like BTC.", "topic": "t".repeat(33)}),
        serde_json::json!({"fact": "You like BTC.", "source": "profile"}),
    ] {
        let err = registry.call("remember", bad.clone()).unwrap_err();
        assert!(
            matches!(err, tools::ToolError::InvalidArguments { .. }),
            "{bad}: {err}"
        );
    }
    let ok = registry
        .call("remember", serde_json::json!({"fact": "You like\nBTC."}))
        .unwrap();
    assert_eq!(ok["confidence"], "inferred");
    assert_eq!(ok["source"], "chat");
    let ops = ctx.journal.take();
    assert!(
        matches!(&ops[..], [chat::FactOp::Remember { fact, confidence: types::FactConfidence::Inferred, .. }] if fact == "You like BTC.")
    );
}

fn stored_fact(id: Uuid, text: &str) -> types::UserFact {
    types::UserFact {
        id,
        user_id: Uuid::from_u128(1),
        skill_id: None,
        fact: text.to_owned(),
        source: types::FactSource::Chat,
        confidence: types::FactConfidence::Asserted,
        topic: None,
        last_referenced_at: None,
        created_at: Utc.with_ymd_and_hms(2025, 12, 1, 0, 0, 0).unwrap(),
        archived_at: None,
        archived_reason: None,
    }
}

/// Two of a user's facts whose handles collide (found by search, as a user with enough facts
/// could meet them): the shared handle is refused with both full ids, and a full id resolves.
#[test]
fn forget_refuses_a_shared_handle_and_takes_the_full_id() {
    use std::collections::HashMap;
    use types::FactHandle;

    let mut seen: HashMap<FactHandle, Uuid> = HashMap::new();
    let (a, b) = (1u128..)
        .map(Uuid::from_u128)
        .find_map(|id| {
            seen.insert(FactHandle::of(id), id)
                .map(|earlier| (earlier, id))
        })
        .expect("a collision of 32-bit handles");
    let handle = FactHandle::of(a);
    assert_eq!(handle, FactHandle::of(b));
    let mut ctx = empty_ctx();
    ctx.data = Arc::new(ChatData {
        facts: vec![
            stored_fact(a, "You never use leverage above 3x."),
            stored_fact(b, "You trade BTC and ETH only."),
        ],
        ..(*ctx.data).clone()
    });
    let registry = chat_registry(&ctx, RunMode::Trade);
    let err = registry
        .call("forget", serde_json::json!({"fact_id": handle.to_string()}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("names 2 of the user's facts")
            && err.contains(&a.to_string())
            && err.contains(&b.to_string()),
        "{err}"
    );
    assert!(ctx.journal.take().is_empty());
    let ok = registry
        .call("forget", serde_json::json!({"fact_id": b.to_string()}))
        .unwrap();
    assert_eq!(ok["fact_id"], handle.to_string());
    assert_eq!(
        ctx.journal.take(),
        [chat::FactOp::Forget {
            id: b,
            reason: types::ArchiveReason::AgentForget
        }]
    );
}
