//! Closing every open position of a stopped deployment ("flattening" it) through its broker:
//! [`flatten_positions`] sends the orders, [`run_flatten`] also records what they did the way a
//! tick is recorded (snapshot, fills, ledger rows, the caller's state, in one `record_tick`).
//!
//! Each open position gets one reduce-only market order of its whole size at the broker's mark,
//! in symbol order. A reduce-only order can only shrink a position, never open or grow one, so a
//! flatten tried again (after a crash, a refusal, a position that only partly closed) reads the
//! account afresh and closes what is left, and an order that reached the broker twice still
//! cannot turn a flat account into a position.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use db::{DecisionSnapshot, JsonText, OutcomeWrites, RecordOutcome, TickRecord, TickStore};
use execution_engine::{Order, OrderIntent, OrderTag};
use memory_ledger::{ProposalInfo, Proposals, TickInput};
use rust_decimal::Decimal;
use types::{Fill, OrderSide, PortfolioSnapshot, Side, TradeRecord, Verdict};
use uuid::Uuid;

use crate::run::{TickError, checked_account, fill_links, merge_changes};
use crate::{
    Broker, BrokerRefusal, BrokerUnavailable, CarryState, ExecuteError, TickDeployment, TickState,
    snapshot_id,
};

/// The model name a flatten's snapshot is recorded under (no model runs).
pub const FLATTEN_MODEL: &str = "system/flatten";

/// The exit reason of the ledger rows a flatten closes.
pub const FLATTEN_REASON: &str = "deployment stopped: position closed by the stop's flatten";

/// One position a flatten found open, and what its closing order did.
#[derive(Debug, Clone, PartialEq)]
pub struct FlattenedPosition {
    /// The symbol.
    pub symbol: String,
    /// The position's side.
    pub side: Side,
    /// Its size in base units (what the order asked to close).
    pub qty: Decimal,
    /// The broker's mark the order was sent at.
    pub mark_price: Decimal,
    /// The order's fill, or the broker's refusal.
    pub outcome: Result<Fill, BrokerRefusal>,
}

/// What [`flatten_positions`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct FlattenReport {
    /// The account as read before the orders.
    pub before: PortfolioSnapshot,
    /// Every position that was open, in symbol order, with its order's outcome.
    pub positions: Vec<FlattenedPosition>,
}

impl FlattenReport {
    /// The fills of the orders that were filled.
    #[must_use]
    pub fn fills(&self) -> Vec<&Fill> {
        self.positions
            .iter()
            .filter_map(|p| p.outcome.as_ref().ok())
            .collect()
    }

    /// The first refusal, if any order was refused.
    #[must_use]
    pub fn refusal(&self) -> Option<(&str, &BrokerRefusal)> {
        self.positions
            .iter()
            .find_map(|p| p.outcome.as_ref().err().map(|r| (p.symbol.as_str(), r)))
    }

    /// A one-line account of it, in the prompt's styles: `closed BTC long 0.5 at $30,200.00;
    /// ETH short 2: refused (...)`, or `no open position`.
    #[must_use]
    pub fn summary(&self) -> String {
        if self.positions.is_empty() {
            return "no open position".to_owned();
        }
        let parts: Vec<String> = self
            .positions
            .iter()
            .map(|p| {
                let mut s = format!("{} {} ", p.symbol, side_word(p.side));
                types::text::push_num(&mut s, p.qty);
                match &p.outcome {
                    Ok(fill) => {
                        s.push_str(" closed at ");
                        types::text::push_price_usd(&mut s, fill.price);
                    }
                    Err(refusal) => {
                        s.push_str(": refused (");
                        s.push_str(&tools::one_line(&refusal.message));
                        s.push(')');
                    }
                }
                s
            })
            .collect();
        parts.join("; ")
    }
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Long => "long",
        Side::Short => "short",
    }
}

/// The reduce-only market order closing `p` whole.
fn closing_order(p: &types::Position) -> Order {
    let qty = p.qty.abs();
    Order {
        symbol: p.symbol.clone(),
        side: match p.side {
            Side::Long => OrderSide::Sell,
            Side::Short => OrderSide::Buy,
        },
        qty,
        leverage: p.leverage,
        reduce_only: true,
        intent: OrderIntent::Close,
        reference_price: p.mark_price,
        notional_usd: qty * p.mark_price,
        stop: None,
        target: None,
    }
}

