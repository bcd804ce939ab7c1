//! One scripted conversation per chat mode, over deployments backtested on the example data,
//! calling every tool of the mode's catalog; each mode's system prompt and tool list is a
//! snapshot. The figures the tools answer are checked against the store and the bars read
//! independently.

use std::path::PathBuf;

use agent_runtime::{ModelResponse, RunOptions, ScriptedModel, ToolOutcome, builtin_model};
use backtest::{BacktestInput, register};
use chat::{ChatTurn, ChatTurnOutput, DEFAULT_CHAT_MAX_STEPS, FixedMarket, catalog, run_chat_turn};
use chrono::{DateTime, Utc};
use db::{FactStore, NewFact, RegistryStore, Store, TickQuery, TickStore};
use model::test_support::{answer, tool_call, tool_turn};
use prompt_compose::{ChatMode, Tier};
use serde_json::{Value, json};
use tools::{Preloaded, RunMode};
use types::{Bar, FactConfidence, FactSource, Interval, Verdict};
use uuid::Uuid;

const USER: Uuid = Uuid::from_u128(1);
/// The deployment that trades the example skill as written.
const TRADING: Uuid = Uuid::from_u128(2);
/// The same skill played by a script over its last ticks, as a model that ignores the caps:
/// an order five times the equity (the engine rejects it), then nothing left to say (a model
/// error) once the script runs out.
const CAPPED: Uuid = Uuid::from_u128(3);
const SKILL: Uuid = Uuid::from_u128(4);
const CAPPED_SKILL: Uuid = Uuid::from_u128(5);
const FACT_ID: Uuid = Uuid::from_u128(0xFAC7);
/// Ticks the script of the capped deployment answers; as many again fail.
const SCRIPTED_TICKS: usize = 6;

fn handle() -> String {
    types::FactHandle::of(FACT_ID).to_string()
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

struct World {
    store: Store,
    bars: Vec<Bar>,
    market: Preloaded,
    now: DateTime<Utc>,
}

async fn world() -> World {
    let mut bars = market_data::load_bars(&repo("examples/data/EURUSD.csv")).expect("bars");
    bars.truncate(400);
    let loaded = skill_schema::load_skill(&repo("examples/skills/eurusd-sma-cross.yaml"))
        .expect("skill")
        .skill;
    let mut market = Preloaded::new().with_bars("EURUSD", Interval::H1, bars.clone());
    for h in loaded.context.effective_higher_timeframes() {
        market.insert_bars("EURUSD", h, market_data::resample(&bars, h));
    }
    let store = db::connect("sqlite::memory:").await.expect("store");
    let first = bars[0].close_time(Interval::H1);
    let mut capped = loaded.clone();
    capped.name = "EURUSD cross, scripted".into();
    let builtin = builtin_model(&loaded.model, &loaded).expect("builtin model");
    let oversized = tool_turn(vec![tool_call(
        "p",
        "propose_order",
        json!({ "action": "open_long", "symbol": "EURUSD", "size_usd": 50000,
                "reason": "Breakout; going big." })
        .to_string(),
    )]);
    let mut script = Vec::new();
    for _ in 0..SCRIPTED_TICKS {
        script.push(oversized.clone());
        script.push(answer("Proposed."));
    }
    let scripted = ScriptedModel::new(script);
    let last_ticks = (
        bars[bars.len() - 2 * SCRIPTED_TICKS].close_time(Interval::H1),
        bars.last().unwrap().close_time(Interval::H1),
    );
    let runs: [(_, _, _, &dyn agent_runtime::LanguageModel); 2] = [
        (loaded, TRADING, SKILL, builtin.as_ref()),
        (capped, CAPPED, CAPPED_SKILL, &scripted),
    ];
    for (skill, deployment, skill_id, model) in runs {
        let mut input = BacktestInput::for_test(skill.clone(), market.clone())
            .with_ids(USER, deployment, skill_id);
        if deployment == CAPPED {
            input = input.with_range(last_ticks.0, last_ticks.1);
        }
        register(&store, &input, serde_json::to_value(&skill).unwrap(), first)
            .await
            .expect("register");
        backtest::run(&input, model, &store, backtest::RunOptions::default())
            .await
            .expect("backtest")
            .stored()
            .await
            .expect("stored");
    }
    store
        .remember(
            &NewFact {
                id: FACT_ID,
                user_id: USER,
                skill_id: None,
                fact: "Trades EURUSD only during the London session.".into(),
                source: FactSource::Chat,
                confidence: FactConfidence::Asserted,
                topic: Some("session".into()),
                actor: "test".into(),
            },
            first,
        )
        .await
        .expect("fact");
    let now = bars.last().unwrap().close_time(Interval::H1);
    World {
        store,
        bars,
        market,
        now,
    }
}

fn calls(list: &[(&str, Value)]) -> ModelResponse {
    tool_turn(
        list.iter()
            .enumerate()
            .map(|(i, (name, args))| tool_call(format!("c{i}"), *name, args.to_string()))
            .collect(),
    )
}

async fn converse(
    w: &World,
    mode: ChatMode,
    script: Vec<ModelResponse>,
) -> (ChatTurnOutput, ScriptedModel) {
    let model = ScriptedModel::new(script);
    let out = run_chat_turn(
        &w.store,
        &model,
        &FixedMarket::from(w.market.clone()),
        ChatTurn {
            turn_id: Uuid::from_u128(0x7000),
            user_id: USER,
            conversation_id: None,
            tier: Tier::Pro,
            mode,
            focus: None,
            history: Vec::new(),
            user_message: "Help me with my agents.".into(),
            now: w.now,
            max_steps: DEFAULT_CHAT_MAX_STEPS,
            run_mode: RunMode::Trade,
            options: RunOptions::default(),
        },
    )
    .await
    .expect("turn");
    (out, model)
}

/// Every tool of the mode's catalog was called, and answered (no refusal); returns each
/// call's result by tool name, in call order.
fn results(out: &ChatTurnOutput, mode: ChatMode) -> Vec<(String, Value)> {
    assert!(out.run.error.is_none(), "{:?}", out.run.error);
    let mut got = Vec::new();
    for call in out.run.steps.iter().flat_map(|s| &s.tool_calls) {
        match &call.outcome {
            ToolOutcome::Ok { result } => got.push((
                call.name.clone(),
                serde_json::from_str(result.as_str()).expect("a JSON result"),
            )),
            ToolOutcome::Error { message, .. } => panic!("{}: {message}", call.name),
        }
    }
    for name in catalog(mode) {
        assert!(
            got.iter().any(|(n, _)| n == name),
            "{mode:?}: {name} was not exercised"
        );
    }
    got
}

fn result<'a>(got: &'a [(String, Value)], name: &str) -> &'a Value {
    &got.iter().find(|(n, _)| n == name).expect(name).1
}

