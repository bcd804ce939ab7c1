//! The backtest loop: [`run_tick`](crate::run_tick) once per closed bar of the skill's interval
//! over bars held in memory, with the paper broker; and the [`Summary`] of a run.
//!
//! Per tick at time `T` (the close time of a bar of the skill's interval, over the union of the
//! symbols' bars, in time order):
//! 1. every symbol's bar that closed at `T` is applied to the paper broker
//!    ([`PaperBroker::apply_bar`]): a liquidation price inside the bar's range liquidates, then
//!    the symbol is marked at the close;
//! 2. the tick runs with a [`ToolContext`] at `T` over the in-memory data: only bars closed at
//!    or before `T` are visible (the data sources and the runtime both enforce it);
//! 3. a market order fills at the close of the bar that closed at `T`, adjusted by the broker's
//!    slippage, and pays its taker fee.
//!
//! The store is written through [`write_behind`](crate::write_behind): one transaction per
//! batch of ticks, flushed before any other store call, at the end and on an error.
//!
//! Outcomes (seed 003) are scored inside the loop: before the tick at `T`, every outcome a mark
//! of which (+1h, +4h, +24h) passed by `T` is scored from the bars closed by `T`
//! ([`outcomes::score_outcome`]) and the scores are recorded with that tick. An outcome is
//! thus scored at the first tick at or after each mark, with the closes of the bars at the
//! marks: what a live scorer would record. Outcomes within 24h of the last tick stay partly
//! scored (`scored_at` null).
//!
//! Nothing here reads a file or the clock: the caller loads the data (and resamples the higher
//! timeframes) and passes it in.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::Arc;

use agent_runtime::{LanguageModel, Usage};
use chrono::{DateTime, Utc};
use db::{MemoryScope, NoteStore, OutcomeStore, TickStore};
use execution_engine::{BrokerError, PaperBroker, PaperBrokerConfig, USD_DP};
use outcomes::PendingOutcomes;
use reflection::NoteDraft;
use rust_decimal::Decimal;
use serde::Serialize;
use tools::{
    DerivativesData, EventCalendar, NewsSource, Preloaded, RunMode, Tool, ToolContext, TradeMemory,
};
use types::{Fill, Interval, TradeRecord, TradeStatus, Verdict};

use crate::reflect::reflect_due;
use crate::run::run_tick_recording;
use crate::write_behind::WriteBehind;
use crate::{
    BlindRun, ReflectionCheck, ReflectionReport, StoreMemory, TickDeployment, TickError,
    TickOutcome, TickState,
};

/// What a backtest runs over.
#[derive(Clone)]
pub struct BacktestInput {
    /// The deployment to tick (ids, skill, reflector); its ids key every stored row.
    pub deployment: TickDeployment,
    /// Bars of every symbol at the skill's interval and at its higher timeframes.
    pub market: Arc<Preloaded>,
    /// Headlines (none = the News section says there are none).
    pub news: Option<Arc<dyn NewsSource>>,
    /// Scheduled events (none = no upcoming events).
    pub events: Option<Arc<dyn EventCalendar>>,
    /// Funding and open interest (none = `tools::NoData`: the Derivatives section says they are
    /// unknown and the tools answer "no data"). Served as of each tick.
    pub derivatives: Option<Arc<dyn DerivativesData>>,
    /// Only ticks at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Only ticks at or before this time.
    pub to: Option<DateTime<Utc>>,
    /// The paper broker's settings (initial equity, fees, slippage, leverage).
    pub broker: PaperBrokerConfig,
    /// Tools started before the run (the skill's MCP servers' tools, `mcp::McpServers::tools`),
    /// in every tick's [`ToolContext`]; empty when the skill names no MCP server. Whoever
    /// started them keeps them running for the whole run.
    pub external_tools: Arc<[Arc<dyn Tool>]>,
    /// `Some(seed)`: a blind run (the `blind` crate) — the model reads neutral symbol names,
    /// days relative to the first tick and prices rescaled per symbol (factors chosen from each
    /// symbol's first bar and `seed`); the broker, the ledger, the store and the result stay
    /// real. `None`: the model reads the real world.
    pub blind: Option<u64>,
}

/// One tick of the equity curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickPoint {
    /// The tick time: a bar close (UTC).
    pub tick_at: DateTime<Utc>,
    /// Broker equity after the tick, in USD.
    pub equity_usd: Decimal,
    /// Gross notional of the open positions after the tick, at their marks, in USD.
    pub exposure_usd: Decimal,
    /// The tick's outcome ([`OutcomeKind::as_str`](crate::OutcomeKind::as_str)): `executed`,
    /// `rejected`, `no_op` or `model_error`.
    pub verdict: &'static str,
    /// Tokens the tick's model calls used.
    pub usage: Usage,
    /// Estimated cost of those calls, in USD.
    pub cost_usd: Decimal,
}

