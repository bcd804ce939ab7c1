//! The tick itself: [`run_tick`] and [`run_tick_carrying`] (see the crate docs for the steps).

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_runtime::{LanguageModel, SymbolBars, TickOutput, TickView, Usage};
use chrono::{DateTime, Utc};
use db::{
    DecisionSnapshot, FillTradeLink, JsonText, OutcomeWrites, RecordOutcome, TickRecord, TickStore,
};
use execution_engine::{OrderTag, validate};
use memory_ledger::{FillLeg, LedgerChanges, ProposalInfo, Proposals, TickInput};
use reflection::{to_lessons, visible_note_at};
use rust_decimal::Decimal;
use serde::Serialize;
use tools::{
    BarsWindow, DataError, LastDecisionSnapshot, OpenOrder, PortfolioView, ToolContext,
    to_last_decision_snapshot,
};
use types::{
    Bar, Fill, PortfolioSnapshot, ProposedAction, RegimeTag, TradeRecord, Verdict, classify_regime,
};
use uuid::Uuid;

use crate::reflect::check_reflection;
use crate::{
    Broker, BrokerUnavailable, ExecuteError, PendingSnapshot, ReflectionCheck, TickDeployment,
    TickState, snapshot_id,
};

/// Bars fetched per symbol for the ledger's MFE/MAE when the caller never ticked before.
const MAX_BARS_SINCE_LAST_TICK: usize = 10_000;

/// What one tick did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickOutcome {
    /// The tick time (`ctx.now`, UTC).
    pub tick_at: DateTime<Utc>,
    /// The decision snapshot's id ([`snapshot_id`](crate::snapshot_id) of the deployment and tick time).
    pub snapshot_id: Uuid,
    /// False when the store already held this tick (nothing was written again).
    pub recorded: bool,
    /// The model's proposal (the last successful `propose_order`); `None` when it proposed nothing.
    pub proposal: Option<ProposedAction>,
    /// The execution engine's verdict (a broker refusal turned into a rejection).
    pub verdict: Verdict,
    /// When the tick ended on a model failure (a provider error, garbage from the provider, the
    /// tick's deadline): the error text as stored with the snapshot. The verdict is then a
    /// no-op, but the tick's outcome is [`OutcomeKind::ModelError`].
    pub model_error: Option<String>,
    /// Tokens the tick's model calls used.
    pub usage: Usage,
    /// Estimated cost of those calls, in USD.
    pub cost_usd: Decimal,
    /// Fills applied to the ledger this tick (liquidations included).
    pub fills: Vec<Fill>,
    /// Ledger rows inserted or updated this tick.
    pub trades: Vec<TradeRecord>,
    /// Broker equity after the tick.
    pub equity_usd: Decimal,
    /// Gross notional of the open positions after the tick, at their marks.
    pub exposure_usd: Decimal,
    /// "Last decision" as the next tick shows it.
    pub last_decision: LastDecisionSnapshot,
    /// The `trade_outcomes` row this tick recorded for its directional proposal (seed 003),
    /// unscored; `None` without one.
    pub outcome: Option<outcomes::TradeOutcome>,
    /// The reflection cadence after the tick. A due reflection has not run yet: the caller runs
    /// it with [`run_due_reflection`](crate::run_due_reflection) (off the tick path).
    pub reflection: ReflectionCheck,
}

/// What a tick came to, one kind per tick: the engine's verdict, unless the model failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    /// The engine executed the proposal.
    Executed,
    /// The engine (or the broker) rejected it.
    Rejected,
    /// Nothing to do: no proposal, or an explicit `no_op`.
    NoOp,
    /// The model failed (provider error, garbage, the tick's deadline): nothing was proposed
    /// because nothing could be.
    ModelError,
}

impl OutcomeKind {
    /// The stable name: `executed`, `rejected`, `no_op`, `model_error` (the summary's keys, the
    /// live runner's metric label).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Executed => "executed",
            OutcomeKind::Rejected => "rejected",
            OutcomeKind::NoOp => "no_op",
            OutcomeKind::ModelError => "model_error",
        }
    }

    /// The kind of a tick with `verdict` that did (`model_error`) or did not fail on the model.
    #[must_use]
    pub const fn of(verdict: &Verdict, model_error: bool) -> Self {
        match verdict {
            _ if model_error => OutcomeKind::ModelError,
            Verdict::Executed { .. } => OutcomeKind::Executed,
            Verdict::Rejected { .. } => OutcomeKind::Rejected,
            Verdict::NoOp { .. } => OutcomeKind::NoOp,
        }
    }
}