/// Sends the closing orders of `account`'s open positions (in symbol order); the `i`-th is sent
/// at `at − i ms`, so a broker that derives an order's client order id from its time (the
/// Hyperliquid broker does) gives each its own. Every order carries `snapshot` as its tag.
async fn close_positions<B: Broker>(
    broker: &mut B,
    account: &PortfolioSnapshot,
    at: DateTime<Utc>,
    snapshot: Option<Uuid>,
) -> Result<Vec<FlattenedPosition>, BrokerUnavailable> {
    let mut open: Vec<&types::Position> = account
        .positions
        .iter()
        .filter(|p| !p.qty.is_zero())
        .collect();
    open.sort_by(|a, b| a.symbol.cmp(&b.symbol));
    let mut out = Vec::with_capacity(open.len());
    for (i, p) in open.into_iter().enumerate() {
        let order = closing_order(p);
        let sent_at = at - Duration::milliseconds(i64::try_from(i).unwrap_or(i64::MAX));
        let tag = OrderTag {
            snapshot_id: snapshot,
            client_order_id: snapshot.map(|s| format!("{s}:{i}")),
        };
        let outcome = match broker.execute(&order, p.mark_price, sent_at, tag).await {
            Ok(fill) => Ok(fill),
            Err(ExecuteError::Refused(refusal)) => Err(refusal),
            Err(ExecuteError::Unavailable(e)) => return Err(e),
        };
        out.push(FlattenedPosition {
            symbol: p.symbol.clone(),
            side: p.side,
            qty: p.qty.abs(),
            mark_price: p.mark_price,
            outcome,
        });
    }
    Ok(out)
}

/// Closes every open position of `broker`'s account with reduce-only market orders at the
/// broker's marks, as read at `at` (see the module docs), and says what each order did. Every
/// order is tagged with `snapshot` (the decision snapshot that records them, if any). A
/// refusal is reported with its position; it does not stop the others.
///
/// # Errors
/// [`BrokerUnavailable`] when the account cannot be read (or its numbers are out of range), or
/// the broker cannot tell whether an order was placed: the orders sent before stay sent.
pub async fn flatten_positions<B: Broker>(
    broker: &mut B,
    at: DateTime<Utc>,
    snapshot: Option<Uuid>,
) -> Result<FlattenReport, BrokerUnavailable> {
    let before = checked_account(broker.portfolio(at).await?)?;
    let positions = close_positions(broker, &before, at, snapshot).await?;
    Ok(FlattenReport { before, positions })
}

/// What [`run_flatten`] did and recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct FlattenOutcome {
    /// The flatten's time (its snapshot's `tick_at`).
    pub at: DateTime<Utc>,
    /// Its decision snapshot ([`snapshot_id`] of the deployment and `at`).
    pub snapshot_id: Uuid,
    /// False when the store already held a snapshot at `at` (nothing was written again).
    pub recorded: bool,
    /// The orders and their outcomes.
    pub report: FlattenReport,
    /// Every fill applied to the ledger (the broker's own since the last tick included).
    pub fills: Vec<Fill>,
    /// Ledger rows inserted or updated.
    pub trades: Vec<TradeRecord>,
    /// The account after the orders.
    pub after: PortfolioSnapshot,
}

impl FlattenOutcome {
    /// Whether the account is flat now: every position closed. When false (a refusal, a
    /// partial fill) the caller tries again later; the next attempt closes what is left.
    #[must_use]
    pub fn is_flat(&self) -> bool {
        self.after.positions.iter().all(|p| p.qty.is_zero())
    }
}

