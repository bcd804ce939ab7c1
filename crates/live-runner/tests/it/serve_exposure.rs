//! `your_exposure` on the server (issue #46): a chat turn of `serve` reads its bars from a mock
//! of Hyperliquid's `/info` answering `candleSnapshot` in the exchange's wire format with the
//! real EURUSD hours of `examples/data/EURUSD.csv`, over the real central-bank calendar of
//! `examples/events/`, for a deployment holding an open EURUSD long; the statistics the tool
//! returns are computed here again, independently, from the candles the mock served. A second
//! identical turn sends no candle request. And `serve --bars DIR`, through the binary: the
//! same measurement from a bar file.

use std::collections::BTreeMap;
use std::sync::Arc;

use agent_runtime::{LanguageModel, ScriptedModel};
use chrono::{DateTime, Duration, DurationRound, NaiveDateTime, Utc};
use db::test_support::{
    Fixture, sample_deployment, sample_open_trade, sample_skill, sample_skill_version,
    sample_snapshot, sample_user, tick_record,
};
use db::{EventStore, RegistryStore, TickRecord, TickStore};
use live_runner::chat_market::HyperliquidMarket;
use live_runner::serve::Auth;
use model::test_support::{answer, tool_call, tool_turn};
use reqwest::StatusCode;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use types::{FixedClock, MarketEvent, Side, TradeRecord, Uuid};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::common::serve::{SECRET, server_with_market};
use crate::common::{meta_and_asset_ctxs, postgres, repo, t};
use crate::serve_cli::ServeProcess;

const HOUR_MS: i64 = 3_600_000;

/// One hourly candle of the bar file, its prices as the file writes them.
#[derive(Clone)]
struct Candle {
    open_ms: i64,
    o: String,
    h: String,
    l: String,
    c: String,
    v: String,
}

/// The hourly EURUSD candles of `examples/data/EURUSD.csv` (backtesting.py's sample data).
fn eurusd_candles() -> Vec<Candle> {
    let text = std::fs::read_to_string(repo("examples/data/EURUSD.csv")).expect("EURUSD.csv");
    text.lines()
        .skip(1)
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let open = NaiveDateTime::parse_from_str(f[0], "%Y-%m-%d %H:%M:%S")
                .expect("time")
                .and_utc();
            Candle {
                open_ms: open.timestamp_millis(),
                o: f[1].into(),
                h: f[2].into(),
                l: f[3].into(),
                c: f[4].into(),
                v: f[5].into(),
            }
        })
        .collect()
}

/// Answers `candleSnapshot` as Hyperliquid does (`{"t","T","s","i","o","c","h","l","v","n"}`,
/// prices as strings, every candle opening in `[startTime, endTime]`) from `candles` for
/// EURUSD 1h; an empty array for anything else.
struct EurusdCandles(Arc<Vec<Candle>>);

impl Respond for EurusdCandles {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).expect("json body");
        let req = &body["req"];
        if req["coin"] != "EURUSD" || req["interval"] != "1h" {
            return ResponseTemplate::new(200).set_body_json(json!([]));
        }
        let (start, end) = (
            req["startTime"].as_i64().expect("startTime"),
            req["endTime"].as_i64().expect("endTime"),
        );
        let candles: Vec<Value> = self
            .0
            .iter()
            .filter(|c| c.open_ms >= start && c.open_ms <= end)
            .map(|c| {
                json!({
                    "T": c.open_ms + HOUR_MS - 1, "c": c.c, "h": c.h, "i": "1h", "l": c.l,
                    "n": 100, "o": c.o, "s": "EURUSD", "t": c.open_ms, "v": c.v,
                })
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(candles)
    }
}

/// The close of the last candle closed at or before `t`, when it closed within the hour before
/// `t` (a gap leaves the move unmeasured).
fn close_by(closes: &BTreeMap<i64, Decimal>, t: DateTime<Utc>) -> Option<Decimal> {
    let t = t.timestamp_millis();
    let (open, close) = closes.range(..=t - HOUR_MS).next_back()?;
    (open + HOUR_MS > t - HOUR_MS).then_some(*close)
}

