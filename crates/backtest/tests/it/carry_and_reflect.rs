//! The two halves a live runner uses around `run_tick`: the runner state committed with the tick
//! (`run_tick_carrying`) and reflection off the tick path (`run_due_reflection`, idempotent per
//! tick time; `load_reflection_state` reads its outcome back).

use crate::common;

use agent_runtime::builtin_model;
use backtest::{BacktestInput, register};
use chrono::{DateTime, Utc};
use db::{LedgerStore, NoteScope, NoteStore, RegistryStore, Store, TickStore};
use execution_engine::{PaperBroker, PaperBrokerConfig};
use rust_decimal::Decimal;
use tick::{
    DueReflection, ReflectionCheck, ReflectionReport, TickState, load_reflection_state,
    restore_state, run_due_reflection, run_tick_carrying,
};
use types::Interval;

fn input(n: usize) -> BacktestInput {
    // The paper broker's default fees and slippage.
    common::eurusd_input(&common::eurusd(n), Decimal::new(45, 1), Decimal::ONE)
}

fn first_close(input: &BacktestInput) -> DateTime<Utc> {
    input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1)
}

async fn registered(input: &BacktestInput) -> Store {
    let store = db::connect("sqlite::memory:").await.expect("store");
    register(&store, input, serde_json::json!({}), first_close(input))
        .await
        .expect("register");
    store
}

#[tokio::test]
async fn the_runner_state_is_the_state_after_the_tick_and_commits_with_it() {
    let input = input(60);
    let store = registered(&input).await;
    let d = &input.deployment;
    let at = input.market.all_bars("EURUSD", Interval::H1)[40].close_time(Interval::H1);
    let ctx = common::trade_ctx(&input.deployment, &input.market, at);
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let mut broker = PaperBroker::new(input.broker.clone()).expect("broker");
    let mut state = TickState::new(d, input.broker.initial_equity_usd, at);
    let carry = |broker: &PaperBroker, after: &TickState| {
        serde_json::to_value((broker, after.last_tick_at, &after.last_decision))
    };
    let outcome = run_tick_carrying(
        d,
        &ctx,
        model.as_ref(),
        &mut broker,
        &mut state,
        &store,
        Some(&carry),
    )
    .await
    .expect("tick");
    assert!(outcome.recorded);
    assert_eq!(outcome.reflection, ReflectionCheck::NotDue);
    let stored = store
        .runner_state(d.deployment_id)
        .await
        .expect("read")
        .expect("committed with the tick");
    assert_eq!(stored.tick_at, at);
    // What `carry` saw is the state after this tick: its time and its decision.
    assert_eq!(
        stored.state,
        serde_json::to_value((&broker, Some(at), Some(&outcome.last_decision))).expect("json")
    );

    // The same tick again (a re-run with another broker): already recorded, state kept.
    let mut other = PaperBroker::new(PaperBrokerConfig::new(Decimal::from(1))).expect("broker");
    let mut fresh = TickState::new(d, Decimal::from(1), at);
    let again = run_tick_carrying(
        d,
        &ctx,
        model.as_ref(),
        &mut other,
        &mut fresh,
        &store,
        Some(&carry),
    )
    .await
    .expect("tick");
    assert!(!again.recorded);
    assert_eq!(
        store.runner_state(d.deployment_id).await.expect("read"),
        Some(stored)
    );
}

