//! THE per-tick function: what one tick of a deployment does, shared byte for byte by
//! `sim-worker` (a backtest) and `live-runner` (paper or an exchange).
//!
//! [`run_tick`] takes the deployment ([`Deployment`]), the tick's data sources (a
//! [`tools::ToolContext`] whose `now` is the tick time), the model, a [`Broker`], the state the
//! caller carries between ticks ([`TickState`]: engine risk state, ledger, last decision, notes)
//! and a store, and in this order:
//!
//! 1. reads the broker-authoritative portfolio and lets the engine's [`RiskState`] observe its
//!    equity;
//! 2. assembles the user message and composes the system prompt — LESSONS from the latest
//!    injectable (not flagged) note generated at or before the tick time
//!    ([`reflection::visible_note_at`]), the memory sections from the ledger as of the tick;
//! 3. runs the model loop ([`agent_runtime::run_tick`]);
//! 4. asks the engine for a verdict ([`execution_engine::validate`]) and, when executed, sends
//!    the order to the broker at the mark — the close of the symbol's latest closed bar (the
//!    broker applies slippage and fees). A broker refusal turns the verdict into a rejection
//!    stating the broker's reason;
//! 5. materializes the ledger in two steps written as one: before the context is assembled, the
//!    fills the broker made on its own since the last tick (liquidations), its positions and the
//!    bars closed since the last tick (MFE/MAE) — so the memory sections are current; after the
//!    broker, this tick's fills with their proposal and regime tags and the positions after;
//! 6. persists the decision snapshot, fills, ledger rows and fill links — and, with
//!    [`run_tick_carrying`], the caller's own state after the tick (a live runner's paper broker
//!    and risk state) — in ONE `record_tick` transaction;
//! 7. checks the reflection cadence ([`reflection::reflection_due`], cheap and pure) and reports
//!    a due reflection in [`TickOutcome::reflection`] ([`ReflectionCheck::Due`]) without running
//!    it: the model call of a reflection is off the tick path;
//! 8. returns a [`TickOutcome`] (verdict, proposal, usage, cost, the new last decision, ...).
//!
//! A due reflection runs with [`run_due_reflection`], the one function both callers use: the
//! backtest right after the tick, in order (so the next tick sees its note, deterministically);
//! the live runner on a bounded worker of its own, so a slow reflection never delays a tick. It
//! runs [`reflection::reflect`] and [`store_reflection`]: a note is stored with `insert_note` (it
//! becomes the active note and supersedes the previous one; a note the linter flagged is stored
//! as pending review and never injected unless a person accepts it); every run is recorded with
//! `record_reflection_run`; a failure never fails a tick. A reflection of a tick that is already
//! stored (a redo after a restart or a re-run) does nothing: its ids are UUID v5 of the
//! deployment and the tick time. [`load_reflection_state`] reads the notes and runs back, so a
//! reflection that finished off the tick path (or on another process) is seen by the next tick.
//!
//! **Deterministic:** no hash-map iteration reaches an output; ids are UUID v5 in the
//! deployment's namespace ([`snapshot_id`], [`note_id`], [`run_id`]), fill ids come from the
//! broker; so two runs over the same inputs write byte-identical snapshots and ledgers.
//!
//! **What this crate must never do:** read files, read the wall clock (time is `ctx.now`), reach
//! the network itself (the model and the broker are traits the caller hands in), or decide what
//! trades (the execution engine does).
//!
//! A backtest ([`backtest::run_backtest`]) is [`run_tick`] at every bar close with the paper
//! broker; a service with its own data, broker and store calls [`run_tick`] itself, as
//! `examples/embed.rs` does (`cargo run -p tick --example embed`).
//!
//! ```
//! use std::sync::Arc;
//! use execution_engine::PaperBrokerConfig;
//! use rust_decimal::Decimal;
//! use tick::Deployment;
//! use tick::backtest::{BacktestInput, register, run_backtest};
//! use tools::Preloaded;
//! use types::{Interval, Uuid};
//!
//! let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
//! let skill = skill_schema::load_skill(format!("{repo}/examples/skills/eurusd-sma-cross.yaml").as_ref())?.skill;
//! let mut bars = market_data::load_bars(format!("{repo}/examples/data/EURUSD.csv").as_ref())?;
//! bars.truncate(120);
//! let created_at = bars[0].time; // no wall clock: registry rows are dated by the data
//! let model = agent_runtime::builtin_model(&skill.model, &skill).expect("an offline model");
//! let id = Uuid::from_u128(1);
//! let input = BacktestInput {
//!     deployment: Deployment {
//!         user_id: id, deployment_id: id, skill_id: id, skill_version: 1,
//!         skill: Arc::new(skill.clone()),
//!         reflector: Err("no reflection in this example".into()),
//!     },
//!     market: Arc::new(Preloaded::new().with_bars("EURUSD", Interval::H1, bars)),
//!     news: None, events: None, from: None, to: None,
//!     broker: PaperBrokerConfig::new(Decimal::from(10_000)),
//! };
//! tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//!     let store = db::connect("sqlite::memory:").await?;
//!     register(&store, &input, serde_json::to_value(&skill)?, created_at).await?;
//!     let result = run_backtest(&input, model.as_ref(), &store, |_, _| {}).await?;
//!     assert_eq!(result.points.len(), 120); // one tick per closed bar
//!     assert!(!result.trades.is_empty());
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod backtest;
pub mod replay;
pub mod write_behind;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use agent_runtime::{LanguageModel, RenderCache, TickOutput, Usage, rates_for};
use chrono::{DateTime, Utc};
use db::{
    DecisionSnapshot, FillTradeLink, JsonText, LedgerStore, NewNote, NoteStore, ReflectionRun,
    RunOutcome, TickOutcome as StoreOutcome, TickRecord, TickStore,
};
use execution_engine::{BrokerError, Order, OrderTag, PaperBroker, RiskState, validate};
use memory_ledger::{FillLeg, LedgerChanges, LedgerState, ProposalInfo, Proposals, TickInput};
use reflection::{
    Due, LastNote, NoteDraft, ReflectionInput, ReflectionOutcome, Reflector, reflect,
    reflection_due, to_lessons, visible_note_at,
};
use rust_decimal::Decimal;
use serde::Serialize;
use skill_schema::Skill;
use tools::{
    DataError, LastDecisionSnapshot, MemorySections, OpenOrder, PortfolioView, ToolContext,
    to_last_decision_snapshot,
};
use types::{
    Bar, Fill, PortfolioSnapshot, ProposedAction, RegimeTag, RuleCode, TradeRecord, TradeStatus,
    Verdict, classify_regime,
};
use uuid::Uuid;

