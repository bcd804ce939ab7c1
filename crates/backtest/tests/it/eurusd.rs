//! The backtest over the shipped EURUSD hourly bars with the example skill
//! (`builtin/sma-cross:10:20`, reflection every 5 closed trades with the statistics reflector):
//! fills at bar closes, determinism, the reflection acceptance test and point in time.

use crate::common;

use agent_runtime::builtin_model;
use chrono::{DateTime, Utc};
use db::{LedgerStore, NoteScope, NoteStore, Store, TickStore};
use rust_decimal::Decimal;
use std::ops::ControlFlow;

use backtest::{BacktestInput, BacktestResult, RunOptions, Summary, register};
use tick::snapshot_id;
use types::text::{fixed, short_time};
use types::{Bar, Interval, Uuid};

const LESSONS_HEADER: &str = "Lessons from your recent trades on this skill";

fn input(bars: &[Bar], fee_bps: Decimal, slippage_bps: Decimal) -> BacktestInput {
    common::eurusd_input(bars, fee_bps, slippage_bps)
}

async fn run(input: &BacktestInput) -> (Store, BacktestResult) {
    let store = db::connect("sqlite::memory:").await.expect("store");
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    register(&store, input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let result = common::run_stored(input, model.as_ref(), &store)
        .await
        .expect("backtest");
    (store, result)
}

async fn snapshots(store: &Store, deployment: Uuid) -> Vec<db::DecisionSnapshot> {
    let mut s = store
        .list_snapshots(deployment, 100_000)
        .await
        .expect("snapshots");
    s.sort_by_key(|s| s.tick_at);
    s
}

#[tokio::test]
async fn with_zero_fee_and_slippage_every_fill_is_exactly_the_bar_close() {
    let bars = common::eurusd(300);
    let input = input(&bars, Decimal::ZERO, Decimal::ZERO);
    let (store, result) = run(&input).await;
    assert_eq!(result.points.len(), 300, "one tick per closed bar");
    assert!(
        result.fills.len() >= 4,
        "the crossings trade: {} fills",
        result.fills.len()
    );
    for f in &result.fills {
        assert!(!f.liquidation, "1x cannot liquidate");
        // The tick at T fills at the close of the bar that closed at T (open time T − 1h).
        let bar = bars
            .iter()
            .find(|b| b.close_time(Interval::H1) == f.time)
            .expect("a bar closes at every fill time");
        assert_eq!(f.price, bar.close, "fill {} at {}", f.id, f.time);
        assert_eq!(f.fee_usd, Decimal::ZERO);
        assert_eq!(
            f.snapshot_id,
            Some(snapshot_id(input.deployment.deployment_id, f.time)),
            "the fill names the decision that caused it"
        );
    }
    // Everything is in the store: fills, ledger, snapshots.
    let stored = store
        .list_fills(input.deployment.deployment_id, None)
        .await
        .expect("fills");
    assert_eq!(stored.len(), result.fills.len());
    let trades = store
        .all_trades(input.deployment.deployment_id)
        .await
        .expect("trades");
    assert_eq!(trades.len(), result.trades.len());
    assert_eq!(
        snapshots(&store, input.deployment.deployment_id)
            .await
            .len(),
        300
    );
    // Without fees gross equals net, and equity = initial + net realized + unrealized (the
    // broker books money at 8 decimals, the ledger keeps full precision: equal to 6 dp).
    let s = Summary::of(&result);
    assert_eq!(s.pnl.fees_usd, Decimal::ZERO);
    assert_eq!(
        s.final_equity_usd.round_dp(6),
        (s.initial_equity_usd + s.pnl.net_usd + s.unrealized_pnl_usd).round_dp(6)
    );
}

#[tokio::test]
async fn two_runs_with_the_same_inputs_are_byte_identical() {
    let bars = common::eurusd(250);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let (a, ra) = run(&input).await;
    let (b, rb) = run(&input).await;
    let d = input.deployment.deployment_id;
    let (sa, sb) = (snapshots(&a, d).await, snapshots(&b, d).await);
    assert_eq!(sa.len(), sb.len());
    for (x, y) in sa.iter().zip(&sb) {
        assert_eq!(x.id, y.id);
        assert_eq!(x.context, y.context, "context at {}", x.tick_at);
        assert_eq!(x.system_prompt, y.system_prompt);
        assert_eq!(x.proposal, y.proposal);
        assert_eq!(x.verdict, y.verdict);
        assert_eq!(x.steps, y.steps);
    }
    let ta = a.all_trades(d).await.expect("trades");
    let tb = b.all_trades(d).await.expect("trades");
    assert!(!ta.is_empty());
    assert_eq!(ta, tb);
    assert_eq!(ra.trades, rb.trades);
    assert_eq!(ra.fills, rb.fills);
}

#[tokio::test]
async fn reflection_every_five_trades_feeds_the_lessons_of_every_later_tick() {
    let bars = common::eurusd(400);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let (store, result) = run(&input).await;
    let d = input.deployment.deployment_id;
    let closed = result
        .trades
        .iter()
        .filter(|t| t.status == types::TradeStatus::Closed)
        .count();
    assert!(closed >= 10, "enough trades for two notes: {closed}");
    let mut notes = store
        .note_history(NoteScope::Deployment(d), 1_000)
        .await
        .expect("notes");
    notes.sort_by_key(|n| n.generated_at);
    assert_eq!(notes.len(), closed / 5, "floor(closed trades / 5) notes");
    assert_eq!(result.notes.len(), notes.len());
    assert_eq!(
        notes.iter().filter(|n| n.superseded_at.is_none()).count(),
        1,
        "exactly one active note"
    );
    for n in &notes {
        let chars = n.content.lessons_text.chars().count();
        assert!((1..=2000).contains(&chars), "{chars} chars");
    }

    // A note written at the end of tick T is first shown at the next tick: the note a tick
    // shows is the latest generated strictly before it.
    let first_note = notes[0].generated_at;
    let mut with_lessons = 0;
    for s in snapshots(&store, d).await {
        match notes.iter().rfind(|n| n.generated_at < s.tick_at) {
            None => assert!(
                !s.system_prompt.contains(LESSONS_HEADER),
                "tick {} is not after the first note ({first_note}) and shows no lessons",
                s.tick_at
            ),
            Some(n) => {
                with_lessons += 1;
                assert!(
                    s.system_prompt.contains(LESSONS_HEADER),
                    "tick {} after the first note shows lessons",
                    s.tick_at
                );
                assert!(
                    s.system_prompt.contains(n.content.lessons_text.trim()),
                    "tick {} shows the note of {}",
                    s.tick_at,
                    n.generated_at
                );
            }
        }
    }
    assert!(with_lessons > 0);
}

/// The bar table of `interval` in a context: from its heading to the next heading.
fn table(context: &str, interval: Interval) -> String {
    let heading = format!("EURUSD {interval} ·");
    let mut out = String::new();
    let mut inside = false;
    for line in context.lines() {
        if line.starts_with('#') {
            inside = line.contains(&heading);
        }
        if inside {
            out.push('\n');
            out.push_str(line);
        }
    }
    out
}

fn row(b: &Bar, interval: Interval) -> String {
    let time = if interval == Interval::D1 {
        b.time.format("%Y-%m-%d").to_string()
    } else {
        short_time(b.time)
    };
    format!(
        "\n{time} {} {} {} {} ",
        fixed(b.open, 5),
        fixed(b.high, 5),
        fixed(b.low, 5),
        fixed(b.close, 5)
    )
}

#[tokio::test]
async fn no_snapshot_shows_a_bar_that_closed_after_its_tick() {
    let bars = common::eurusd(200);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let (store, _) = run(&input).await;
    let d = input.deployment.deployment_id;
    let mut series: Vec<(Interval, Vec<Bar>)> = vec![(Interval::H1, bars.clone())];
    for h in input.deployment.skill.context.effective_higher_timeframes() {
        series.push((h, market_data::resample(&bars, h)));
    }
    let mut checked = 0;
    for s in snapshots(&store, d).await {
        let tick: DateTime<Utc> = s.tick_at;
        for (interval, bars) in &series {
            let table = table(&s.context, *interval);
            for b in bars.iter().filter(|b| b.close_time(*interval) > tick) {
                // Rows for bars still open (or in the future) never appear in their table.
                if b.time <= tick + chrono::Duration::days(2) {
                    assert!(
                        !table.contains(&row(b, *interval)),
                        "tick {tick} shows the {interval} bar of {} that closes at {}",
                        b.time,
                        b.close_time(*interval)
                    );
                    checked += 1;
                }
            }
        }
        // And the bar that closed exactly at the tick is the newest row shown.
        if let Some(last) = bars.iter().find(|b| b.close_time(Interval::H1) == tick) {
            assert!(table(&s.context, Interval::H1).contains(&row(last, Interval::H1)));
        }
    }
    assert!(checked > 200, "the check looked at future bars: {checked}");
}

#[tokio::test]
async fn replaying_the_recorded_proposals_reproduces_the_ledger_exactly() {
    let bars = common::eurusd(300);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let (store, original) = run(&input).await;
    let d = input.deployment.deployment_id;
    let proposals = snapshots(&store, d)
        .await
        .into_iter()
        .map(|s| (s.tick_at, s.proposal))
        .collect();
    let replay = backtest::replay::ReplayModel::new("builtin/replay:test", proposals);
    assert_eq!(replay.len(), 300);

    let again = db::connect("sqlite::memory:").await.expect("store");
    register(
        &again,
        &input,
        serde_json::json!({}),
        original.points[0].tick_at,
    )
    .await
    .expect("register");
    let replayed = common::run_stored(&input, &replay, &again)
        .await
        .expect("replay");
    assert!(original.trades.len() >= 5);
    assert_eq!(
        replayed.trades, original.trades,
        "the same ledger, row for row"
    );
    assert_eq!(replayed.fills, original.fills);
    assert_eq!(
        again.all_trades(d).await.expect("trades"),
        store.all_trades(d).await.expect("trades")
    );
    let (a, b) = (snapshots(&store, d).await, snapshots(&again, d).await);
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.proposal, y.proposal, "tick {}", x.tick_at);
        assert_eq!(x.verdict, y.verdict, "tick {}", x.tick_at);
        assert_eq!(y.model, "builtin/replay:test");
    }
}