/// The system prompt and the tools exactly as the model got them.
fn request_text(model: &ScriptedModel) -> String {
    let request = &model.requests()[0];
    let mut text = format!("=== system\n{}\n=== tools\n", request.system);
    for t in &request.tools {
        text.push_str(&format!(
            "{}: {}\n  {}\n",
            t.name,
            t.description,
            serde_json::to_string(&t.parameters).unwrap()
        ));
    }
    text
}

async fn capped_ticks(store: &Store) -> Vec<db::StoredTick> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = store
            .ticks(&TickQuery {
                after,
                ..TickQuery::of(CAPPED)
            })
            .await
            .unwrap();
        after = page.last().map(|t| t.tick_at);
        let done = page.len() < db::MAX_TICKS_READ as usize;
        all.extend(page);
        if done {
            break;
        }
    }
    all
}

fn rejected(ticks: &[db::StoredTick]) -> Vec<&db::StoredTick> {
    ticks
        .iter()
        .filter(|t| !t.model_error && matches!(t.verdict, Verdict::Rejected { .. }))
        .collect()
}

#[tokio::test]
async fn coach_mode_calls_its_whole_catalog() {
    let w = world().await;
    let ticks = capped_ticks(&w.store).await;
    let rejected = rejected(&ticks);
    let asked = rejected
        .last()
        .expect("the capped deployment was refused")
        .tick_at;
    let script = vec![
        calls(&[
            ("get_my_deployments", json!({})),
            (
                "get_skill_performance",
                json!({ "skill_id": SKILL, "detail": "summary" }),
            ),
            (
                "explain_decision",
                json!({ "deployment_id": CAPPED, "at": asked }),
            ),
            ("get_market", json!({ "symbol": "eurusd" })),
            ("get_upcoming_events", json!({ "deploymentId": TRADING })),
        ]),
        calls(&[
            (
                "remember",
                json!({ "fact": "Wants to know why trades are refused.", "topic": "goal" }),
            ),
            (
                "forget",
                json!({ "fact_id": handle(), "reason": "user_deleted" }),
            ),
            (
                "prepare_action",
                json!({ "action": "pause_deployment", "deploymentId": CAPPED,
                        "reason": "refused on every entry" }),
            ),
        ]),
        answer("Your capped deployment was refused by its position cap."),
    ];
    let (out, model) = converse(&w, ChatMode::Coach, script).await;
    insta::assert_snapshot!("coach_request", request_text(&model));
    let got = results(&out, ChatMode::Coach);

    let deployments = result(&got, "get_my_deployments");
    assert_eq!(deployments["deployments"].as_array().unwrap().len(), 2);

    let explained = result(&got, "explain_decision");
    assert_eq!(explained["tick_at"], json!(asked));
    assert_eq!(explained["engine"]["outcome"], "rejected");
    let Verdict::Rejected { rule, .. } = &rejected.last().unwrap().verdict else {
        unreachable!()
    };
    assert_eq!(
        explained["engine"]["rule"],
        serde_json::to_value(rule).unwrap()
    );
    assert!(
        explained["saw"].as_array().is_some_and(|s| !s.is_empty()),
        "{explained}"
    );
    assert_eq!(explained["proposed"]["symbol"], "EURUSD");

    // get_market: the last close is the last bar's, in the price style.
    let market = result(&got, "get_market");
    let last = w.bars.last().unwrap();
    assert_eq!(market["last_close"], types::text::price(last.close));
    assert_eq!(market["bars"], 48);
    let window = &w.bars[w.bars.len() - 48..];
    let high = window.iter().map(|b| b.high).max().unwrap();
    assert_eq!(market["high"], types::text::price(high));
    assert_eq!(market["regime"], json!(types::classify_regime(window)));

    // The pause waits for the user: kept pending, the deployment still active.
    let [pause] = out.actions.as_slice() else {
        panic!("one action: {:?}", out.actions)
    };
    assert_eq!(pause.kind, db::ActionKind::PauseDeployment);
    assert_eq!(pause.status, db::ActionStatus::Pending);
    assert_eq!(
        w.store.get_deployment(CAPPED).await.unwrap().status,
        db::DeploymentStatus::Active
    );

    // The turn's fact changes were written.
    let facts = w.store.list_facts(USER, false).await.unwrap();
    assert!(facts.iter().all(|f| f.id != FACT_ID));
    assert!(
        facts
            .iter()
            .any(|f| f.fact.starts_with("Wants to know why"))
    );
}

