//! A service running ticks with its own market data, its own broker and the store it chooses
//! (SQLite in memory), on the example skill's offline model. `cargo run -p tick --example embed`
//!
//! The two adapters and the registration are kept dense (`rustfmt::skip`): they are the part a
//! service writes.

use std::future::{Future, ready};
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use db::{LedgerStore, RegistryStore};
use execution_engine::{Order, OrderTag};
use rust_decimal::Decimal;
use skill_schema::Skill;
use tick::{Broker, BrokerUnavailable, ExecuteError, TickDeployment, TickState, run_tick};
use tools::{DataError, MarketData, Preloaded, RunMode, ToolContext};
use types::{Bar, Fill, Interval, OrderSide, PortfolioSnapshot, Position, Side, Uuid, Verdict};

/// The service's feed: a zig-zag of EURUSD, bar `i` opening at `start + i × interval`.
struct Feed(DateTime<Utc>);
#[rustfmt::skip]
impl MarketData for Feed {
    fn bars(&self, symbol: &str, iv: Interval, closed_by: DateTime<Utc>, limit: usize)
        -> Result<Vec<Bar>, DataError> {
        let price = |i: i64| Decimal::new(10_800 + 5 * (i % 40 - 20).abs(), 4);
        let closed = (closed_by - self.0).num_minutes() / iv.minutes();
        let first = (closed - i64::try_from(limit).unwrap_or(i64::MAX)).max(0);
        let bar = |i: i64| {
            let (open, close) = (price((i - 1).max(0)), price(i));
            let time = self.0 + Duration::minutes(iv.minutes() * i);
            Bar { time, open, high: open.max(close), low: open.min(close), close, volume: Decimal::ONE }
        };
        match symbol {
            "EURUSD" => Ok((first..closed).map(bar).collect()),
            _ => Err(DataError::new("feed", format!("no {symbol}"))),
        }
    }
}

/// The service's broker: fee-free fills at the tick's price; equity = cash + position × mark.
#[derive(Default)]
struct Desk {
    cash: Decimal,
    qty: Decimal,
    entry: Decimal,
    mark: Decimal,
    fills: Vec<Fill>,
}
#[rustfmt::skip]
impl Broker for Desk {
    fn portfolio(&mut self, at: DateTime<Utc>)
        -> impl Future<Output = Result<PortfolioSnapshot, BrokerUnavailable>> + Send {
        let (qty, mark, entry) = (self.qty.abs(), self.mark, self.entry);
        let side = if self.qty > Decimal::ZERO { Side::Long } else { Side::Short };
        let (pnl, equity) = ((mark - entry) * self.qty, self.cash + self.qty * mark);
        let position = (!qty.is_zero()).then(|| Position {
            symbol: "EURUSD".into(), side, qty, entry_price: entry, leverage: Decimal::ONE,
            mark_price: mark, liquidation_price: None, unrealized_pnl_usd: pnl, margin_usd: entry * qty,
        });
        ready(Ok(PortfolioSnapshot {
            at, equity_usd: equity, available_margin_usd: equity - entry * qty,
            positions: position.into_iter().collect(), fees_paid_usd: Decimal::ZERO,
            realized_pnl_usd: equity - pnl - Decimal::from(10_000),
        }))
    }
    fn execute(&mut self, order: &Order, price: Decimal, at: DateTime<Utc>, tag: OrderTag)
        -> impl Future<Output = Result<Fill, ExecuteError>> + Send {
        let delta = if order.side == OrderSide::Buy { order.qty } else { -order.qty };
        // A position opened from flat or flipped enters at this price; adding or reducing keeps it.
        if self.qty.is_zero() || (self.qty + delta) * self.qty < Decimal::ZERO { self.entry = price }
        (self.qty, self.mark, self.cash) = (self.qty + delta, price, self.cash - delta * price);
        let fill = Fill {
            id: format!("desk-{}", self.fills.len() + 1), symbol: order.symbol.clone(),
            side: order.side, qty: order.qty, price, fee_usd: Decimal::ZERO, time: at,
            snapshot_id: tag.snapshot_id, client_order_id: tag.client_order_id, liquidation: false, trigger: None,
        };
        self.fills.push(fill.clone());
        ready(Ok(fill))
    }
    fn drain_fills(&mut self) -> impl Future<Output = Result<Vec<Fill>, BrokerUnavailable>> + Send {
        ready(Ok(std::mem::take(&mut self.fills)))
    }
}

/// The service's registration: a user, the skill, its version 1 and a paper deployment, one id
/// for all four, dated `at`.
#[rustfmt::skip]
async fn register(store: &db::Store, skill: &Skill, id: Uuid, equity: Decimal, at: DateTime<Utc>)
    -> Result<(), Box<dyn std::error::Error>> {
    store.upsert_user(&db::User { id, email: None }).await?;
    store.create_skill(&db::SkillRecord { id, user_id: id, name: skill.name.clone(), created_at: at }).await?;
    let (body, model) = (serde_json::to_value(skill)?, skill.model.clone());
    store.add_skill_version(&db::SkillVersion { skill_id: id, version: 1, body, model, created_at: at }).await?;
    store.create_deployment(&db::Deployment {
        id, user_id: id, skill_id: id, skill_version: 1, broker: db::BrokerKind::Paper,
        status: db::DeploymentStatus::Active, initial_equity_usd: equity, equity_usd: equity,
        config: serde_json::json!({ "symbols": skill.context.symbols }), created_at: at,
        next_tick_at: None, lease_owner: None, lease_expires_at: None,
    }).await?;
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let yaml = include_str!("../../../examples/skills/eurusd-sma-cross.yaml");
    let skill = Arc::new(skill_schema::parse_skill(yaml, skill_schema::Format::Yaml)?.skill);
    let model = agent_runtime::builtin_model(&skill.model, &skill).ok_or("not an offline model")?;
    let (id, start) = (
        Uuid::from_u128(1),
        Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).unwrap(),
    );
    let reflector = Err("no reflection here".into());
    let skill_version = 1;
    let deployment = TickDeployment {
        user_id: id,
        deployment_id: id,
        skill_id: id,
        skill_version,
        skill: skill.clone(),
        reflector,
    };
    let equity = Decimal::from(10_000);
    // The store is the service's choice; the tick needs the deployment's rows stored in it.
    let store = db::connect("sqlite::memory:").await?;
    register(&store, &skill, id, equity, start).await?;

    let (feed, nothing) = (Arc::new(Feed(start)), Arc::new(Preloaded::new()));
    let mut desk = Desk {
        cash: equity,
        ..Desk::default()
    };
    let first = start + Duration::hours(80);
    let mut state = TickState::new(&deployment, equity, first);
    for now in (0..60).map(|h| first + Duration::hours(h)) {
        // The account comes from the broker, not from the context's portfolio source.
        let symbols = skill.context.symbols.clone();
        let ctx = ToolContext::new(now, RunMode::Trade, symbols, feed.clone(), nothing.clone());
        desk.mark = feed.bars("EURUSD", Interval::H1, now, 1)?[0].close;
        let out = run_tick(
            &deployment,
            &ctx,
            model.as_ref(),
            &mut desk,
            &mut state,
            &store,
        )
        .await?;
        if !matches!(out.verdict, Verdict::NoOp { .. }) {
            println!("{now}: {:?}", out.verdict);
        }
    }
    let equity = desk
        .portfolio(first + Duration::hours(60))
        .await?
        .equity_usd
        .round_dp(2);
    let rows = store.all_trades(id).await?.len();
    println!("equity {equity}; ledger rows stored: {rows}");
    Ok(())
}
