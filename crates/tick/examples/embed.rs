//! A service running ticks with its own market data, its own broker and the store it chooses
//! (SQLite in memory), on the example skill's offline model. `cargo run -p tick --example embed`

use std::future::{Future, ready};
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use db::LedgerStore;
use execution_engine::{Order, OrderTag, PaperBrokerConfig};
use rust_decimal::Decimal;
use tick::backtest::{BacktestInput, register};
use tick::{Broker, BrokerUnavailable, Deployment, ExecuteError, TickState, run_tick};
use tools::{DataError, MarketData, Preloaded, RunMode, ToolContext};
use types::{Bar, Fill, Interval, OrderSide, PortfolioSnapshot, Position, Side, Uuid, Verdict};

const SKILL: &str = include_str!("../../../examples/skills/eurusd-sma-cross.yaml");
const ZERO: Decimal = Decimal::ZERO;

/// The service's feed: a deterministic zig-zag of EURUSD, bar `i` opening at `start + i × interval`.
struct Feed(DateTime<Utc>);
impl MarketData for Feed {
    fn bars(
        &self,
        symbol: &str,
        interval: Interval,
        closed_by: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<Bar>, DataError> {
        let price = |i: i32| Decimal::new(10_800 + 5 * i64::from((i % 40 - 20).abs()), 4);
        let closed = i32::try_from((closed_by - self.0).num_minutes() / interval.minutes())
            .map_err(|e| DataError::new("feed", e.to_string()))?;
        let first = closed
            .saturating_sub(i32::try_from(limit).unwrap_or(i32::MAX))
            .max(0);
        let bar = |i: i32| {
            let (open, close) = (price(i.max(1) - 1), price(i));
            Bar {
                time: self.0 + interval.duration() * i,
                open,
                high: open.max(close),
                low: open.min(close),
                close,
                volume: Decimal::ONE,
            }
        };
        if symbol == "EURUSD" {
            Ok((first..closed).map(bar).collect())
        } else {
            Err(DataError::new("feed", format!("no {symbol}")))
        }
    }
}

/// The service's broker for its one market: fee-free fills at the given price, 1x, average-cost entry.
#[derive(Default)]
struct Desk {
    cash: Decimal,
    qty: Decimal,
    entry: Decimal,
    mark: Decimal,
    fills: Vec<Fill>,
}
impl Broker for Desk {
    fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> impl Future<Output = Result<PortfolioSnapshot, BrokerUnavailable>> + Send {
        let (pnl, margin) = (
            (self.mark - self.entry) * self.qty,
            self.entry * self.qty.abs(),
        );
        let position = Position {
            symbol: "EURUSD".into(),
            side: if self.qty > ZERO {
                Side::Long
            } else {
                Side::Short
            },
            qty: self.qty.abs(),
            entry_price: self.entry,
            leverage: Decimal::ONE,
            mark_price: self.mark,
            liquidation_price: None,
            unrealized_pnl_usd: pnl,
            margin_usd: margin,
        };
        let positions = if self.qty.is_zero() {
            vec![]
        } else {
            vec![position]
        };
        let equity = self.cash + pnl;
        ready(Ok(PortfolioSnapshot {
            at,
            equity_usd: equity,
            available_margin_usd: equity - margin,
            positions,
            realized_pnl_usd: self.cash - Decimal::from(10_000),
            fees_paid_usd: ZERO,
        }))
    }
    fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> impl Future<Output = Result<Fill, ExecuteError>> + Send {
        let delta = if order.side == OrderSide::Buy {
            order.qty
        } else {
            -order.qty
        };
        let next = self.qty + delta;
        if self.qty * delta < ZERO {
            // the closing part realizes against the average entry
            let closed = self.qty.abs().min(delta.abs());
            self.cash += (price - self.entry) * if self.qty > ZERO { closed } else { -closed };
        }
        if next.is_zero() {
            self.entry = ZERO
        } else if self.qty.is_zero() || (next > ZERO) != (self.qty > ZERO) {
            self.entry = price
        } else if next.abs() > self.qty.abs() {
            self.entry = (self.entry * self.qty.abs() + price * delta.abs()) / next.abs()
        }
        (self.qty, self.mark) = (next, price);
        let fill = Fill {
            id: format!("desk-{}", self.fills.len() + 1),
            symbol: order.symbol.clone(),
            side: order.side,
            qty: order.qty,
            price,
            fee_usd: ZERO,
            time: at,
            snapshot_id: tag.snapshot_id,
            client_order_id: tag.client_order_id,
            liquidation: false,
        };
        self.fills.push(fill.clone());
        ready(Ok(fill))
    }
    fn drain_fills(&mut self) -> impl Future<Output = Result<Vec<Fill>, BrokerUnavailable>> + Send {
        ready(Ok(std::mem::take(&mut self.fills)))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let skill = Arc::new(skill_schema::parse_skill(SKILL, skill_schema::Format::Yaml)?.skill);
    let model = agent_runtime::builtin_model(&skill.model, &skill).ok_or("not an offline model")?;
    let (id, start) = (
        Uuid::from_u128(1),
        Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap(),
    );
    let deployment = Deployment {
        user_id: id,
        deployment_id: id,
        skill_id: id,
        skill_version: 1,
        skill: skill.clone(),
        reflector: Err("none here".into()),
    };
    let equity = Decimal::from(10_000);
    // The store is the service's choice; the tick needs the deployment registered in it.
    let store = db::connect("sqlite::memory:").await?;
    let input = BacktestInput {
        deployment: deployment.clone(),
        market: Arc::new(Preloaded::new()),
        news: None,
        events: None,
        from: None,
        to: None,
        broker: PaperBrokerConfig::new(equity),
    };
    register(&store, &input, serde_json::to_value(&*skill)?, start).await?;

    let (feed, nothing) = (Arc::new(Feed(start)), Arc::new(Preloaded::new()));
    let mut desk = Desk {
        cash: equity,
        ..Desk::default()
    };
    let first = start + Duration::hours(80);
    let mut state = TickState::new(&deployment, equity, first);
    for now in (0..60).map(|h| first + Duration::hours(h)) {
        // The account comes from the broker, not from the context's portfolio source.
        let ctx = ToolContext::new(
            now,
            RunMode::Trade,
            skill.context.symbols.clone(),
            feed.clone(),
            nothing.clone(),
        );
        desk.mark = feed.bars("EURUSD", Interval::H1, now, 1)?[0].close;
        let outcome = run_tick(
            &deployment,
            &ctx,
            model.as_ref(),
            &mut desk,
            &mut state,
            &store,
        )
        .await?;
        if !matches!(outcome.verdict, Verdict::NoOp { .. }) {
            println!("{now}: {:?}", outcome.verdict)
        }
    }
    let equity = desk
        .portfolio(first + Duration::hours(60))
        .await?
        .equity_usd
        .round_dp(2);
    println!(
        "equity {equity}; ledger rows stored: {}",
        store.all_trades(id).await?.len()
    );
    Ok(())
}