#[tokio::test]
async fn authoring_mode_calls_its_whole_catalog() {
    let w = world().await;
    let mut draft: Value = serde_json::to_value(
        skill_schema::load_skill(&repo("examples/skills/eurusd-sma-cross.yaml"))
            .unwrap()
            .skill,
    )
    .unwrap();
    let mut fixed = draft.clone();
    fixed["description"] = json!("The same cross, described.");
    draft["risk"]["maxLeverage"] = json!(500);
    draft["context"]["symbols"] = json!([]);
    let script = vec![
        calls(&[
            ("list_my_skills", json!({})),
            ("get_skill", json!({ "skill_id": SKILL })),
            ("validate_skill", json!({ "skill": draft })),
            ("preview_skill", json!({ "skill_id": SKILL })),
            ("get_skill_performance", json!({ "skill_id": SKILL })),
            (
                "get_market",
                json!({ "symbol": "EURUSD", "interval": "4h", "bars": 10 }),
            ),
            ("get_upcoming_events", json!({})),
        ]),
        calls(&[
            (
                "remember",
                json!({ "fact": "Writes rules-mode skills with a strict leash." }),
            ),
            ("forget", json!({ "fact_id": handle() })),
            (
                "prepare_action",
                json!({ "action": "save_skill_version", "skillId": SKILL, "skill": fixed }),
            ),
        ]),
        answer("Your draft has two problems; fix them and I can save it."),
    ];
    let (out, model) = converse(&w, ChatMode::Authoring, script).await;
    insta::assert_snapshot!("authoring_request", request_text(&model));
    let got = results(&out, ChatMode::Authoring);

    let skills = result(&got, "list_my_skills")["skills"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(skills.len(), 2);
    assert_eq!(
        skills[0]["deployments_by_version"],
        json!([{ "version": 1, "deployments": 1 }])
    );

    let skill = result(&got, "get_skill");
    assert_eq!(skill["version"], 1);
    assert_eq!(skill["document"]["name"], "EURUSD 1h moving-average cross");

    // The loader's errors, each with its path into the draft.
    let checked = result(&got, "validate_skill");
    assert_eq!(checked["valid"], false);
    let paths: Vec<&str> = checked["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"risk.maxLeverage"), "{paths:?}");
    assert!(paths.contains(&"context.symbols"), "{paths:?}");

    // The preview counts exactly the o200k tokens of the system prompt it shows.
    let preview = result(&got, "preview_skill");
    let system = preview["system_prompt"]["text"].as_str().unwrap();
    assert_eq!(
        preview["system_prompt"]["tokens"],
        json!(chat::o200k_tokens(system))
    );
    assert_eq!(preview["user_message"]["available"], true, "{preview}");
    let total = preview["total_tokens"].as_u64().unwrap();
    assert_eq!(
        total,
        preview["system_prompt"]["tokens"].as_u64().unwrap()
            + preview["user_message"]["tokens"].as_u64().unwrap()
    );
    assert_eq!(preview["token_budget"], 8000);
    assert_eq!(preview["over_budget"], json!(total > 8000));

    // The fixed draft waits for the user: no version is saved until they confirm.
    let [save] = out.actions.as_slice() else {
        panic!("one action: {:?}", out.actions)
    };
    assert_eq!(save.kind, db::ActionKind::SaveSkillVersion);
    assert_eq!(
        save.arguments["skill"]["description"],
        "The same cross, described."
    );
    assert_eq!(
        w.store.latest_skill_version(SKILL).await.unwrap().version,
        1
    );
}

#[tokio::test]
async fn ops_mode_calls_its_whole_catalog() {
    let w = world().await;
    let ticks = capped_ticks(&w.store).await;
    let script = vec![
        calls(&[
            ("get_my_deployments", json!({ "detail": "list" })),
            ("list_rejections", json!({ "hours": 168 })),
            ("explain_decision", json!({ "deployment_id": TRADING })),
            ("get_market", json!({ "symbol": "EURUSD" })),
            ("get_upcoming_events", json!({ "lookaheadHours": 72 })),
        ]),
        calls(&[
            (
                "remember",
                json!({ "fact": "Runs two EURUSD deployments side by side." }),
            ),
            ("forget", json!({ "fact_id": handle() })),
            (
                "prepare_action",
                json!({ "action": "stop_deployment", "deploymentId": CAPPED, "flatten": true }),
            ),
        ]),
        answer("The capped deployment is refused on every entry."),
    ];
    let (out, model) = converse(&w, ChatMode::Ops, script).await;
    insta::assert_snapshot!("ops_request", request_text(&model));
    let got = results(&out, ChatMode::Ops);

    // The rejections of the last 168 hours, counted by rule code from the store.
    let since = w.now - chrono::Duration::hours(168);
    let recent: Vec<_> = ticks.iter().filter(|t| t.tick_at >= since).collect();
    let failed = recent.iter().filter(|t| t.model_error).count();
    let refused = rejected(&ticks).len();
    assert_eq!((refused, failed), (SCRIPTED_TICKS, SCRIPTED_TICKS));
    let listed = result(&got, "list_rejections");
    assert_eq!(listed["total"], refused + failed);
    let mut by_rule = std::collections::BTreeMap::<String, usize>::new();
    for t in rejected(&ticks) {
        let Verdict::Rejected { rule, .. } = &t.verdict else {
            unreachable!()
        };
        *by_rule
            .entry(
                serde_json::to_value(rule)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
            .or_default() += 1;
    }
    assert_eq!(listed["rejections_by_rule"], json!(by_rule));
    assert_eq!(listed["model_errors"], failed);
    let latest = listed["latest"].as_array().unwrap();
    assert_eq!(
        latest.len(),
        (refused + failed).min(chat::REJECTIONS_LISTED)
    );
    // Newest first: the script ran out, so the last ticks failed.
    assert_eq!(latest[0]["tick_at"], json!(ticks.last().unwrap().tick_at));
    assert_eq!(latest[0]["outcome"], "model_error");
    assert_eq!(latest[0]["deployment_id"], json!(CAPPED));
    let oldest = &latest[refused + failed - 1];
    assert_eq!(oldest["outcome"], "rejected");
    assert_eq!(oldest["symbol"], "EURUSD");

    // Without `at`, the latest tick.
    let explained = result(&got, "explain_decision");
    assert_eq!(explained["tick_at"], json!(w.now));

    // The stop waits for the user.
    let [stop] = out.actions.as_slice() else {
        panic!("one action: {:?}", out.actions)
    };
    assert!(stop.flatten());
    assert_eq!(
        w.store.get_deployment(CAPPED).await.unwrap().status,
        db::DeploymentStatus::Active
    );
}

/// A deployment that is not the caller's is refused by name, and the turn goes on.
#[tokio::test]
async fn another_users_deployment_is_refused_to_the_model() {
    let w = world().await;
    let stranger = Uuid::from_u128(0xBAD);
    let script = vec![
        calls(&[
            ("explain_decision", json!({ "deployment_id": stranger })),
            ("list_rejections", json!({ "deployment_id": stranger })),
        ]),
        answer("I cannot see that deployment."),
    ];
    let (out, _) = converse(&w, ChatMode::Ops, script).await;
    assert!(out.run.error.is_none());
    for call in out.run.steps.iter().flat_map(|s| &s.tool_calls) {
        let ToolOutcome::Error { message, .. } = &call.outcome else {
            panic!(
                "{} answered for a deployment that is not the caller's",
                call.name
            );
        };
        assert!(
            message.contains("is not one of your deployments"),
            "{message}"
        );
    }
    assert_eq!(out.answer, "I cannot see that deployment.");
}