/// Everything a backtest produced (the store holds the same, and the snapshots besides).
#[derive(Debug, Clone)]
pub struct BacktestResult {
    /// The skill's bar interval (one tick per bar close).
    pub interval: Interval,
    /// Equity at the start, in USD (the paper broker's).
    pub initial_equity_usd: Decimal,
    /// The equity curve: one point per tick, in time order.
    pub points: Vec<TickPoint>,
    /// Every ledger row, in the order first written.
    pub trades: Vec<TradeRecord>,
    /// Every broker fill, in time order (liquidations included).
    pub fills: Vec<Fill>,
    /// Every note reflection wrote, oldest first.
    pub notes: Vec<NoteDraft>,
    /// How many reflections failed or could not be checked (none stopped the backtest).
    pub reflection_failures: u32,
    /// Unrealized PnL of the positions still open at the end.
    pub unrealized_pnl_usd: Decimal,
}

/// The disguise of a blind backtest ([`BacktestInput::blind`]) whose first tick is `first`:
/// each symbol's factor from its first bar's close, day 0 the first tick's date. `None` for a
/// run that is not blind. What [`run_backtest`] builds; a caller that shows a run's prompts
/// (`sim-worker preview`) builds the same.
///
/// # Errors
/// [`BacktestError::Blind`] when a symbol has no bars or the skill reads what blind mode cannot
/// anonymise.
pub fn blind_run(
    input: &BacktestInput,
    first: DateTime<Utc>,
) -> Result<Option<BlindRun>, BacktestError> {
    input
        .blind
        .map(|seed| blind_run_seeded(input, seed, first))
        .transpose()
}

fn blind_run_seeded(
    input: &BacktestInput,
    seed: u64,
    first: DateTime<Utc>,
) -> Result<BlindRun, BacktestError> {
    let skill = input.deployment.skill.as_ref();
    let interval = skill.context.bars_interval;
    let first_prices = skill
        .context
        .symbols
        .iter()
        .filter_map(|s| {
            let bar = input.market.all_bars(s, interval).first()?;
            Some((s.clone(), bar.close))
        })
        .collect();
    let blind = blind::Blind::new(
        &skill.context.symbols,
        &first_prices,
        first.date_naive(),
        seed,
    )?;
    Ok(BlindRun::new(blind, skill)?)
}

/// Why a backtest stopped.
#[derive(Debug, thiserror::Error)]
pub enum BacktestError {
    /// A blind run cannot start (`BacktestInput::blind`): a symbol without bars, or a skill that
    /// reads what blind mode cannot anonymise.
    #[error(transparent)]
    Blind(#[from] blind::BlindError),
    /// The paper broker's configuration was refused.
    #[error("the paper broker: {0}")]
    Broker(#[from] BrokerError),
    /// A tick failed.
    #[error("tick at {at}: {source}")]
    Tick {
        /// The tick's time (UTC).
        at: DateTime<Utc>,
        /// Why it failed.
        #[source]
        source: TickError,
    },
    /// No bar of the skill's interval closes in `[from, to]`: there is nothing to tick.
    #[error("no bar of {interval} closes in the requested range")]
    NoTicks {
        /// The skill's interval.
        interval: Interval,
    },
    /// The store refused the buffered ticks (written in batches, see [`crate::write_behind`]).
    #[error("writing the backtest's ticks to the store: {0}")]
    Store(#[source] db::DbError),
}

/// The tick times of a backtest: the close times of every symbol's bars at `interval`, within
/// `[from, to]`, ascending.
#[must_use]
pub fn tick_times(
    market: &Preloaded,
    symbols: &[String],
    interval: Interval,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Vec<DateTime<Utc>> {
    let times: BTreeSet<DateTime<Utc>> = symbols
        .iter()
        .flat_map(|s| market.all_bars(s, interval).iter())
        .map(|b| b.close_time(interval))
        .filter(|t| from.is_none_or(|f| *t >= f) && to.is_none_or(|e| *t <= e))
        .collect();
    times.into_iter().collect()
}

/// Runs the backtest. `on_tick` sees every tick's outcome and the state after it (progress
/// bars, logs).
///
/// When the skill reads its outcome memory (the `<trading_memory>` block, or a recall tool:
/// [`skill_schema::Skill::reads_outcome_memory`]) the ticks recall from `store` (a clone of it,
/// sharing its connections: [`StoreMemory`]), and each tick writes every earlier tick and the
/// scores due at it first, so it recalls exactly what the store says as of its time.
///
/// # Errors
/// [`BacktestError`] when the broker config is invalid, a bar is invalid, no tick falls in the
/// range, or a tick fails (data, ledger, store).
pub async fn run_backtest<S, F>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    mut on_tick: F,
) -> Result<BacktestResult, BacktestError>
where
    S: TickStore + NoteStore + OutcomeStore + Clone + Send + Sync + 'static,
    F: FnMut(&TickOutcome, &TickState),
{
    run_backtest_until(input, model, store, |outcome, state| {
        on_tick(outcome, state);
        ControlFlow::Continue(())
    })
    .await
}

/// [`run_backtest`] that `on_tick` can end early: when it returns [`ControlFlow::Break`] after
/// a tick, no later tick runs, the store is flushed and the result covers the ticks that ran
/// (the store holds exactly those; a due reflection of the last tick has run). A budget stops a
/// run this way (`sim-worker run --max-cost`), between ticks, never inside one.
///
/// # Errors
/// As [`run_backtest`].
pub async fn run_backtest_until<S, F>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    on_tick: F,
) -> Result<BacktestResult, BacktestError>
where
    S: TickStore + NoteStore + OutcomeStore + Clone + Send + Sync + 'static,
    F: FnMut(&TickOutcome, &TickState) -> ControlFlow<()>,
{
    run_backtest_gated(input, model, store, None, on_tick).await
}

/// A store's preparation running as a task of the caller's runtime: its schema (e.g.
/// [`db::Store::migrate`] after [`db::connect_lazy`]) and the backtest's [`Registration`].
pub type StoreReady = tokio::task::JoinHandle<Result<(), db::DbError>>;

/// [`run_backtest_until`] on a store that `ready` is still preparing: the first ticks run
/// beside it (a new SQLite file's schema takes a few milliseconds), their records are buffered,
/// and the store is first written — or read — once `ready` has finished. Its error fails the
/// run as the store's ([`BacktestError::Store`]) and nothing of the run is written then.
///
/// # Errors
/// As [`run_backtest`].
pub async fn run_backtest_until_ready<S, F>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    ready: StoreReady,
    on_tick: F,
) -> Result<BacktestResult, BacktestError>
where
    S: TickStore + NoteStore + OutcomeStore + Clone + Send + Sync + 'static,
    F: FnMut(&TickOutcome, &TickState) -> ControlFlow<()>,
{
    run_backtest_gated(input, model, store, Some(ready), on_tick).await
}

async fn run_backtest_gated<S, F>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    ready: Option<StoreReady>,
    on_tick: F,
) -> Result<BacktestResult, BacktestError>
where
    S: TickStore + NoteStore + OutcomeStore + Clone + Send + Sync + 'static,
    F: FnMut(&TickOutcome, &TickState) -> ControlFlow<()>,
{
    let (result, store) = run_backtest_buffered(input, model, store, ready, on_tick).await?;
    store.flush().await.map_err(BacktestError::Store)?;
    Ok(result)
}

