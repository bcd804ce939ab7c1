//! The baselines a comparison of agents needs: what holding the market ([`buy_and_hold`]) or
//! holding cash ([`flat_cash`]) did over the same ticks. Each is a [`BacktestResult`], so
//! [`Summary::of`](crate::Summary::of) measures it exactly as it measures a backtest: return,
//! drawdown, Sharpe and exposure from the per-tick equity.
//!
//! No model, no tick, no store: arithmetic over the bars the caller holds, in `Decimal`.
//!
//! **Buy-and-hold** of `k` symbols puts `1/k` of the initial equity `E` in each. A symbol is
//! bought at the close of its first bar that closes at a tick (the first tick when it has a bar
//! there), as an agent's market order at that tick fills: at the close moved against the buyer
//! by the account's slippage ([`PaperBroker::fill_price`]), paying the taker fee on the
//! notional, at 1× leverage. The notional is what the allocation pays with its fee:
//! `N = (E/k) / (1 + fee)`, `fee = N × fee_bps / 10,000`, quantity `q = N / fill`. From then on
//! it is marked at each tick at the symbol's last close at or before the tick — there is no
//! exit fee, as an agent's position still open at the end of a run is marked without one — so
//! the equity at a tick is `Σ (cash left + q × last close)`, rounded to [`USD_DP`]. With one
//! symbol the return at the last tick is `q × close_last − E`.
//!
//! **Flat cash** holds `E` at every tick: a return of exactly 0, no drawdown, no Sharpe.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use execution_engine::{PaperBroker, PaperBrokerConfig, USD_DP};
use memory_ledger::{LedgerScope, LedgerState, Proposals};
use rust_decimal::Decimal;
use tools::Preloaded;
use types::{Fill, Interval, OrderSide, Uuid};

use crate::{BacktestError, BacktestResult, TickPoint};

/// Basis points in one.
const BPS: Decimal = Decimal::from_parts(10_000, 0, 0, false, 0);

/// One held symbol of a buy-and-hold.
struct Holding<'a> {
    symbol: &'a str,
    bars: &'a [types::Bar],
    /// Bars closed at or before the current tick.
    seen: usize,
    /// Cash of the allocation not spent (the whole allocation before the purchase).
    cash: Decimal,
    /// `(quantity, fill price)` once bought.
    bought: Option<(Decimal, Decimal)>,
}

/// Buy-and-hold of `held` (an equal share of the initial equity each) over `ticks` (ascending
/// bar closes of `interval`), with the fee, slippage and equity of `broker`. See the
/// [module](self) for the arithmetic.
///
/// # Errors
/// [`BacktestError::NoTicks`] without a tick; [`BacktestError::Broker`] when `broker` is not a
/// valid paper account; [`BacktestError::Ledger`] when a purchase overflows the ledger's
/// arithmetic.
pub fn buy_and_hold(
    market: &Preloaded,
    held: &[String],
    ticks: &[DateTime<Utc>],
    interval: Interval,
    broker: &PaperBrokerConfig,
) -> Result<BacktestResult, BacktestError> {
    if ticks.is_empty() {
        return Err(BacktestError::NoTicks { interval });
    }
    let paper = PaperBroker::new(broker.clone())?;
    let initial = broker.initial_equity_usd;
    let share = if held.is_empty() {
        Decimal::ZERO
    } else {
        initial / Decimal::from(held.len())
    };
    let mut holdings: Vec<Holding<'_>> = held
        .iter()
        .map(|symbol| Holding {
            symbol,
            bars: market.all_bars(symbol, interval),
            seen: 0,
            cash: share,
            bought: None,
        })
        .collect();
    let mut points = Vec::with_capacity(ticks.len());
    let mut fills = Vec::new();
    let mut unrealized = Decimal::ZERO;
    for &at in ticks {
        let mut executed = false;
        let (mut equity, mut exposure) = (Decimal::ZERO, Decimal::ZERO);
        unrealized = Decimal::ZERO;
        for h in &mut holdings {
            while h
                .bars
                .get(h.seen)
                .is_some_and(|b| b.close_time(interval) <= at)
            {
                h.seen += 1;
            }
            let last = h.seen.checked_sub(1).map(|i| &h.bars[i]);
            if h.bought.is_none()
                && let Some(bar) = last.filter(|b| b.close_time(interval) == at)
            {
                let fill = paper.fill_price(OrderSide::Buy, bar.close);
                let notional = h.cash / (Decimal::ONE + broker.taker_fee_bps / BPS);
                let fee = (notional * broker.taker_fee_bps / BPS).round_dp(USD_DP);
                let qty = notional / fill;
                h.cash -= notional + fee;
                h.bought = Some((qty, fill));
                executed = true;
                fills.push(Fill {
                    id: format!("buy-and-hold-{}", fills.len() + 1),
                    symbol: h.symbol.to_owned(),
                    side: OrderSide::Buy,
                    qty,
                    price: fill,
                    fee_usd: fee,
                    time: at,
                    snapshot_id: None,
                    client_order_id: None,
                    liquidation: false,
                    trigger: None,
                });
            }
            equity += h.cash;
            if let (Some((qty, fill)), Some(bar)) = (h.bought, last) {
                equity += qty * bar.close;
                exposure += qty * bar.close;
                unrealized += (qty * (bar.close - fill)).round_dp(USD_DP);
            }
        }
        let kind = if executed {
            tick::OutcomeKind::Executed
        } else {
            tick::OutcomeKind::NoOp
        };
        points.push(TickPoint {
            tick_at: at,
            equity_usd: equity.round_dp(USD_DP).normalize(),
            exposure_usd: exposure.round_dp(USD_DP).normalize(),
            verdict: kind.as_str(),
            usage: agent_runtime::Usage::default(),
            cost_usd: Decimal::ZERO,
        });
    }
    // The ledger's rows of the purchases, as the materializer writes an agent's: open to the end.
    let mut ledger = LedgerState::new(LedgerScope {
        deployment_id: Uuid::nil(),
        skill_id: Uuid::nil(),
        skill_version: 0,
    });
    let trades = ledger
        .apply_fills(&fills, &Proposals::new(), &BTreeMap::new())?
        .rows
        .into_iter()
        .map(|w| w.row)
        .collect();
    Ok(BacktestResult {
        interval,
        initial_equity_usd: initial,
        points,
        trades,
        fills,
        notes: Vec::new(),
        reflection_failures: 0,
        unrealized_pnl_usd: unrealized.normalize(),
    })
}