#[tokio::test]
async fn the_state_restored_from_the_store_is_the_state_the_run_ended_with() {
    let bars = common::eurusd(300);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let store = db::connect("sqlite::memory:").await.expect("store");
    register(&store, &input, serde_json::json!({}), bars[0].time)
        .await
        .expect("register");
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let mut last_state = None;
    let options = RunOptions::default().on_tick(|_, state| {
        last_state = Some(state.clone());
        ControlFlow::Continue(())
    });
    let result = common::run_stored_with(&input, model.as_ref(), &store, options)
        .await
        .expect("backtest");
    let end = last_state.expect("ticks ran");
    let at = result.points.last().expect("points").tick_at;
    let equity = result.points.last().expect("points").equity_usd;
    let restored = tick::restore_state(&store, &input.deployment, equity, at)
        .await
        .expect("restore");

    let key = |t: &types::TradeRecord| (t.entry_tick_at, t.id);
    let (mut a, mut b) = (end.trades.to_vec(), restored.trades.to_vec());
    a.sort_by_key(key);
    b.sort_by_key(key);
    assert!(a.len() >= 5);
    assert_eq!(a, b, "every ledger row");
    assert_eq!(
        end.ledger.open_rows().cloned().collect::<Vec<_>>(),
        restored.ledger.open_rows().cloned().collect::<Vec<_>>()
    );
    // The restored ledger knows the fills a broker could deliver again: the last week's.
    let since = at - tick::APPLIED_FILLS_WINDOW;
    let recent: Vec<String> = end
        .ledger
        .applied_fill_ids()
        .into_iter()
        .filter(|id| result.fills.iter().any(|f| f.id == *id && f.time >= since))
        .collect();
    assert!(
        recent.len() < end.ledger.applied_fill_ids().len(),
        "older fills exist"
    );
    assert!(!recent.is_empty());
    assert_eq!(recent, restored.ledger.applied_fill_ids());
    assert_eq!(end.last_decision, restored.last_decision);
    assert_eq!(end.last_tick_at, restored.last_tick_at);
    assert_eq!(end.notes.len(), restored.notes.len());
    for (x, y) in end.notes.iter().zip(&restored.notes) {
        assert_eq!(x.content.lessons_text, y.content.lessons_text);
        assert_eq!(x.generated_at, y.generated_at);
        assert_eq!(x.content.window_end, y.content.window_end);
    }
    assert_eq!(
        end.last_note.map(|n| n.window_end),
        restored.last_note.map(|n| n.window_end)
    );
    assert_eq!(end.risk.order_times, restored.risk.order_times);
}

