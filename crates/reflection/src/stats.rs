//! `builtin/stats-reflection`: lessons computed from the ledger alone, without any model.
//!
//! Deterministic and offline: the same trades give the same bytes. It states what the numbers
//! say and nothing more — sample sizes in every bullet, and an explicit warning when the sample
//! is too small to mean anything.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use types::TradeRecord;
use types::text;

use types::{Finding, LessonDirection, LessonSetup, Observation, SetupRegime, Side};

use crate::bounds::bound_lessons;
use crate::observe::{Figures, SMALL_SAMPLE, render, scope_of, supports};

/// The model id of the offline statistical reflection.
pub const STATS_REFLECTION_MODEL: &str = "builtin/stats-reflection";

/// Below this many trades the whole note carries a "tiny sample" warning.
pub const TINY_SAMPLE: usize = 5;

/// A group needs this many trades to be called a recurring setup (best / worst).
pub const MIN_RECURRING: usize = 2;

/// One setup: symbol × side × regime at entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SetupKey {
    /// The traded symbol.
    pub symbol: String,
    /// `long` / `short`.
    pub side: &'static str,
    /// The entry regime tag, `untagged` when the row has none.
    pub regime: &'static str,
    /// The side, typed.
    pub side_value: Side,
    /// The entry regime, typed.
    pub regime_value: SetupRegime,
}

impl SetupKey {
    fn of(r: &TradeRecord) -> Self {
        Self {
            symbol: r.symbol.clone(),
            side: match r.side {
                types::Side::Long => "long",
                types::Side::Short => "short",
            },
            regime: r.entry_regime_tag.map_or("untagged", |t| t.as_str()),
            side_value: r.side,
            regime_value: SetupRegime::of(r.entry_regime_tag),
        }
    }

    /// `BTC long in ranging regime`.
    #[must_use]
    pub fn label(&self) -> String {
        format!("{} {} in {} regime", self.symbol, self.side, self.regime)
    }
}

/// A closed trade's holding time in minutes: the row's `holding_minutes`, else exit − entry.
pub(crate) fn hold_minutes(r: &TradeRecord) -> Decimal {
    r.holding_minutes.unwrap_or_else(|| {
        r.exit_tick_at.map_or(Decimal::ZERO, |exit| {
            Decimal::from((exit - r.entry_tick_at).num_minutes().max(0))
        })
    })
}

/// Aggregates of a set of closed trades. Net PnL = `realized_pnl_usd` (gross) − `fees_usd`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetupStats {
    /// Trades aggregated.
    pub trades: usize,
    /// Net PnL > 0.
    pub wins: usize,
    /// Net PnL < 0.
    pub losses: usize,
    /// Σ (realized PnL − fees), in USD.
    pub net_pnl_usd: Decimal,
    /// Σ realized PnL before fees, in USD.
    pub gross_pnl_usd: Decimal,
    /// Σ fees, in USD.
    pub fees_usd: Decimal,
    /// Sum of holding minutes (the row's `holding_minutes`, else exit − entry).
    pub holding_minutes: Decimal,
}

impl SetupStats {
    pub(crate) fn add(&mut self, r: &TradeRecord) {
        let net = r.realized_pnl_usd - r.fees_usd;
        self.trades += 1;
        if net > Decimal::ZERO {
            self.wins += 1;
        } else if net < Decimal::ZERO {
            self.losses += 1;
        }
        self.net_pnl_usd += net;
        self.gross_pnl_usd += r.realized_pnl_usd;
        self.fees_usd += r.fees_usd;
        let minutes = hold_minutes(r);
        self.holding_minutes += minutes;
    }

    fn n(&self) -> Decimal {
        Decimal::from(self.trades.max(1))
    }

    /// Average net PnL per trade (zero for an empty set).
    #[must_use]
    pub fn avg_net_usd(&self) -> Decimal {
        self.net_pnl_usd / self.n()
    }

    /// Win rate in percent (wins × 100 / n).
    #[must_use]
    pub fn win_rate_pct(&self) -> Decimal {
        Decimal::from(self.wins) * Decimal::ONE_HUNDRED / self.n()
    }

    /// Average holding time in whole minutes (rounded half away from zero).
    #[must_use]
    pub fn avg_hold_minutes(&self) -> i64 {
        let avg = (self.holding_minutes / self.n())
            .round_dp_with_strategy(0, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
        avg.to_i64().unwrap_or(i64::MAX)
    }

    /// `n=3, win rate 33.3% (1 of 3), average net -$4.20, average hold 45m`.
    #[must_use]
    pub fn summary(&self) -> String {
        format!(
            "n={}, win rate {}% ({} of {}), average net {}, average hold {}",
            self.trades,
            text::grouped_fixed(self.win_rate_pct(), 1),
            self.wins,
            self.trades,
            text::signed_money(self.avg_net_usd()),
            text::duration_minutes(self.avg_hold_minutes()),
        )
    }
}

/// Every trade aggregated, and per setup (symbol × side × entry regime), in key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LedgerStats {
    /// Every trade together.
    pub overall: SetupStats,
    /// Per setup (symbol × side × entry regime).
    pub setups: BTreeMap<SetupKey, SetupStats>,
}