/// The write of a backtest's last batch, started when its last tick had run
/// ([`run_backtest_writing_last`]): the store holds every tick of the run once
/// [`LastWrite::finish`] has returned `Ok`.
#[must_use = "the run's last ticks are stored only once the last write has finished"]
pub struct LastWrite(LastWriteInner);

enum LastWriteInner {
    /// A task of the multi-threaded runtime the backtest ran on: it goes on while the caller
    /// computes.
    Spawned(tokio::task::JoinHandle<Result<(), db::DbError>>),
    /// Without one, a future that writes when awaited.
    Deferred(std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), db::DbError>> + Send>>),
}

impl LastWrite {
    /// Waits for the write.
    ///
    /// # Errors
    /// [`BacktestError::Store`] when the store refused the last batch (or the store's
    /// preparation failed and nothing was written): the error [`run_backtest_until_ready`]
    /// returns then.
    pub async fn finish(self) -> Result<(), BacktestError> {
        match self.0 {
            LastWriteInner::Spawned(task) => crate::write_behind::joined(task.await),
            LastWriteInner::Deferred(write) => write.await,
        }
        .map_err(BacktestError::Store)
    }
}

/// [`run_backtest_until_ready`] (with `ready`, or [`run_backtest_until`] without) that returns
/// when the last tick has run, its result with the write of the run's last batch still going
/// on ([`LastWrite`], a task of the runtime when it is multi-threaded): the caller computes its
/// report while the other core writes. The store holds the run only once
/// [`LastWrite::finish`] has returned `Ok`; a dropped `LastWrite` runs a spawned write to its
/// end (unobserved) and a deferred one not at all (the run's last ticks are then not stored).
///
/// # Errors
/// As [`run_backtest`], for every tick but the last write.
pub async fn run_backtest_writing_last<S, F>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    ready: Option<StoreReady>,
    on_tick: F,
) -> Result<(BacktestResult, LastWrite), BacktestError>
where
    S: TickStore + NoteStore + OutcomeStore + Clone + Send + Sync + 'static,
    F: FnMut(&TickOutcome, &TickState) -> ControlFlow<()>,
{
    let (result, store) = run_backtest_buffered(input, model, store, ready, on_tick).await?;
    // Where the batches were written: a task on a multi-threaded runtime, else polled.
    let runtime = store.spawn_on().cloned();
    let write = async move { store.flush().await };
    let last = match runtime {
        Some(runtime) => LastWriteInner::Spawned(runtime.spawn(write)),
        None => LastWriteInner::Deferred(Box::pin(write)),
    };
    Ok((result, LastWrite(last)))
}

