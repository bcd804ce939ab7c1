//! Blind backtests (`sim-worker run --blind`): the model trades a market it cannot recognise.
//!
//! A model trained on the years a backtest replays may *remember* them: no point-in-time guard
//! on the data stops temporal leakage through the weights. A blind run shows the model an
//! anonymised world, deterministically:
//!
//! - **Symbols** become neutral names in the skill's order: `ASSET_A`, `ASSET_B`, … — in the
//!   skill's text, the context, the tool results, news and event text.
//! - **Time** is relative to the run's first tick: `2017-05-04T10:00:00Z` reads `day 12 10:00`
//!   when the run started on 2017-04-22 (`day 0`; earlier bars are `day -1`, …), a row's
//!   `05-04T10:00` the same; weekdays are dropped; in free text (news, events, the skill's own
//!   words) a year reads `[year]` and a month name `[month]`.
//! - **Prices** are multiplied by a per-symbol factor `k = m · 10^e` with `m` one of
//!   [`MANTISSAS`] (chosen from the symbol and the seed) and `e` putting the first close in
//!   `[10, 100)`; quantities are divided by `k`, so every notional, margin, PnL, fee, equity
//!   figure and percentage is unchanged. Each `m` is `2^a · 5^b`: `k · price` and `qty / k`
//!   are exact decimals, so a rule that compares prices decides exactly as on the real ones.
//!
//! The model's proposal is mapped back ([`Blind::real_proposal`]: its symbol to the real one,
//! its stop and target divided by `k`) before the execution engine sees it; the engine, the
//! broker, the ledger, the report and the store keep real symbols, times and prices. What the
//! tick *stores* as the prompt (the firehose) is what the model read: the blind text.
//!
//! The pieces: [`Blind::context`] wraps a tick's [`tools::ToolContext`] (every data source
//! rescaled and renamed, its [`tools::Lens`] set), [`Blind::skill`] is the skill as the model
//! reads it, [`Blind::trade_record`] / [`Blind::portfolio`] the ledger rows and the account as it
//! reads them, [`BlindModel`] a `LanguageModel` decorator for calls whose prompt is built from
//! anonymised data outside a tick (reflection).
//!
//! What blind mode refuses ([`Blind::check_skill`]): a skill that reads the outcome memory
//! (`tradingMemory`, recall tools) or lists MCP servers — their answers carry prices and
//! names this crate cannot vouch for.
//!
//! ```
//! use std::collections::BTreeMap;
//! use chrono::NaiveDate;
//! use rust_decimal::Decimal;
//!
//! let symbols = vec!["EURUSD".to_owned()];
//! let first = BTreeMap::from([("EURUSD".to_owned(), Decimal::new(108_512, 5))]);
//! let day0 = NaiveDate::from_ymd_opt(2017, 4, 22).unwrap();
//! let blind = blind::Blind::new(&symbols, &first, day0, 0).unwrap();
//! assert_eq!(blind.alias("EURUSD"), Some("ASSET_A"));
//! let k = blind.scale("EURUSD").unwrap();
//! // The same price, rescaled and back, exactly.
//! let shown = blind.price("EURUSD", Decimal::new(108_512, 5));
//! assert_eq!(shown / k, Decimal::new(108_512, 5));
//! assert!(!shown.to_string().contains("1.08512"));
//! ```

mod leaks;
mod model;
mod sources;
mod text;

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use skill_schema::Skill;
use types::{PortfolioSnapshot, Position, ProposedAction, TradeRecord};

pub use leaks::{Leak, LeakKind, LeakScanner};
pub use model::BlindModel;
pub use sources::{BlindDerivatives, BlindEvents, BlindMarket, BlindNews, BlindPortfolio};