/// The backtest writes its ticks in batches and reports them recorded before the batch commits;
/// a tick some other writer already stored in the backtest's deployment is caught when its
/// batch is written: the run fails naming it, and every other tick is still in the store.
#[tokio::test]
async fn a_tick_another_writer_stored_fails_the_backtest_and_keeps_the_others() {
    let bars = common::eurusd(40);
    let input = input(&bars, Decimal::ZERO, Decimal::ZERO);
    let d = input.deployment.deployment_id;
    // Another writer's snapshot at the 10th tick (a different id, same deployment and time).
    let intruder_at = bars[9].close_time(Interval::H1);
    let store = with_another_writers_tick(&input, &run(&input).await.0, intruder_at, 99).await;

    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let err = common::run_stored(&input, model.as_ref(), &store)
        .await
        .expect_err("the store already held a tick of this deployment");
    let message = err.to_string();
    assert!(
        message.contains("already held the tick at") && message.contains(&intruder_at.to_string()),
        "{message}"
    );
    let stored = snapshots(&store, d).await;
    assert_eq!(
        stored.len(),
        40,
        "39 of the backtest's ticks and the other writer's one"
    );
    assert_eq!(
        stored
            .iter()
            .filter(|s| s.id == Uuid::from_u128(99))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_run_ended_early_by_its_callback_stores_and_reports_exactly_the_ticks_that_ran() {
    let bars = common::eurusd(300);
    let input = input(&bars, Decimal::ZERO, Decimal::ZERO);
    let (_, full) = run(&input).await;

    let store = db::connect("sqlite::memory:").await.expect("store");
    let first = bars[0].close_time(Interval::H1);
    register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let mut seen = 0;
    let options = RunOptions::default().on_tick(|_, _| {
        seen += 1;
        if seen == 120 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    let result = common::run_stored_with(&input, model.as_ref(), &store, options)
        .await
        .expect("backtest");
    assert_eq!(seen, 120, "no tick after the break");
    assert_eq!(result.points.len(), 120);
    assert_eq!(
        result.points[..],
        full.points[..120],
        "the same ticks as the full run"
    );
    let stored = snapshots(&store, input.deployment.deployment_id).await;
    assert_eq!(stored.len(), 120, "every tick that ran is stored, no other");
    assert_eq!(
        stored.last().map(|s| s.tick_at),
        Some(result.points[119].tick_at)
    );
    let summary = Summary::of(&result);
    assert_eq!(summary.ticks, 120);
    assert_eq!(summary.last_tick, Some(result.points[119].tick_at));
}

/// On a multi-threaded runtime (sim-worker's) a full batch, and the ticks before each
/// reflection, are written by a task of their own while the tick's thread goes on: the store
/// ends exactly as on a current-thread runtime, where the tick's thread polls the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_backtest_whose_batches_a_task_writes_stores_what_a_polled_one_stores() {
    use backtest::write_behind::BATCH_TICKS;
    let bars = common::eurusd(BATCH_TICKS * 2 + 100);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = input.deployment.deployment_id;
    // Everything the run stored, read on the runtime it ran on (an in-memory store does not
    // outlive its runtime).
    let run_and_read = move |input: BacktestInput| async move {
        let (store, result) = run(&input).await;
        (result, stored(&store, d).await)
    };
    let (result, spawned) = run_and_read(input.clone()).await;
    assert!(
        result.notes.len() >= 3,
        "reflections cut batches too: {}",
        result.notes.len()
    );
    assert_eq!(spawned.0.len(), bars.len(), "every tick stored");
    assert_eq!(spawned.3.len(), result.notes.len(), "every note stored");
    let polled_input = input.clone();
    let (reference, polled) = on_a_current_thread_runtime(move || run_and_read(polled_input));
    assert_eq!(result.points.len(), reference.points.len());
    assert_eq!(result.trades, reference.trades);
    assert_eq!(spawned, polled);
}

/// A backtest's reflection is stored with its batch, after the batch's ticks, not waited for: a
/// store that refuses the note (here another writer's note already has its id) fails the run
/// with the store's error instead of a report nobody reads; the note's batch shares its
/// transaction, so none of its ticks is stored, and no later batch is.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_note_the_store_refuses_fails_the_backtest() {
    let bars = common::eurusd(400);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = input.deployment.deployment_id;
    let (_, whole) = run(&input).await;
    let first = whole.notes.first().expect("the run reflects").clone();
    let at = first.generated_at;

    let store = db::connect("sqlite::memory:").await.expect("store");
    register(
        &store,
        &input,
        serde_json::json!({}),
        bars[0].close_time(Interval::H1),
    )
    .await
    .expect("register");
    store
        .insert_note(&db::NewNote {
            id: tick::note_id(d, at),
            skill_id: input.deployment.skill_id,
            skill_version: input.deployment.skill_version,
            deployment_id: Some(d),
            generated_at: at,
            content: first.content.clone(),
            lint: None,
        })
        .await
        .expect("the other writer's note");
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let err = common::run_stored(&input, model.as_ref(), &store)
        .await
        .expect_err("the store refuses the run's first note");
    // Found by a later tick (or the final flush): the store's error, naming the note.
    assert!(
        err.to_string()
            .contains("inserting reflection note: unique constraint"),
        "{err}"
    );
    // The note's batch (the first: the run's first reflection falls in its first
    // `BATCH_TICKS` ticks) is written in one transaction with it: none of its ticks is stored,
    // and none of a later batch.
    assert!(
        whole.points[..backtest::write_behind::BATCH_TICKS]
            .iter()
            .any(|p| p.tick_at == at),
        "the first note is reflected in the first batch"
    );
    assert_eq!(snapshots(&store, d).await, vec![], "{err}");
    assert_eq!(
        store
            .reflection_runs(NoteScope::Deployment(d), 10)
            .await
            .expect("runs"),
        vec![],
        "a refused note records no run"
    );
}

/// A full batch is written while the next one is ticked: when it fails, a later tick reports
/// it, and the ticks buffered after it are dropped, so the store never holds a tick whose
/// batch before it is missing. Reflection is off so batches are exactly `BATCH_TICKS` long.
#[tokio::test]
async fn a_batch_written_behind_the_ticks_fails_the_run_without_any_later_tick() {
    a_failing_batch_fails_the_run_without_any_later_tick().await;
}

/// The same when a task of its own writes the batch (a multi-threaded runtime).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_batch_a_task_writes_fails_the_run_without_any_later_tick() {
    a_failing_batch_fails_the_run_without_any_later_tick().await;
}

async fn a_failing_batch_fails_the_run_without_any_later_tick() {
    use backtest::write_behind::BATCH_TICKS;
    let bars = common::eurusd(BATCH_TICKS * 2 + 40);
    let input = without_costs_or_reflection(&bars);
    let d = input.deployment.deployment_id;
    // The whole run, for the other writer's snapshot and the ticks to compare with.
    let (reference, whole) = run(&input).await;
    assert_eq!(whole.points.len(), bars.len());
    assert!(whole.notes.is_empty(), "reflection is off");

    // Another writer's snapshot at the 10th tick: in the first batch.
    let intruder_at = bars[9].close_time(Interval::H1);
    let store = with_another_writers_tick(&input, &reference, intruder_at, 99).await;

    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let mut ticked = 0;
    let options = RunOptions::default().on_tick(|_, _| {
        ticked += 1;
        ControlFlow::Continue(())
    });
    let err = common::run_stored_with(&input, model.as_ref(), &store, options)
        .await
        .expect_err("the store already held a tick of the first batch");
    let message = err.to_string();
    assert!(
        message.contains("already held the tick at") && message.contains(&intruder_at.to_string()),
        "{message}"
    );
    // The first batch was written behind later ticks: some ran before its failure was seen.
    assert!(ticked > BATCH_TICKS, "{ticked} ticks ran");
    let stored = snapshots(&store, d).await;
    assert_eq!(
        stored.len(),
        BATCH_TICKS,
        "the first batch (its other ticks and the other writer's one), nothing after it"
    );
    assert_eq!(
        stored.last().map(|s| s.tick_at),
        Some(bars[BATCH_TICKS - 1].close_time(Interval::H1))
    );
}

/// `input` without fees, slippage or reflection (so batches are exactly as long as the
/// write-behind makes them).
fn without_costs_or_reflection(bars: &[Bar]) -> BacktestInput {
    let mut input = input(bars, Decimal::ZERO, Decimal::ZERO);
    std::sync::Arc::make_mut(&mut input.deployment.skill)
        .context
        .memory
        .reflection
        .cadence = skill_schema::ReflectionCadence::Off;
    input
}

/// The future `run` makes, driven to its end on a current-thread runtime of a thread of its
/// own (where a backtest's batches are polled by its ticks instead of written by a task).
fn on_a_current_thread_runtime<T, F>(run: impl FnOnce() -> F + Send + 'static) -> T
where
    T: Send + 'static,
    F: std::future::Future<Output = T>,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(run())
    })
    .join()
    .expect("the current-thread run")
}

