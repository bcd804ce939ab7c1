//! The numbers of a run's `summary.json` ([`Summary::of`]): PnL, drawdown, Sharpe, exposure,
//! verdicts, tokens and cost, from a [`BacktestResult`].

use std::collections::BTreeMap;

use agent_runtime::Usage;
use chrono::{DateTime, Utc};
use execution_engine::USD_DP;
use rust_decimal::Decimal;
use serde::Serialize;
use types::{TradeRecord, TradeStatus};

use crate::BacktestResult;

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
            .get(tick::OutcomeKind::ModelError.as_str())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TickPoint;
    use chrono::TimeZone;
    use types::{Interval, Side, Uuid};

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