/// The mantissas of the price factors: each `2^a · 5^b`, so that multiplying a price and
/// dividing a quantity by `m · 10^e` stays an exact decimal; none is a power of ten (a pure
/// shift of the decimal point would keep the real digits).
pub const MANTISSAS: [Decimal; 8] = [
    Decimal::from_parts(125, 0, 0, false, 2), // 1.25
    Decimal::from_parts(16, 0, 0, false, 1),  // 1.6
    Decimal::from_parts(2, 0, 0, false, 0),   // 2
    Decimal::from_parts(25, 0, 0, false, 1),  // 2.5
    Decimal::from_parts(32, 0, 0, false, 1),  // 3.2
    Decimal::from_parts(4, 0, 0, false, 0),   // 4
    Decimal::from_parts(5, 0, 0, false, 0),   // 5
    Decimal::from_parts(64, 0, 0, false, 1),  // 6.4
];

/// Common names of assets, by symbol (lower case): renamed with the symbol (`Bitcoin` reads
/// `ASSET_A` when BTC is traded).
pub const ASSET_NAMES: &[(&str, &[&str])] = &[
    ("BTC", &["bitcoins", "bitcoin", "xbt"]),
    ("ETH", &["ethereum", "ether"]),
    ("SOL", &["solana"]),
    ("XRP", &["ripple"]),
    ("DOGE", &["dogecoin"]),
    ("ADA", &["cardano"]),
    ("LTC", &["litecoin"]),
    ("LINK", &["chainlink"]),
    ("DOT", &["polkadot"]),
];

/// Why a blind run cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlindError {
    /// A traded symbol has no positive first price to choose its factor from.
    #[error("blind mode: no positive first price for {symbol}: its price factor cannot be chosen")]
    NoFirstPrice {
        /// The symbol.
        symbol: String,
    },
    /// The skill reads something blind mode cannot anonymise.
    #[error("blind mode does not support {what}: {why}")]
    Unsupported {
        /// The skill's setting.
        what: String,
        /// Why.
        why: String,
    },
    /// The skill could not be rewritten for the model (its anonymised text no longer parses).
    #[error("blind mode: the anonymised skill does not parse: {0}")]
    Skill(String),
}

/// One traded symbol's disguise.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Asset {
    real: String,
    alias: String,
    /// Shown price = real price × `scale`.
    scale: Decimal,
    /// The first price, around which a number in free text is taken for a price of it.
    first: Decimal,
}

/// A blind run's disguise: per symbol its neutral name and price factor, and the run's day 0.
/// Immutable and deterministic: the same symbols, first prices, day 0 and seed give the same
/// disguise, so a blind re-run shows the model byte-identical prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blind {
    assets: Vec<Asset>,
    day0: NaiveDate,
    /// Texts to replace, longest first: a real symbol (an FX pair's `EUR/USD` form, an asset's
    /// common name from [`ASSET_NAMES`]) → alias.
    names: Vec<(String, String)>,
}

impl Blind {
    /// The disguise of `symbols` (in the skill's order: the first is `ASSET_A`), each price
    /// factor chosen from its first price (`first_prices`) and `seed`, with `day0` the run's
    /// first tick's date.
    ///
    /// # Errors
    /// [`BlindError::NoFirstPrice`] when a symbol has no positive first price.
    pub fn new(
        symbols: &[String],
        first_prices: &BTreeMap<String, Decimal>,
        day0: NaiveDate,
        seed: u64,
    ) -> Result<Self, BlindError> {
        let mut assets = Vec::with_capacity(symbols.len());
        for (i, real) in symbols.iter().enumerate() {
            let first = first_prices
                .get(real)
                .copied()
                .filter(|p| *p > Decimal::ZERO)
                .ok_or_else(|| BlindError::NoFirstPrice {
                    symbol: real.clone(),
                })?;
            assets.push(Asset {
                real: real.clone(),
                alias: alias_name(i),
                scale: factor(real, first, seed),
                first,
            });
        }
        let mut names: Vec<(String, String)> = Vec::new();
        for a in &assets {
            names.push((a.real.clone(), a.alias.clone()));
            // An FX pair's written forms: `EUR/USD`, `EUR-USD`, `EUR USD`.
            if a.real.len() == 6 && a.real.bytes().all(|b| b.is_ascii_uppercase()) {
                for sep in ['/', '-', ' '] {
                    names.push((
                        format!("{}{sep}{}", &a.real[..3], &a.real[3..]),
                        a.alias.clone(),
                    ));
                }
            }
        }
        for (symbol, common) in ASSET_NAMES {
            if let Some(a) = assets.iter().find(|a| a.real == *symbol) {
                names.extend(common.iter().map(|n| ((*n).to_owned(), a.alias.clone())));
            }
        }
        names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        names.dedup_by(|a, b| a.0 == b.0);
        Ok(Self {
            assets,
            day0,
            names,
        })
    }