/// A store registered for `input` that already holds another writer's snapshot at `at` (the
/// one `reference` stored there, with the id `id`).
async fn with_another_writers_tick(
    input: &BacktestInput,
    reference: &Store,
    at: DateTime<Utc>,
    id: u128,
) -> Store {
    let store = db::connect("sqlite::memory:").await.expect("store");
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    register(&store, input, serde_json::json!({}), first)
        .await
        .expect("register");
    let mut foreign = snapshots(reference, input.deployment.deployment_id)
        .await
        .into_iter()
        .find(|s| s.tick_at == at)
        .expect("a snapshot at that tick");
    foreign.id = Uuid::from_u128(id);
    store
        .record_tick(&db::TickRecord {
            snapshot: foreign,
            fills: vec![],
            trades: vec![],
            links: vec![],
            equity_usd: None,
            runner_state: None,
            outcomes: Default::default(),
        })
        .await
        .expect("the other writer's tick");
    store
}

/// Everything a run stored: snapshots, ledger rows, fills and notes.
async fn stored(
    store: &Store,
    d: Uuid,
) -> (
    Vec<db::DecisionSnapshot>,
    Vec<types::TradeRecord>,
    Vec<db::StoredFill>,
    Vec<(Uuid, DateTime<Utc>, types::NoteStatus, String)>,
) {
    let notes = store
        .note_history(NoteScope::Deployment(d), 100)
        .await
        .expect("notes")
        .into_iter()
        .map(|n| (n.id, n.generated_at, n.status, n.content.lessons_text))
        .collect();
    (
        snapshots(store, d).await,
        store.all_trades(d).await.expect("trades"),
        store.list_fills(d, None).await.expect("fills"),
        notes,
    )
}