/// [`flatten_positions`] for a deployment, recorded as its ticks are: the ledger catches up
/// with the fills the broker made on its own since the last tick, the closing orders go out
/// ([`FLATTEN_REASON`] on the rows they close), and one `record_tick` writes a decision
/// snapshot at `at` (model [`FLATTEN_MODEL`], no proposal; the verdict executed, rejected with
/// the broker's rule code, or a no-op without a position; the user message the
/// [`FlattenReport::summary`]), the fills, the ledger rows and — with `carry` — the caller's
/// state after it, in one transaction. No model is called and no reflection is checked.
///
/// `at` must be after the deployment's last recorded tick (the state only moves forward).
///
/// # Errors
/// [`TickError::Broker`] when the account cannot be read or an order's fate is unknown
/// (nothing is recorded then; orders sent stay sent); [`TickError::Ledger`] when the ledger
/// refuses the fills; [`TickError::Record`] when the store cannot record it
/// ([`db::DbError::StaleState`] when `at` is not after the last recorded tick);
/// [`TickError::CarryState`] when `carry` fails.
pub async fn run_flatten<B, S>(
    deployment: &TickDeployment,
    broker: &mut B,
    state: &mut TickState,
    store: &S,
    at: DateTime<Utc>,
    carry: Option<CarryState<'_, B>>,
) -> Result<FlattenOutcome, TickError>
where
    B: Broker,
    S: TickStore,
{
    let snapshot = snapshot_id(deployment.deployment_id, at);
    let interval = deployment.skill.context.bars_interval;
    let none: BTreeMap<String, types::RegimeTag> = BTreeMap::new();
    let no_bars: BTreeMap<String, Vec<types::Bar>> = BTreeMap::new();

    let before = checked_account(broker.portfolio(at).await?)?;
    state.risk.observe_equity(before.equity_usd, at);
    let mut fills = broker.drain_fills().await?;
    let mut changes = state.ledger.apply_tick(TickInput {
        at,
        positions: &before.positions,
        fills: &fills,
        bars: &no_bars,
        bar_interval: interval,
        proposals: &Proposals::new(),
        regimes: &none,
    })?;
    state.upsert_rows(&changes);

    let positions = close_positions(broker, &before, at, Some(snapshot)).await?;
    let report = FlattenReport { before, positions };
    let own = broker.drain_fills().await?;
    let after = checked_account(broker.portfolio(at).await?)?;
    let mut proposals = Proposals::new();
    proposals.insert(
        snapshot,
        ProposalInfo {
            reason: Some(FLATTEN_REASON.to_owned()),
            leverage: None,
        },
    );
    let post = state.ledger.apply_tick(TickInput {
        at,
        positions: &after.positions,
        fills: &own,
        bars: &no_bars,
        bar_interval: interval,
        proposals: &proposals,
        regimes: &none,
    })?;
    state.upsert_rows(&post);
    state.prune_closed(&deployment.skill.context.memory);
    merge_changes(&mut changes, post);
    fills.extend(own);

    let summary = report.summary();
    let verdict = match (report.refusal(), report.positions.is_empty()) {
        (Some((symbol, refusal)), _) => Verdict::Rejected {
            rule: refusal.rule,
            detail: tools::one_line(&format!(
                "flatten on stop: {symbol} refused: {}",
                refusal.message
            )),
        },
        (None, true) => Verdict::NoOp {
            detail: "flatten on stop: no open position".to_owned(),
        },
        (None, false) => Verdict::Executed {
            detail: format!("flatten on stop: {summary}"),
        },
    };
    let record = TickRecord {
        snapshot: DecisionSnapshot {
            id: snapshot,
            deployment_id: deployment.deployment_id,
            tick_at: at,
            system_prompt: String::new(),
            context: format!(
                "The deployment was stopped with its positions to be closed: {summary}.\n"
            ),
            steps: JsonText::new(&Vec::<()>::new()).map_err(TickError::Steps)?,
            proposal: None,
            verdict,
            model: FLATTEN_MODEL.to_owned(),
            finish_reason: None,
            usage: types::Usage::default(),
            cost_usd: Decimal::ZERO,
            error: None,
            model_error: false,
        },
        fills: fills.clone(),
        trades: changes.rows.iter().map(|w| w.row.clone()).collect(),
        links: fill_links(&changes),
        equity_usd: Some(after.equity_usd),
        runner_state: None,
        outcomes: OutcomeWrites {
            scores: std::mem::take(&mut state.outcome_scores),
            ..OutcomeWrites::default()
        },
    };
    state.last_tick_at = Some(at);
    let runner_state = carry
        .map(|carry| carry(broker, state))
        .transpose()
        .map_err(TickError::CarryState)?;
    let trades = record.trades.clone();
    let record = TickRecord {
        runner_state,
        ..record
    };
    let recorded = match store.record_tick(&record).await {
        Ok(RecordOutcome::Recorded { .. }) => true,
        Ok(RecordOutcome::AlreadyRecorded { .. }) => false,
        Err(e) => return Err(TickError::Record(e)),
    };
    Ok(FlattenOutcome {
        at,
        snapshot_id: snapshot,
        recorded,
        report,
        fills,
        trades,
        after,
    })
}