    /// Refuses a skill blind mode cannot anonymise: one that reads the outcome memory (the
    /// `<trading_memory>` block or a recall tool: its rows carry real prices and names) or lists
    /// MCP servers (their results are not this crate's to rewrite).
    ///
    /// # Errors
    /// [`BlindError::Unsupported`] naming the setting.
    pub fn check_skill(skill: &Skill) -> Result<(), BlindError> {
        if skill.reads_outcome_memory() {
            return Err(BlindError::Unsupported {
                what: "the outcome memory (context.memory.tradingMemory or a recall tool)".into(),
                why: "its recalled rows carry real prices and names".into(),
            });
        }
        if !skill.tools.mcp_servers.is_empty() {
            return Err(BlindError::Unsupported {
                what: "tools.mcpServers".into(),
                why: "an MCP server's results cannot be anonymised".into(),
            });
        }
        Ok(())
    }

    /// The run's day 0 (the first tick's date).
    #[must_use]
    pub const fn day0(&self) -> NaiveDate {
        self.day0
    }

    /// The neutral name of `real`, if it is a traded symbol.
    #[must_use]
    pub fn alias(&self, real: &str) -> Option<&str> {
        self.assets
            .iter()
            .find(|a| a.real == real)
            .map(|a| a.alias.as_str())
    }

    /// The real symbol behind the neutral name `alias`.
    #[must_use]
    pub fn real(&self, alias: &str) -> Option<&str> {
        self.assets
            .iter()
            .find(|a| a.alias == alias)
            .map(|a| a.real.as_str())
    }

    /// The price factor of `real` (shown = real × factor).
    #[must_use]
    pub fn scale(&self, real: &str) -> Option<Decimal> {
        self.assets.iter().find(|a| a.real == real).map(|a| a.scale)
    }

    /// `real`'s name as shown: its alias, or `"OTHER"` for a symbol the run does not trade.
    #[must_use]
    pub fn shown_symbol(&self, real: &str) -> String {
        self.alias(real).unwrap_or("OTHER").to_owned()
    }

    /// A price of `real` as shown (unchanged for a symbol the run does not trade).
    #[must_use]
    pub fn price(&self, real: &str, price: Decimal) -> Decimal {
        match self.scale(real) {
            Some(k) => price.checked_mul(k).unwrap_or(Decimal::ZERO),
            None => price,
        }
    }

    /// A quantity of `real` as shown: divided by its factor (notional unchanged).
    #[must_use]
    pub fn qty(&self, real: &str, qty: Decimal) -> Decimal {
        match self.scale(real) {
            Some(k) => qty.checked_div(k).unwrap_or(Decimal::ZERO),
            None => qty,
        }
    }

    /// A price the model wrote for the symbol it calls `alias`, back in real terms.
    #[must_use]
    pub fn real_price(&self, alias: &str, shown: Decimal) -> Decimal {
        match self.assets.iter().find(|a| a.alias == alias) {
            Some(a) => shown.checked_div(a.scale).unwrap_or(Decimal::ZERO),
            None => shown,
        }
    }