/// A backtest on a new SQLite file whose schema and registration a task is still writing
/// (`sim-worker run`'s default store): the first ticks run beside it, and the file ends up
/// holding exactly what the same run stores on a store prepared before it started.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_backtest_beside_its_store_preparation_stores_what_a_prepared_store_stores() {
    use backtest::Registration;
    use backtest::write_behind::BATCH_TICKS;
    let bars = common::eurusd(BATCH_TICKS + 100);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = input.deployment.deployment_id;
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let dir = tempfile::tempdir().expect("dir");

    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("prepared.db").display()
    );
    let prepared = db::connect_with(&url, db::Durability::Scratch)
        .await
        .expect("store");
    register(
        &prepared,
        &input,
        serde_json::json!({"name": "eurusd"}),
        first,
    )
    .await
    .expect("register");
    let reference = common::run_stored(&input, model.as_ref(), &prepared)
        .await
        .expect("backtest");

    let path = dir.path().join("lazy.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let lazy = db::connect_lazy(&url, db::Durability::Scratch).expect("lazy store");
    assert!(
        !path.exists(),
        "nothing is created before the preparation runs"
    );
    let ready = {
        let store = lazy.clone();
        let registration = Registration::of(&input, serde_json::json!({"name": "eurusd"}), first);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            runtime.block_on(async {
                store.migrate().await?;
                registration.store(&store).await
            })
        })
    };
    let options = RunOptions::default().store_ready(ready);
    let result = common::run_stored_with(&input, model.as_ref(), &lazy, options)
        .await
        .expect("backtest");

    assert_eq!(result.points.len(), reference.points.len());
    assert_eq!(result.trades, reference.trades);
    assert_eq!(result.fills, reference.fills);
    let (lazy_rows, prepared_rows) = (stored(&lazy, d).await, stored(&prepared, d).await);
    assert_eq!(lazy_rows.0.len(), bars.len(), "every tick stored");
    assert_eq!(lazy_rows, prepared_rows);
    assert_eq!(
        db::RegistryStore::get_deployment(&lazy, d)
            .await
            .expect("registered")
            .id,
        d,
        "the deployment was registered by the preparation"
    );
}

