//! Facts stay current (ADR-0020's recency, applied to writes): fifteen facts remembered over
//! several conversations, each in the very next turn's "## What I know about you"; `forget` by
//! the handle shown beside a fact, from a later conversation; an unknown handle refused back to
//! the model; a failed turn leaving every fact's reference as it was. Real turns through
//! `run_chat_turn`, a scripted model calling the tools with JSON argument text as providers
//! deliver it, on SQLite, PostgreSQL and PostgreSQL as the user under row-level security.

use std::collections::BTreeMap;

use agent_runtime::{Message, ModelError, ModelResponse, ScriptedModel, Usage};
use chat::{ChatStore, ChatTurn, ChatTurnOutput, FactOp};
use chrono::{DateTime, Duration, TimeZone, Utc};
use db::test_support::pg::TestDatabase;
use model::test_support::{tool_call, tool_turn};
use prompt_compose::MAX_INJECTED_FACTS;
use types::{ArchiveReason, FactHandle, UserFact};
use uuid::Uuid;

use crate::memory::{answer, run, turn};

const BLOCK: &str = "## What I know about you\n";

fn start() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 9, 0, 0).unwrap()
}

fn usage() -> Usage {
    Usage {
        input: 900,
        output: 40,
        cache_read: 0,
        cache_write: 0,
    }
}

/// One assistant message with tool calls whose arguments are the raw JSON text a provider
/// delivers (`arguments` is a string on the wire).
fn calls(turn: u32, raw: &[(&str, &str)]) -> ModelResponse {
    ModelResponse {
        usage: usage(),
        ..tool_turn(
            raw.iter()
                .enumerate()
                .map(|(i, (name, args))| tool_call(format!("toolu_{turn:02}_{i}"), *name, *args))
                .collect(),
        )
    }
}

fn chat_turn(user_id: Uuid, n: u32, text: &str, now: DateTime<Utc>) -> ChatTurn {
    turn(user_id, 0x7A00 + u128::from(n), Vec::new(), text, now)
}

/// The "## What I know about you" block of a system prompt, empty when it has none.
fn block(system: &str) -> String {
    system
        .split("\n\n")
        .find(|s| s.starts_with(BLOCK))
        .unwrap_or_default()
        .to_owned()
}

/// The bullets of the block: one per fact shown.
fn bullets(system: &str) -> Vec<String> {
    block(system)
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(str::to_owned)
        .collect()
}

fn remembered(out: &ChatTurnOutput) -> Vec<(Uuid, String)> {
    out.applied
        .iter()
        .filter_map(|op| match op {
            FactOp::Remember { id, fact, .. } => Some((*id, fact.clone())),
            FactOp::Forget { .. } => None,
        })
        .collect()
}

/// The bullet showing fact `text`, with the handle of `id` beside it.
fn shows(system: &str, id: Uuid, text: &str) -> bool {
    let handle = FactHandle::of(id).to_string();
    bullets(system)
        .iter()
        .any(|b| b.contains(text) && b.ends_with(&format!("fact_id {handle})")))
}

/// The content of the tool result answering call `call_id`, as the model got it next.
fn tool_result(model: &ScriptedModel, call_id: &str) -> String {
    let last = model.requests().last().cloned().expect("a request");
    last.messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                call_id: c,
                content,
                ..
            } if c == call_id => Some(content.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}"))
}

fn references(facts: &[UserFact]) -> BTreeMap<Uuid, Option<DateTime<Utc>>> {
    facts.iter().map(|f| (f.id, f.last_referenced_at)).collect()
}