/// What the tool should say, worked out from the served candles: the events measured, the
/// median of the absolute moves and the worst move of a long, as the tool prints them.
fn expected(closes: &BTreeMap<i64, Decimal>, events: &[DateTime<Utc>]) -> (usize, String, String) {
    let mut moves: Vec<Decimal> = events
        .iter()
        .filter_map(|at| {
            let before = close_by(closes, *at)?;
            let after = close_by(closes, *at + Duration::hours(4))?;
            Some(((after - before) / before).round_dp(6))
        })
        .collect();
    let worst = *moves.iter().min().expect("moves");
    moves.iter_mut().for_each(|m| *m = m.abs());
    moves.sort();
    let n = moves.len();
    let median = if n % 2 == 1 {
        moves[n / 2]
    } else {
        ((moves[n / 2 - 1] + moves[n / 2]) / Decimal::TWO).round_dp(6)
    };
    let pct = |f: Decimal| types::text::pct(f * Decimal::ONE_HUNDRED);
    (n, pct(median), pct(worst))
}

/// A user with the deployment `id` on EURUSD holding an open long of `qty` entered at
/// `entry_at`, and a token for them.
async fn trader(
    store: &(impl RegistryStore + TickStore),
    auth: &Auth,
    id: Uuid,
    qty: Decimal,
    entry_at: DateTime<Utc>,
) -> (Fixture, String) {
    let user = sample_user();
    let skill = sample_skill(user.id);
    let version = sample_skill_version(skill.id, 1);
    let mut deployment = sample_deployment(user.id, skill.id, 1);
    deployment.id = id;
    deployment.config = json!({"symbols": ["EURUSD"]});
    store.upsert_user(&user).await.unwrap();
    store.create_skill(&skill).await.unwrap();
    store.add_skill_version(&version).await.unwrap();
    store.create_deployment(&deployment).await.unwrap();
    let fx = Fixture {
        user,
        skill,
        version,
        deployment,
    };
    let open = TradeRecord {
        symbol: "EURUSD".into(),
        side: Side::Long,
        open_qty: qty,
        opened_qty: qty,
        entry_price: Decimal::new(12, 1),
        entry_size_usd: qty * Decimal::new(12, 1),
        ..sample_open_trade(&fx, entry_at)
    };
    store
        .record_tick(&TickRecord {
            trades: vec![open],
            ..tick_record(sample_snapshot(fx.deployment.id, entry_at))
        })
        .await
        .unwrap();
    let token = auth
        .mint(fx.user.id, Duration::hours(1), Utc::now())
        .unwrap();
    (fx, token)
}

/// The scripted turn: the model asks for the exposure of `deployment` to the central-bank
/// decisions of the next 48 hours, then answers.
fn exposure_turn(deployment: Uuid) -> Vec<agent_runtime::ModelResponse> {
    let args = json!({
        "deploymentId": deployment,
        "lookaheadHours": 48,
        "types": ["central_bank"],
    });
    vec![
        tool_turn(vec![tool_call(
            "c1",
            "get_upcoming_events",
            args.to_string(),
        )]),
        answer("The ECB decides tomorrow."),
    ]
}

/// The `get_upcoming_events` result of a chat answer.
fn tool_result(body: &Value) -> &Value {
    let call = &body["steps"][0]["toolCalls"][0];
    assert_eq!(call["name"], "get_upcoming_events", "{body}");
    assert_eq!(call["outcome"]["status"], "ok", "{body}");
    &call["outcome"]["result"]
}