    /// The model's proposal in real terms: its symbol the real one, its stop and target divided
    /// by the factor. Sizes are USD notional and stay as written. A symbol that is no alias is
    /// kept as written (the engine refuses it: `R1_UNKNOWN_SYMBOL`).
    #[must_use]
    pub fn real_proposal(&self, shown: &ProposedAction) -> ProposedAction {
        let mut p = shown.clone();
        if let Some(real) = self.real(&shown.symbol) {
            p.stop = shown.stop.map(|s| self.real_price(&shown.symbol, s));
            p.target = shown.target.map(|t| self.real_price(&shown.symbol, t));
            p.symbol = real.to_owned();
        }
        p
    }

    /// A position as shown.
    #[must_use]
    pub fn position(&self, p: &Position) -> Position {
        Position {
            symbol: self.shown_symbol(&p.symbol),
            qty: self.qty(&p.symbol, p.qty),
            entry_price: self.price(&p.symbol, p.entry_price),
            mark_price: self.price(&p.symbol, p.mark_price),
            liquidation_price: p.liquidation_price.map(|l| self.price(&p.symbol, l)),
            ..p.clone()
        }
    }

    /// The account as shown: positions renamed and rescaled; equity, margin and PnL unchanged.
    #[must_use]
    pub fn portfolio(&self, p: &PortfolioSnapshot) -> PortfolioSnapshot {
        PortfolioSnapshot {
            positions: p.positions.iter().map(|x| self.position(x)).collect(),
            ..p.clone()
        }
    }

    /// Marks by shown symbol, rescaled.
    #[must_use]
    pub fn marks(&self, marks: &BTreeMap<String, Decimal>) -> BTreeMap<String, Decimal> {
        marks
            .iter()
            .map(|(s, m)| (self.shown_symbol(s), self.price(s, *m)))
            .collect()
    }

    /// A ledger row as shown: symbol renamed, prices rescaled, quantities divided; USD figures
    /// (sizes, PnL, fees, MFE/MAE) unchanged; the reasons (the model's own words) masked.
    #[must_use]
    pub fn trade_record(&self, r: &TradeRecord) -> TradeRecord {
        let s = &r.symbol;
        TradeRecord {
            symbol: self.shown_symbol(s),
            entry_price: self.price(s, r.entry_price),
            exit_price: r.exit_price.map(|p| self.price(s, p)),
            opened_qty: self.qty(s, r.opened_qty),
            open_qty: self.qty(s, r.open_qty),
            entry_reason: r.entry_reason.as_deref().map(|t| self.mask(t)),
            exit_reason: r.exit_reason.as_deref().map(|t| self.mask(t)),
            ..r.clone()
        }
    }

    /// The skill as the model reads it: every text in it masked ([`Blind::mask`]: symbols →
    /// names, ISO dates → relative days, years and month names hidden), so the traded symbols,
    /// the allowed symbols and the rules all speak of `ASSET_A`…; the model ids stay as written
    /// (they are not shown, and a dated model id is not a date of the market).
    ///
    /// # Errors
    /// [`BlindError::Skill`] when the rewritten document no longer deserialises.
    pub fn skill(&self, skill: &Skill) -> Result<Skill, BlindError> {
        let value = serde_json::to_value(skill).map_err(|e| BlindError::Skill(e.to_string()))?;
        let masked = tools::map_json_strings(value, &|s| self.mask(s));
        let mut shown: Skill =
            serde_json::from_value(masked).map_err(|e| BlindError::Skill(e.to_string()))?;
        shown.model.clone_from(&skill.model);
        shown
            .context
            .memory
            .reflection
            .model
            .clone_from(&skill.context.memory.reflection.model);
        Ok(shown)
    }