#[tokio::test]
async fn a_due_reflection_runs_once_per_tick_time_and_is_read_back_from_the_store() {
    let input = input(400);
    let store = registered(&input).await;
    let d = &input.deployment;
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let mut end = None;
    let options = backtest::RunOptions::default().on_tick(|_, s| {
        end = Some(s.clone());
        std::ops::ControlFlow::Continue(())
    });
    let result = common::run_stored_with(&input, model.as_ref(), &store, options)
        .await
        .expect("backtest");
    let end = end.expect("ticks ran");
    assert!(result.notes.len() >= 2, "{} notes", result.notes.len());
    // The state keeps the note in force only; the store keeps every note.
    assert_eq!(end.notes.len(), 1);
    assert_eq!(
        end.notes[0],
        *result
            .notes
            .iter()
            .rev()
            .find(|n| n.injectable())
            .expect("an injectable note")
    );
    let scope = NoteScope::Deployment(d.deployment_id);
    let counts = async || {
        (
            store.note_history(scope, 1000).await.expect("notes").len(),
            store
                .reflection_runs(scope, 1000)
                .await
                .expect("runs")
                .len(),
        )
    };
    let before = counts().await;
    assert_eq!(before.0, result.notes.len());

    // What a live runner reads back before its next tick is what the backtest carried.
    let last_at = result.points.last().expect("points").tick_at;
    let mut loaded = TickState::new(d, Decimal::from(10_000), last_at);
    load_reflection_state(&store, d, &mut loaded, last_at)
        .await
        .expect("load");
    // (The draft names the skill document's id, the stored note the deployment's skill row.)
    let shown = |n: &[reflection::NoteDraft]| {
        n.iter()
            .map(|n| {
                (
                    n.generated_at,
                    n.content.window_start,
                    n.content.window_end,
                    n.content.lessons_text.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(shown(&loaded.notes), shown(&end.notes));
    assert_eq!(loaded.last_note, end.last_note);
    assert_eq!(loaded.last_reflection_failure, end.last_reflection_failure);

    // A redo of the latest note's reflection (a restart, a re-run of its tick) runs nothing —
    // also when its run was never recorded (the process died between the two writes).
    let latest = result.notes.last().expect("a note");
    if let Store::Sqlite(s) = &store {
        sqlx::query("DELETE FROM reflection_runs WHERE id = $1")
            .bind(tick::run_id(d.deployment_id, latest.generated_at).to_string())
            .execute(s.pool())
            .await
            .expect("forget the run");
    }
    let state = restore_state(&store, d, Decimal::from(10_000), last_at)
        .await
        .expect("restore");
    for at in [latest.generated_at, result.notes[0].generated_at] {
        let redo = DueReflection {
            at,
            trades: state.trades.clone(),
            last: None,
            closed_total: 0,
            blind: None,
        };
        let done = run_due_reflection(d, &redo, &store).await;
        assert_eq!(done.report, ReflectionReport::AlreadyDone, "{at}");
        assert_eq!(done.note, None);
        let mut after = state.clone();
        done.apply(&mut after);
        assert_eq!(after.last_note, state.last_note);
        assert_eq!(after.notes, state.notes);
    }
    assert_eq!(counts().await, (before.0, before.1 - 1));

    // A reflection of a later tick runs and writes its note (the cadence decides elsewhere).
    let later = last_at + chrono::Duration::hours(1);
    let due = DueReflection {
        at: later,
        trades: state.trades.clone(),
        last: None,
        closed_total: u32::try_from(state.closed_trades()).expect("count"),
        blind: None,
    };
    let done = run_due_reflection(d, &due, &store).await;
    assert!(
        matches!(done.report, ReflectionReport::Note { id, .. } if id == tick::note_id(d.deployment_id, later)),
        "{:?}",
        done.report
    );
    let mut after = state.clone();
    done.apply(&mut after);
    assert_eq!(after.last_note.map(|n| n.generated_at), Some(later));
    assert_eq!(counts().await, (before.0 + 1, before.1));
    let closed = store
        .count_closed_trades(d.deployment_id, later)
        .await
        .expect("count");
    assert_eq!(u64::from(due.closed_total), closed);
}

/// ADR-0017's trader-curated lessons: a person promotes a deployment's note to its skill; from
/// the promotion on, another deployment of that skill version without a note of its own sees
/// it, while the first keeps its own (the deployment's note first).
#[tokio::test]
async fn a_promoted_note_reaches_the_skills_other_deployments_from_its_promotion() {
    let input = input(400);
    let store = registered(&input).await;
    let d = &input.deployment;
    let model = builtin_model(&d.skill.model, &d.skill).expect("model");
    let result = common::run_stored(&input, model.as_ref(), &store)
        .await
        .expect("backtest");
    let last_at = result.points.last().expect("points").tick_at;
    let source = store
        .active_note(NoteScope::Deployment(d.deployment_id), last_at)
        .await
        .expect("read")
        .expect("the backtest's note in force");

    // A second deployment of the same skill version.
    let mut row = db::test_support::sample_deployment(d.user_id, d.skill_id, d.skill_version);
    row.created_at = first_close(&input);
    store
        .create_deployment(&row)
        .await
        .expect("second deployment");
    let other = tick::TickDeployment {
        deployment_id: row.id,
        ..d.clone()
    };
    let notes_of = async |dep: &tick::TickDeployment, at| {
        let mut s = TickState::new(dep, Decimal::from(10_000), at);
        load_reflection_state(&store, dep, &mut s, at)
            .await
            .expect("load");
        s.notes
    };
    assert!(notes_of(&other, last_at).await.is_empty());

    let promoted_at = last_at + chrono::Duration::hours(1);
    let copy = tick::promote_note(&store, source.id, promoted_at)
        .await
        .expect("promote");
    assert_eq!(copy.id, tick::promoted_note_id(source.id));
    assert_eq!((copy.deployment_id, copy.generated_at), (None, promoted_at));
    assert_eq!(copy.content.lessons_text, source.content.lessons_text);
    assert_eq!(
        copy.content.cost_usd,
        Some(Decimal::ZERO),
        "promotion calls no model"
    );

    // Not before the promotion; from it on, for the other deployment only.
    assert!(notes_of(&other, last_at).await.is_empty());
    let seen = notes_of(&other, promoted_at).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].deployment_id, None);
    assert_eq!(seen[0].content.lessons_text, source.content.lessons_text);
    let own = notes_of(d, promoted_at).await;
    assert_eq!(own[0].deployment_id, Some(d.deployment_id));

    // The copy cannot be promoted again; an unknown note is the store's NotFound.
    assert!(matches!(
        tick::promote_note(&store, copy.id, promoted_at).await,
        Err(tick::PromoteError::AlreadySkillScoped(_))
    ));
    assert!(matches!(
        tick::promote_note(&store, uuid::Uuid::from_u128(9), promoted_at).await,
        Err(tick::PromoteError::Store(db::DbError::NotFound { .. }))
    ));
}