/// The namespace of every id this crate derives (UUID v5 of `tick-ids`).
pub const ID_NAMESPACE: Uuid = Uuid::from_u128(0x6f1c_2a4e_9b3d_4e57_8a21_5c0d_e7f4_1b92);

/// Bars fetched per symbol for the ledger's MFE/MAE when the caller never ticked before.
const MAX_BARS_SINCE_LAST_TICK: usize = 10_000;

/// The deployment a tick belongs to.
#[derive(Clone)]
pub struct Deployment {
    pub user_id: Uuid,
    pub deployment_id: Uuid,
    pub skill_id: Uuid,
    pub skill_version: i32,
    pub skill: Arc<Skill>,
    /// Who writes the reflection notes (`context.memory.reflection.model` resolved by the
    /// caller). An `Err` (unknown model, missing key) is recorded as a failed run when a
    /// reflection is due; it never stops a tick.
    pub reflector: Result<Reflector, String>,
}

impl std::fmt::Debug for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deployment")
            .field("deployment_id", &self.deployment_id)
            .field("skill_id", &self.skill_id)
            .field("skill_version", &self.skill_version)
            .finish_non_exhaustive()
    }
}

/// The broker refused an order the engine passed (fees and slippage on top of the engine's
/// margin check, an exchange rejection, ...). The tick records it as a rejection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BrokerRefusal {
    /// The rule code the rejection is recorded under.
    pub rule: RuleCode,
    pub message: String,
}

/// The broker's account could not be read: the tick cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("broker unavailable: {0}")]
pub struct BrokerUnavailable(pub String);