    /// Free text (news, event titles, the skill's words, the model's reasons) as shown: the
    /// traded symbols renamed, ISO dates relative to day 0, years `[year]`, month names
    /// `[month]`, weekday names `[weekday]`, and a number that could be a price of a traded
    /// symbol (between a quarter and four times its first price, with a decimal point or from
    /// 100 up: `1.0912` of EURUSD, `$64,250` of BTC) `[price]`.
    #[must_use]
    pub fn mask(&self, text: &str) -> String {
        text::rewrite(self, text, None, true)
    }

    /// A text of the tick at `now` as the model reads it (the lens): ISO dates and times, and a
    /// row's `MM-DDTHH:MM` (its year taken as `now`'s or the one before), relative to day 0;
    /// the Time line's weekday dropped; the traded symbols renamed. Numbers are left alone: the
    /// sources rescale prices before anything is written.
    #[must_use]
    pub fn show(&self, text: &str, now: DateTime<Utc>) -> String {
        text::rewrite(self, text, Some(now), false)
    }

    /// The lens of a tick at `now` ([`Blind::show`]).
    #[must_use]
    pub fn lens(self: &Arc<Self>, now: DateTime<Utc>) -> Arc<dyn tools::Lens> {
        Arc::new(TickLens {
            blind: Arc::clone(self),
            now,
        })
    }

    /// The tick's context as the model's tools read it: the symbols renamed, every source
    /// wrapped to rename and rescale what it serves (and to take the names back on the way in),
    /// and the lens of `ctx.now` set. The ledger's memory sections and the outcome memory are
    /// not carried (the tick renders the memory rows itself, from [`Blind::trade_record`]; the
    /// outcome memory is refused by [`Blind::check_skill`]), nor are external tools.
    #[must_use]
    pub fn context(self: &Arc<Self>, ctx: &tools::ToolContext) -> tools::ToolContext {
        tools::ToolContext {
            now: ctx.now,
            mode: ctx.mode,
            symbols: ctx.symbols.iter().map(|s| self.shown_symbol(s)).collect(),
            market: Arc::new(BlindMarket::new(ctx.market.clone(), Arc::clone(self))),
            portfolio: Arc::new(BlindPortfolio::new(ctx.portfolio.clone(), Arc::clone(self))),
            news: Arc::new(BlindNews::new(ctx.news.clone(), Arc::clone(self))),
            events: Arc::new(BlindEvents::new(ctx.events.clone(), Arc::clone(self))),
            derivatives: Arc::new(BlindDerivatives::new(
                ctx.derivatives.clone(),
                Arc::clone(self),
            )),
            memory: Arc::new(tools::NoData),
            trade_memory: Arc::new(tools::NoData),
            external: Arc::new([]),
            lens: Some(self.lens(ctx.now)),
        }
    }

    /// Whether `n` could be a price of a traded symbol (see [`Blind::mask`]).
    fn looks_like_a_price(&self, n: Decimal) -> bool {
        let four = Decimal::from(4);
        self.assets.iter().any(|a| {
            let low = a.first / four;
            let high = a.first.checked_mul(four).unwrap_or(Decimal::MAX);
            n >= low && n <= high
        })
    }

    fn real_of(&self, alias: &str) -> Result<&str, tools::DataError> {
        self.real(alias).ok_or_else(|| {
            tools::DataError::new(
                "blind",
                format!(
                    "no symbol {alias} in this run (symbols are {})",
                    self.aliases()
                ),
            )
        })
    }

