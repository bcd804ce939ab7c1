//! A recorded tick: a BTC + ETH thesis skill on 1h bars, news, an FOMC event, one open BTC
//! position, a working take-profit, a rejected last decision and the ledger's memory sections.
#![allow(dead_code)]

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use rust_decimal::Decimal;
use rust_decimal_macros::dec;
use skill_schema::{EventKind, Format, Skill, parse_skill};
use tools::{
    FundingRate, LastDecisionSnapshot, NewsItem, OpenInterestPoint, OpenOrder, Preloaded, RunMode,
    ToolContext, VerdictStatus,
};
use types::test_support::flat_portfolio;
use types::{Bar, Interval, MarketEvent, OrderSide, PortfolioSnapshot, Position, RuleCode, Side};

pub(crate) fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 5, 12, 0, 0).unwrap()
}

pub(crate) const SKILL_YAML: &str = r"
name: BTC/ETH funding-reversion thesis
version: 3
model: anthropic/claude-sonnet-4.6
maxSteps: 4
strategy:
  mode: thesis
  leash: adaptive
  thesis: Fade crowded perp positioning when funding is stretched and price stalls.
  avoid:
    - Do not fade a move within 2 hours of FOMC, CPI or NFP releases
context:
  barsLookback: 24
  barsInterval: 1h
  symbols: [BTC, ETH]
  newsLookbackHours: 12
  newsTopK: 8
  memory:
    recentTradesK: 3
  events:
    enabled: true
    lookaheadHours: 24
    minImportance: 0.5
    kinds: [fomc, cpi, nfp]
risk:
  maxPositionPct: 40
  maxTotalExposurePct: 70
  maxLeverage: 5
  minOrderUsd: 25
  maxOrderUsd: 5000
  maxOrdersPerHour: 4
  haltDrawdownPct: 15
  haltDailyLossPct: 4
  allowedSymbols: [BTC, ETH]
tools:
  builtIn: [propose_order, get_funding_rate, get_open_interest, get_position_risk, fetch_news_sentiment]
";

pub(crate) fn skill() -> Skill {
    parse_skill(SKILL_YAML, Format::Yaml).unwrap().skill
}

/// Deterministic pseudo-random walk: `n` hourly bars ending with the bar that opens at `last`,
/// prices in `tick` steps around `base`.
pub(crate) fn hourly_bars(
    last_open: DateTime<Utc>,
    n: i64,
    base: Decimal,
    tick: Decimal,
    seed: u64,
) -> Vec<Bar> {
    let mut state = seed;
    let mut next = move |m: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m
    };
    // Offset from `base` in ticks; each step is noise pulled back towards the base.
    let mut pos: i64 = 0;
    let mut close = base;
    (0..n)
        .map(|i| {
            let open = close;
            pos += i64::try_from(next(161)).unwrap() - 80 - pos / 12;
            close = base + Decimal::from(pos) * tick;
            let high = open.max(close) + Decimal::from(next(40)) * tick;
            let low = open.min(close) - Decimal::from(next(40)) * tick;
            let volume = Decimal::new(i64::try_from(next(900_000)).unwrap() + 100_000, 3);
            Bar {
                time: last_open - Duration::hours(n - 1 - i),
                open,
                high,
                low,
                close,
                volume,
            }
        })
        .collect()
}

/// Aggregates bars into `interval` buckets (partial buckets included: the data source's job is
/// to say which closed).
pub(crate) fn aggregate(bars: &[Bar], interval: Interval) -> Vec<Bar> {
    let mut out: Vec<Bar> = Vec::new();
    for b in bars {
        let start = interval.bucket_start(b.time);
        match out.last_mut() {
            Some(agg) if agg.time == start => {
                agg.high = agg.high.max(b.high);
                agg.low = agg.low.min(b.low);
                agg.close = b.close;
                agg.volume += b.volume;
            }
            _ => out.push(Bar {
                time: start,
                ..b.clone()
            }),
        }
    }
    out
}