/// What the user says in each conversation and the facts a real model would call `remember`
/// with, as its raw argument JSON.
const CONVERSATIONS: [(&str, &[&str]); 5] = [
    (
        "Quick intro: I trade BTC and ETH perps only, never more than 3x, and I stop for the day \
         after two losing trades.",
        &[
            r#"{"fact":"You trade BTC and ETH perpetuals only.","topic":"symbols","confidence":"asserted"}"#,
            r#"{"fact":"You never use leverage above 3x.","topic":"risk","confidence":"asserted"}"#,
            r#"{"fact":"You stop trading for the day after two losing trades.","topic":"risk","confidence":"asserted"}"#,
        ],
    ),
    (
        "I'm in Berlin, I trade 14:00-18:00 UTC mostly, and I want to reach 25k by December.",
        &[
            r#"{"fact":"You live in Berlin.","topic":"session"}"#,
            r#"{"fact":"You mostly trade 14:00-18:00 UTC.","topic":"session","confidence":"asserted"}"#,
            r#"{"fact":"You want to grow the account to $25,000 by December.","topic":"goal","confidence":"asserted"}"#,
        ],
    ),
    (
        "Funding reversion is my main setup; I hate holding over weekends; and CPI days scare me.",
        &[
            r#"{"fact":"Your main setup is funding-rate mean reversion.","topic":"strategy","confidence":"asserted"}"#,
            r#"{"fact":"You close positions before the weekend.","topic":"risk","confidence":"asserted"}"#,
            r#"{"fact":"You seem to avoid trading on CPI release days.","topic":"events","confidence":"inferred"}"#,
        ],
    ),
    (
        "Max drawdown I accept is 12%. I review trades on Sundays. Keep answers short please.",
        &[
            r#"{"fact":"You accept a maximum drawdown of 12%.","topic":"risk","confidence":"asserted"}"#,
            r#"{"fact":"You review your trades on Sundays.","topic":null,"confidence":"asserted"}"#,
            r#"{"fact":"You prefer short answers.","topic":"style"}"#,
        ],
    ),
    (
        "I size every trade at 1% risk, I use the paper account to test new ideas first, and \
         I'm colour-blind so don't describe charts by colour.",
        &[
            r#"{"fact":"You risk 1% of equity per trade.","topic":"risk","confidence":"asserted"}"#,
            r#"{"fact":"You test new ideas on the paper account first.","topic":"process","confidence":"asserted"}"#,
            r#"{"fact":"You are colour-blind: never describe charts by colour.","topic":"style","confidence":"asserted"}"#,
        ],
    ),
];

