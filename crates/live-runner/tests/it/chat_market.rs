//! The chat turn's market sources of `serve` and `chat`, in process: a bar directory's file
//! names, resampling and refusals (the reason of each window it cannot serve), and the
//! Hyperliquid source's request budget (the newest windows first, the rest on a later turn)
//! and its stop after a failed request.

use chat::{BarNeed, ChatMarket};
use chrono::{DateTime, Duration, Utc};
use live_runner::chat_market::{BarDirectory, HyperliquidMarket, MAX_CANDLE_REQUESTS_PER_TURN};
use serde_json::json;
use types::{Interval, RetryPolicy};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::common::{repo, t};

fn need(symbol: &str, interval: Interval, from: &str, to: &str) -> BarNeed {
    BarNeed {
        symbol: symbol.into(),
        interval,
        from: t(from),
        to: t(to),
    }
}

/// A directory holding copies of the repository's sample bars: `EURUSD.csv` (hourly),
/// `GOOG.csv` (daily), a recorded Hyperliquid answer as `kPEPE-1h.json`, hourly bars misnamed
/// `EURUSD-4h.csv`, and `BAD.csv` with a broken third row.
fn bar_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &str, to: &str| {
        std::fs::copy(repo(from), dir.path().join(to)).unwrap();
    };
    copy("examples/data/EURUSD.csv", "EURUSD.csv");
    copy("examples/data/GOOG.csv", "GOOG.csv");
    copy(
        "crates/hyperliquid/tests/fixtures/candleSnapshot.json",
        "kPEPE-1h.json",
    );
    copy("examples/data/EURUSD.csv", "EURUSD-4h.csv");
    std::fs::write(
        dir.path().join("BAD.csv"),
        ",Open,High,Low,Close,Volume\n\
         2017-04-19 09:00:00,1.0716,1.0722,1.07083,1.07219,1413\n\
         2017-04-19 10:00:00,1.07214,oops,1.07214,1.0726,1241\n",
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn a_bar_directory_serves_named_and_resampled_files_and_says_what_it_cannot() {
    let dir = bar_dir();
    let source = BarDirectory::new(dir.path()).unwrap();
    let now = t("2026-01-01T00:00:00Z");
    let needs = [
        need(
            "EURUSD",
            Interval::H1,
            "2017-04-20T00:00:00Z",
            "2017-04-20T05:00:00Z",
        ),
        need(
            "kPEPE",
            Interval::H1,
            "2023-05-21T20:00:00Z",
            "2023-05-22T02:00:00Z",
        ),
        // 4h bars from the hourly SYMBOL.csv … but EURUSD-4h.csv comes first, and holds 1h.
        need(
            "EURUSD",
            Interval::H4,
            "2017-04-20T00:00:00Z",
            "2017-04-21T00:00:00Z",
        ),
        need(
            "GOOG",
            Interval::H1,
            "2010-01-04T00:00:00Z",
            "2010-01-05T00:00:00Z",
        ),
        need(
            "SOL",
            Interval::H1,
            "2025-12-01T00:00:00Z",
            "2025-12-02T00:00:00Z",
        ),
        need(
            "../etc",
            Interval::H1,
            "2025-12-01T00:00:00Z",
            "2025-12-02T00:00:00Z",
        ),
        need(
            "BAD",
            Interval::H1,
            "2017-04-19T00:00:00Z",
            "2017-04-20T00:00:00Z",
        ),
    ];
    let loaded = source.load(&needs, now).await.unwrap();
    let bars = |symbol: &str, interval: Interval, by: &str| {
        loaded.market.bars(symbol, interval, t(by), 1000).unwrap()
    };
    // The window's five hours, as the file has them.
    let hours = bars("EURUSD", Interval::H1, "2017-04-20T05:00:00Z");
    assert_eq!(hours.len(), 5);
    assert_eq!(hours[0].time, t("2017-04-20T00:00:00Z"));
    let file = market_data::load_bars(&repo("examples/data/EURUSD.csv")).unwrap();
    assert_eq!(
        hours[..],
        file[file.iter().position(|b| b.time == hours[0].time).unwrap()..][..5]
    );
    // The recorded Hyperliquid answer: six hours of kPEPE.
    assert_eq!(bars("kPEPE", Interval::H1, "2023-05-22T02:00:00Z").len(), 6);

    let reasons: Vec<(&str, &str)> = loaded
        .unavailable
        .iter()
        .map(|u| (u.need.symbol.as_str(), u.reason.as_str()))
        .collect();
    let reason = |symbol: &str| {
        reasons
            .iter()
            .find(|(s, _)| *s == symbol)
            .unwrap_or_else(|| panic!("{symbol}: {reasons:?}"))
            .1
    };
    assert_eq!(reasons.len(), 5, "{reasons:?}");
    // Each names the file, never the directory's path (the model reads these).
    assert_eq!(
        reason("EURUSD"),
        "EURUSD-4h.csv holds 1h bars, which do not make 4h bars"
    );
    assert_eq!(
        reason("GOOG"),
        "GOOG.csv holds 1d bars, which do not make 1h bars"
    );
    assert_eq!(
        reason("SOL"),
        "no bar file for SOL 1h in the bar directory (SOL-1h.csv, SOL-1h.json, SOL.csv, \
         SOL.json)"
    );
    assert_eq!(
        reason("../etc"),
        "the symbol \"../etc\" cannot name a bar file"
    );
    assert_eq!(reason("BAD"), "BAD.csv:3: High: not a number: \"oops\"");

    // Without the misnamed file, 4h bars are resampled from the hourly one.
    std::fs::remove_file(dir.path().join("EURUSD-4h.csv")).unwrap();
    let four = need(
        "EURUSD",
        Interval::H4,
        "2017-04-20T00:00:00Z",
        "2017-04-21T00:00:00Z",
    );
    let loaded = source.load(std::slice::from_ref(&four), now).await.unwrap();
    assert!(loaded.unavailable.is_empty(), "{:?}", loaded.unavailable);
    let got = loaded
        .market
        .bars("EURUSD", Interval::H4, four.to, 100)
        .unwrap();
    let want: Vec<_> = market_data::resample(&file, Interval::H4)
        .into_iter()
        .filter(|b| b.time >= four.from && b.time < four.to)
        .collect();
    assert_eq!(got.len(), 6);
    assert_eq!(got, want);

    // A file that changes is read again.
    std::fs::write(
        dir.path().join("BAD.csv"),
        ",Open,High,Low,Close,Volume\n2017-04-19 09:00:00,1,2,0.5,1.5,10\n",
    )
    .unwrap();
    let bad = need(
        "BAD",
        Interval::H1,
        "2017-04-19T00:00:00Z",
        "2017-04-20T00:00:00Z",
    );
    let loaded = source.load(std::slice::from_ref(&bad), now).await.unwrap();
    assert!(loaded.unavailable.is_empty(), "{:?}", loaded.unavailable);
    assert_eq!(
        loaded
            .market
            .bars("BAD", Interval::H1, bad.to, 10)
            .unwrap()
            .len(),
        1
    );

    // Only a readable directory is a bar directory.
    let err = BarDirectory::new(dir.path().join("EURUSD.csv")).unwrap_err();
    assert!(
        err.to_string().ends_with("EURUSD.csv: not a directory"),
        "{err}"
    );
}

async fn candles_answering(status: u16) -> MockServer {
    let hl = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/info"))
        .and(body_partial_json(json!({"type": "candleSnapshot"})))
        .respond_with(ResponseTemplate::new(status).set_body_json(json!([])))
        .mount(&hl)
        .await;
    hl
}

fn hyperliquid(hl: &MockServer) -> HyperliquidMarket {
    let config = hyperliquid::ClientConfig::new(hl.uri()).with_retry(RetryPolicy::none());
    HyperliquidMarket::new(&config).unwrap()
}

/// `n` disjoint 5-hour BTC windows, a day apart, the newest ending at `now`.
fn windows(n: i64, now: DateTime<Utc>) -> Vec<BarNeed> {
    (0..n)
        .map(|i| {
            let to = now - Duration::days(i);
            BarNeed {
                symbol: "BTC".into(),
                interval: Interval::H1,
                from: to - Duration::hours(5),
                to,
            }
        })
        .collect()
}

async fn requests(hl: &MockServer) -> usize {
    hl.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn a_turn_asks_for_the_newest_windows_first_within_its_budget() {
    let hl = candles_answering(200).await;
    let source = hyperliquid(&hl);
    let now = t("2026-06-10T12:00:00Z");
    let needs = windows(20, now);
    let loaded = source.load(&needs, now).await.unwrap();
    assert_eq!(requests(&hl).await, MAX_CANDLE_REQUESTS_PER_TURN);
    // The four oldest were not asked, and say so.
    let mut left: Vec<&BarNeed> = loaded.unavailable.iter().map(|u| &u.need).collect();
    left.sort();
    let mut oldest: Vec<&BarNeed> = needs[16..].iter().collect();
    oldest.sort();
    assert_eq!(left, oldest);
    assert!(
        loaded.unavailable[0]
            .reason
            .starts_with("not requested: a turn sends at most 16 candle requests"),
        "{:?}",
        loaded.unavailable
    );
    // The next turn asks only for those: the others, answered empty, are cached.
    let loaded = source.load(&needs, now).await.unwrap();
    assert!(loaded.unavailable.is_empty(), "{:?}", loaded.unavailable);
    assert_eq!(requests(&hl).await, 20);
    source.load(&needs, now).await.unwrap();
    assert_eq!(requests(&hl).await, 20);
}

#[tokio::test]
async fn after_a_failed_request_the_turn_sends_no_more() {
    let hl = candles_answering(500).await;
    let source = hyperliquid(&hl);
    let now = t("2026-06-10T12:00:00Z");
    let needs = windows(8, now);
    let loaded = source.load(&needs, now).await.unwrap();
    // The first four were in flight together; the others were never sent.
    assert_eq!(requests(&hl).await, 4);
    assert_eq!(loaded.unavailable.len(), 8);
    let failed = loaded
        .unavailable
        .iter()
        .filter(|u| u.reason.starts_with("candleSnapshot BTC 1h: "))
        .count();
    let skipped = loaded
        .unavailable
        .iter()
        .filter(|u| {
            u.reason
                .starts_with("not requested after a failed request (candleSnapshot BTC 1h: ")
        })
        .count();
    assert_eq!((failed, skipped), (4, 4), "{:?}", loaded.unavailable);
    // A failure is not cached: the next turn asks again.
    source.load(&needs[..1], now).await.unwrap();
    assert_eq!(requests(&hl).await, 5);
}