/// The backtest's ticks, with what the store has not written yet still buffered in the
/// returned write-behind (the caller flushes it).
async fn run_backtest_buffered<S, F>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    ready: Option<StoreReady>,
    mut on_tick: F,
) -> Result<(BacktestResult, WriteBehind<S>), BacktestError>
where
    S: TickStore + NoteStore + OutcomeStore + Clone + Send + Sync + 'static,
    F: FnMut(&TickOutcome, &TickState) -> ControlFlow<()>,
{
    // The outcome memory the recall tools and the `<trading_memory>` block read: this
    // backtest's own, in the store it writes to (read only when the skill asks for it).
    let memory: Option<Arc<dyn TradeMemory>> =
        input.deployment.skill.reads_outcome_memory().then(|| {
            Arc::new(StoreMemory::new(
                store.clone(),
                MemoryScope::Deployment(input.deployment.deployment_id),
            )) as Arc<dyn TradeMemory>
        });
    let store = WriteBehind::gated(store, ready);
    let skill = input.deployment.skill.as_ref();
    let interval = skill.context.bars_interval;
    let symbols = skill.context.symbols.clone();
    let times = tick_times(&input.market, &symbols, interval, input.from, input.to);
    let first = *times.first().ok_or(BacktestError::NoTicks { interval })?;

    let mut broker = PaperBroker::new(input.broker.clone())?;
    let mut state = TickState::new(&input.deployment, input.broker.initial_equity_usd, first);
    state.blind = blind_run(input, first)?;
    // Bars by close time, per symbol.
    let by_close: BTreeMap<&str, BTreeMap<DateTime<Utc>, &types::Bar>> = symbols
        .iter()
        .map(|s| {
            let m = input
                .market
                .all_bars(s, interval)
                .iter()
                .map(|b| (b.close_time(interval), b))
                .collect();
            (s.as_str(), m)
        })
        .collect();

    let mut points = Vec::with_capacity(times.len());
    let mut fills = Vec::new();
    let mut notes = Vec::new();
    let mut reflection_failures = 0_u32;
    // Every ledger row of the run, for the result (the tick's state keeps only what a tick
    // reads: `TickState::trades`).
    let mut ledger = RunLedger::default();
    // Outcomes waiting for their +1h/+4h/+24h marks (seed 003).
    let mut pending = PendingOutcomes::new();
    for at in times {
        for symbol in &symbols {
            if let Some(bar) = by_close.get(symbol.as_str()).and_then(|m| m.get(&at)) {
                broker.apply_bar(symbol, bar, at)?;
            }
        }
        // Outcomes whose marks passed by `at`, scored from the bars closed by then and written
        // with this tick, as a live scorer running every bar would.
        state.outcome_scores = pending.score_due(
            at,
            interval,
            |symbol| {
                let bars = input.market.all_bars(symbol, interval);
                &bars[..bars.partition_point(|b| b.close_time(interval) <= at)]
            },
            |o| {
                crate::outcome_memory::snapshot_indicators(
                    o,
                    &skill.context.memory.reference_symbol,
                    interval,
                    &*input.market,
                )
            },
        );
        let mut ctx = ToolContext::new(
            at,
            RunMode::Trade,
            symbols.clone(),
            input.market.clone(),
            input.market.clone(),
        )
        .with_external(input.external_tools.clone());
        if let Some(news) = &input.news {
            ctx = ctx.with_news(news.clone());
        }
        if let Some(events) = &input.events {
            ctx = ctx.with_events(events.clone());
        }
        if let Some(derivatives) = &input.derivatives {
            ctx = ctx.with_derivatives(derivatives.clone());
        }
        if let Some(memory) = &memory {
            // Every earlier tick, and the scores that came due at this one, are in the store
            // before the tick recalls: a mark is visible from the tick at or after it, as
            // `TradeOutcome::as_of` reads the stored rows afterwards.
            store.flush().await.map_err(BacktestError::Store)?;
            let scores = std::mem::take(&mut state.outcome_scores);
            if !scores.is_empty() {
                store
                    .inner()
                    .score_outcomes(&scores)
                    .await
                    .map_err(BacktestError::Store)?;
            }
            ctx = ctx.with_trade_memory(memory.clone());
        }
        // Recorded through the write-behind, which computes each decision's market snapshot
        // on its writer thread (`crate::run::Recorder`).
        let outcome = match run_tick_recording(
            &input.deployment,
            &ctx,
            model,
            &mut broker,
            &mut state,
            &store,
            None,
        )
        .await
        {
            Ok(outcome) => outcome,
            Err(source) => {
                // Keep every tick that ran before the failing one; the tick's error is the one
                // to report.
                let _ = store.flush().await;
                return Err(BacktestError::Tick { at, source });
            }
        };
        // A due reflection runs right after its tick, in order: the next tick sees its note.
        match &outcome.reflection {
            ReflectionCheck::Due(due) => {
                // Run now; its note and run are stored with the batch this tick is in, after
                // the batch's ticks, while the next ones run (the report is the stored one's: a
                // store that refuses the note fails the run).
                let (done, writes) = reflect_due(&input.deployment, due).await;
                store.defer_reflection(writes);
                done.apply(&mut state);
                if matches!(done.report, ReflectionReport::Failed { .. }) {
                    reflection_failures += 1;
                }
                notes.extend(done.note);
            }
            ReflectionCheck::Invalid { .. } => reflection_failures += 1,
            ReflectionCheck::NotDue => {}
        }
        points.push(TickPoint {
            tick_at: at,
            equity_usd: outcome.equity_usd,
            exposure_usd: outcome.exposure_usd,
            verdict: outcome.kind().as_str(),
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
        });
        fills.extend(outcome.fills.iter().cloned());
        ledger.upsert(&outcome.trades);
        if let Some(o) = &outcome.outcome {
            pending.push(o.clone());
        }
        if on_tick(&outcome, &state).is_break() {
            break;
        }
    }
    let result = BacktestResult {
        interval,
        initial_equity_usd: input.broker.initial_equity_usd,
        points,
        trades: ledger.rows,
        fills,
        notes,
        reflection_failures,
        unrealized_pnl_usd: broker.unrealized_pnl_usd(),
    };
    Ok((result, store))
}