/// A store preparation that fails (here: the registration, refused because the store already
/// holds the deployment) fails the run with its error, and nothing of the run is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_failed_store_preparation_fails_the_backtest_and_writes_none_of_its_ticks() {
    use backtest::{BacktestError, Registration};
    let bars = common::eurusd(60);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = input.deployment.deployment_id;
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let store = db::connect("sqlite::memory:").await.expect("store");
    register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .expect("register");
    let ready = {
        let store = store.clone();
        let registration = Registration::of(&input, serde_json::json!({"name": "eurusd"}), first);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || runtime.block_on(registration.store(&store)))
    };
    let options = RunOptions::default().store_ready(ready);
    let err = common::run_stored_with(&input, model.as_ref(), &store, options)
        .await
        .expect_err("the preparation failed");
    assert!(matches!(err, BacktestError::Store(_)), "{err:?}");
    assert!(
        snapshots(&store, d).await.is_empty(),
        "no tick stored after a failed preparation"
    );
}

/// `backtest::run` returns when the last tick has run, with the last batch still to be stored:
/// the caller who takes the last write (`Run::into_parts`) and finishes it has the store hold
/// exactly what `Run::stored` leaves, on a multi-threaded runtime (a task writes it) and on a
/// current-thread one (the write runs when awaited).
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_last_write_left_to_the_caller_stores_what_a_stored_run_stores() {
    use backtest::write_behind::BATCH_TICKS;
    let bars = common::eurusd(BATCH_TICKS + 100);
    let input = input(&bars, Decimal::new(45, 1), Decimal::ONE);
    let d = input.deployment.deployment_id;
    let (reference, whole) = run(&input).await;
    let expected = stored(&reference, d).await;
    assert_eq!(expected.0.len(), bars.len());

    let behind = move |input: BacktestInput| async move {
        let store = db::connect("sqlite::memory:").await.expect("store");
        let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
        register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
            .await
            .expect("register");
        let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
            .expect("builtin model");
        let (result, last) = backtest::run(&input, model.as_ref(), &store, RunOptions::default())
            .await
            .expect("backtest")
            .into_parts();
        last.finish().await.expect("the last write");
        (result, stored(&store, d).await)
    };
    let (result, spawned) = behind(input.clone()).await;
    assert_eq!(result.points.len(), whole.points.len());
    assert_eq!(result.trades, whole.trades);
    assert_eq!(spawned, expected);
    let current_thread_input = input.clone();
    let (_, deferred) = on_a_current_thread_runtime(move || behind(current_thread_input));
    assert_eq!(deferred, expected);
}