/// Why [`Broker::execute`] did not fill an order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecuteError {
    /// The broker refused it: the tick records a rejection.
    #[error(transparent)]
    Refused(#[from] BrokerRefusal),
    /// The broker could not be reached or did not answer clearly: the order may or may not have
    /// been placed, so the tick fails without recording anything and is retried (a retried tick
    /// sends the same client order id, which the broker must recognise).
    #[error(transparent)]
    Unavailable(#[from] BrokerUnavailable),
}

/// Where orders go: the paper broker in a backtest, an exchange live.
///
/// The tick reads the account through it, sends the engine's order at a price (the mark; the
/// broker applies its own slippage and fees) and collects every fill made since the last call
/// (its own and the ones it caused itself, such as liquidations).
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait Broker: Send {
    /// The broker-authoritative account at `at`.
    ///
    /// # Errors
    /// [`BrokerUnavailable`] when the account cannot be read.
    fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<PortfolioSnapshot, BrokerUnavailable>> + Send;

    /// Executes `order` as a market order at `price` (the mark).
    ///
    /// # Errors
    /// [`ExecuteError::Refused`] when the broker refuses it (nothing changed then);
    /// [`ExecuteError::Unavailable`] when it cannot tell whether the order was placed.
    fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> impl Future<Output = Result<Fill, ExecuteError>> + Send;

    /// Every fill made since the last call, in the order they happened.
    ///
    /// # Errors
    /// [`BrokerUnavailable`] when the fills cannot be read.
    fn drain_fills(&mut self) -> impl Future<Output = Result<Vec<Fill>, BrokerUnavailable>> + Send;
}

impl Broker for PaperBroker {
    fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<PortfolioSnapshot, BrokerUnavailable>> + Send {
        std::future::ready(Ok(self.snapshot(at)))
    }

    fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> impl Future<Output = Result<Fill, ExecuteError>> + Send {
        let result = PaperBroker::execute(self, order, price, at, tag).map_err(|e| {
            let rule = match e {
                BrokerError::InsufficientMargin { .. } => RuleCode::InsufficientMargin,
                _ => RuleCode::InvalidOrder,
            };
            ExecuteError::Refused(BrokerRefusal {
                rule,
                message: format!("the paper broker refused the order: {e}"),
            })
        });
        std::future::ready(result)
    }

    fn drain_fills(&mut self) -> impl Future<Output = Result<Vec<Fill>, BrokerUnavailable>> + Send {
        std::future::ready(Ok(PaperBroker::drain_fills(self)))
    }
}

/// What the caller carries from one tick to the next (in memory in a backtest; rebuilt from the
/// store by a live runner after a restart).
#[derive(Debug, Clone)]
pub struct TickState {
    /// Peak equity, the day's starting equity, recent order times.
    pub risk: RiskState,
    /// The materializer's open rows and applied fill ids.
    pub ledger: LedgerState,
    /// Every ledger row of the deployment, in the order they were first written. Shared with the
    /// tick's memory sections (`Arc`), so a tick does not copy the ledger.
    pub trades: Arc<Vec<TradeRecord>>,
    /// What the next tick shows under "Last decision".
    pub last_decision: Option<LastDecisionSnapshot>,
    /// The notes a later tick can still inject: the note in force (at most one — the latest
    /// injectable note; older and flagged ones are dropped, the store keeps the history), see
    /// [`visible_note_at`].
    pub notes: Vec<NoteDraft>,
    /// The cadence's view of the latest note (flagged or not).
    pub last_note: Option<LastNote>,
    /// When the latest failed reflection ran (the cadence backs off after it).
    pub last_reflection_failure: Option<DateTime<Utc>>,
    /// The previous tick's time (bars closed after it feed MFE/MAE this tick).
    pub last_tick_at: Option<DateTime<Utc>>,
    /// What the previous tick rendered and this one can reuse (bar rows, system prompt). Only
    /// saves work: a fresh cache renders the same bytes.
    pub render: RenderCache,
    /// The "Recent trades" body as last rendered: (k, as of, text). Cleared when a closed row
    /// changes.
    recent_trades: Option<(u32, DateTime<Utc>, Arc<str>)>,
}

impl TickState {
    /// The state of a deployment that has never ticked: flat ledger, risk tracking from
    /// `equity` at `at`.
    #[must_use]
    pub fn new(deployment: &Deployment, equity: Decimal, at: DateTime<Utc>) -> Self {
        TickState {
            risk: RiskState::new(equity, at),
            ledger: LedgerState::new(memory_ledger::LedgerScope {
                deployment_id: deployment.deployment_id,
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
            }),
            trades: Arc::new(Vec::new()),
            last_decision: None,
            notes: Vec::new(),
            last_note: None,
            last_reflection_failure: None,
            last_tick_at: None,
            render: RenderCache::default(),
            recent_trades: None,
        }
    }

    /// Closed rows of the ledger.
    #[must_use]
    pub fn closed_trades(&self) -> usize {
        self.trades
            .iter()
            .filter(|t| t.status == TradeStatus::Closed)
            .count()
    }

    /// Replaces the ledger rows (a restarted runner reads them from the store).
    pub fn set_trades(&mut self, trades: Vec<TradeRecord>) {
        self.trades = Arc::new(trades);
        self.recent_trades = None;
    }

    fn upsert_rows(&mut self, changes: &LedgerChanges) {
        if changes.rows.is_empty() {
            return;
        }
        // No copy: the previous tick's memory view has been dropped by now.
        let trades = Arc::make_mut(&mut self.trades);
        for w in &changes.rows {
            if w.row.status == TradeStatus::Closed {
                self.recent_trades = None;
            }
            // From the end: the rows a tick writes are the latest ones.
            if let Some(existing) = trades.iter_mut().rev().find(|t| t.id == w.row.id) {
                *existing = w.row.clone();
            } else {
                trades.push(w.row.clone());
            }
        }
    }

    /// The "Recent trades" body for `k` as of `now`, rendered again only when a closed row
    /// changed (rows closed at or before an earlier `as_of` stay in it as time moves on).
    fn recent_trades_text(&mut self, k: u32, now: DateTime<Utc>) -> Arc<str> {
        match &self.recent_trades {
            Some((memo_k, as_of, text)) if *memo_k == k && *as_of <= now => Arc::clone(text),
            _ => {
                let text: Arc<str> =
                    memory_ledger::render_recent_trades(&self.trades, k as usize, now).into();
                self.recent_trades = Some((k, now, Arc::clone(&text)));
                text
            }
        }
    }
}

/// Why a [`TickState`] could not be restored from a store.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error("reading the store: {0}")]
    Store(#[from] db::DbError),
    #[error("the stored ledger: {0}")]
    Ledger(#[from] memory_ledger::LedgerError),
}

/// Rebuilds the state a deployment carries between ticks from what its store recorded, for a
/// runner that restarts (or a tick run on another process): the ledger (open rows and applied
/// fill ids, [`LedgerState::rebuild`]), every ledger row, the last decision (the latest snapshot
/// before `at`) and the reflection side ([`load_reflection_state`]).
///
/// The engine's [`RiskState`] is not in the store's tables: it starts from `equity` at `at` (the
/// peak is the current equity, the order-rate window is refilled from the executed snapshots of
/// the last hour). A runner that must keep its drawdown peak across restarts commits `state.risk`
/// (serializable) with each tick ([`run_tick_carrying`]).
///
/// # Errors
/// [`RestoreError`] when the store cannot be read or its open rows are inconsistent.
pub async fn restore_state<S>(
    store: &S,
    deployment: &Deployment,
    equity: Decimal,
    at: DateTime<Utc>,
) -> Result<TickState, RestoreError>
where
    S: TickStore + LedgerStore + NoteStore,
{
    restore_state_carried(store, deployment, equity, at, None).await
}

/// The parts of a [`TickState`] the store's tables do not hold, which a runner commits with each
/// tick ([`run_tick_carrying`]): the engine's risk state, the last decision, the last tick's time.
#[derive(Debug, Clone)]
pub struct Carried {
    pub risk: RiskState,
    pub last_decision: Option<LastDecisionSnapshot>,
    pub last_tick_at: Option<DateTime<Utc>>,
}

/// [`restore_state`] for a runner that committed [`Carried`] with its last tick: with
/// `Some(carried)` the risk state, last decision and last tick time are `carried`'s (and the
/// snapshots are not read); with `None`, exactly [`restore_state`].
///
/// # Errors
/// As [`restore_state`].
pub async fn restore_state_carried<S>(
    store: &S,
    deployment: &Deployment,
    equity: Decimal,
    at: DateTime<Utc>,
    carried: Option<Carried>,
) -> Result<TickState, RestoreError>
where
    S: TickStore + LedgerStore + NoteStore,
{
    let d = deployment.deployment_id;
    let scope = memory_ledger::LedgerScope {
        deployment_id: d,
        skill_id: deployment.skill_id,
        skill_version: deployment.skill_version,
    };
    let ledger = LedgerState::rebuild(
        scope,
        store.open_trades(d).await?,
        store.applied_fill_ids(d).await?,
    )?;
    let mut state = TickState::new(deployment, equity, at);
    state.ledger = ledger;
    state.set_trades(store.all_trades(d).await?);
    if let Some(carried) = carried {
        state.risk = carried.risk;
        state.last_decision = carried.last_decision;
        state.last_tick_at = carried.last_tick_at;
        load_reflection_state(store, d, &mut state, at).await?;
        return Ok(state);
    }
    // The newest snapshots; the last decision is the latest at or before `at`.
    let recent = store.list_snapshots(d, 64).await?;
    if let Some(snap) = recent
        .iter()
        .filter(|s| s.tick_at <= at)
        .max_by_key(|s| s.tick_at)
    {
        state.last_decision = Some(to_last_decision_snapshot(
            snap.proposal.as_ref(),
            &snap.verdict,
            snap.tick_at,
        ));
        state.last_tick_at = Some(snap.tick_at);
    }
    let mut executed: Vec<DateTime<Utc>> = recent
        .iter()
        .filter(|s| matches!(s.verdict, Verdict::Executed { .. }))
        .map(|s| s.tick_at)
        .filter(|t| *t <= at && *t > at - chrono::Duration::hours(1))
        .collect();
    executed.sort_unstable();
    for t in executed {
        state.risk.record_order(t);
    }
    load_reflection_state(store, d, &mut state, at).await?;
    Ok(state)
}

/// Reads the reflection side of a deployment's [`TickState`] from the store, as of `at`:
/// - `notes`: the note in force at `at` (`NoteStore::active_note`: never a note pending review;
///   an accepted one from its acceptance);
/// - `last_note`: the latest note generated at or before `at`, flagged or not, with the number
///   of ledger rows closed at or before its time (`LedgerStore::count_closed_trades`);
/// - `last_reflection_failure`: the latest run, when it failed.
///
/// A live runner calls it before every tick: reflections run off the tick path (and may finish
/// on another process), so the store, not the carried state, is their source of truth — and an
/// unfinished one (the runner died) leaves nothing, so the cadence finds it due again.
///
/// # Errors
/// [`db::DbError`] when the store cannot be read.
pub async fn load_reflection_state<S>(
    store: &S,
    deployment_id: Uuid,
    state: &mut TickState,
    at: DateTime<Utc>,
) -> Result<(), db::DbError>
where
    S: LedgerStore + NoteStore + Sync,
{
    let scope = db::NoteScope::Deployment(deployment_id);
    state.notes = store
        .active_note(scope, at)
        .await?
        .map(|n| draft_of(&n))
        .into_iter()
        .collect();
    // The newest note is the one a live tick needs; a restore at an earlier time reads further.
    let mut latest = store.note_history(scope, 1).await?;
    if latest.first().is_some_and(|n| n.generated_at > at) {
        latest = store.note_history(scope, 10_000).await?;
    }
    state.last_note = match latest.iter().find(|n| n.generated_at <= at) {
        Some(n) => {
            let closed = store
                .count_closed_trades(deployment_id, n.generated_at)
                .await?;
            Some(LastNote {
                generated_at: n.generated_at,
                window_end: n.window_end,
                closed_trades_total: Some(u32::try_from(closed).unwrap_or(u32::MAX)),
            })
        }
        None => None,
    };
    state.last_reflection_failure = store
        .reflection_runs(scope, 1)
        .await?
        .into_iter()
        .find(|r| matches!(r.outcome, RunOutcome::Failed { .. }) && r.started_at <= at)
        .map(|r| r.started_at);
    Ok(())
}

/// A stored note as the draft the tick injects.
fn draft_of(n: &types::ReflectionNote) -> NoteDraft {
    NoteDraft {
        skill_id: n.skill_id,
        skill_version: u32::try_from(n.skill_version).unwrap_or(0),
        deployment_id: n.deployment_id,
        generated_at: n.generated_at,
        window_start: n.window_start,
        window_end: n.window_end,
        trades_considered: u32::try_from(n.trades_considered).unwrap_or(0),
        lessons_text: n.lessons_text.clone(),
        model_used: n.model_used.clone(),
        input_tokens: n
            .input_tokens
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0),
        output_tokens: n
            .output_tokens
            .and_then(|v| u64::try_from(v).ok())
            .unwrap_or(0),
        cost_usd: n.cost_usd,
        cut: false,
        lint: reflection::LintResult {
            // A flagged note a person accepted is in force; one pending review is not.
            flagged: n.status == types::NoteStatus::PendingReview,
            reasons: n.lint.iter().map(|l| l.reason.clone()).collect(),
        },
    }
}

/// What a reflection did ([`run_due_reflection`], [`store_reflection`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReflectionReport {
    /// Not due (or off).
    NotDue,
    /// A reflection of this tick (or a later one) is already stored: nothing ran (a redo after a
    /// restart, or a re-run of a recorded tick).
    AlreadyDone,
    /// A note was written and stored. A `flagged` one is stored as pending review: out of the
    /// store's active slot and out of every prompt until a person accepts it.
    Note {
        id: Uuid,
        flagged: bool,
        chars: usize,
    },
    /// The run failed; the previous note stays in force.
    Failed { reason: String },
    /// The run produced an outcome but the store refused it (the tick itself was recorded).
    StoreError { message: String },
}