impl TickOutcome {
    /// What the tick came to ([`OutcomeKind`]).
    #[must_use]
    pub const fn kind(&self) -> OutcomeKind {
        OutcomeKind::of(&self.verdict, self.model_error.is_some())
    }
}

/// Why a tick could not run or could not be recorded. Nothing is persisted for a failed tick,
/// but the broker may already have filled (see [`TickError::Record`]).
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// The broker's account could not be read, or the broker could not tell whether an order was
    /// placed.
    #[error(transparent)]
    Broker(#[from] BrokerUnavailable),
    /// The bars of a traded symbol could not be read (for the mark or the ledger's MFE/MAE).
    #[error("market data for {symbol}: {source}")]
    Market {
        /// The symbol.
        symbol: String,
        /// The market data source's error.
        #[source]
        source: DataError,
    },
    /// The runtime could not assemble the context or run the model loop.
    #[error(transparent)]
    Runtime(#[from] agent_runtime::AgentTickError),
    /// The ledger materializer refused the fills or positions.
    #[error("ledger: {0}")]
    Ledger(#[from] memory_ledger::LedgerError),
    /// The store could not record the tick (after the broker may have filled: a retried tick sends
    /// the same client order id).
    #[error("recording the tick: {0}")]
    Record(#[source] db::DbError),
    /// The caller's `carry` function could not serialise its state.
    #[error("serializing the runner state to record with the tick: {0}")]
    CarryState(#[source] serde_json::Error),
    /// The model loop's steps could not be serialised to JSON for the snapshot.
    #[error("serializing the model loop's steps to record with the tick: {0}")]
    Steps(#[source] serde_json::Error),
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

/// Runs one tick at `ctx.now`. See the crate docs for the steps.
///
/// `ctx` supplies the market data, news, events and derivatives of the tick; its `portfolio`
/// source is replaced by the broker's snapshot for the model's tool calls, and the memory
/// sections are rendered from the ledger in `state` (`ctx.memory` is not read).
///
/// # Errors
/// [`TickError`] when the broker account or the market data cannot be read, the context cannot
/// be assembled (the model is not called then), the ledger refuses the fills, the model loop's
/// steps cannot be serialised ([`TickError::Steps`]), or the store cannot record the tick.
/// Reflection is not run here (see [`ReflectionCheck`]).
pub async fn run_tick<B, S>(
    deployment: &TickDeployment,
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
    deployment: &TickDeployment,
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
    run_tick_recording(deployment, ctx, model, broker, state, &Direct(store), carry).await
}

/// Where a tick's record goes. A store takes it whole and writes it at once ([`run_tick`],
/// [`run_tick_carrying`]: one `record_tick` transaction); a recorder of the caller's
/// ([`run_tick_recording`]) may buffer it and compute the part only the store reads — a
/// directional decision's market snapshot ([`PendingSnapshot`]) — elsewhere: the backtest's
/// write-behind (the `backtest` crate) does that on its writer thread.
pub trait Recorder: Sync {
    /// Whether a directional decision's market snapshot is left for the recorder to compute
    /// (its indicators read again from the tick's market data by
    /// [`PendingSnapshot::finish_into`]); otherwise the tick computes it before it records.
    const DEFER_SNAPSHOTS: bool;

    /// Records `record`, completed with `pending` ([`PendingSnapshot::finish_into`]) before
    /// anything of it is written. The outcome is the tick's `recorded` flag.
    ///
    /// # Errors
    /// The store's [`db::DbError`]: the tick fails with [`TickError::Record`].
    fn record(
        &self,
        record: TickRecord,
        pending: Option<PendingSnapshot>,
    ) -> impl Future<Output = Result<RecordOutcome, db::DbError>> + Send;
}

/// A store as a [`Recorder`]: the tick computes the market snapshot, and the record goes to
/// the store whole.
struct Direct<'a, S>(&'a S);

impl<S: TickStore> Recorder for Direct<'_, S> {
    const DEFER_SNAPSHOTS: bool = false;

    async fn record(
        &self,
        mut record: TickRecord,
        pending: Option<PendingSnapshot>,
    ) -> Result<RecordOutcome, db::DbError> {
        PendingSnapshot::finish_into(pending, &mut record)?;
        self.0.record_tick(&record).await
    }
}

/// [`run_tick_carrying`] with its record going to `recorder` instead of a store: the tick
/// itself is the same, step for step (see the crate docs).
///
/// # Errors
/// As [`run_tick_carrying`]; [`TickError::Record`] with the recorder's error.
pub async fn run_tick_recording<B, R>(
    deployment: &TickDeployment,
    ctx: &ToolContext,
    model: &dyn LanguageModel,
    broker: &mut B,
    state: &mut TickState,
    recorder: &R,
    carry: Option<CarryState<'_, B>>,
) -> Result<TickOutcome, TickError>
where
    B: Broker,
    R: Recorder,
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
    // What the context shows of each symbol, read here once (higher timeframes below).
    let mut windows: Vec<(BarsWindow<'_>, Option<RegimeTag>)> =
        Vec::with_capacity(ctx.symbols.len());
    for symbol in &ctx.symbols {
        let market_err = |source| TickError::Market {
            symbol: symbol.clone(),
            source,
        };
        // Borrowed from an in-memory source (a backtest's bars): nothing copied per tick.
        let window = agent_runtime::context::closed_bars_window(ctx, symbol, interval, lookback)
            .map_err(market_err)?;
        let bars = &*window.bars;
        let mut regime = None;
        if let Some(last) = bars.last() {
            let r = classify_regime(bars);
            marks.insert(symbol.clone(), last.close);
            regimes.insert(symbol.clone(), r);
            regime = Some(r);
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
        windows.push((window, regime));
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
    // What the context renders, read above (bars, regimes, account) or rendered here once from
    // the ledger (the memory bodies); the tool calls get the account through `tick_ctx`.
    let memory = &skill.context.memory;
    // A blind run: the context the model reads (renamed, rescaled, its lens set), the skill as
    // it reads it, and the ledger rows as it reads them.
    let blind = state.blind.clone();
    let blind_ctx = blind.as_ref().map(|b| b.blind.context(ctx));
    let (recent_trades, open_positions) = if memory.enabled {
        let k = memory.recent_trades_k.min(types::MAX_MEMORY_K);
        let (recent, open) = match &blind {
            None => (
                state.recent_trades_text(k, now),
                memory
                    .include_open_positions
                    .then(|| memory_ledger::render_open_positions(&state.trades, now)),
            ),
            Some(b) => {
                let rows = b.trades(&state.trades);
                (
                    memory_ledger::render_recent_trades(&rows, k as usize, now).into(),
                    memory
                        .include_open_positions
                        .then(|| memory_ledger::render_open_positions(&rows, now)),
                )
            }
        };
        (Some(recent), open)
    } else {
        (None, None)
    };
    // What the model reads of each symbol: the windows read above, or, blind, the same windows
    // through the blind context (renamed, rescaled).
    let (view_ctx, view_skill) = match (&blind, &blind_ctx) {
        (Some(b), Some(c)) => (c, b.skill.as_ref()),
        _ => (ctx, skill),
    };
    if let Some(bctx) = &blind_ctx {
        for ((window, _), symbol) in windows.iter_mut().zip(&bctx.symbols) {
            *window = agent_runtime::context::closed_bars_window(bctx, symbol, interval, lookback)
                .map_err(|source| TickError::Market {
                    symbol: symbol.clone(),
                    source,
                })?;
        }
    }
    let mut symbols = Vec::with_capacity(windows.len());
    for (symbol, (bars, regime)) in view_ctx.symbols.iter().zip(windows) {
        // A zero lookback shows no bars (the marks above still come from the latest one).
        let bars = if skill.context.bars_lookback == 0 {
            BarsWindow {
                bars: std::borrow::Cow::Borrowed(&[]),
                origin: None,
            }
        } else {
            bars
        };
        let regime = regime.filter(|_| !bars.bars.is_empty());
        let higher = SymbolBars::read_higher(view_skill, view_ctx, symbol)
            .map_err(|e| TickError::Runtime(e.into()))?;
        symbols.push(SymbolBars {
            bars,
            regime,
            higher,
        });
    }
    let regimes_now: Vec<Option<RegimeTag>> = symbols.iter().map(|s| s.regime).collect();
    let trading_memory = agent_runtime::trading_memory_block(view_skill, view_ctx, &regimes_now)
        .await
        .map_err(|e| TickError::Runtime(e.into()))?;
    let shown_portfolio = blind.as_ref().map(|b| b.blind.portfolio(&portfolio));
    let view = TickView {
        portfolio: match &shown_portfolio {
            Some(p) => std::borrow::Cow::Borrowed(p),
            None => std::borrow::Cow::Borrowed(&portfolio),
        },
        open_orders: Vec::new(),
        symbols,
        recent_trades: recent_trades.as_deref().map(std::borrow::Cow::Borrowed),
        open_positions: open_positions.map(std::borrow::Cow::Owned),
        trading_memory: trading_memory.map(std::borrow::Cow::Owned),
    };
    let tick_ctx = ToolContext {
        portfolio: Arc::new(SnapshotView(
            shown_portfolio.clone().unwrap_or_else(|| portfolio.clone()),
        )),
        ..view_ctx.clone()
    };
    let lessons = visible_note_at(&state.notes, now).map(to_lessons);
    let TickOutput {
        system_prompt,
        context,
        run,
    } = agent_runtime::run_agent_tick_with(
        view_skill,
        &tick_ctx,
        &view,
        model,
        lessons.as_ref(),
        state.last_decision.as_ref(),
        &mut state.render,
        state.run_options,
    )
    .await?;
    drop(view);

    // 4. the engine's verdict, then the broker
    let snapshot_id = snapshot_id(deployment.deployment_id, now);
    // The model's proposal, in real terms for the engine (a blind run maps it back).
    let shown_proposal = run.proposed_action;
    let proposal = match &blind {
        Some(b) => shown_proposal.as_ref().map(|p| b.blind.real_proposal(p)),
        None => shown_proposal.clone(),
    };
    // Blind: the verdict as the model's world reads it (the same rules on the renamed,
    // rescaled account), for its "Last decision" only; the real verdict below decides.
    let shown_verdict = match (&blind, &shown_portfolio) {
        (Some(b), Some(shown)) => {
            let account = state
                .risk
                .account_view(shown.clone(), b.blind.marks(&marks));
            let symbols = &tick_ctx.symbols;
            Some(
                validate(
                    shown_proposal.as_ref(),
                    &b.skill.risk,
                    &account,
                    symbols,
                    now,
                )
                .verdict,
            )
        }
        _ => None,
    };
    let account = state.risk.account_view(portfolio, marks);
    let decision = validate(proposal.as_ref(), &skill.risk, &account, &ctx.symbols, now);
    let mut verdict = decision.verdict;
    // The outcome memory (seed 003): a directional proposal's market snapshot and outcome row,
    // executed or rejected, recorded with the tick. Read before any order goes out, so a
    // failure here never leaves a fill without its tick.
    let mut memory_rows = crate::outcome_memory::decision_rows(
        deployment,
        ctx,
        snapshot_id,
        proposal.as_ref(),
        &verdict,
        &account.marks,
        &regimes,
        R::DEFER_SNAPSHOTS,
    )?;
    let mut sent_order = false;
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
        sent_order = true;
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

    if let Some((_, outcome)) = memory_rows.as_mut()
        && matches!(verdict, Verdict::Rejected { .. })
    {
        // The broker refused what the engine passed.
        outcome.verdict = outcomes::OutcomeVerdict::Rejected;
    }

    // 5. the ledger: this tick's fills and the positions after them
    let tick_fills = broker.drain_fills().await?;
    let after = if B::ACCOUNT_MOVES_ONLY_ON_EXECUTE && !sent_order && tick_fills.is_empty() {
        // The account as read at the start: nothing could move it since.
        account.portfolio.clone()
    } else {
        checked_account(broker.portfolio(now).await?)?
    };
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
    state.prune_closed(&skill.context.memory);
    merge_changes(&mut changes, post);
    fills.extend(tick_fills);

    // 6. persist atomically
    let usage = run.usage;
    let error = run.error.as_ref().map(|e| {
        types::cut_chars(&e.to_string(), types::MAX_STORED_ERROR_CHARS)
            .0
            .to_owned()
    });
    let model_error = run
        .error
        .as_ref()
        .filter(|e| e.is_model_error())
        .and(error.clone());
    let snapshot = DecisionSnapshot {
        id: snapshot_id,
        deployment_id: deployment.deployment_id,
        tick_at: now,
        system_prompt,
        context: context.text,
        steps: match run.steps_json {
            Some(json) => json,
            None => JsonText::new(&run.steps).map_err(TickError::Steps)?,
        },
        proposal: proposal.clone(),
        verdict: verdict.clone(),
        model: model.id().to_owned(),
        finish_reason: Some(run.finish_reason.as_str().to_owned()),
        usage,
        cost_usd: run.cost_usd,
        error,
        model_error: model_error.is_some(),
    };
    let last_decision = match (&blind, shown_verdict) {
        (Some(b), Some(shown)) => {
            let shown = blind_verdict(&b.blind, shown, &verdict);
            to_last_decision_snapshot(shown_proposal.as_ref(), &shown, now)
        }
        _ => to_last_decision_snapshot(proposal.as_ref(), &verdict, now),
    };
    state.last_decision = Some(last_decision.clone());
    state.last_tick_at = Some(now);
    let runner_state = carry
        .map(|carry| carry(broker, state))
        .transpose()
        .map_err(TickError::CarryState)?;
    let links = fill_links(&changes);
    let (pending_snapshot, outcome) = memory_rows.unzip();
    let record = TickRecord {
        snapshot,
        fills,
        trades: changes.rows.into_iter().map(|w| w.row).collect(),
        links,
        equity_usd: Some(after.equity_usd),
        runner_state,
        outcomes: OutcomeWrites {
            // Completed with the market snapshot by the recorder.
            snapshots: Vec::new(),
            outcomes: outcome.iter().cloned().collect(),
            scores: std::mem::take(&mut state.outcome_scores),
        },
    };
    // The outcome reports the fills and rows; the record itself (its snapshot is most of the
    // bytes) goes to the store by value.
    let (outcome_fills, outcome_trades) = (record.fills.clone(), record.trades.clone());
    let recorded = match recorder.record(record, pending_snapshot).await {
        Ok(RecordOutcome::Recorded { .. }) => true,
        Ok(RecordOutcome::AlreadyRecorded { .. }) => false,
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
        model_error,
        usage,
        cost_usd: run.cost_usd,
        fills: outcome_fills,
        trades: outcome_trades,
        equity_usd: after.equity_usd,
        exposure_usd,
        last_decision,
        outcome,
        reflection,
    })
}

/// A blind run's verdict as the model reads it: `shown` (the rules applied to the renamed,
/// rescaled account) when it agrees with the real verdict, else — a broker refusal, or a rounding
/// edge at a cap — the real verdict with its detail masked ([`blind::Blind::mask`]).
fn blind_verdict(blind: &blind::Blind, shown: Verdict, real: &Verdict) -> Verdict {
    let rule = |v: &Verdict| match v {
        Verdict::Rejected { rule, .. } => Some(*rule),
        _ => None,
    };
    let agree = std::mem::discriminant(&shown) == std::mem::discriminant(real)
        && rule(&shown) == rule(real);
    if agree {
        return shown;
    }
    match real {
        Verdict::Executed { detail } => Verdict::Executed {
            detail: blind.mask(detail),
        },
        Verdict::Rejected { rule, detail } => Verdict::Rejected {
            rule: *rule,
            detail: blind.mask(detail),
        },
        Verdict::NoOp { detail } => Verdict::NoOp {
            detail: blind.mask(detail),
        },
    }
}

/// The account as read, or [`BrokerUnavailable`] when its numbers are out of range (sizes ×
/// prices or equity that overflow): the tick stops before recording anything instead of
/// panicking on them later (exposure, sizing, the Portfolio section).
pub(crate) fn checked_account(
    account: PortfolioSnapshot,
) -> Result<PortfolioSnapshot, BrokerUnavailable> {
    tools::check_portfolio(&account)
        .map(|()| account)
        .map_err(|e| BrokerUnavailable(format!("the broker's account: {e}")))
}

/// `later` on top of `earlier`: a row written twice keeps its first position and its latest
/// content; links are appended.
pub(crate) fn merge_changes(earlier: &mut LedgerChanges, later: LedgerChanges) {
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
pub(crate) fn fill_links(changes: &LedgerChanges) -> Vec<FillTradeLink> {
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