    fn aliases(&self) -> String {
        self.assets
            .iter()
            .map(|a| a.alias.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The lens of one tick.
struct TickLens {
    blind: Arc<Blind>,
    now: DateTime<Utc>,
}

impl tools::Lens for TickLens {
    fn show(&self, text: &str) -> String {
        self.blind.show(text, self.now)
    }
}

/// `ASSET_A` … `ASSET_Z`, then `ASSET_AA`, `ASSET_AB`, ….
fn alias_name(mut i: usize) -> String {
    let mut letters = Vec::new();
    loop {
        // `i % 26` is below 26: the cast cannot truncate.
        letters.push(b'A' + (i % 26) as u8);
        if i < 26 {
            break;
        }
        i = i / 26 - 1;
    }
    letters.reverse();
    format!("ASSET_{}", String::from_utf8_lossy(&letters))
}

/// FNV-1a of the symbol and the seed: which mantissa a symbol gets.
fn mantissa(symbol: &str, seed: u64) -> Decimal {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for b in symbol.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // Below 8: the cast cannot truncate.
    MANTISSAS[(h % MANTISSAS.len() as u64) as usize]
}

/// `m · 10^e` with `e` putting `first · m · 10^e` in `[10, 100)`.
fn factor(symbol: &str, first: Decimal, seed: u64) -> Decimal {
    let m = mantissa(symbol, seed);
    let ten = Decimal::TEN;
    let mut k = m;
    // Bounded: a positive Decimal is within 10^±28, so at most ~60 steps either way.
    for _ in 0..64 {
        let shown = first.checked_mul(k).unwrap_or(Decimal::MAX);
        if shown >= Decimal::ONE_HUNDRED {
            k /= ten;
        } else if shown < ten {
            match k.checked_mul(ten) {
                Some(next) => k = next,
                None => break,
            }
        } else {
            break;
        }
    }
    k.normalize()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn aliases_count_like_spreadsheet_columns() {
        assert_eq!(alias_name(0), "ASSET_A");
        assert_eq!(alias_name(25), "ASSET_Z");
        assert_eq!(alias_name(26), "ASSET_AA");
        assert_eq!(alias_name(27), "ASSET_AB");
    }

    #[test]
    fn factors_put_the_first_price_between_10_and_100_exactly() {
        for (first, symbol) in [
            (dec!(1.08512), "EURUSD"),
            (dec!(64250.5), "BTC"),
            (dec!(3120.25), "ETH"),
            (dec!(0.00001234), "PEPE"),
        ] {
            let k = factor(symbol, first, 0);
            let shown = first * k;
            assert!(shown >= dec!(10) && shown < dec!(100), "{symbol}: {shown}");
            // Exact both ways.
            assert_eq!(shown / k, first, "{symbol}");
            assert_eq!((dec!(3.3333) / k) * k, dec!(3.3333), "{symbol}");
        }
    }

    #[test]
    fn proposals_map_back_to_real_symbols_and_prices() {
        let symbols = vec!["BTC".to_owned(), "ETH".to_owned()];
        let first = BTreeMap::from([
            ("BTC".to_owned(), dec!(60000)),
            ("ETH".to_owned(), dec!(3000)),
        ]);
        let b = Blind::new(
            &symbols,
            &first,
            NaiveDate::from_ymd_opt(2024, 1, 1).unwrap(),
            7,
        )
        .unwrap();
        assert_eq!(b.alias("ETH"), Some("ASSET_B"));
        let k = b.scale("ETH").unwrap();
        let shown = ProposedAction {
            action: types::OrderAction::OpenLong,
            symbol: "ASSET_B".into(),
            size_usd: Some(dec!(1000)),
            leverage: None,
            reason: "ASSET_B broke out".into(),
            confidence: None,
            stop: Some(dec!(2900) * k),
            target: Some(dec!(3300) * k),
        };
        let real = b.real_proposal(&shown);
        assert_eq!(real.symbol, "ETH");
        assert_eq!(real.stop, Some(dec!(2900)));
        assert_eq!(real.target, Some(dec!(3300)));
        assert_eq!(real.size_usd, Some(dec!(1000)));
    }

    #[test]
    fn a_symbol_without_a_first_price_is_named() {
        let err = Blind::new(
            &["SOL".to_owned()],
            &BTreeMap::new(),
            NaiveDate::from_ymd_opt(2024, 1, 1).unwrap(),
            0,
        )
        .unwrap_err();
        assert!(err.to_string().contains("SOL"), "{err}");
    }
}