/// The last write's failure is the run's: a store that already holds a tick of the last batch
/// (another writer's) refuses it, and `LastWrite::finish` says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_last_write_the_store_refuses_is_the_runs_error() {
    let bars = common::eurusd(60);
    let input = without_costs_or_reflection(&bars);
    let d = input.deployment.deployment_id;
    let (reference, _) = run(&input).await;
    // Another writer's snapshot at the last tick: in the run's only batch.
    let last_at = bars[bars.len() - 1].close_time(Interval::H1);
    let store = with_another_writers_tick(&input, &reference, last_at, 98).await;
    let model = builtin_model(&input.deployment.skill.model, &input.deployment.skill)
        .expect("builtin model");
    let (result, last) = backtest::run(&input, model.as_ref(), &store, RunOptions::default())
        .await
        .expect("every tick ran")
        .into_parts();
    assert_eq!(result.points.len(), bars.len());
    let err = last
        .finish()
        .await
        .expect_err("the store refuses the last batch");
    assert!(
        err.to_string().contains("already held the tick at")
            && err.to_string().contains(&last_at.to_string()),
        "{err}"
    );
    // As a flushed run leaves it: the batch's other ticks are written, the other writer's
    // snapshot stays.
    let held = snapshots(&store, d).await;
    assert_eq!(held.len(), bars.len());
    assert_eq!(
        held.last().map(|s| s.id),
        Some(Uuid::from_u128(98)),
        "the other writer's snapshot is kept"
    );
}