/// What one tick did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickOutcome {
    pub tick_at: DateTime<Utc>,
    pub snapshot_id: Uuid,
    /// False when the store already held this tick (nothing was written again).
    pub recorded: bool,
    pub proposal: Option<ProposedAction>,
    pub verdict: Verdict,
    pub usage: Usage,
    pub cost_usd: Decimal,
    /// Fills applied to the ledger this tick (liquidations included).
    pub fills: Vec<Fill>,
    /// Ledger rows inserted or updated this tick.
    pub trades: Vec<TradeRecord>,
    /// Broker equity after the tick.
    pub equity_usd: Decimal,
    /// Gross notional of the open positions after the tick, at their marks.
    pub exposure_usd: Decimal,
    pub last_decision: LastDecisionSnapshot,
    /// The reflection cadence after the tick. A due reflection has not run yet: the caller runs
    /// it with [`run_due_reflection`] (off the tick path).
    pub reflection: ReflectionCheck,
}

/// What the reflection cadence said after a tick.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReflectionCheck {
    /// Not due (or off, or backing off after a failure).
    NotDue,
    /// Due: run it with [`run_due_reflection`].
    Due(DueReflection),
    /// The skill's reflection settings are invalid: nothing runs (counted as a failure).
    Invalid { reason: String },
}

/// A reflection the cadence found due at a tick, with what it reads as of that tick, so it can
/// run later (on a worker) and still see exactly what the tick saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DueReflection {
    /// The tick time: the reflection's `now`, its note's `generated_at`, the seed of its ids.
    pub at: DateTime<Utc>,
    /// The deployment's ledger rows after the tick (shared with the tick's state, not copied).
    #[serde(skip)]
    pub trades: Arc<Vec<TradeRecord>>,
    /// The cadence's view of the previous note.
    pub last: Option<LastNote>,
    /// Closed ledger rows after the tick (kept with the new note for the cadence).
    pub closed_total: u32,
}

/// What [`run_due_reflection`] did, and how the caller's [`TickState`] moves on
/// ([`ReflectionDone::apply`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectionDone {
    pub at: DateTime<Utc>,
    pub report: ReflectionReport,
    /// The note the reflection wrote (also when the store then refused it).
    pub note: Option<NoteDraft>,
    closed_total: u32,
    ran: bool,
}

impl ReflectionDone {
    /// Moves `state` on as the reflection did: a note becomes the cadence's last note (and the
    /// note in force when it is injectable); a failed run starts the cadence's back-off. A
    /// reflection that did not run (already done, store unreadable) changes nothing.
    pub fn apply(&self, state: &mut TickState) {
        if !self.ran {
            return;
        }
        match &self.note {
            Some(note) => {
                state.last_note = Some(note.as_last_note(Some(self.closed_total)));
                if note.injectable() {
                    state.notes = vec![note.clone()];
                }
            }
            None => state.last_reflection_failure = Some(self.at),
        }
    }
}

