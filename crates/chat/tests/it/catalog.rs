//! The chat registry's shape.

use std::sync::Arc;

use chat::{CHAT_TOOL_CAP, ChatData, ChatToolContext, chat_registry};
use chrono::{TimeZone, Utc};
use prompt_compose::ChatMode;
use tools::RunMode;
use uuid::Uuid;

fn empty_ctx() -> ChatToolContext {
    let data = ChatData {
        user_id: Uuid::from_u128(1),
        now: Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        deployments: Vec::new(),
        skill_notes: Vec::new(),
        skills: Vec::new(),
        facts: Vec::new(),
        upcoming: Vec::new(),
        past: Vec::new(),
    };
    ChatToolContext::new(data, Uuid::from_u128(2))
}

/// ADR-0020: each mode's chat registry holds at most 16 tools, exactly its catalog's, none
/// that trades, and writes to skills or deployments only through `prepare_action`.
#[test]
fn every_mode_stays_under_the_cap() {
    for mode in [ChatMode::Coach, ChatMode::Authoring, ChatMode::Ops] {
        let registry = chat_registry(&empty_ctx(), mode, RunMode::Trade);
        assert!(
            registry.tools().len() <= CHAT_TOOL_CAP,
            "{mode:?}: the chat registry holds {} tools, over ADR-0020's cap of {CHAT_TOOL_CAP}: {:?}",
            registry.tools().len(),
            registry.names()
        );
        assert_eq!(registry.names(), chat::catalog(mode), "{mode:?}");
        // No trading tool: the coach cannot propose an order.
        assert!(registry.get(tools::PROPOSE_ORDER).is_none());
    }
    // The design's whole catalog, every mode's tools together, fits the cap too.
    let union: std::collections::BTreeSet<&str> =
        [ChatMode::Coach, ChatMode::Authoring, ChatMode::Ops]
            .into_iter()
            .flat_map(|m| chat::catalog(m).iter().copied())
            .collect();
    assert!(
        union.len() <= CHAT_TOOL_CAP,
        "the three catalogs together: {union:?}"
    );
}

#[test]
fn read_only_refuses_memory_writes_and_serves_reads() {
    let ctx = empty_ctx();
    let registry = chat_registry(&ctx, ChatMode::Coach, RunMode::ReadOnly);
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
    let registry = chat_registry(&ctx, ChatMode::Coach, RunMode::Trade);
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
    let registry = chat_registry(&ctx, ChatMode::Coach, RunMode::Trade);
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

/// The README's table of tools per mode is the catalog: every row's marks are the modes that
/// offer the tool, and every tool of every mode has a row.
#[test]
fn the_readme_table_is_the_catalog() {
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README.md");
    let modes = [ChatMode::Coach, ChatMode::Authoring, ChatMode::Ops];
    let mut rows = 0;
    let mut listed: Vec<String> = Vec::new();
    for line in readme
        .lines()
        .skip_while(|l| !l.starts_with("| tool | coach | authoring | ops |"))
        .skip(2)
    {
        if !line.starts_with("| `") {
            break;
        }
        rows += 1;
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        for tool in cells[1].split(", ") {
            let tool = tool.trim_matches('`');
            for (i, mode) in modes.iter().enumerate() {
                let marked = cells[2 + i] == "✓";
                let offered = chat::catalog(*mode).contains(&tool);
                assert_eq!(marked, offered, "README: {tool} in {mode:?}");
            }
            listed.push(tool.to_owned());
        }
    }
    assert!(rows > 0, "the README has no table of chat tools");
    for mode in modes {
        for tool in chat::catalog(mode) {
            assert!(
                listed.iter().any(|t| t == tool),
                "README: no row for {tool}"
            );
        }
    }
}
