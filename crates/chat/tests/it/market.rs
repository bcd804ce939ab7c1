//! The market data of a turn: the bars it asks its source for (`bar_needs`, every window below
//! worked out by hand), and a turn whose source fails or serves only part of them — the turn
//! goes on, and `your_exposure` says what it could not measure.

use std::sync::{Arc, Mutex};

use agent_runtime::ToolOutcome;
use async_trait::async_trait;
use chat::market::merge_needs;
use chat::{
    BarNeed, BarsUnavailable, ChatData, ChatMarket, ChatMarketError, DeploymentData, FixedMarket,
    LoadedBars, NotesData, bar_needs, exposure::MoveWindow, run_chat_turn,
};
use chrono::{DateTime, Duration, TimeZone, Utc};
use db::test_support::{Fixture, sample_open_trade, sample_snapshot, seed, tick_record};
use db::{DeploymentStatus, EventStore, TickRecord, TickStore};
use model::test_support::{tool_call, tool_turn};
use rust_decimal_macros::dec;
use serde_json::{Value, json};
use tools::{DerivativesData, Preloaded};
use types::{Interval, Side, TradeRecord, Uuid};

use crate::exposure::{event, market, now, t};
use crate::memory::{answer, turn};

fn jan(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 1, day, hour, minute, 0).unwrap()
}

fn need(symbol: &str, from: DateTime<Utc>, to: DateTime<Utc>) -> BarNeed {
    BarNeed {
        symbol: symbol.into(),
        interval: Interval::H1,
        from,
        to,
    }
}

fn with_symbol(mut e: types::MarketEvent, symbols: &[&str]) -> types::MarketEvent {
    e.symbols = symbols.iter().map(|s| (*s).to_owned()).collect();
    e
}

fn deployment(symbols: Value, status: DeploymentStatus, open: &[&str]) -> DeploymentData {
    let user = db::test_support::sample_user();
    let skill = db::test_support::sample_skill(user.id);
    let mut deployment = db::test_support::sample_deployment(user.id, skill.id, 1);
    deployment.config = json!({ "symbols": symbols });
    deployment.status = status;
    let fx = Fixture {
        version: db::test_support::sample_skill_version(skill.id, 1),
        user,
        skill,
        deployment,
    };
    let trades = open
        .iter()
        .map(|symbol| TradeRecord {
            symbol: (*symbol).into(),
            ..sample_open_trade(&fx, jan(1, 0, 0))
        })
        .collect();
    DeploymentData {
        deployment: fx.deployment,
        skill_name: fx.skill.name,
        trades,
        recent_closed: Vec::new(),
        notes: NotesData {
            active: None,
            superseded: 0,
        },
    }
}

#[test]
fn a_turn_needs_the_windows_around_askable_past_events_and_the_recent_bars() {
    let now = Utc.with_ymd_and_hms(2024, 2, 1, 0, 0, 0).unwrap();
    let data = ChatData {
        user_id: Uuid::from_u128(1),
        now,
        deployments: vec![
            deployment(
                json!(["EURUSD", "BTC"]),
                DeploymentStatus::Active,
                &["EURUSD"],
            ),
            // A stopped deployment's symbols are not read; its open position is.
            deployment(json!(["SOL"]), DeploymentStatus::Stopped, &["ETH"]),
        ],
        skill_notes: Vec::new(),
        skills: Vec::new(),
        facts: Vec::new(),
        upcoming: vec![event(100, "fomc", now + Duration::hours(6))],
        past: vec![
            // 00:00: from the bar closing at 00:00 (opened 23:00) to the one closing at 04:00.
            event(1, "fomc", jan(2, 0, 0)),
            // 01:30: from the bar closing at 01:00 to the one closing at 05:00 — overlapping
            // the previous window: one need.
            event(2, "fomc", jan(2, 1, 30)),
            // 12:45: the bars closing at 12:00 … 16:00.
            event(3, "fomc", jan(10, 12, 45)),
            // No CPI ahead: a past CPI cannot be asked about.
            event(4, "cpi", jan(15, 12, 0)),
            // Another symbol's FOMC.
            with_symbol(event(5, "fomc", jan(20, 12, 0)), &["GBPUSD"]),
            // Market-wide (no symbols): it touches EURUSD; its window, 14:00 to 19:00, runs
            // into the recent bars (from Jan 23 16:00): one need.
            with_symbol(event(6, "fomc", jan(23, 15, 30)), &[]),
            // Its window ends after now: not measured, not needed.
            event(7, "fomc", jan(31, 21, 0)),
        ],
    };
    let recent = jan(23, 16, 0);
    assert_eq!(
        bar_needs(&data, MoveWindow::default()),
        vec![
            need("BTC", recent, now),
            need("ETH", recent, now),
            need("EURUSD", jan(1, 23, 0), jan(2, 5, 0)),
            need("EURUSD", jan(10, 11, 0), jan(10, 16, 0)),
            need("EURUSD", jan(23, 14, 0), now),
        ]
    );
    assert_eq!(chat::market_symbols(&data), ["BTC", "ETH", "EURUSD"]);
    assert_eq!(need("BTC", recent, now).bar_count(), 200);

    // Adjacent windows merge; empty ones go.
    assert_eq!(
        merge_needs(vec![
            need("BTC", jan(2, 0, 0), jan(2, 3, 0)),
            need("BTC", jan(1, 0, 0), jan(2, 0, 0)),
            need("BTC", jan(5, 0, 0), jan(5, 0, 0)),
        ]),
        vec![need("BTC", jan(1, 0, 0), jan(2, 3, 0))]
    );
}