impl LedgerStats {
    /// Aggregates `trades` (the caller passes closed rows; open rows would count with their
    /// partial PnL).
    #[must_use]
    pub fn of<'a>(trades: impl IntoIterator<Item = &'a TradeRecord>) -> Self {
        let mut stats = Self::default();
        for r in trades {
            stats.overall.add(r);
            stats.setups.entry(SetupKey::of(r)).or_default().add(r);
        }
        stats
    }

    /// The recurring setup (n ≥ [`MIN_RECURRING`]) with the lowest average net PnL, if that
    /// average is below zero. Ties: more trades first, then key order.
    #[must_use]
    pub fn worst(&self) -> Option<(&SetupKey, &SetupStats)> {
        self.recurring()
            .filter(|(_, s)| s.avg_net_usd() < Decimal::ZERO)
            .min_by(|a, b| {
                a.1.avg_net_usd()
                    .cmp(&b.1.avg_net_usd())
                    .then_with(|| b.1.trades.cmp(&a.1.trades))
                    .then_with(|| a.0.cmp(b.0))
            })
    }

    /// The recurring setup with the highest average net PnL, if that average is above zero.
    /// Ties: more trades first, then key order.
    #[must_use]
    pub fn best(&self) -> Option<(&SetupKey, &SetupStats)> {
        self.recurring()
            .filter(|(_, s)| s.avg_net_usd() > Decimal::ZERO)
            .min_by(|a, b| {
                b.1.avg_net_usd()
                    .cmp(&a.1.avg_net_usd())
                    .then_with(|| b.1.trades.cmp(&a.1.trades))
                    .then_with(|| a.0.cmp(b.0))
            })
    }

    pub(crate) fn recurring(&self) -> impl Iterator<Item = (&SetupKey, &SetupStats)> {
        self.setups
            .iter()
            .filter(|(_, s)| s.trades >= MIN_RECURRING)
    }
}

/// The observations of `builtin/stats-reflection` for `trades` (the window's closed trades),
/// most telling first, at most [`types::MAX_OBSERVATIONS`], each one the ledger supports:
/// 1. the whole window: a small sample under [`crate::SMALL_SAMPLE`] trades, else whether it
///    won, lost or was mixed (so there is always one observation);
/// 2. the worst recurring setup (n ≥ [`MIN_RECURRING`]) that lost money: avoid;
/// 3. the best recurring setup that made money: repeat;
/// 4. then, setup by setup in symbol × side × regime order, the recurring setups' other
///    supported findings (late exits, fees eating the edge, losers stopped quickly or held too
///    long), each with caution.
#[must_use]
pub fn stats_observations(trades: &[&TradeRecord]) -> Vec<Observation> {
    if trades.is_empty() {
        return Vec::new();
    }
    let stats = LedgerStats::of(trades.iter().copied());
    let mut out: Vec<Observation> = Vec::new();
    let mut push = |setup: LessonSetup, finding: Finding, direction: LessonDirection| {
        let o = Observation {
            setup,
            finding,
            direction,
            note: None,
        };
        if out.len() >= types::MAX_OBSERVATIONS || out.contains(&o) {
            return;
        }
        let scope = scope_of(&o.setup, trades);
        if !scope.is_empty() && supports(&o, &Figures::of(&scope, trades)).is_ok() {
            out.push(o);
        }
    };
    let whole = LessonSetup::default();
    if stats.overall.trades < SMALL_SAMPLE {
        push(whole, Finding::SmallSample, LessonDirection::Caution);
    } else {
        push(whole.clone(), Finding::Wins, LessonDirection::Repeat);
        push(whole.clone(), Finding::Loses, LessonDirection::Caution);
        push(whole, Finding::Mixed, LessonDirection::Caution);
    }
    let setup = |k: &SetupKey| LessonSetup {
        symbol: Some(k.symbol.clone()),
        side: Some(k.side_value),
        regime: Some(k.regime_value),
    };
    if let Some((k, _)) = stats.worst() {
        push(setup(k), Finding::Loses, LessonDirection::Avoid);
    }
    if let Some((k, _)) = stats.best() {
        push(setup(k), Finding::Wins, LessonDirection::Repeat);
    }
    for (k, _) in stats.recurring() {
        for finding in [
            Finding::GivesBackGains,
            Finding::FeesEatEdge,
            Finding::StoppedQuickly,
            Finding::HeldTooLong,
        ] {
            push(setup(k), finding, LessonDirection::Caution);
        }
    }
    out
}

/// The lessons text of `builtin/stats-reflection` for `trades`: its observations
/// ([`stats_observations`]) rendered, at most [`types::MAX_LESSONS_CHARS`] characters. Empty
/// for no trades.
#[must_use]
pub fn stats_lessons(trades: &[&TradeRecord]) -> String {
    let lines: Vec<String> = stats_observations(trades)
        .iter()
        .map(|o| {
            let scope = scope_of(&o.setup, trades);
            render(o, &Figures::of(&scope, trades), &scope)
        })
        .collect();
    bound_lessons(&lines.join("\n"), false).text
}