/// Every ledger row of a backtest, in the order first written, each in its latest version.
#[derive(Default)]
struct RunLedger {
    rows: Vec<TradeRecord>,
    at: std::collections::HashMap<types::Uuid, usize>,
}

impl RunLedger {
    fn upsert(&mut self, changed: &[TradeRecord]) {
        for row in changed {
            match self.at.get(&row.id) {
                Some(&i) => self.rows[i] = row.clone(),
                None => {
                    self.at.insert(row.id, self.rows.len());
                    self.rows.push(row.clone());
                }
            }
        }
    }
}

/// The engine's verdict's kind: `executed`, `rejected` or `no_op` (a tick's outcome, which can
/// also be `model_error`, is [`TickOutcome::kind`](crate::TickOutcome::kind)).
#[must_use]
pub fn verdict_kind(v: &Verdict) -> &'static str {
    crate::OutcomeKind::of(v, false).as_str()
}

/// PnL of a group of ledger rows. Gross is the ledger's `realized_pnl_usd` (partial closes of
/// still-open rows included); net = gross − fees. Sums are rounded to [`USD_DP`] decimals, the
/// broker's booking precision.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PnlBreakdown {
    /// Closed round trips.
    pub trades: u32,
    /// Closed round trips with net PnL above zero.
    pub wins: u32,
    /// Closed round trips with net PnL at or below zero.
    pub losses: u32,
    /// Σ `realized_pnl_usd` of the rows (open rows' partial closes included), USD, before fees.
    pub gross_usd: Decimal,
    /// Σ `fees_usd` of the rows, USD.
    pub fees_usd: Decimal,
    /// `gross_usd − fees_usd`, USD.
    pub net_usd: Decimal,
}

impl PnlBreakdown {
    fn add(&mut self, t: &TradeRecord) {
        self.gross_usd = (self.gross_usd + t.realized_pnl_usd).round_dp(USD_DP);
        self.fees_usd = (self.fees_usd + t.fees_usd).round_dp(USD_DP);
        self.net_usd = self.gross_usd - self.fees_usd;
        if t.status == TradeStatus::Closed {
            self.trades += 1;
            let net = t.realized_pnl_usd - t.fees_usd;
            if net > Decimal::ZERO {
                self.wins += 1;
            } else {
                self.losses += 1;
            }
        }
    }
}

/// The numbers of `summary.json`. See [`Summary::of`] for each definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Ticks run.
    pub ticks: u32,
    /// The first tick's time; `null` without ticks.
    pub first_tick: Option<DateTime<Utc>>,
    /// The last tick's time; `null` without ticks.
    pub last_tick: Option<DateTime<Utc>>,
    /// The skill's interval, e.g. `1h`.
    pub interval: String,
    /// Equity at the start, USD.
    pub initial_equity_usd: Decimal,
    /// Equity after the last tick, USD (the initial equity without ticks).
    pub final_equity_usd: Decimal,
    /// Closed round trips.
    pub trades: u32,
    /// Ledger rows still open at the end.
    pub open_trades: u32,
    /// Closed round trips with net PnL above zero.
    pub wins: u32,
    /// Closed round trips with net PnL at or below zero.
    pub losses: u32,
    /// wins / closed trades × 100, 2 dp; `null` without a closed trade.
    pub win_rate_pct: Option<Decimal>,
    /// PnL over every ledger row.
    pub pnl: PnlBreakdown,
    /// PnL per symbol.
    pub pnl_by_symbol: BTreeMap<String, PnlBreakdown>,
    /// Unrealized PnL of the positions open at the end, USD.
    pub unrealized_pnl_usd: Decimal,
    /// final equity − initial equity (= net realized + unrealized).
    pub total_return_usd: Decimal,
    /// `total_return_usd` as % of the initial equity, 2 dp.
    pub total_return_pct: Decimal,
    /// Largest fall of the per-tick equity from its running peak (the initial equity counts), USD.
    pub max_drawdown_usd: Decimal,
    /// That fall as % of its peak, 2 dp.
    pub max_drawdown_pct: Decimal,
    /// Annualised Sharpe ratio of per-tick equity returns (risk-free rate 0).
    pub sharpe: Option<f64>,
    /// Ticks per year used to annualise: 365 × 24 × 60 / interval minutes.
    pub sharpe_periods_per_year: u32,
    /// Share of ticks that ended with an open position, %.
    pub exposure_time_pct: Decimal,
    /// Mean over ticks of gross open notional / equity, %.
    pub avg_exposure_pct: Decimal,
    /// Broker fills (liquidations included).
    pub fills: u32,
    /// Ticks per outcome kind (`executed`, `rejected`, `no_op`, `model_error`; only kinds that
    /// occurred). A `model_error` tick — every model call failed, or the tick's deadline ran
    /// out — is counted there and not as a `no_op`.
    pub verdicts: BTreeMap<&'static str, u32>,
    /// Tokens over the run: the ticks' usage and the reflection notes' (a note records all its
    /// input tokens as `input`).
    pub tokens: Usage,
    /// Estimated model cost over the run (ticks and reflection notes), USD.
    pub cost_usd: Decimal,
    /// Reflection notes written.
    pub notes: u32,
    /// Reflections that failed or could not be checked.
    pub reflection_failures: u32,
}

