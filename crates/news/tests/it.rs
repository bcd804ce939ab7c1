//! The poller against a local feed server (wiremock) serving recorded RSS 2.0 and Atom 1.0
//! documents (`tests/fixtures`), into a real store (SQLite in memory; the PostgreSQL path is
//! the store's contract suite and the runner's integration test).

use std::time::Duration;

use chrono::{DateTime, TimeZone, Utc};
use db::{NewsRecord, NewsStore, SentimentSource, Store};
use news::{FeedError, FeedPoller};
use rust_decimal_macros::dec;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const RSS: &str = include_str!("fixtures/coindesk-like.rss.xml");
const ATOM: &str = include_str!("fixtures/chain-notes.atom.xml");

fn t(h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 2, h, m, 0).unwrap()
}

fn symbols() -> Vec<String> {
    ["BTC", "ETH", "SOL"].map(String::from).to_vec()
}

async fn serve(server: &MockServer, at: &str, template: ResponseTemplate) {
    Mock::given(method("GET"))
        .and(path(at))
        .respond_with(template)
        .mount(server)
        .await;
}

fn xml(body: &str, content_type: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.as_bytes().to_vec(), content_type)
}

async fn store() -> Store {
    db::connect("sqlite::memory:").await.unwrap()
}

/// Everything stored, newest first (a wide window, a late `as_of`).
async fn everything(s: &Store) -> Vec<NewsRecord> {
    let mut all = s
        .news_window(&symbols(), t(0, 0), t(23, 0), t(23, 0), 100)
        .await
        .unwrap();
    all.sort_by(|a, b| {
        b.published_at
            .cmp(&a.published_at)
            .then(a.guid.cmp(&b.guid))
    });
    all
}

fn by_guid<'a>(all: &'a [NewsRecord], guid: &str) -> &'a NewsRecord {
    all.iter()
        .find(|n| n.guid == guid)
        .unwrap_or_else(|| panic!("no item {guid} in {all:#?}"))
}

#[tokio::test]
async fn rss_and_atom_items_are_parsed_matched_scored_and_stored() {
    let server = MockServer::start().await;
    serve(&server, "/rss", xml(RSS, "application/rss+xml")).await;
    serve(&server, "/atom", xml(ATOM, "application/atom+xml")).await;
    let rss = format!("{}/rss", server.uri());
    let atom = format!("{}/atom", server.uri());
    let poller = FeedPoller::new(vec![rss.clone(), atom.clone()], Duration::from_secs(5)).unwrap();
    let s = store().await;

    let reports = poller.poll(&s, &symbols(), t(12, 0)).await;
    let counts: Vec<_> = reports
        .iter()
        .map(|r| *r.outcome.as_ref().unwrap())
        .collect();
    // RSS: five items, one a duplicate guid within the document: four.
    assert_eq!((counts[0].items, counts[0].new), (4, 4));
    assert_eq!((counts[1].items, counts[1].new), (2, 2));

    let all = everything(&s).await;
    assert_eq!(all.len(), 6);

    let btc = by_guid(&all, "wire-2026-11-02-0001");
    assert_eq!(
        btc.source, "Crypto Wire & Markets",
        "entity in the channel title decoded"
    );
    assert_eq!(
        btc.title,
        "Bitcoin surges past $110K as ETF inflows hit a record"
    );
    assert_eq!(
        btc.summary.as_deref(),
        Some("Spot BTC funds took in $1.2bn on Friday… the largest day since March."),
        "CDATA HTML made plain text, numeric entities decoded"
    );
    assert_eq!(
        btc.link.as_deref(),
        Some("https://wire.example.com/markets/2026/11/02/bitcoin-surges-past-110k")
    );
    assert_eq!(btc.published_at, t(11, 30));
    assert_eq!(btc.fetched_at, t(12, 0));
    assert_eq!(btc.symbols, ["BTC"]);
    // surges, inflows, record: p = 3, n = 0.
    assert_eq!(
        (btc.sentiment, btc.sentiment_source),
        (dec!(1), SentimentSource::Lexicon)
    );
    assert_eq!(btc.importance, dec!(0.6));

    let eth = by_guid(&all, "wire-2026-11-02-0002");
    assert_eq!(
        eth.title,
        "Ether slumps 6% after exchange hack; SOL & ARB follow"
    );
    assert_eq!(
        eth.symbols,
        ["ETH", "SOL"],
        "Ether is ETH's alias; ARB is no deployment's"
    );
    assert_eq!(eth.published_at, t(10, 5), "GMT");
    // slumps, hack, liquidations: p = 0, n = 3.
    assert_eq!(eth.sentiment, dec!(-1));

    let fed = by_guid(&all, "wire-2026-11-02-0003");
    assert_eq!(fed.published_at, t(8, 0), "+0100 converted to UTC");
    assert_eq!(
        (fed.sentiment, fed.sentiment_source),
        (dec!(-0.4), SentimentSource::Feed)
    );
    assert!(fed.symbols.is_empty());
    assert_eq!(fed.importance, dec!(0.3), "market-wide");

    let undated = by_guid(&all, "https://wire.example.com/breaking/attestation");
    assert_eq!(
        undated.published_at,
        t(12, 0),
        "no date: published at its first fetch"
    );
    assert_eq!(undated.summary, None);
    assert_eq!(undated.sentiment, dec!(0));

    let sol = by_guid(&all, "tag:notes.example.org,2026-11-02:/solana-fee-upgrade");
    assert_eq!(sol.source, "Chain Notes");
    assert_eq!(sol.title, "Solana validators approve fee upgrade <v2>");
    assert_eq!(
        sol.summary.as_deref(),
        Some("Validators approved the change with 71% of stake.")
    );
    assert_eq!(sol.published_at, t(11, 40), "published, not updated");
    assert_eq!(
        (sol.sentiment, sol.sentiment_source),
        (dec!(0.8), SentimentSource::Feed)
    );
    assert_eq!(sol.symbols, ["SOL"]);

    let gas = by_guid(&all, "tag:notes.example.org,2026-11-02:/eth-gas-low");
    assert_eq!(gas.published_at, t(6, 15), "only <updated>, +02:00");
    assert_eq!(gas.symbols, ["ETH"]);
    assert_eq!(gas.sentiment, dec!(-1), "falls");
    assert_eq!(gas.feed, atom);
}