/// What a source was asked, and what it answers: `market()`'s bars less those of the windows
/// in `refuse`, which it reports unavailable; or, with `fail`, nothing at all.
#[derive(Default)]
struct Recording {
    asked: Mutex<Vec<BarNeed>>,
    symbols: Mutex<Vec<String>>,
    refuse: Vec<BarNeed>,
    fail: bool,
}

#[async_trait]
impl ChatMarket for Recording {
    async fn load(
        &self,
        needs: &[BarNeed],
        _: DateTime<Utc>,
    ) -> Result<LoadedBars, ChatMarketError> {
        self.asked.lock().unwrap().extend_from_slice(needs);
        if self.fail {
            return Err(ChatMarketError::new(
                "test source",
                std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused"),
            ));
        }
        let full = market();
        let bars = full
            .all_bars("EURUSD", Interval::H1)
            .iter()
            .filter(|b| {
                !self
                    .refuse
                    .iter()
                    .any(|r| b.time >= r.from && b.time < r.to)
            })
            .cloned()
            .collect();
        Ok(LoadedBars {
            market: Arc::new(Preloaded::new().with_bars("EURUSD", Interval::H1, bars)),
            unavailable: self
                .refuse
                .iter()
                .map(|need| BarsUnavailable {
                    need: need.clone(),
                    reason: "HTTP 429\nslow down".into(),
                })
                .collect(),
        })
    }

    async fn derivatives(
        &self,
        symbols: &[String],
        _: DateTime<Utc>,
    ) -> Result<Arc<dyn DerivativesData>, ChatMarketError> {
        self.symbols.lock().unwrap().extend_from_slice(symbols);
        Err(ChatMarketError::new("test derivatives", "down"))
    }
}

/// A store with the caller's deployment (BTC and ETH) holding an open EURUSD long of 1,000,
/// and the calendar of the exposure tests: an FOMC ahead (Jan 8 06:00), FOMCs on Jan 1–4.
async fn world() -> (db::Store, Fixture) {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let fx = seed(&store).await.unwrap();
    let open = TradeRecord {
        symbol: "EURUSD".into(),
        side: Side::Long,
        open_qty: dec!(1000),
        opened_qty: dec!(1000),
        entry_price: dec!(100),
        ..sample_open_trade(&fx, t(7, 12))
    };
    store
        .record_tick(&TickRecord {
            trades: vec![open],
            ..tick_record(sample_snapshot(fx.deployment.id, t(7, 12)))
        })
        .await
        .unwrap();
    let events = vec![
        event(100, "fomc", t(8, 6)),
        event(1, "fomc", t(1, 0)),
        event(2, "fomc", t(2, 0)),
        event(3, "fomc", t(3, 0)),
        event(4, "fomc", t(4, 0)),
    ];
    store.upsert_events(&events).await.unwrap();
    (store, fx)
}