impl Summary {
    /// Ticks that ended on a model failure (`verdicts["model_error"]`, 0 when none).
    #[must_use]
    pub fn model_errors(&self) -> u32 {
        self.verdicts
            .get(crate::OutcomeKind::ModelError.as_str())
            .copied()
            .unwrap_or(0)
    }
}

fn pct(part: Decimal, whole: Decimal) -> Decimal {
    if whole.is_zero() {
        Decimal::ZERO
    } else {
        (part * Decimal::ONE_HUNDRED / whole).round_dp(2)
    }
}

impl Summary {
    /// Computes the summary of a run.
    ///
    /// - PnL: gross = Σ `realized_pnl_usd` of every ledger row, fees = Σ `fees_usd`, net =
    ///   gross − fees; a win is a closed trade with net PnL above zero.
    /// - Max drawdown: the largest fall of the per-tick equity from its running peak (the
    ///   initial equity counts as the first peak), in $ and as % of that peak.
    /// - Sharpe: mean / sample standard deviation of per-tick returns `eᵢ / eᵢ₋₁ − 1` (the
    ///   first against the initial equity), × √(ticks per year), ticks per year =
    ///   365 × 24 × 60 / interval minutes (markets that close on weekends are over-annualised
    ///   slightly). A statistic, not money: computed in `f64`, rounded to 4 decimals; `null`
    ///   with fewer than two ticks or no variation.
    #[must_use]
    pub fn of(r: &BacktestResult) -> Self {
        let mut pnl = PnlBreakdown::default();
        let mut by_symbol: BTreeMap<String, PnlBreakdown> = BTreeMap::new();
        let mut open_trades = 0;
        for t in &r.trades {
            pnl.add(t);
            by_symbol.entry(t.symbol.clone()).or_default().add(t);
            if t.status == TradeStatus::Open {
                open_trades += 1;
            }
        }
        let final_equity = r
            .points
            .last()
            .map_or(r.initial_equity_usd, |p| p.equity_usd);

        let mut peak = r.initial_equity_usd;
        let mut dd_usd = Decimal::ZERO;
        let mut dd_pct = Decimal::ZERO;
        for p in &r.points {
            peak = peak.max(p.equity_usd);
            let dd = peak - p.equity_usd;
            if dd > dd_usd {
                dd_usd = dd;
                dd_pct = pct(dd, peak);
            }
        }

        let periods = u32::try_from(365 * 24 * 60 / r.interval.minutes().max(1)).unwrap_or(1);
        let sharpe = sharpe(r, periods);

        let ticks = u32::try_from(r.points.len()).unwrap_or(u32::MAX);
        let exposed = r
            .points
            .iter()
            .filter(|p| p.exposure_usd > Decimal::ZERO)
            .count();
        let exposure_sum: Decimal = r
            .points
            .iter()
            .map(|p| pct(p.exposure_usd, p.equity_usd))
            .sum();
        let mut verdicts: BTreeMap<&'static str, u32> = BTreeMap::new();
        let mut tokens = Usage::default();
        let mut cost = Decimal::ZERO;
        for p in &r.points {
            *verdicts.entry(p.verdict).or_default() += 1;
            tokens += p.usage;
            cost += p.cost_usd;
        }
        for n in &r.notes {
            tokens += Usage {
                input: n.content.input_tokens.unwrap_or(0),
                output: n.content.output_tokens.unwrap_or(0),
                ..Usage::default()
            };
            cost += n.content.cost_usd.unwrap_or_default();
        }
        let total_return = final_equity - r.initial_equity_usd;
        Summary {
            ticks,
            first_tick: r.points.first().map(|p| p.tick_at),
            last_tick: r.points.last().map(|p| p.tick_at),
            interval: r.interval.to_string(),
            initial_equity_usd: r.initial_equity_usd,
            final_equity_usd: final_equity,
            trades: pnl.trades,
            open_trades,
            wins: pnl.wins,
            losses: pnl.losses,
            win_rate_pct: (pnl.trades > 0)
                .then(|| pct(Decimal::from(pnl.wins), Decimal::from(pnl.trades))),
            pnl,
            pnl_by_symbol: by_symbol,
            unrealized_pnl_usd: r.unrealized_pnl_usd,
            total_return_usd: total_return,
            total_return_pct: pct(total_return, r.initial_equity_usd),
            max_drawdown_usd: dd_usd,
            max_drawdown_pct: dd_pct,
            sharpe,
            sharpe_periods_per_year: periods,
            exposure_time_pct: pct(Decimal::from(exposed), Decimal::from(ticks.max(1))),
            avg_exposure_pct: if ticks == 0 {
                Decimal::ZERO
            } else {
                (exposure_sum / Decimal::from(ticks)).round_dp(2)
            },
            fills: u32::try_from(r.fills.len()).unwrap_or(u32::MAX),
            verdicts,
            tokens,
            cost_usd: cost,
            notes: u32::try_from(r.notes.len()).unwrap_or(u32::MAX),
            reflection_failures: r.reflection_failures,
        }
    }
}