pub(crate) fn with_bars(mut data: Preloaded, symbol: &str, hourly: Vec<Bar>) -> Preloaded {
    for i in [Interval::H4, Interval::D1] {
        data.insert_bars(symbol, i, aggregate(&hourly, i));
    }
    data.insert_bars(symbol, Interval::H1, hourly);
    data
}

/// The close of BTC's last closed 1h bar (the 11:00 bar): the position's mark.
pub(crate) fn btc_mark() -> Decimal {
    let bars = hourly_bars(
        now() + Duration::hours(2),
        24 * 30,
        dec!(67000.0),
        dec!(12.5),
        7,
    );
    bars.iter()
        .find(|b| b.time == now() - Duration::hours(1))
        .unwrap()
        .close
}

/// One BTC long of 0.03 entered 461.5 below the mark: uPnL 0.03 × 461.5 = 13.845.
pub(crate) fn portfolio() -> PortfolioSnapshot {
    let mark = btc_mark();
    PortfolioSnapshot {
        available_margin_usd: dec!(8120.40),
        positions: vec![Position {
            symbol: "BTC".into(),
            side: Side::Long,
            qty: dec!(0.03),
            entry_price: mark - dec!(461.5),
            leverage: dec!(2),
            mark_price: mark,
            liquidation_price: Some((mark / dec!(2)).round_dp(1)),
            unrealized_pnl_usd: dec!(13.845),
            margin_usd: (dec!(0.03) * mark / dec!(2)).round_dp(2),
        }],
        realized_pnl_usd: dec!(182.4),
        fees_paid_usd: dec!(11.72),
        ..flat_portfolio(now(), dec!(10234.56))
    }
}

fn news(
    minutes_ago: i64,
    source: &str,
    headline: &str,
    sentiment: Decimal,
    importance: Decimal,
    symbols: &[&str],
) -> NewsItem {
    NewsItem {
        time: now() - Duration::minutes(minutes_ago),
        headline: headline.into(),
        source: source.into(),
        sentiment,
        importance,
        symbols: symbols.iter().map(|s| (*s).to_owned()).collect(),
    }
}