/// The `candleSnapshot` requests the mock received: (coin, startTime, endTime).
async fn candle_requests(hl: &MockServer) -> Vec<(String, i64, i64)> {
    hl.received_requests()
        .await
        .unwrap()
        .iter()
        .filter_map(|r| {
            let body: Value = serde_json::from_slice(&r.body).ok()?;
            (body["type"] == "candleSnapshot").then(|| {
                (
                    body["req"]["coin"].as_str().unwrap().to_owned(),
                    body["req"]["startTime"].as_i64().unwrap(),
                    body["req"]["endTime"].as_i64().unwrap(),
                )
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_measures_your_exposure_on_hyperliquid_candles_and_caches_them() {
    let candles = Arc::new(eurusd_candles());
    let hl = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "candleSnapshot"})))
        .respond_with(EurusdCandles(Arc::clone(&candles)))
        .mount(&hl)
        .await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "metaAndAssetCtxs"})))
        .respond_with(ResponseTemplate::new(200).set_body_json(meta_and_asset_ctxs()))
        .mount(&hl)
        .await;
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri())).unwrap();
    let market = Arc::new(HyperliquidMarket::with_client(info));

    // The day before the ECB's decision of 2018-01-25 12:45 UTC; the FOMC of Jan 31 is beyond
    // the look-ahead.
    let now = t("2018-01-24T12:00:00Z");
    let deployment = Uuid::new_v4();
    let model = ScriptedModel::new([exposure_turn(deployment), exposure_turn(deployment)].concat());
    let s = server_with_market(
        Arc::new(model) as Arc<dyn LanguageModel>,
        Arc::new(FixedClock(now)),
        market,
    )
    .await;
    let calendar = live_runner::admin::import_events(
        &s.store,
        &repo("examples/events/central-bank-decisions-2017-2018.json"),
    )
    .await
    .unwrap();
    let qty = Decimal::from(10_000);
    let (fx, token) = trader(
        &s.store,
        &s.auth,
        deployment,
        qty,
        t("2018-01-22T10:00:00Z"),
    )
    .await;
    let request = json!({
        "messages": [{"role": "user", "content": "Anything ahead for my EURUSD long?"}],
        "deploymentId": fx.deployment.id,
    });
    let (status, body) = s.post("/api/chat", &token, &request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let result = tool_result(&body);
    let events = result["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{result}");
    assert_eq!(events[0]["scheduled_at"], "2018-01-25T12:45:00Z");
    let rows = result["your_exposure"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{result}");
    let row = &rows[0];

    // The past ECB decisions of the calendar, and what the served candles say about them.
    let past: Vec<DateTime<Utc>> = calendar
        .iter()
        .filter(|e: &&MarketEvent| e.kind.as_str() == "central_bank" && e.scheduled_at < now)
        .map(|e| e.scheduled_at)
        .collect();
    assert_eq!(past.len(), 8);
    let closes: BTreeMap<i64, Decimal> = candles
        .iter()
        .map(|c| (c.open_ms, c.c.parse().unwrap()))
        .collect();
    let (measured, median, worst) = expected(&closes, &past);
    // Two decisions (Jan 19 and Mar 9 2017) precede the candles (from Apr 19 2017): the other
    // six are measured.
    assert_eq!(measured, 6);
    assert_eq!(row["similar_events_back"], measured, "{row}");
    assert_eq!(row["median_abs_move_pct"], median.as_str(), "{row}");
    assert_eq!(row["worst_move_pct"], worst.as_str(), "{row}");
    assert_eq!(row["symbol"], "EURUSD");
    assert_eq!(row["position_side"], "long");
    // The position is marked at the close of the last hour before the turn (11:00 → 12:00).
    let mark = close_by(&closes, now).unwrap();
    assert_eq!(row["notional_usd"], types::text::money(qty * mark), "{row}");
    // Windows answered with no candles (before the history) are not an error.
    assert!(row.get("bars_error").is_none(), "{row}");

    // What was asked: one window per past ECB decision (the bar closing at the last hour by
    // the decision to the one closing 4 hours after it) and the last 200 hours — each within
    // 5000 candles.
    let asked = candle_requests(&hl).await;
    assert_eq!(asked.len(), past.len() + 1, "{asked:?}");
    for (coin, start, end) in &asked {
        assert_eq!(coin, "EURUSD");
        assert!((end - start) / HOUR_MS < 5000, "{asked:?}");
    }
    let last_decision = t("2017-12-14T12:45:00Z");
    assert!(
        asked.contains(&(
            "EURUSD".into(),
            t("2017-12-14T11:00:00Z").timestamp_millis(),
            t("2017-12-14T15:00:00Z").timestamp_millis(),
        )),
        "the window around {last_decision}: {asked:?}"
    );
    assert!(asked.contains(&(
        "EURUSD".into(),
        (now - Duration::hours(200)).timestamp_millis(),
        (now - Duration::hours(1)).timestamp_millis(),
    )));

    // The same turn again: the same answer, and not one candle request more.
    let (status, again) = s.post("/api/chat", &token, &request).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(tool_result(&again), result);
    assert_eq!(candle_requests(&hl).await.len(), asked.len());
    let derivatives = hl
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| String::from_utf8_lossy(&r.body).contains("metaAndAssetCtxs"))
        .count();
    assert_eq!(derivatives, 1, "funding and open interest are cached too");
}