fn sharpe(r: &BacktestResult, periods: u32) -> Option<f64> {
    use rust_decimal::prelude::ToPrimitive;
    let mut prev = r.initial_equity_usd;
    let mut returns = Vec::with_capacity(r.points.len());
    for p in &r.points {
        if prev > Decimal::ZERO {
            returns.push(((p.equity_usd - prev) / prev).to_f64()?);
        }
        prev = p.equity_usd;
    }
    if returns.len() < 2 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = returns.len() as f64;
    let mean = returns.iter().sum::<f64>() / n;
    let var = returns.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let sd = var.sqrt();
    if sd <= f64::EPSILON {
        return None;
    }
    let s = mean / sd * f64::from(periods).sqrt();
    Some((s * 10_000.0).round() / 10_000.0)
}

/// Records what a live deployment has before its first tick — the user, the skill, the skill
/// version (the skill document as JSON) and a paper deployment — so a backtest's store holds
/// everything a live run's does. Ids come from `input.deployment`; `created_at` is the first
/// tick's time (a backtest writes no wall-clock time). [`Registration::of`], then
/// [`Registration::store`].
///
/// # Errors
/// [`db::DbError`] from the store, e.g. [`db::DbError::Constraint`] when the deployment is
/// already recorded (a store holds one run per deployment id).
pub async fn register<S: db::RegistryStore>(
    store: &S,
    input: &BacktestInput,
    skill_body: serde_json::Value,
    created_at: DateTime<Utc>,
) -> Result<(), db::DbError> {
    Registration::of(input, skill_body, created_at)
        .store(store)
        .await
}

/// The rows [`register`] writes, built without the store and owned: what a store's
/// preparation running as a task ([`run_backtest_until_ready`]) records.
#[derive(Debug, Clone)]
pub struct Registration {
    user: db::User,
    skill: db::SkillRecord,
    version: db::SkillVersion,
    deployment: db::Deployment,
}

impl Registration {
    /// The rows of `input`'s deployment: its skill version holds `skill_body`, everything is
    /// dated `created_at`.
    #[must_use]
    pub fn of(
        input: &BacktestInput,
        skill_body: serde_json::Value,
        created_at: DateTime<Utc>,
    ) -> Self {
        let d = &input.deployment;
        let skill = d.skill.as_ref();
        let equity = input.broker.initial_equity_usd;
        let mut config = serde_json::json!({
            "symbols": skill.context.symbols,
            "taker_fee_bps": input.broker.taker_fee_bps,
            "slippage_bps": input.broker.slippage_bps,
            "maintenance_margin_rate": input.broker.maintenance_margin_rate,
            "from": input.from,
            "to": input.to,
        });
        if !input.broker.exchange_max_leverage.is_empty() {
            config["exchange_max_leverage"] = serde_json::json!(input.broker.exchange_max_leverage);
        }
        Self {
            user: db::User {
                id: d.user_id,
                email: None,
            },
            skill: db::SkillRecord {
                id: d.skill_id,
                user_id: d.user_id,
                name: skill.name.chars().take(200).collect(),
                created_at,
            },
            version: db::SkillVersion {
                skill_id: d.skill_id,
                version: d.skill_version,
                body: skill_body,
                model: skill.model.clone(),
                created_at,
            },
            deployment: db::Deployment {
                id: d.deployment_id,
                user_id: d.user_id,
                skill_id: d.skill_id,
                skill_version: d.skill_version,
                broker: db::BrokerKind::Paper,
                status: db::DeploymentStatus::Active,
                initial_equity_usd: equity,
                equity_usd: equity,
                config,
                created_at,
                next_tick_at: None,
                lease_owner: None,
                lease_expires_at: None,
            },
        }
    }