/// Everything the recorded tick reads, including data from after `now` that must never show.
pub(crate) fn data() -> Preloaded {
    // Bars through the one opening at 14:00, i.e. three bars after now: never shown.
    let last_open = now() + Duration::hours(2);
    let mut data = Preloaded::new();
    data = with_bars(
        data,
        "BTC",
        hourly_bars(last_open, 24 * 30, dec!(67000.0), dec!(12.5), 7),
    );
    data = with_bars(
        data,
        "ETH",
        hourly_bars(last_open, 24 * 30, dec!(3480.00), dec!(0.85), 11),
    );
    data.portfolio = Some(portfolio());
    data.open_orders = vec![OpenOrder {
        id: "tp-7f3a".into(),
        symbol: "BTC".into(),
        side: OrderSide::Sell,
        kind: "take_profit".into(),
        qty: dec!(0.03),
        price: Some(dec!(69500)),
        reduce_only: true,
        placed_at: now() - Duration::hours(5),
    }];
    data.news = vec![
        news(
            45,
            "CoinDesk",
            "Spot bitcoin ETFs log a fifth day of net inflows",
            dec!(0.55),
            dec!(0.8),
            &["BTC"],
        ),
        news(
            190,
            "The Block",
            "Ether perp funding climbs to a three-week high\nas longs crowd in",
            dec!(-0.2),
            dec!(0.7),
            &["ETH"],
        ),
        news(
            300,
            "Reuters",
            "Dollar steady ahead of Fed decision",
            dec!(0),
            dec!(0.6),
            &[],
        ),
        news(
            600,
            "Decrypt",
            "Layer-2 activity hits a record",
            dec!(0.3),
            dec!(0.4),
            &["ETH"],
        ),
        // After now, and older than the 12h window: neither may show.
        news(
            -10,
            "Wire",
            "FUTURE: BTC spikes after the close",
            dec!(0.9),
            dec!(1),
            &["BTC"],
        ),
        news(
            13 * 60,
            "Wire",
            "STALE: too old for the window",
            dec!(0.1),
            dec!(1),
            &["BTC"],
        ),
    ];
    data.events = vec![
        MarketEvent {
            id: types::Uuid::from_u128(1),
            source: "calendar".into(),
            kind: EventKind::Fomc,
            title: "FOMC rate decision".into(),
            symbols: vec![],
            scheduled_at: now() + Duration::hours(6),
            importance: dec!(0.95),
        },
        MarketEvent {
            id: types::Uuid::from_u128(2),
            source: "calendar".into(),
            kind: EventKind::TokenUnlock,
            title: "Kind not selected by the skill".into(),
            symbols: vec!["ETH".into()],
            scheduled_at: now() + Duration::hours(3),
            importance: dec!(0.9),
        },
        MarketEvent {
            id: types::Uuid::from_u128(3),
            source: "calendar".into(),
            kind: EventKind::Cpi,
            title: "CPI beyond the lookahead".into(),
            symbols: vec![],
            scheduled_at: now() + Duration::hours(30),
            importance: dec!(0.9),
        },
        MarketEvent {
            id: types::Uuid::from_u128(4),
            source: "calendar".into(),
            kind: EventKind::Nfp,
            title: "NFP already out".into(),
            symbols: vec![],
            scheduled_at: now() - Duration::hours(1),
            importance: dec!(0.9),
        },
    ];
    // Hourly BTC funding (the last print at now, one after now that must never show) and two
    // open-interest observations (and one after now); ETH has no derivatives data.
    let funding = |hours: i64, rate: Decimal| FundingRate {
        time: now() + Duration::hours(hours),
        rate,
        period_hours: 1,
    };
    data.funding.insert(
        "BTC".into(),
        vec![
            funding(1, dec!(0.05)),
            funding(-2, dec!(0.0000125)),
            funding(-1, dec!(0.00002)),
            funding(0, dec!(0.0000375)),
        ],
    );
    let oi = |hours: i64, base: Decimal| OpenInterestPoint {
        time: now() + Duration::hours(hours),
        oi_base: base,
        oi_usd: base * dec!(67000),
    };
    data.open_interest.insert(
        "BTC".into(),
        vec![oi(-4, dec!(20000)), oi(0, dec!(21000)), oi(1, dec!(99999))],
    );
    data.recent_trades_text = [
        "- 06-04T10:00 → 06-04T12:30 BTC long $2400.00 @ 66200 → 66940 +$26.83 (1.12%) 150m \"breakout above prior swing high\"",
        "- 06-04T08:15 → 06-04T09:00 ETH short $1800.00 @ 3420.50 → 3455.10 -$18.21 (-1.01%) 45m \"funding extreme, mean-revert\"",
        "- 06-03T21:00 → 06-04T02:00 BTC short $2000.00 @ 67450 → 67010 +$13.05 (0.65%) 300m \"failed breakout, funding +0.04%\"",
    ]
    .join("\n");
    let mark = btc_mark();
    data.open_positions_text = format!(
        "- BTC long ${} @ {} mark={mark} MFE=+$18.90 / MAE=-$6.30 held 180m \"reclaim of the 4h range low\"",
        types::text::fixed(dec!(0.03) * (mark - dec!(461.5)), 2),
        mark - dec!(461.5)
    );
    data
}

pub(crate) fn ctx_from(data: Preloaded, mode: RunMode) -> ToolContext {
    let d = Arc::new(data);
    ToolContext::new(
        now(),
        mode,
        vec!["BTC".into(), "ETH".into()],
        d.clone(),
        d.clone(),
    )
    .with_news(d.clone())
    .with_events(d.clone())
    .with_derivatives(d.clone())
    .with_memory(d)
}

pub(crate) fn ctx() -> ToolContext {
    ctx_from(data(), RunMode::Trade)
}

pub(crate) fn last_decision() -> LastDecisionSnapshot {
    LastDecisionSnapshot {
        tick_at: now() - Duration::hours(1),
        proposal: Some(
            "open_long BTC $6000.00 at 3x, confidence 72: \"Funding reset with OI flush\"".into(),
        ),
        status: VerdictStatus::Rejected,
        rule: Some(RuleCode::PositionCap),
        detail: "position would be 78.43% of equity (cap 40%)".into(),
    }
}
