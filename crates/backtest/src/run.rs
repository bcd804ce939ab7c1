//! The backtest loop ([`run`]): [`tick::run_tick_recording`] once per closed bar of the
//! skill's interval over bars held in memory, with the paper broker.
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
//! batch of ticks, flushed before the store is read, at the end and on an error.
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
use db::{MemoryScope, OutcomeStore, TickStore};
use execution_engine::{BrokerError, PaperBroker, PaperBrokerConfig};
use outcomes::PendingOutcomes;
use reflection::NoteDraft;
use rust_decimal::Decimal;
use serde::Serialize;
use tick::{
    BlindRun, ReflectionCheck, ReflectionReport, StoreMemory, TickDeployment, TickError,
    TickOutcome, TickState, reflect_due, run_tick_recording,
};
use tools::{
    DerivativesData, EventCalendar, NewsSource, Preloaded, RunMode, Tool, ToolContext, TradeMemory,
};
use types::{Fill, Interval, TradeRecord};

use crate::write_behind::WriteBehind;

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
    /// The tick's outcome ([`OutcomeKind::as_str`](tick::OutcomeKind::as_str)): `executed`,
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
/// run that is not blind. What [`run`] builds; a caller that shows a run's prompts
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
    /// The ledger refused a baseline's fills ([`crate::baseline`]).
    #[error("the ledger: {0}")]
    Ledger(#[from] memory_ledger::LedgerError),
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
    /// The store refused the buffered ticks (written in batches, see
    /// [`write_behind`](crate::write_behind)).
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

/// A store's preparation running as a task of the caller's runtime: its schema (e.g.
/// [`db::Store::migrate`] after [`db::connect_lazy`]) and the backtest's
/// [`Registration`](crate::Registration).
pub type StoreReady = tokio::task::JoinHandle<Result<(), db::DbError>>;

/// What a tick's callback is handed: the tick's outcome and the state after it.
type OnTick<'a> = Box<dyn FnMut(&TickOutcome, &TickState) -> ControlFlow<()> + 'a>;

/// How [`run`] runs, beyond its input. [`RunOptions::default`]: every tick, nobody told after
/// each, on a store ready to be written.
#[derive(Default)]
pub struct RunOptions<'a> {
    on_tick: Option<OnTick<'a>>,
    store_ready: Option<StoreReady>,
}

impl<'a> RunOptions<'a> {
    /// Calls `on_tick` after every tick with its outcome and the state after it (progress
    /// bars, logs, a budget). When it returns [`ControlFlow::Break`], no later tick runs: the
    /// result covers the ticks that ran and the store holds exactly those (a due reflection of
    /// the last tick has run). A budget stops a run this way (`sim-worker run --max-cost`),
    /// between ticks, never inside one.
    #[must_use]
    pub fn on_tick(
        mut self,
        on_tick: impl FnMut(&TickOutcome, &TickState) -> ControlFlow<()> + 'a,
    ) -> Self {
        self.on_tick = Some(Box::new(on_tick));
        self
    }

    /// The store is still being prepared by `ready` (a new SQLite file's schema and the
    /// deployment's registration take a few milliseconds): the first ticks run beside it,
    /// their records are buffered, and the store is first written — or read — once `ready`
    /// has finished. Its error fails the run as the store's ([`BacktestError::Store`]), and
    /// nothing of the run is written then.
    #[must_use]
    pub fn store_ready(mut self, ready: StoreReady) -> Self {
        self.store_ready = Some(ready);
        self
    }
}

impl std::fmt::Debug for RunOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunOptions")
            .field("on_tick", &self.on_tick.is_some())
            .field("store_ready", &self.store_ready.is_some())
            .finish()
    }
}

/// Runs the backtest of `input` with `model`, writing to `store` (which holds the deployment's
/// [`Registration`](crate::Registration), or will once [`RunOptions::store_ready`] has
/// finished). Returns when the last tick has run, with the write of the run's last batch still
/// going on ([`Run`]): [`Run::stored`] waits for it; [`Run::into_parts`] leaves it to the
/// caller, who computes its report meanwhile.
///
/// When the skill reads its outcome memory (the `<trading_memory>` block, or a recall tool:
/// [`skill_schema::Skill::reads_outcome_memory`]) the ticks recall from `store` (a clone of it,
/// sharing its connections: [`StoreMemory`]), and each tick writes every earlier tick and the
/// scores due at it first, so it recalls exactly what the store says as of its time.
///
/// # Errors
/// [`BacktestError`] when the broker config is invalid, a bar is invalid, no tick falls in the
/// range, a blind run cannot start, a tick fails (data, ledger, store) or the store refuses a
/// batch. The store then holds every tick that ran before the failure and no later one.
pub async fn run<S>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    options: RunOptions<'_>,
) -> Result<Run, BacktestError>
where
    S: TickStore + OutcomeStore + Clone + Send + Sync + 'static,
{
    let RunOptions {
        on_tick,
        store_ready,
    } = options;
    let on_tick = on_tick.unwrap_or_else(|| Box::new(|_, _| ControlFlow::Continue(())));
    let (result, store) = run_buffered(input, model, store, store_ready, on_tick).await?;
    // Where the batches were written: a task on a multi-threaded runtime, else polled.
    let runtime = store.spawn_on().cloned();
    let write = async move { store.flush().await };
    let last_write = match runtime {
        Some(runtime) => LastWriteInner::Spawned(runtime.spawn(write)),
        None => LastWriteInner::Deferred(Box::pin(write)),
    };
    Ok(Run {
        result,
        last_write: LastWrite(last_write),
    })
}

/// A run whose ticks have all run ([`run`]): its result, and the write of its last batch.
#[must_use = "the run's last ticks are stored only once its last write has finished"]
pub struct Run {
    result: BacktestResult,
    last_write: LastWrite,
}

impl Run {
    /// Waits for the last write; then the store holds every tick of the run.
    ///
    /// # Errors
    /// [`BacktestError::Store`] when the store refused the last batch (or the store's
    /// preparation failed and nothing was written).
    pub async fn stored(self) -> Result<BacktestResult, BacktestError> {
        self.last_write.finish().await?;
        Ok(self.result)
    }

    /// The result now, and the last write for the caller to finish ([`LastWrite::finish`]).
    pub fn into_parts(self) -> (BacktestResult, LastWrite) {
        (self.result, self.last_write)
    }
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

/// The write of a backtest's last batch, started when its last tick had run
/// ([`Run::into_parts`]): the store holds every tick of the run once [`LastWrite::finish`] has
/// returned `Ok`. A dropped `LastWrite` runs a write spawned on a multi-threaded runtime to its
/// end (unobserved), and a write to be polled not at all (the run's last ticks are then not
/// stored).
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
    /// preparation failed and nothing was written).
    pub async fn finish(self) -> Result<(), BacktestError> {
        match self.0 {
            LastWriteInner::Spawned(task) => crate::write_behind::joined(task.await),
            LastWriteInner::Deferred(write) => write.await,
        }
        .map_err(BacktestError::Store)
    }
}

/// The backtest's ticks, with what the store has not written yet still buffered in the
/// returned write-behind (the caller flushes it).
async fn run_buffered<S>(
    input: &BacktestInput,
    model: &dyn LanguageModel,
    store: &S,
    ready: Option<StoreReady>,
    mut on_tick: OnTick<'_>,
) -> Result<(BacktestResult, WriteBehind<S>), BacktestError>
where
    S: TickStore + OutcomeStore + Clone + Send + Sync + 'static,
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
                tick::snapshot_indicators(
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
        // on its writer thread (`tick::Recorder`).
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