async fn facts_stay_current<S: ChatStore>(store: &S, user: Uuid) {
    let mut now = start();
    let mut written: Vec<(Uuid, String)> = Vec::new();
    let mut previous: Vec<(Uuid, String)> = Vec::new();
    let mut prompts: Vec<String> = Vec::new();

    // Five conversations, three facts each: every fact written in one turn is in the next
    // turn's block, with its handle.
    for (n, (said, facts)) in (1u32..).zip(CONVERSATIONS) {
        let raw: Vec<(&str, &str)> = facts.iter().map(|a| ("remember", *a)).collect();
        let model = ScriptedModel::new(vec![calls(n, &raw), answer("Noted.")])
            .with_id("anthropic/claude-sonnet-4-5");
        let out = run(store, &model, chat_turn(user, n, said, now)).await;
        assert!(out.run.error.is_none(), "turn {n}: {:?}", out.run.error);
        let system = &model.requests()[0].system;
        assert_eq!(&out.system_prompt, system);
        for (id, text) in &previous {
            assert!(
                shows(system, *id, text),
                "turn {n} misses {text:?} written the turn before:\n{}",
                block(system)
            );
        }
        let shown = bullets(system).len();
        assert_eq!(shown, written.len().min(MAX_INJECTED_FACTS), "turn {n}");
        // The model is given the handle of each fact it remembered.
        let new = remembered(&out);
        assert_eq!(new.len(), facts.len(), "turn {n}");
        for (i, (id, _)) in new.iter().enumerate() {
            let result = tool_result(&model, &format!("toolu_{n:02}_{i}"));
            assert!(
                result.contains(&format!("\"fact_id\":\"{}\"", FactHandle::of(*id))),
                "{result}"
            );
        }
        prompts.push(system.clone());
        written.extend(new.iter().cloned());
        previous = new;
        now += Duration::days(1);
    }
    assert_eq!(written.len(), 15);

    // Conversation 6 shows the last three written and drops the least recently referenced.
    let model = ScriptedModel::new(vec![answer("Morning! What are we looking at today?")]);
    let sixth = run(store, &model, chat_turn(user, 6, "Morning", now)).await;
    let system = sixth.system_prompt.clone();
    for (id, text) in &previous {
        assert!(shows(&system, *id, text), "{}", block(&system));
    }
    assert_eq!(bullets(&system).len(), MAX_INJECTED_FACTS);
    // The facts of conversation 1, written first and shown no later than any other, drifted
    // out first.
    for (id, text) in &written[..3] {
        assert!(
            !shows(&system, *id, text),
            "{text:?} should have drifted out"
        );
    }
    insta::assert_snapshot!("facts_block_after_fifteen_writes", block(&system));
    now += Duration::days(1);

    // Conversation 7: the user withdraws a fact from conversation 1 that no longer shows; the
    // model holds its handle from an earlier block (conversation 2 showed it) and forgets it;
    // an unknown handle and a description instead of a handle are refused back to the model.
    let (stop_id, stop_text) = written[2].clone();
    assert!(shows(&prompts[1], stop_id, &stop_text));
    let handle = FactHandle::of(stop_id).to_string();
    let unknown = if handle == "0badc0de" {
        "0badc0df"
    } else {
        "0badc0de"
    };
    let model = ScriptedModel::new(vec![
        calls(
            7,
            &[
                (
                    "forget",
                    &format!(r#"{{"fact_id":"{unknown}","reason":"user_deleted"}}"#),
                ),
                (
                    "forget",
                    r#"{"fact_id":"the two-losses rule","reason":"user_deleted"}"#,
                ),
            ],
        ),
        calls(
            8,
            &[(
                "forget",
                &format!(
                    r#"{{"fact_id":"{}","reason":"user_deleted"}}"#,
                    handle.to_uppercase()
                ),
            )],
        ),
        answer("Done: I no longer assume you stop after two losses."),
    ]);
    let seventh = run(
        store,
        &model,
        chat_turn(
            user,
            7,
            "Forget that rule about stopping after two losses, I dropped it.",
            now,
        ),
    )
    .await;
    assert!(seventh.run.error.is_none(), "{:?}", seventh.run.error);
    let refused = tool_result(&model, "toolu_07_0");
    assert!(
        refused.contains("error") && refused.contains(unknown) && refused.contains("not one of"),
        "{refused}"
    );
    let refused = tool_result(&model, "toolu_07_1");
    assert!(
        refused.contains("error") && refused.contains("8 hex digits"),
        "{refused}"
    );
    let done = tool_result(&model, "toolu_08_0");
    assert!(
        done.contains("forgotten") && done.contains(&handle),
        "{done}"
    );
    assert_eq!(
        seventh.applied,
        vec![FactOp::Forget {
            id: stop_id,
            reason: ArchiveReason::UserDeleted
        }]
    );
    let all = store.list_facts(user, true).await.unwrap();
    let archived: Vec<&UserFact> = all.iter().filter(|f| f.archived_at.is_some()).collect();
    assert_eq!(archived.len(), 1);
    assert_eq!(
        (archived[0].id, archived[0].archived_reason),
        (stop_id, Some(ArchiveReason::UserDeleted))
    );
    now += Duration::days(1);

    // Conversation 8: the user corrects a fact the block shows; the correction replaces it in
    // the next block at once.
    let (dd_id, dd_text) = written[9].clone();
    let (risk_id, _) = written[12].clone();
    let dd = FactHandle::of(dd_id).to_string();
    let risk = FactHandle::of(risk_id).to_string();
    let model = ScriptedModel::new(vec![
        calls(
            9,
            &[
                (
                    "forget",
                    &format!(r#"{{"fact_id":"{dd}","reason":"user_corrected"}}"#),
                ),
                (
                    "remember",
                    r#"{"fact":"You accept a maximum drawdown of 8%.","topic":"risk","confidence":"asserted"}"#,
                ),
            ],
        ),
        answer("Updated: 8% maximum drawdown."),
    ]);
    let eighth = run(
        store,
        &model,
        chat_turn(user, 8, "Actually make that 8% max drawdown, not 12.", now),
    )
    .await;
    assert!(eighth.run.error.is_none(), "{:?}", eighth.run.error);
    assert!(
        shows(&eighth.system_prompt, dd_id, &dd_text),
        "a shown fact"
    );
    let [_, FactOp::Remember { id: fix_id, .. }] = eighth.applied.as_slice() else {
        panic!("{:?}", eighth.applied)
    };
    let fix_id = *fix_id;
    now += Duration::days(1);

    // Conversation 9 fails (the provider is overloaded after a tool round): nothing it
    // remembered or forgot is written, and no fact's reference moves.
    let before = store.list_facts(user, true).await.unwrap();
    let model = ScriptedModel::with_results(vec![
        Ok(calls(
            10,
            &[
                (
                    "remember",
                    r#"{"fact":"You are thinking about trading SOL.","topic":"symbols"}"#,
                ),
                ("forget", &format!(r#"{{"fact_id":"{risk}"}}"#)),
            ],
        )),
        Err(ModelError::Http {
            provider: "anthropic".into(),
            status: 529,
            body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .into(),
        }),
    ]);
    let ninth = run(store, &model, chat_turn(user, 9, "What about SOL?", now)).await;
    assert!(ninth.run.error.is_some());
    assert!(ninth.applied.is_empty());
    let ninth_block = block(&ninth.system_prompt);
    assert!(shows(
        &ninth.system_prompt,
        fix_id,
        "maximum drawdown of 8%"
    ));
    assert!(!ninth_block.contains(&dd_text), "{ninth_block}");
    let after = store.list_facts(user, true).await.unwrap();
    assert_eq!(after, before, "a failed turn writes and marks nothing");
    let stored = references(&before);
    for f in &ninth.facts_injected {
        assert_eq!(f.last_referenced_at, stored[&f.id], "returned as read");
    }
    now += Duration::hours(1);

    // Conversation 10 completes: the same facts are shown (the failed turn moved nothing) and
    // are marked referenced at its time.
    let model = ScriptedModel::new(vec![answer("Hi again.")]);
    let tenth = run(store, &model, chat_turn(user, 10, "Hi again", now)).await;
    assert_eq!(block(&tenth.system_prompt), ninth_block);
    let after = store.list_facts(user, false).await.unwrap();
    for f in &tenth.facts_injected {
        let stored = after.iter().find(|s| s.id == f.id).unwrap();
        assert_eq!(stored.last_referenced_at, Some(now), "{}", stored.fact);
        assert_eq!(f.last_referenced_at, Some(now));
    }
}

async fn seeded<S: ChatStore>(store: &S) -> Uuid {
    db::test_support::seed(store).await.expect("seed").user.id
}

#[tokio::test]
async fn sqlite_facts_stay_current() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let user = seeded(&store).await;
    facts_stay_current(&store, user).await;
}

#[tokio::test]
async fn postgres_facts_stay_current() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    let user = seeded(&store).await;
    facts_stay_current(&store, user).await;
}

/// As the server runs a turn: the store acting as the user, under row-level security.
#[tokio::test]
async fn postgres_as_the_user_facts_stay_current() {
    let tdb = TestDatabase::create("agent_chat_test_", 4).await;
    let store = db::connect(&tdb.url()).await.unwrap();
    let user = seeded(&store).await;
    let db::Store::Postgres(pg) = &store else {
        panic!("a PostgreSQL store")
    };
    facts_stay_current(&pg.as_user(user), user).await;
}
