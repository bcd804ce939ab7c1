//! `your_exposure` on a small hand-made bar fixture: every number below is computed by hand.

use std::sync::Arc;

use chat::exposure::{MoveWindow, event_move, exposure_stats};
use chat::{ChatData, ChatToolContext, DeploymentData, NotesData, chat_registry};
use chrono::{DateTime, Duration, TimeZone, Utc};
use prompt_compose::ChatMode;
use rust_decimal_macros::dec;
use serde_json::{Value, json};
use tools::{Preloaded, RunMode};
use types::{Bar, Interval, MarketEvent, Side, Uuid};

fn t(day: u32, hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, day, hour, 0, 0).unwrap()
}

/// Hourly EURUSD bars from Jan 1 00:00 to Jan 7 23:00, every close 100 except the bar that
/// closes 4 h after each past event: 101 (+1 %) after Jan 2, 98 (−2 %) after Jan 3, 103 (+3 %)
/// after Jan 4, and 150 after the CPI of Jan 5 (another kind: must not count).
fn market() -> Preloaded {
    let bars: Vec<Bar> = (0..7 * 24)
        .map(|h| {
            let time = t(1, 0) + Duration::hours(h);
            let close = if time == t(2, 3) {
                dec!(101)
            } else if time == t(3, 3) {
                dec!(98)
            } else if time == t(4, 3) {
                dec!(103)
            } else if time == t(5, 3) {
                dec!(150)
            } else {
                dec!(100)
            };
            Bar {
                time,
                open: dec!(100),
                high: close.max(dec!(100)),
                low: close.min(dec!(100)),
                close,
                volume: dec!(1),
            }
        })
        .collect();
    Preloaded::new().with_bars("EURUSD", Interval::H1, bars)
}

fn event(n: u128, kind: &str, at: DateTime<Utc>) -> MarketEvent {
    MarketEvent {
        id: Uuid::from_u128(n),
        kind: types::EventKind::parse(kind).unwrap(),
        title: format!("{kind} decision"),
        symbols: vec!["EURUSD".into()],
        scheduled_at: at,
        importance: dec!(0.9),
        source: "test".into(),
    }
}

fn now() -> DateTime<Utc> {
    t(8, 0)
}

#[test]
fn moves_are_close_to_close_over_the_window() {
    let m = market();
    let w = MoveWindow::default();
    assert_eq!(
        event_move(&m, "EURUSD", t(2, 0), w, now()),
        Some(dec!(0.01))
    );
    assert_eq!(
        event_move(&m, "EURUSD", t(3, 0), w, now()),
        Some(dec!(-0.02))
    );
    assert_eq!(
        event_move(&m, "EURUSD", t(4, 0), w, now()),
        Some(dec!(0.03))
    );
    // No bars before the data starts, and a window that ends after now is not measured.
    assert_eq!(event_move(&m, "EURUSD", t(1, 0), w, now()), None);
    assert_eq!(event_move(&m, "EURUSD", t(7, 22), w, now()), None);
    assert_eq!(event_move(&m, "BTC", t(2, 0), w, now()), None);
}

#[test]
fn stats_by_hand() {
    let moves = [dec!(0.01), dec!(-0.02), dec!(0.03)];
    // |moves| sorted 0.01, 0.02, 0.03: median 0.02. Long: worst −0.02. Short: moves count
    // negated (−0.01, 0.02, −0.03): worst −0.03.
    let long = exposure_stats(&moves, Side::Long);
    assert_eq!(long.similar_events_back, 3);
    assert_eq!(long.median_abs_move_pct, Some(dec!(0.02)));
    assert_eq!(long.worst_move_pct, Some(dec!(-0.02)));
    let short = exposure_stats(&moves, Side::Short);
    assert_eq!(short.worst_move_pct, Some(dec!(-0.03)));
    // Even count: the mean of the two middle values, (0.02 + 0.03) / 2.
    let four = exposure_stats(
        &[dec!(0.01), dec!(-0.02), dec!(0.03), dec!(0.04)],
        Side::Long,
    );
    assert_eq!(four.median_abs_move_pct, Some(dec!(0.025)));
    // Below 3: counted, but no median and no worst.
    let two = exposure_stats(&moves[..2], Side::Long);
    assert_eq!(two.similar_events_back, 2);
    assert_eq!(two.median_abs_move_pct, None);
    assert_eq!(two.worst_move_pct, None);
}

