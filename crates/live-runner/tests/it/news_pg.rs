//! Live news on a real PostgreSQL: the runner polls RSS feeds served by a local feed server
//! (one of them down), and a paper tick's stored snapshot shows the served headline in its
//! News section — and not a headline the runner first fetched after the tick's bar close.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use common::{hyperliquid_mock, postgres, t};
use db::{NewsStore, TickStore};
use live_runner::admin::{self, DeployRequest};
use live_runner::metrics::Metrics;
use live_runner::runner::{NewsFeeds, Runner, RunnerConfig, default_resolver};
use live_runner::test_support::paper_deploy;
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const OWNER: Uuid = Uuid::from_u128(0x4e5);
const RSS: &str = include_str!("../../../news/tests/fixtures/coindesk-like.rss.xml");
const LATE: &str = r#"<?xml version="1.0"?>
<rss version="2.0"><channel><title>Late Desk</title>
<item><title>Late headline: BTC whale moves coins</title><guid>late-1</guid>
<pubDate>Mon, 02 Nov 2026 11:59:00 +0000</pubDate></item>
</channel></rss>"#;

async fn runner(
    pg: &common::Pg,
    hl: &MockServer,
    now: DateTime<Utc>,
    feeds: Vec<String>,
) -> Arc<Runner> {
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri())).unwrap();
    let mut config = RunnerConfig::new(format!("news:{}", Uuid::new_v4()));
    config.once = true;
    let poller = news::FeedPoller::new(feeds, Duration::from_secs(5)).unwrap();
    Arc::new(
        Runner::new(
            pg.store.clone(),
            info,
            Arc::new(types::FixedClock(now)),
            default_resolver(),
            Metrics::default(),
            config,
        )
        .await
        .unwrap()
        .with_news(NewsFeeds {
            poller,
            every: Duration::from_secs(300),
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_tick_shows_the_polled_headline_and_not_one_fetched_after_it() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let feeds = MockServer::start().await;
    for (at, status, body) in [("/rss", 200, RSS), ("/late", 200, LATE), ("/down", 500, "")] {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(
                ResponseTemplate::new(status)
                    .set_body_raw(body.as_bytes().to_vec(), "application/rss+xml"),
            )
            .mount(&feeds)
            .await;
    }
    let url = |p: &str| format!("{}{p}", feeds.uri());
    let first = t("2026-11-02T12:00:00Z");

    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    let req = DeployRequest {
        id: Some(Uuid::from_u128(0x4e51)),
        ..paper_deploy(OWNER)
    };
    let d = admin::deploy(
        &pg.store,
        &skill,
        &req,
        first - chrono::Duration::minutes(30),
    )
    .await
    .unwrap();

    // The background poll at 11:50: the RSS feed is stored, the feed that is down is skipped.
    let early = runner(
        &pg,
        &hl,
        t("2026-11-02T11:50:00Z"),
        vec![url("/down"), url("/rss")],
    )
    .await;
    let reports = early.poll_news().await;
    assert!(reports[0].outcome.is_err(), "{:?}", reports[0]);
    assert_eq!(reports[1].outcome.as_ref().unwrap().new, 4);
    let stored = pg
        .store
        .news_window(
            &["BTC".into()],
            first - chrono::Duration::hours(6),
            first,
            first,
            10,
        )
        .await
        .unwrap();
    let btc = stored
        .iter()
        .find(|n| n.guid == "wire-2026-11-02-0001")
        .unwrap();
    assert_eq!(
        btc.symbols,
        ["BTC"],
        "matched against the active deployment's symbols"
    );

    // `run --once` at 12:00:02: its start-up poll fetches the late feed after the 12:00 close.
    let r = runner(
        &pg,
        &hl,
        first + chrono::Duration::seconds(2),
        vec![url("/rss"), url("/late"), url("/down")],
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(
        r.metrics().ticks("recorded"),
        1,
        "a feed that is down fails no tick"
    );
    assert_eq!(
        pg.count("SELECT count(*) FROM news_items WHERE guid = 'late-1'")
            .await,
        1,
        "the late item is stored"
    );

    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    let context = &snaps[0].context;
    let section = context
        .split("## News (last 6h, top 5 by relevance)")
        .nth(1)
        .unwrap_or_else(|| panic!("no News section:\n{context}"));
    let section = section.split("\n## ").next().unwrap();
    let lines: Vec<&str> = section.lines().filter(|l| l.starts_with("- ")).collect();
    assert!(
        lines[0].contains("Crypto Wire & Markets [BTC] sentiment +1.00 importance 0.60: Bitcoin surges past $110K as ETF inflows hit a record"),
        "the served headline, first:\n{section}"
    );
    assert!(section.contains("Fed minutes due Wednesday"), "{section}");
    assert!(
        !section.contains("Late headline"),
        "fetched at 12:00:02, after the tick's 12:00 close:\n{section}"
    );
    assert!(!section.contains("unknown"), "{section}");
}

/// The binary's flags: `run --once --news-feed … --news-feeds-file …` polls every feed (a good
/// RSS and Atom feed stored, a feed that is down and one that is not a feed logged and
/// skipped), still ticks, and the tick's News section is connected ("no headlines", never
/// "unknown": the served items are days older than the 6h window).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_polls_its_feeds_and_a_bad_feed_fails_nothing() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let feeds = MockServer::start().await;
    let atom = include_str!("../../../news/tests/fixtures/chain-notes.atom.xml");
    for (at, status, body) in [
        ("/rss", 200, RSS),
        ("/atom", 200, atom),
        ("/down", 500, ""),
        ("/html", 200, "<html><body>maintenance"),
    ] {
        Mock::given(method("GET"))
            .and(path(at))
            .respond_with(
                ResponseTemplate::new(status).set_body_raw(body.as_bytes().to_vec(), "text/xml"),
            )
            .mount(&feeds)
            .await;
    }
    let url = |p: &str| format!("{}{p}", feeds.uri());
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("feeds.txt");
    std::fs::write(
        &list,
        format!("# feeds\n\n{}\n{}\n", url("/atom"), url("/html")),
    )
    .unwrap();

    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).unwrap();
    let req = DeployRequest {
        id: Some(Uuid::from_u128(0x4e52)),
        ..paper_deploy(OWNER)
    };
    let d = admin::deploy(&pg.store, &skill, &req, Utc::now())
        .await
        .unwrap();
    sqlx::query("UPDATE deployments SET next_tick_at = now() - interval '1 minute'")
        .execute(pg.pool())
        .await
        .unwrap();

    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_live-runner"));
    cmd.env("RUST_LOG", "info")
        .args(["run", "--db", &pg.url(), "--once", "--hl-url", &hl.uri()])
        .args(["--listen", "127.0.0.1:0"])
        .args(["--news-feed", &url("/rss"), "--news-feed", &url("/down")])
        .arg("--news-feeds-file")
        .arg(&list)
        .args(["--news-timeout-secs", "5"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        pg.count("SELECT count(*) FROM news_items").await,
        6,
        "{stderr}"
    );
    assert_eq!(stderr.matches("news feed skipped").count(), 2, "{stderr}");
    assert!(stderr.contains("HTTP 500"), "{stderr}");
    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1, "{stderr}");
    let section = snaps[0]
        .context
        .split("## News (last 6h, top 5 by relevance)")
        .nth(1)
        .unwrap();
    let section = section.split("\n## ").next().unwrap();
    assert!(
        section.contains("No headlines about BTC in the last 6h."),
        "{section}"
    );

    // A feed list naming something that is not a URL is refused, naming file and line.
    std::fs::write(&list, "https://ok.example/rss\nnot a url\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_live-runner"))
        .args([
            "run",
            "--db",
            &pg.url(),
            "--once",
            "--listen",
            "127.0.0.1:0",
        ])
        .arg("--news-feeds-file")
        .arg(&list)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("feeds.txt:2"), "{stderr}");
}