/// One turn whose model asks for the exposure of the deployment, then answers; the tool's
/// `your_exposure` row.
async fn exposure_row(store: &db::Store, fx: &Fixture, source: &dyn ChatMarket) -> Value {
    let args = json!({ "deploymentId": fx.deployment.id }).to_string();
    let model = agent_runtime::ScriptedModel::new(vec![
        tool_turn(vec![tool_call("c1", "get_upcoming_events", args)]),
        answer("Here is your exposure."),
    ]);
    let out = run_chat_turn(
        store,
        &model,
        source,
        turn(fx.user.id, 1, Vec::new(), "Anything ahead?", now()),
    )
    .await
    .unwrap();
    assert!(out.run.error.is_none(), "{:?}", out.run.error);
    let ToolOutcome::Ok { result } = &out.run.steps[0].tool_calls[0].outcome else {
        panic!("{:?}", out.run.steps[0].tool_calls[0].outcome)
    };
    let result: Value = result.to_value().unwrap();
    result["your_exposure"][0].clone()
}

#[tokio::test]
async fn the_turn_loads_what_it_needs_and_a_failing_source_leaves_the_exposure_unmeasured() {
    let (store, fx) = world().await;

    // All served: the three measured FOMCs of the exposure tests (Jan 1 predates the bars).
    let row = exposure_row(&store, &fx, &FixedMarket::new(Arc::new(market()))).await;
    assert_eq!(row["similar_events_back"], 3, "{row}");
    assert_eq!(row["median_abs_move_pct"], "2%");
    assert_eq!(row["notional_usd"], "$100,000.00");
    assert!(row.get("bars_error").is_none(), "{row}");

    // The source fails: the turn goes on, nothing is measured, and the row says why.
    let failing = Recording {
        fail: true,
        ..Recording::default()
    };
    let row = exposure_row(&store, &fx, &failing).await;
    assert_eq!(row["similar_events_back"], 0, "{row}");
    assert_eq!(row["median_abs_move_pct"], Value::Null);
    assert_eq!(row["notional_usd"], Value::Null, "no mark either");
    assert_eq!(
        row["bars_error"],
        "the bars around 4 of the 4 past events could not be loaded (test source: connection \
         refused): they are not counted"
    );
    // What it was asked: the recent bars of the deployment's symbols and of the position —
    // which cover every FOMC window, so EURUSD is one need.
    let recent = now() - Duration::hours(200);
    assert_eq!(
        *failing.asked.lock().unwrap(),
        [
            need("BTC", recent, now()),
            need("ETH", recent, now()),
            need("EURUSD", recent, now()),
        ]
    );
    assert_eq!(*failing.symbols.lock().unwrap(), ["BTC", "ETH", "EURUSD"]);

    // Part served: the Jan 3 window is missing. Two measured (below three: no median), and the
    // row says one event's bars could not be loaded (Jan 1 has no bars at all: not an error).
    let partial = Recording {
        refuse: vec![need("EURUSD", t(2, 23), t(3, 4))],
        ..Recording::default()
    };
    let row = exposure_row(&store, &fx, &partial).await;
    assert_eq!(row["similar_events_back"], 2, "{row}");
    assert_eq!(row["median_abs_move_pct"], Value::Null);
    assert_eq!(row["notional_usd"], "$100,000.00");
    assert_eq!(
        row["bars_error"],
        "the bars around 1 of the 4 past events could not be loaded (HTTP 429 slow down): they \
         are not counted"
    );
}

#[test]
fn a_position_is_never_marked_by_a_bar_older_than_the_recent_bars() {
    // Only bars of early January, the turn two months later: the latest close is no mark.
    let mut ctx = crate::exposure::ctx(Vec::new(), Side::Long);
    let mut data = (*ctx.data).clone();
    data.now += Duration::days(60);
    data.upcoming = vec![event(100, "fomc", data.now + Duration::hours(6))];
    ctx.data = Arc::new(data);
    let dep = ctx.data.deployments[0].deployment.id;
    let out = chat::chat_registry(
        &ctx,
        prompt_compose::ChatMode::Coach,
        tools::RunMode::ReadOnly,
    )
    .call("get_upcoming_events", json!({ "deploymentId": dep }))
    .unwrap();
    assert_eq!(out["your_exposure"][0]["notional_usd"], Value::Null);
}