/// Hourly EURUSD bars in the backtesting.py layout from `from` to the hour of `now`, every
/// close 1.1 but those closing 4 hours after each of `moves`' events: 1.1 × (1 + move).
fn bar_file(from: DateTime<Utc>, now: DateTime<Utc>, moves: &[(DateTime<Utc>, Decimal)]) -> String {
    let hour = Duration::hours(1);
    let mut out = String::from(",Open,High,Low,Close,Volume\n");
    let base = Decimal::new(11, 1);
    let mut open = from;
    while open + hour <= now {
        let close = moves
            .iter()
            .find(|(at, _)| (*at + Duration::hours(4)).duration_trunc(hour).unwrap() == open + hour)
            .map_or(base, |(_, m)| base * (Decimal::ONE + m));
        let (low, high) = (close.min(base), close.max(base));
        out.push_str(&format!(
            "{},{base},{high},{low},{close},100\n",
            open.format("%Y-%m-%d %H:%M:%S")
        ));
        open += hour;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_a_bar_directory_measures_your_exposure_from_the_files() {
    let pg = postgres().await;
    let auth = Auth::new(SECRET).unwrap();
    let now = Utc::now();
    let hour = Duration::hours(1);
    let (fx, token) = trader(
        &pg.store,
        &auth,
        Uuid::new_v4(),
        Decimal::from(1000),
        now - Duration::days(1),
    )
    .await;
    // Three past ECB decisions at :30 past an hour, one ahead.
    let decisions: Vec<(DateTime<Utc>, Decimal)> = [
        (30, Decimal::new(1, 2)),
        (20, Decimal::new(-2, 2)),
        (10, Decimal::new(3, 2)),
    ]
    .into_iter()
    .map(|(days, m)| {
        let at = (now - Duration::days(days)).duration_trunc(hour).unwrap() + Duration::minutes(30);
        (at, m)
    })
    .collect();
    let event = |n: u128, at: DateTime<Utc>| MarketEvent {
        id: Uuid::from_u128(0xEC0 + n),
        kind: types::EventKind::CentralBank,
        title: "ECB monetary policy decision".into(),
        symbols: vec!["EURUSD".into()],
        scheduled_at: at,
        importance: Decimal::ONE,
        source: "test".into(),
    };
    let mut events: Vec<MarketEvent> = decisions
        .iter()
        .enumerate()
        .map(|(i, (at, _))| event(i as u128, *at))
        .collect();
    events.push(event(9, now + Duration::hours(12)));
    pg.store.upsert_events(&events).await.unwrap();

    let dir = tempfile::tempdir().unwrap();
    let bars = dir.path().join("bars");
    std::fs::create_dir(&bars).unwrap();
    std::fs::write(
        bars.join("EURUSD-1h.csv"),
        bar_file(
            (now - Duration::days(40)).duration_trunc(hour).unwrap(),
            now,
            &decisions,
        ),
    )
    .unwrap();
    let script = dir.path().join("script.json");
    let args = json!({"deploymentId": fx.deployment.id, "lookaheadHours": 48});
    std::fs::write(
        &script,
        json!([
            {"toolCalls": [{"name": "get_upcoming_events", "arguments": args}]},
            {"text": "The ECB decides today."}
        ])
        .to_string(),
    )
    .unwrap();
    let server = ServeProcess::spawn(&pg.url(), &script, &["--bars", bars.to_str().unwrap()]);
    let http = reqwest::Client::new();
    let up = server.up(&http).await;
    let answer = if up {
        http.post(format!("{}/api/chat", server.base))
            .bearer_auth(&token)
            .json(&json!({"messages": [{"role": "user", "content": "Anything ahead?"}]}))
            .send()
            .await
            .ok()
    } else {
        None
    };
    let stderr = server.stop();
    assert!(up, "serve never answered /healthz: {stderr}");
    let answer = answer.expect("POST /api/chat");
    assert_eq!(answer.status(), StatusCode::OK);
    let body: Value = answer.json().await.unwrap();
    let row = &tool_result(&body)["your_exposure"][0];
    // +1 %, −2 %, +3 %: the median of the absolute moves 2 %, the worst for a long −2 %.
    assert_eq!(row["similar_events_back"], 3, "{body}\n{stderr}");
    assert_eq!(row["median_abs_move_pct"], "2%", "{row}");
    assert_eq!(row["worst_move_pct"], "-2%", "{row}");
    assert_eq!(row["notional_usd"], "$1,100.00", "{row}");
    assert!(row.get("bars_error").is_none(), "{row}");
}