    /// Writes the rows: the user (upserted), the skill and its version when the store does not
    /// hold them, then the deployment.
    ///
    /// # Errors
    /// [`db::DbError`] from the store (a deployment with this id already stored included).
    pub async fn store<S: db::RegistryStore>(&self, store: &S) -> Result<(), db::DbError> {
        store.upsert_user(&self.user).await?;
        if store.get_skill(self.skill.id).await.is_err() {
            store.create_skill(&self.skill).await?;
        }
        if store
            .get_skill_version(self.version.skill_id, self.version.version)
            .await
            .is_err()
        {
            store.add_skill_version(&self.version).await?;
        }
        store.create_deployment(&self.deployment).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use types::{Side, Uuid};

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 4, h, 0, 0)
            .single()
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
    }

    fn trade(symbol: &str, gross: i64, fee_cents: i64, closed: bool) -> TradeRecord {
        TradeRecord {
            id: Uuid::new_v5(&Uuid::NAMESPACE_OID, symbol.as_bytes()),
            deployment_id: Uuid::nil(),
            skill_id: Uuid::nil(),
            skill_version: 1,
            symbol: symbol.to_owned(),
            side: Side::Long,
            status: if closed {
                TradeStatus::Closed
            } else {
                TradeStatus::Open
            },
            entry_tick_at: at(1),
            entry_price: Decimal::ONE,
            entry_size_usd: Decimal::ONE,
            entry_leverage: None,
            entry_reason: None,
            entry_snapshot_id: None,
            entry_regime_tag: None,
            opened_qty: Decimal::ONE,
            open_qty: if closed { Decimal::ZERO } else { Decimal::ONE },
            exit_tick_at: closed.then(|| at(2)),
            exit_price: closed.then_some(Decimal::ONE),
            exit_size_usd: Decimal::ZERO,
            exit_reason: None,
            exit_snapshot_id: None,
            close_kind: None,
            holding_minutes: None,
            realized_pnl_usd: Decimal::from(gross),
            fees_usd: Decimal::new(fee_cents, 2),
            mfe_usd: Decimal::ZERO,
            mae_usd: Decimal::ZERO,
            broker_reconciled: false,
        }
    }

    fn point(h: u32, equity: i64, exposure: i64, verdict: &'static str) -> TickPoint {
        TickPoint {
            tick_at: at(h),
            equity_usd: Decimal::from(equity),
            exposure_usd: Decimal::from(exposure),
            verdict,
            usage: Usage {
                input: 100,
                output: 10,
                cache_read: 50,
                cache_write: 0,
            },
            cost_usd: Decimal::new(1, 3),
        }
    }

    #[test]
    fn summary_arithmetic() {
        let r = BacktestResult {
            interval: Interval::H1,
            initial_equity_usd: Decimal::from(1_000),
            points: vec![
                point(1, 1_100, 500, "executed"),
                point(2, 990, 0, "executed"),
                point(3, 1_045, 0, "no_op"),
                point(4, 1_089, 1_089, "rejected"),
            ],
            trades: vec![
                trade("BTC", 120, 150, true), // net 120 − 1.50 = 118.50: a win
                trade("BTC", -30, 50, true),  // net −30 − 0.50 = −30.50: a loss
                trade("ETH", 5, 0, true),     // net 5: a win
                trade("ETH", 0, 25, false),   // open: fees count, not a trade
            ],
            fills: Vec::new(),
            notes: Vec::new(),
            reflection_failures: 0,
            unrealized_pnl_usd: Decimal::ZERO,
        };
        let s = Summary::of(&r);
        assert_eq!(s.trades, 3);
        assert_eq!((s.wins, s.losses, s.open_trades), (2, 1, 1));
        // 2 / 3 = 66.666… → 66.67
        assert_eq!(s.win_rate_pct, Some(Decimal::new(6667, 2)));
        // gross 120 − 30 + 5 + 0 = 95; fees 1.50 + 0.50 + 0 + 0.25 = 2.25; net 92.75
        assert_eq!(s.pnl.gross_usd, Decimal::from(95));
        assert_eq!(s.pnl.fees_usd, Decimal::new(225, 2));
        assert_eq!(s.pnl.net_usd, Decimal::new(9275, 2));
        // BTC: gross 90, fees 2.00, net 88; ETH: gross 5, fees 0.25, net 4.75
        assert_eq!(s.pnl_by_symbol["BTC"].net_usd, Decimal::from(88));
        assert_eq!(s.pnl_by_symbol["ETH"].net_usd, Decimal::new(475, 2));
        // peak 1,100 → trough 990: 110, 110 / 1,100 = 10.00 %
        assert_eq!(s.max_drawdown_usd, Decimal::from(110));
        assert_eq!(s.max_drawdown_pct, Decimal::new(1000, 2));
        // 1,089 − 1,000 = 89 → 8.90 %
        assert_eq!(s.total_return_usd, Decimal::from(89));
        assert_eq!(s.total_return_pct, Decimal::new(890, 2));
        // exposed on 2 of 4 ticks; exposure/equity: 500/1,100 = 45.45 %, 0, 0, 100 % → 36.36
        assert_eq!(s.exposure_time_pct, Decimal::from(50));
        assert_eq!(s.avg_exposure_pct, Decimal::new(3636, 2));
        // returns +10 %, −10 %, +5.5556 %, +4.2105 %: mean 2.4415 %, sample sd 8.6554 %
        // (Σ squared deviations 0.022475 / 3); 0.28208 × √8760 (93.5949) = 26.40
        let sharpe = s.sharpe.unwrap_or_default();
        assert!((sharpe - 26.40).abs() < 0.01, "{sharpe}");
        assert_eq!(s.sharpe_periods_per_year, 8_760);
        assert_eq!(s.verdicts["executed"], 2);
        assert_eq!(s.tokens.input, 400);
        assert_eq!(s.tokens.cache_read, 200);
        assert_eq!(s.cost_usd, Decimal::new(4, 3));
    }
}