/// Why a tick could not run or could not be recorded. Nothing is persisted for a failed tick,
/// but the broker may already have filled (see [`TickError::Record`]).
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    #[error(transparent)]
    Broker(#[from] BrokerUnavailable),
    #[error("market data for {symbol}: {source}")]
    Market {
        symbol: String,
        #[source]
        source: DataError,
    },
    #[error(transparent)]
    Runtime(#[from] agent_runtime::TickError),
    #[error("ledger: {0}")]
    Ledger(#[from] memory_ledger::LedgerError),
    #[error("recording the tick: {0}")]
    Record(#[source] db::DbError),
    #[error("serializing the runner state to record with the tick: {0}")]
    CarryState(#[source] serde_json::Error),
    #[error("serializing the model loop's steps to record with the tick: {0}")]
    Steps(#[source] serde_json::Error),
}

/// The decision snapshot id of the tick at `at`: UUID v5 over the deployment and the time.
#[must_use]
pub fn snapshot_id(deployment_id: Uuid, at: DateTime<Utc>) -> Uuid {
    derive_id(deployment_id, "snapshot", at)
}

/// The id of the note a reflection at `at` writes.
#[must_use]
pub fn note_id(deployment_id: Uuid, at: DateTime<Utc>) -> Uuid {
    derive_id(deployment_id, "note", at)
}

/// The id of the reflection run at `at`.
#[must_use]
pub fn run_id(deployment_id: Uuid, at: DateTime<Utc>) -> Uuid {
    derive_id(deployment_id, "reflection-run", at)
}

fn derive_id(deployment_id: Uuid, kind: &str, at: DateTime<Utc>) -> Uuid {
    // `{deployment_id}\n{kind}\n{at as RFC 3339 with nanoseconds and Z}`, written in place.
    let mut name = String::with_capacity(80);
    name.push_str(
        deployment_id
            .hyphenated()
            .encode_lower(&mut Uuid::encode_buffer()),
    );
    name.push('\n');
    name.push_str(kind);
    name.push('\n');
    push_rfc3339_nanos(&mut name, at);
    Uuid::new_v5(&ID_NAMESPACE, name.as_bytes())
}

/// `at.to_rfc3339_opts(SecondsFormat::Nanos, true)`, written into `out` (chrono itself for what
/// it prints differently: years outside 0..=9999 and leap seconds).
fn push_rfc3339_nanos(out: &mut String, at: DateTime<Utc>) {
    use chrono::{Datelike, Timelike};
    let year = at.year();
    let nanos = at.nanosecond();
    if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
        out.push_str(&at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
        return;
    }
    let mut buf = *b"0000-00-00T00:00:00.000000000Z";
    let mut put = |at: usize, width: usize, mut v: u32| {
        for i in (at..at + width).rev() {
            buf[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year.unsigned_abs());
    put(5, 2, at.month());
    put(8, 2, at.day());
    put(11, 2, at.hour());
    put(14, 2, at.minute());
    put(17, 2, at.second());
    put(20, 9, nanos);
    out.extend(buf.iter().map(|&b| char::from(b)));
}

/// The account as the broker reported it this tick.
struct SnapshotView(PortfolioSnapshot);

impl PortfolioView for SnapshotView {
    fn portfolio(&self) -> Result<PortfolioSnapshot, DataError> {
        Ok(self.0.clone())
    }

    fn open_orders(&self) -> Result<Vec<OpenOrder>, DataError> {
        // Market orders only: nothing rests on the book between ticks.
        Ok(Vec::new())
    }
}

/// The two memory sections, rendered from the ledger rows as of the asked time.
struct LedgerMemory {
    rows: Arc<Vec<TradeRecord>>,
    marks: BTreeMap<String, Decimal>,
    /// The recent-trades body the tick will ask for: (k, as of, text), from the state's memo.
    recent: Option<(u32, DateTime<Utc>, Arc<str>)>,
}

impl MemorySections for LedgerMemory {
    fn recent_trades(&self, k: u32, as_of: DateTime<Utc>) -> Result<String, DataError> {
        if let Some((memo_k, memo_at, text)) = &self.recent
            && *memo_k == k
            && *memo_at == as_of
        {
            return Ok(text.to_string());
        }
        Ok(memory_ledger::render_recent_trades(
            &self.rows, k as usize, as_of,
        ))
    }

    fn open_positions(&self, as_of: DateTime<Utc>) -> Result<String, DataError> {
        Ok(memory_ledger::render_open_positions(
            &self.rows,
            &self.marks,
            as_of,
        ))
    }
}

/// Runs one tick at `ctx.now`. See the crate docs for the steps.
///
/// `ctx` supplies the market data, news, events and derivatives of the tick; its `portfolio`
/// and `memory` sources are replaced by the broker's snapshot and the ledger in `state`.
///
/// # Errors
/// [`TickError`] when the broker account or the market data cannot be read, the context cannot
/// be assembled (the model is not called then), the ledger refuses the fills, the model loop's
/// steps cannot be serialised ([`TickError::Steps`]), or the store cannot record the tick.
/// Reflection is not run here (see [`ReflectionCheck`]).
pub async fn run_tick<B, S>(
    deployment: &Deployment,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    broker: &mut B,
    state: &mut TickState,
    store: &S,
) -> Result<TickOutcome, TickError>
where
    B: Broker,
    S: TickStore,
{
    run_tick_carrying(deployment, ctx, model, broker, state, store, None).await
}

/// The caller's own state after a tick, serialized (see [`run_tick_carrying`]).
pub type CarryState<'a, B> =
    &'a (dyn Fn(&B, &TickState) -> Result<serde_json::Value, serde_json::Error> + Sync);

/// [`run_tick`], committing the caller's own state with the tick: `carry` is called once, after
/// the broker and the ledger, with the broker and the state after the tick (its last decision
/// and tick time already this tick's), and its value is written by `record_tick` in the tick's
/// transaction ([`db::TickRecord::runner_state`]) — so a process that dies at any point either
/// has both the tick and the state after it stored, or neither. When the store already held the
/// tick (`recorded: false`) the stored state is left as it was.
///
/// # Errors
/// As [`run_tick`]; [`TickError::CarryState`] when `carry` fails; [`TickError::Record`] with
/// [`db::DbError::StaleState`] when the stored state is of this or a later tick (another runner
/// moved the deployment on: nothing was written).
pub async fn run_tick_carrying<B, S>(
    deployment: &Deployment,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    broker: &mut B,
    state: &mut TickState,
    store: &S,
    carry: Option<CarryState<'_, B>>,
) -> Result<TickOutcome, TickError>
where
    B: Broker,
    S: TickStore,
{
    let now = ctx.now;
    let skill = deployment.skill.as_ref();
    let interval = skill.context.bars_interval;

    // 1. the broker-authoritative account
    let portfolio = checked_account(broker.portfolio(now).await?)?;
    state.risk.observe_equity(portfolio.equity_usd, now);

    // Marks, regimes and the bars closed since the last tick, per symbol.
    let lookback = (skill.context.bars_lookback as usize).max(1);
    let mut marks: BTreeMap<String, Decimal> = BTreeMap::new();
    let mut regimes: BTreeMap<String, RegimeTag> = BTreeMap::new();
    let mut new_bars: BTreeMap<String, Vec<Bar>> = BTreeMap::new();
    for symbol in &ctx.symbols {
        let market_err = |source| TickError::Market {
            symbol: symbol.clone(),
            source,
        };
        // Borrowed from an in-memory source (a backtest's bars): nothing copied per tick.
        let bars = agent_runtime::context::closed_bars_window(ctx, symbol, interval, lookback)
            .map_err(market_err)?
            .bars;
        if let Some(last) = bars.last() {
            marks.insert(symbol.clone(), last.close);
            regimes.insert(symbol.clone(), classify_regime(&bars));
        }
        let since: Vec<Bar> = match state.last_tick_at {
            Some(last_tick) => {
                let span = (now - last_tick).num_minutes() / interval.minutes().max(1);
                let limit = usize::try_from(span.max(0))
                    .unwrap_or(MAX_BARS_SINCE_LAST_TICK)
                    .saturating_add(1)
                    .min(MAX_BARS_SINCE_LAST_TICK);
                let recent: Vec<Bar>;
                let latest = if limit <= bars.len() {
                    // The latest `limit` closed bars are the tail of the lookback already read.
                    &bars[bars.len() - limit..]
                } else {
                    recent = agent_runtime::context::closed_bars(ctx, symbol, interval, limit)
                        .map_err(market_err)?;
                    &recent
                };
                latest
                    .iter()
                    .filter(|b| b.close_time(interval) > last_tick)
                    .cloned()
                    .collect()
            }
            None => bars.last().cloned().into_iter().collect(),
        };
        new_bars.insert(symbol.clone(), since);
    }
    // Positions on symbols the skill no longer lists keep the broker's mark.
    for p in &portfolio.positions {
        marks.entry(p.symbol.clone()).or_insert(p.mark_price);
    }

    // The ledger catches up before the agent reads it: fills the broker made since the last tick
    // on its own (liquidations when the new bars were applied), its positions now, and the bars
    // closed since the last tick (MFE/MAE).
    let mut fills = broker.drain_fills().await?;
    let no_proposals = Proposals::new();
    let mut changes = state.ledger.apply_tick(TickInput {
        at: now,
        positions: &portfolio.positions,
        fills: &fills,
        bars: &new_bars,
        bar_interval: interval,
        proposals: &no_proposals,
        regimes: &regimes,
    })?;
    state.upsert_rows(&changes);

    // 2. + 3. context, system prompt (point-in-time lessons), model loop
    // The body assemble_context will ask for, when the memory dial is on.
    let memory = &skill.context.memory;
    let recent = memory.enabled.then(|| {
        let k = memory.recent_trades_k.min(types::MAX_MEMORY_K);
        (k, now, state.recent_trades_text(k, now))
    });
    // Typed handles on the context's portfolio and memory: once the context is dropped, the
    // account and the marks come back out of them without a copy.
    let view = Arc::new(SnapshotView(portfolio));
    let memory_view = Arc::new(LedgerMemory {
        rows: Arc::clone(&state.trades),
        marks,
        recent,
    });
    let tick_ctx = ToolContext {
        portfolio: Arc::clone(&view) as Arc<dyn PortfolioView>,
        memory: Arc::clone(&memory_view) as Arc<dyn MemorySections>,
        ..ctx.clone()
    };
    let lessons = visible_note_at(&state.notes, now).map(to_lessons);
    let TickOutput {
        system_prompt,
        context,
        run,
    } = agent_runtime::run_tick(
        skill,
        &tick_ctx,
        model,
        lessons.as_ref(),
        state.last_decision.as_ref(),
        &mut state.render,
    )
    .await?;
    // Releases the ledger rows it shares with `state.trades`.
    drop(tick_ctx);
    let portfolio = Arc::try_unwrap(view).map_or_else(|view| view.0.clone(), |view| view.0);
    let marks = Arc::try_unwrap(memory_view).map_or_else(|m| m.marks.clone(), |m| m.marks);

    // 4. the engine's verdict, then the broker
    let snapshot_id = snapshot_id(deployment.deployment_id, now);
    let proposal = run.proposed_action;
    let account = state.risk.account_view(portfolio, marks);
    let decision = validate(proposal.as_ref(), &skill.risk, &account, &ctx.symbols, now);
    let mut verdict = decision.verdict;
    if let Some(order) = &decision.order {
        let price = account
            .marks
            .get(&order.symbol)
            .copied()
            .unwrap_or(order.reference_price);
        let tag = OrderTag {
            snapshot_id: Some(snapshot_id),
            client_order_id: Some(snapshot_id.to_string()),
        };
        match broker.execute(order, price, now, tag).await {
            Ok(_) => state.risk.record_order(now),
            Err(ExecuteError::Refused(refusal)) => {
                verdict = Verdict::Rejected {
                    rule: refusal.rule,
                    detail: tools::one_line(&refusal.message),
                };
            }
            Err(ExecuteError::Unavailable(e)) => return Err(e.into()),
        }
    }

    // 5. the ledger: this tick's fills and the positions after them
    let tick_fills = broker.drain_fills().await?;
    let after = checked_account(broker.portfolio(now).await?)?;
    let mut proposals = Proposals::new();
    if let Some(p) = &proposal {
        proposals.insert(snapshot_id, ProposalInfo::from(p));
    }
    let post = state.ledger.apply_tick(TickInput {
        at: now,
        positions: &after.positions,
        fills: &tick_fills,
        bars: &BTreeMap::new(),
        bar_interval: interval,
        proposals: &proposals,
        regimes: &regimes,
    })?;
    state.upsert_rows(&post);
    merge_changes(&mut changes, post);
    fills.extend(tick_fills);

    // 6. persist atomically
    let usage = run.usage;
    let snapshot = DecisionSnapshot {
        id: snapshot_id,
        deployment_id: deployment.deployment_id,
        tick_at: now,
        system_prompt,
        context: context.text,
        steps: JsonText::new(&run.steps).map_err(TickError::Steps)?,
        proposal: proposal.clone(),
        verdict: verdict.clone(),
        model: model.id().to_owned(),
        finish_reason: Some(run.finish_reason.as_str().to_owned()),
        usage,
        cost_usd: run.cost_usd,
    };
    let last_decision = to_last_decision_snapshot(proposal.as_ref(), &verdict, now);
    state.last_decision = Some(last_decision.clone());
    state.last_tick_at = Some(now);
    let runner_state = carry
        .map(|carry| carry(broker, state))
        .transpose()
        .map_err(TickError::CarryState)?;
    let links = fill_links(&changes);
    let record = TickRecord {
        snapshot,
        fills,
        trades: changes.rows.into_iter().map(|w| w.row).collect(),
        links,
        equity_usd: Some(after.equity_usd),
        runner_state,
    };
    // The outcome reports the fills and rows; the record itself (its snapshot is most of the
    // bytes) goes to the store by value.
    let (outcome_fills, outcome_trades) = (record.fills.clone(), record.trades.clone());
    let recorded = match store.record_tick_owned(record).await {
        Ok(StoreOutcome::Recorded { .. }) => true,
        Ok(StoreOutcome::AlreadyRecorded { .. }) => false,
        Err(e) => return Err(TickError::Record(e)),
    };

    // 7. the reflection cadence; a due reflection runs off the tick path
    let reflection = check_reflection(deployment, state, now);

    let exposure_usd = after
        .positions
        .iter()
        .map(|p| (p.qty * p.mark_price).abs())
        .sum::<Decimal>();
    Ok(TickOutcome {
        tick_at: now,
        snapshot_id,
        recorded,
        proposal,
        verdict,
        usage,
        cost_usd: run.cost_usd,
        fills: outcome_fills,
        trades: outcome_trades,
        equity_usd: after.equity_usd,
        exposure_usd,
        last_decision,
        reflection,
    })
}

/// The account as read, or [`BrokerUnavailable`] when its numbers are out of range (sizes ×
/// prices or equity that overflow): the tick stops before recording anything instead of
/// panicking on them later (exposure, sizing, the Portfolio section).
fn checked_account(account: PortfolioSnapshot) -> Result<PortfolioSnapshot, BrokerUnavailable> {
    tools::check_portfolio(&account)
        .map(|()| account)
        .map_err(|e| BrokerUnavailable(format!("the broker's account: {e}")))
}

/// `later` on top of `earlier`: a row written twice keeps its first position and its latest
/// content; links are appended.
fn merge_changes(earlier: &mut LedgerChanges, later: LedgerChanges) {
    for w in later.rows {
        if let Some(existing) = earlier.rows.iter_mut().find(|e| e.row.id == w.row.id) {
            existing.inserted |= w.inserted;
            existing.row = w.row;
        } else {
            earlier.rows.push(w);
        }
    }
    earlier.fill_links.extend(later.fill_links);
}

/// The store's fill → row links: the row a fill applied to (for a flip: the row it closed) and
/// the row a flip's opening leg started.
fn fill_links(changes: &LedgerChanges) -> Vec<FillTradeLink> {
    let mut links: Vec<FillTradeLink> = Vec::new();
    for l in &changes.fill_links {
        if let Some(existing) = links.iter_mut().find(|x| x.broker_fill_id == l.fill_id) {
            match l.leg {
                FillLeg::Open => existing.flip_trade_id = Some(l.trade_id),
                FillLeg::Close => {
                    existing.flip_trade_id = Some(existing.trade_id);
                    existing.trade_id = l.trade_id;
                }
            }
        } else {
            links.push(FillTradeLink {
                broker_fill_id: l.fill_id.clone(),
                trade_id: l.trade_id,
                flip_trade_id: None,
            });
        }
    }
    links
}

/// The cadence decision after a tick: pure, no store, no model.
fn check_reflection(
    deployment: &Deployment,
    state: &TickState,
    now: DateTime<Utc>,
) -> ReflectionCheck {
    match reflection_due(
        &deployment.skill.context.memory,
        &state.trades,
        state.last_note.as_ref(),
        state.last_reflection_failure,
        now,
    ) {
        Ok(Due::Yes(_)) => ReflectionCheck::Due(DueReflection {
            at: now,
            trades: Arc::clone(&state.trades),
            last: state.last_note,
            closed_total: u32::try_from(state.closed_trades()).unwrap_or(u32::MAX),
        }),
        Ok(Due::No(_)) => ReflectionCheck::NotDue,
        Err(e) => ReflectionCheck::Invalid {
            reason: e.to_string(),
        },
    }
}

/// Runs a reflection the cadence found due ([`ReflectionCheck::Due`]) and stores its outcome
/// ([`store_reflection`]): the one function the backtest (right after the tick) and the live
/// runner (on its reflection worker) both call. Never fails: a model failure or an unavailable
/// reflection model is recorded as a failed run; a store refusal is reported.
///
/// Idempotent: when the store already holds a reflection run or a note of `due.at` or later (a
/// redo after a restart, or a re-run of a recorded tick), nothing runs
/// ([`ReflectionReport::AlreadyDone`]). Apply the result to the caller's state with
/// [`ReflectionDone::apply`].
pub async fn run_due_reflection<S>(
    deployment: &Deployment,
    due: &DueReflection,
    store: &S,
) -> ReflectionDone
where
    S: NoteStore + Sync,
{
    let now = due.at;
    let skipped = |report| ReflectionDone {
        at: now,
        report,
        note: None,
        closed_total: due.closed_total,
        ran: false,
    };
    match already_reflected(store, deployment.deployment_id, now).await {
        Ok(true) => return skipped(ReflectionReport::AlreadyDone),
        Ok(false) => {}
        Err(e) => {
            return skipped(ReflectionReport::StoreError {
                message: e.to_string(),
            });
        }
    }
    let skill = deployment.skill.as_ref();
    let reflector = match &deployment.reflector {
        Ok(r) => r,
        Err(message) => {
            let reason = format!("reflection model unavailable: {message}");
            let run = ReflectionRun {
                id: run_id(deployment.deployment_id, now),
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
                deployment_id: Some(deployment.deployment_id),
                started_at: now,
                finished_at: now,
                outcome: RunOutcome::Failed {
                    error: reason.clone(),
                },
                model: skill.context.memory.reflection.model.clone(),
                input_tokens: None,
                output_tokens: None,
                cost_usd: None,
            };
            let report = match store.record_reflection_run(&run).await {
                Ok(()) => ReflectionReport::Failed { reason },
                Err(e) => ReflectionReport::StoreError {
                    message: e.to_string(),
                },
            };
            return ReflectionDone {
                ran: true,
                ..skipped(report)
            };
        }
    };
    let outcome = reflect(
        ReflectionInput {
            skill,
            skill_id: deployment.skill_id,
            deployment_id: Some(deployment.deployment_id),
            trades: &due.trades,
            last: due.last.as_ref(),
            now,
            rates: rates_for(reflector.id()),
        },
        reflector,
    )
    .await;
    let report = store_reflection(store, deployment, &outcome, now).await;
    ReflectionDone {
        at: now,
        report,
        note: match outcome {
            ReflectionOutcome::Note(note) => Some(note),
            ReflectionOutcome::Failed(_) => None,
        },
        closed_total: due.closed_total,
        ran: true,
    }
}

/// Whether the store holds a reflection run or a note of the deployment at `at` or later.
async fn already_reflected<S>(
    store: &S,
    deployment_id: Uuid,
    at: DateTime<Utc>,
) -> Result<bool, db::DbError>
where
    S: NoteStore + Sync,
{
    let scope = db::NoteScope::Deployment(deployment_id);
    if store
        .reflection_runs(scope, 1)
        .await?
        .first()
        .is_some_and(|r| r.started_at >= at)
    {
        return Ok(true);
    }
    Ok(store
        .note_history(scope, 1)
        .await?
        .first()
        .is_some_and(|n| n.generated_at >= at))
}

/// Persists a reflection's outcome: a note is inserted (a note the linter flagged is stored
/// with its flag as *pending review* — kept, never injected, the note in force unchanged — until
/// a person accepts it with `NoteStore::accept_note`), and every run, failed or not, is recorded
/// in `reflection_runs`. A failure never displaces the note in force.
///
/// Used by [`run_due_reflection`] and by `sim-worker reflect`.
pub async fn store_reflection<S>(
    store: &S,
    deployment: &Deployment,
    outcome: &ReflectionOutcome,
    now: DateTime<Utc>,
) -> ReflectionReport
where
    S: NoteStore + Sync,
{
    let run_base = |outcome: RunOutcome, model: &str| ReflectionRun {
        id: run_id(deployment.deployment_id, now),
        skill_id: deployment.skill_id,
        skill_version: deployment.skill_version,
        deployment_id: Some(deployment.deployment_id),
        started_at: now,
        finished_at: now,
        outcome,
        model: model.to_owned(),
        input_tokens: None,
        output_tokens: None,
        cost_usd: None,
    };
    match outcome {
        ReflectionOutcome::Note(note) => {
            let id = note_id(deployment.deployment_id, now);
            let flagged = note.lint.flagged;
            let chars = note.lessons_text.chars().count();
            let mut run = run_base(
                RunOutcome::Succeeded { note_id: Some(id) },
                &note.model_used,
            );
            run.input_tokens = i64::try_from(note.input_tokens).ok();
            run.output_tokens = i64::try_from(note.output_tokens).ok();
            run.cost_usd = note.cost_usd;
            let lint = flagged.then(|| types::NoteLint {
                reason: bounded_lint_reason(&note.lint.reasons),
            });
            let new = NewNote {
                id,
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
                deployment_id: Some(deployment.deployment_id),
                generated_at: note.generated_at,
                window_start: note.window_start,
                window_end: note.window_end,
                trades_considered: i32::try_from(note.trades_considered).unwrap_or(i32::MAX),
                lessons_text: note.lessons_text.clone(),
                model_used: note.model_used.clone(),
                input_tokens: run.input_tokens,
                output_tokens: run.output_tokens,
                cost_usd: note.cost_usd,
                lint,
            };
            if let Err(e) = store.insert_note(&new).await {
                return ReflectionReport::StoreError {
                    message: e.to_string(),
                };
            }
            if let Err(e) = store.record_reflection_run(&run).await {
                return ReflectionReport::StoreError {
                    message: e.to_string(),
                };
            }
            ReflectionReport::Note { id, flagged, chars }
        }
        ReflectionOutcome::Failed(failed) => {
            let reason = failed.reason.to_string();
            let mut run = run_base(
                RunOutcome::Failed {
                    error: reason.clone(),
                },
                &failed.model_used,
            );
            run.input_tokens = i64::try_from(failed.input_tokens).ok();
            run.output_tokens = i64::try_from(failed.output_tokens).ok();
            run.cost_usd = failed.cost_usd;
            match store.record_reflection_run(&run).await {
                Ok(()) => ReflectionReport::Failed { reason },
                Err(e) => ReflectionReport::StoreError {
                    message: e.to_string(),
                },
            }
        }
    }
}

/// The linter's reasons as one stored line, within the store's bound.
fn bounded_lint_reason(reasons: &[String]) -> String {
    let joined = reasons.join("; ");
    if joined.chars().count() <= types::MAX_LINT_REASON_CHARS {
        return joined;
    }
    let mut cut: String = joined
        .chars()
        .take(types::MAX_LINT_REASON_CHARS - 1)
        .collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;

    use super::*;

    /// The ids as first derived (through `format!` and chrono): [`derive_id`] must give the same.
    fn reference_id(deployment_id: Uuid, kind: &str, at: DateTime<Utc>) -> Uuid {
        let name = format!(
            "{deployment_id}\n{kind}\n{}",
            at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true)
        );
        Uuid::new_v5(&ID_NAMESPACE, name.as_bytes())
    }

    fn instant() -> impl Strategy<Value = DateTime<Utc>> {
        prop_oneof![
            // Any second and nanosecond from year 0 to 9999, and beyond on both sides.
            (-62_167_219_200i64..253_402_300_800, 0u32..1_000_000_000),
            (-100_000_000_000i64..100_000_000_000, 0u32..1_000_000_000),
            // Leap seconds.
            (0i64..4_000_000_000, 1_000_000_000u32..2_000_000_000)
                .prop_map(|(s, n)| (s - s.rem_euclid(60) + 59, n)),
        ]
        .prop_filter_map("representable", |(secs, nanos)| {
            DateTime::from_timestamp(secs, nanos)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn ids_are_derived_from_the_same_text(
            at in instant(),
            deployment in any::<u128>(),
            kind in prop::sample::select(vec!["snapshot", "note", "reflection-run"]),
        ) {
            let d = Uuid::from_u128(deployment);
            let mut text = String::new();
            push_rfc3339_nanos(&mut text, at);
            prop_assert_eq!(&text, &at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true));
            prop_assert_eq!(derive_id(d, kind, at), reference_id(d, kind, at));
        }
    }

    #[test]
    fn the_snapshot_id_of_a_known_tick_is_stable() {
        let d = Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        let at = Utc.with_ymd_and_hms(2017, 4, 19, 10, 0, 0).unwrap();
        assert_eq!(snapshot_id(d, at), reference_id(d, "snapshot", at));
        assert_eq!(note_id(d, at), reference_id(d, "note", at));
        assert_eq!(run_id(d, at), reference_id(d, "reflection-run", at));
    }
}