/// Flat cash over `ticks`: `initial_equity` at every tick, no trade.
///
/// # Errors
/// [`BacktestError::NoTicks`] without a tick.
pub fn flat_cash(
    ticks: &[DateTime<Utc>],
    interval: Interval,
    initial_equity: Decimal,
) -> Result<BacktestResult, BacktestError> {
    if ticks.is_empty() {
        return Err(BacktestError::NoTicks { interval });
    }
    Ok(BacktestResult {
        interval,
        initial_equity_usd: initial_equity,
        points: ticks
            .iter()
            .map(|&tick_at| TickPoint {
                tick_at,
                equity_usd: initial_equity,
                exposure_usd: Decimal::ZERO,
                verdict: tick::OutcomeKind::NoOp.as_str(),
                usage: agent_runtime::Usage::default(),
                cost_usd: Decimal::ZERO,
            })
            .collect(),
        trades: Vec::new(),
        fills: Vec::new(),
        notes: Vec::new(),
        reflection_failures: 0,
        unrealized_pnl_usd: Decimal::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Summary;
    use chrono::TimeZone;
    use rust_decimal_macros::dec;
    use types::Bar;

    fn at(h: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 6, 4, h, 0, 0).unwrap()
    }

    fn bar(h: u32, close: Decimal) -> Bar {
        Bar {
            time: at(h),
            open: close,
            high: close,
            low: close,
            close,
            volume: Decimal::ONE,
        }
    }

    fn config() -> PaperBrokerConfig {
        let mut c = PaperBrokerConfig::new(dec!(10000));
        c.taker_fee_bps = dec!(5);
        c.slippage_bps = dec!(10);
        c
    }

    /// Bars open at hours 0, 1, 2 and close an hour later: ticks at 1, 2, 3.
    #[test]
    fn one_symbol_hand_checked() {
        let market = Preloaded::new().with_bars(
            "X",
            Interval::H1,
            vec![bar(0, dec!(100)), bar(1, dec!(110)), bar(2, dec!(99))],
        );
        let ticks = [at(1), at(2), at(3)];
        let r = buy_and_hold(&market, &["X".into()], &ticks, Interval::H1, &config()).unwrap();
        // fill 100 × 1.001 = 100.1; notional 10,000 / 1.0005; fee 0.05 % of it.
        let notional = dec!(10000) / dec!(1.0005);
        let fee = (notional * dec!(0.0005)).round_dp(USD_DP);
        let qty = notional / dec!(100.1);
        let equity = |close: Decimal| (dec!(10000) - notional - fee + qty * close).round_dp(8);
        let got: Vec<Decimal> = r.points.iter().map(|p| p.equity_usd).collect();
        assert_eq!(
            got,
            vec![equity(dec!(100)), equity(dec!(110)), equity(dec!(99))]
        );
        assert_eq!(r.points[0].verdict, "executed");
        assert_eq!(r.points[1].verdict, "no_op");
        let s = Summary::of(&r);
        assert_eq!(
            s.total_return_usd.round_dp(2),
            (qty * dec!(99) - dec!(10000)).round_dp(2)
        );
        assert_eq!((s.trades, s.open_trades, s.fills), (0, 1, 1));
        assert_eq!(s.pnl.fees_usd, fee);
    }

    #[test]
    fn equal_weight_buys_each_symbol_at_its_first_close_and_holds_cash_before() {
        let market = Preloaded::new()
            .with_bars("A", Interval::H1, vec![bar(0, dec!(10)), bar(1, dec!(20))])
            .with_bars("B", Interval::H1, vec![bar(1, dec!(50))]);
        let mut c = config();
        c.taker_fee_bps = Decimal::ZERO;
        c.slippage_bps = Decimal::ZERO;
        let held = ["A".to_owned(), "B".to_owned()];
        let r = buy_and_hold(&market, &held, &[at(1), at(2)], Interval::H1, &c).unwrap();
        // Tick 1: A bought (500 units), B still cash. Tick 2: A at 20, B bought at 50.
        assert_eq!(r.points[0].equity_usd, dec!(10000));
        assert_eq!(r.points[1].equity_usd, dec!(15000));
        assert_eq!(r.points[1].exposure_usd, dec!(15000));
        assert_eq!(r.fills.len(), 2);
    }

    #[test]
    fn flat_cash_is_flat() {
        let r = flat_cash(&[at(1), at(2), at(3)], Interval::H1, dec!(2500)).unwrap();
        let s = Summary::of(&r);
        assert_eq!(s.total_return_usd, Decimal::ZERO);
        assert_eq!(s.max_drawdown_pct, Decimal::ZERO);
        assert_eq!(s.sharpe, None);
        assert!(flat_cash(&[], Interval::H1, dec!(1)).is_err());
    }
}