#[tokio::test]
async fn a_second_poll_stores_nothing_again_and_items_appear_only_once_fetched() {
    let server = MockServer::start().await;
    serve(&server, "/rss", xml(RSS, "application/rss+xml")).await;
    let poller = FeedPoller::new(
        vec![format!("{}/rss", server.uri())],
        Duration::from_secs(5),
    )
    .unwrap();
    let s = store().await;
    let first = poller.poll(&s, &symbols(), t(12, 10)).await;
    assert_eq!(first[0].outcome.as_ref().unwrap().new, 4);
    let second = poller.poll(&s, &symbols(), t(13, 10)).await;
    assert_eq!(second[0].outcome.as_ref().unwrap().new, 0);
    assert_eq!(everything(&s).await.len(), 4);
    assert!(
        everything(&s)
            .await
            .iter()
            .all(|n| n.fetched_at == t(12, 10)),
        "the first fetch time is kept"
    );

    let btc = ["BTC".to_owned()];
    // Published at 11:30, fetched at 12:10: a tick at 12:00 could not have seen it, so a
    // retried or replayed 12:00 tick must not either.
    assert!(
        s.news_window(&btc, t(6, 0), t(12, 0), t(12, 0), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let at_13 = s
        .news_window(&btc, t(7, 0), t(13, 0), t(13, 0), 10)
        .await
        .unwrap();
    let titles: Vec<_> = at_13.iter().map(|n| n.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "Bitcoin surges past $110K as ETF inflows hit a record",
            "Breaking: stablecoin issuer publishes attestation",
            "Fed minutes due Wednesday",
        ],
        "BTC first (importance 0.6), then the market-wide items newest first; the ETH item not"
    );
}

#[tokio::test]
async fn a_feed_that_fails_hangs_or_is_malformed_is_skipped_and_the_others_stored() {
    let server = MockServer::start().await;
    serve(&server, "/rss", xml(RSS, "application/rss+xml")).await;
    serve(&server, "/down", ResponseTemplate::new(500)).await;
    serve(
        &server,
        "/slow",
        xml(ATOM, "application/atom+xml").set_delay(Duration::from_secs(5)),
    )
    .await;
    serve(&server, "/html", xml("<html><body>Not a feed", "text/html")).await;
    let url = |p: &str| format!("{}{p}", server.uri());
    let poller = FeedPoller::new(
        vec![
            url("/down"),
            url("/slow"),
            url("/html"),
            url("/rss"),
            "http://127.0.0.1:9/closed".into(),
        ],
        Duration::from_millis(500),
    )
    .unwrap();
    let s = store().await;
    let started = std::time::Instant::now();
    let reports = poller.poll(&s, &symbols(), t(12, 0)).await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the slow feed is cut at the timeout"
    );
    assert!(
        matches!(
            reports[0].outcome,
            Err(FeedError::Status { status: 500, .. })
        ),
        "{:?}",
        reports[0]
    );
    assert!(
        matches!(reports[1].outcome, Err(FeedError::Timeout { .. })),
        "{:?}",
        reports[1]
    );
    assert!(
        matches!(reports[2].outcome, Err(FeedError::Malformed { .. })),
        "{:?}",
        reports[2]
    );
    assert_eq!(reports[3].outcome.as_ref().unwrap().new, 4);
    assert!(
        matches!(reports[4].outcome, Err(FeedError::Transport { .. })),
        "{:?}",
        reports[4]
    );
    assert!(
        reports[2]
            .outcome
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("/html")
    );
    assert_eq!(
        everything(&s).await.len(),
        4,
        "the good feed's items, nothing else"
    );
}

#[test]
fn a_feed_url_must_be_http() {
    let err =
        FeedPoller::new(vec!["file:///etc/passwd".into()], Duration::from_secs(1)).unwrap_err();
    assert!(err.to_string().contains("file:///etc/passwd"), "{err}");
}