fn ctx(past: Vec<MarketEvent>, side: Side) -> ChatToolContext {
    let user = db::test_support::sample_user();
    let skill = db::test_support::sample_skill(user.id);
    let deployment = db::test_support::sample_deployment(user.id, skill.id, 1);
    let fx = db::test_support::Fixture {
        version: db::test_support::sample_skill_version(skill.id, 1),
        user,
        skill,
        deployment,
    };
    let mut open = db::test_support::sample_open_trade(&fx, t(7, 12));
    open.symbol = "EURUSD".into();
    open.side = side;
    open.open_qty = dec!(1000);
    open.entry_price = dec!(1.1);
    let dep = DeploymentData {
        deployment: fx.deployment.clone(),
        skill_name: fx.skill.name.clone(),
        trades: vec![open],
        recent_closed: Vec::new(),
        notes: NotesData {
            active: None,
            superseded: 0,
        },
    };
    let data = ChatData {
        user_id: fx.user.id,
        now: now(),
        deployments: vec![dep],
        skill_notes: Vec::new(),
        skills: Vec::new(),
        facts: Vec::new(),
        upcoming: vec![event(100, "fomc", t(8, 6)), event(101, "cpi", t(9, 13))],
        past,
    };
    ChatToolContext {
        market: Arc::new(market()),
        ..ChatToolContext::new(data, Uuid::from_u128(7))
    }
}

fn exposure(ctx: &ChatToolContext) -> Value {
    let dep = ctx.data.deployments[0].deployment.id;
    let out = chat_registry(ctx, ChatMode::Coach, RunMode::ReadOnly)
        .call("get_upcoming_events", json!({ "deploymentId": dep }))
        .unwrap();
    out["your_exposure"].clone()
}

#[test]
fn your_exposure_through_the_tool() {
    let past = vec![
        event(1, "fomc", t(2, 0)),
        event(2, "fomc", t(3, 0)),
        event(3, "fomc", t(4, 0)),
        // Before the bars: not measurable, not counted.
        event(4, "fomc", t(1, 0)),
        // Another kind with a huge move: ignored for the FOMC row.
        event(5, "cpi", t(5, 0)),
    ];
    let long = exposure(&ctx(past.clone(), Side::Long));
    // The notional is the open quantity at the latest close (1,000 × 100), in the money style;
    // the moves are percentages.
    // Default look-ahead 24 h: only the FOMC of Jan 8 06:00 (the CPI is 37 h away).
    assert_eq!(
        long,
        json!([{
            "event_id": Uuid::from_u128(100),
            "symbol": "EURUSD",
            "position_side": "long",
            "notional_usd": "$100,000.00",
            "similar_events_back": 3,
            "median_abs_move_pct": "2%",
            "worst_move_pct": "-2%",
        }])
    );
    let short = exposure(&ctx(past.clone(), Side::Short));
    assert_eq!(short[0]["worst_move_pct"], "-3%");
    assert_eq!(short[0]["median_abs_move_pct"], "2%");

    // Two past FOMCs only: the null case.
    let thin = exposure(&ctx(past[..2].to_vec(), Side::Long));
    assert_eq!(thin[0]["similar_events_back"], 2);
    assert_eq!(thin[0]["median_abs_move_pct"], Value::Null);
    assert_eq!(thin[0]["worst_move_pct"], Value::Null);
}
