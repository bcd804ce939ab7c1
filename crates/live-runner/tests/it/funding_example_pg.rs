//! #16's acceptance test: a paper deployment of the README's funding example
//! (`examples/skills/btc-eth-funding-thesis.yaml`), ticked by the runner (the loop of
//! `live-runner run`, on a controlled clock) against a local mock Hyperliquid (candles, funding
//! history, asset contexts) and a local feed server, with an FOMC decision in the store's
//! calendar: the recorded snapshot's Derivatives, News and Upcoming events sections hold the
//! served data. (The binary runs on the wall clock: its start-up poll fetches after the bar close
//! it ticks, which point in time keeps out of that tick — `news_pg.rs` covers the binary's
//! flags.)

use crate::common;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use agent_runtime::{ModelError, builtin_model};
use chrono::Duration;
use common::{hyperliquid_mock, postgres, t};
use db::{EventStore, TickStore};
use live_runner::admin::{self, DeployRequest};
use live_runner::metrics::Metrics;
use live_runner::runner::{ModelResolver, NewsFeeds, Runner, RunnerConfig};
use live_runner::test_support::paper_deploy;
use rust_decimal::Decimal;
use types::{EventKind, MarketEvent};
use uuid::Uuid;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const RSS: &str = include_str!("../../../news/tests/fixtures/coindesk-like.rss.xml");

/// The skill's own model needs a key; this test's ticks use the offline sma-cross baseline.
fn offline() -> ModelResolver {
    Arc::new(|_: &str, skill: &skill_schema::Skill| {
        builtin_model("builtin/sma-cross:3:5", skill)
            .ok_or_else(|| ModelError::UnknownModel("builtin/sma-cross:3:5".into()))
    })
}

async fn runner(
    pg: &common::Pg,
    hl: &MockServer,
    now: chrono::DateTime<chrono::Utc>,
    feed: String,
) -> Arc<Runner> {
    let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri())).unwrap();
    let mut config = RunnerConfig::new(format!("funding-example:{}", Uuid::new_v4()));
    config.once = true;
    Arc::new(
        Runner::new(
            pg.store.clone(),
            info,
            Arc::new(types::FixedClock(now)),
            offline(),
            Metrics::default(),
            config,
        )
        .await
        .unwrap()
        .with_news(NewsFeeds {
            poller: news::FeedPoller::new(vec![feed], StdDuration::from_secs(5)).unwrap(),
            every: StdDuration::from_secs(300),
        }),
    )
}

fn section<'a>(context: &'a str, heading: &str) -> &'a str {
    let body = context
        .split(heading)
        .nth(1)
        .unwrap_or_else(|| panic!("no {heading} section:\n{context}"));
    body.split("\n\n").next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_funding_example_live_sees_derivatives_news_and_events() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let tick = t("2026-11-02T12:00:00Z");
    common::mount_derivatives(&hl, tick).await;
    let feeds = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/rss"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(RSS.as_bytes().to_vec(), "application/rss+xml"),
        )
        .mount(&feeds)
        .await;
    let feed = format!("{}/rss", feeds.uri());

    let skill =
        admin::load_skill_file(&common::repo("examples/skills/btc-eth-funding-thesis.yaml"))
            .unwrap();
    let d = admin::deploy(
        &pg.store,
        &skill,
        &DeployRequest {
            id: Some(Uuid::from_u128(0xf1)),
            ..paper_deploy(Uuid::from_u128(0xf0))
        },
        tick - Duration::minutes(30),
    )
    .await
    .unwrap();
    // The calendar: an FOMC decision 6 hours after the tick.
    pg.store
        .upsert_events(&[MarketEvent {
            id: Uuid::from_u128(0xf0c),
            kind: EventKind::Fomc,
            title: "FOMC rate decision".into(),
            symbols: Vec::new(),
            scheduled_at: tick + Duration::hours(6),
            importance: Decimal::new(9, 1),
            source: "federalreserve.gov".into(),
        }])
        .await
        .unwrap();

    // The background poll at 11:50 stores the feed; the tick at 12:00 reads it.
    let early = runner(&pg, &hl, tick - Duration::minutes(10), feed.clone()).await;
    assert_eq!(early.poll_news().await[0].outcome.as_ref().unwrap().new, 4);
    let r = runner(&pg, &hl, tick + Duration::seconds(2), feed).await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 1);

    let snaps = pg.store.list_snapshots(d.id, 10).await.unwrap();
    assert_eq!(snaps.len(), 1);
    let context = &snaps[0].context;
    let derivatives = section(
        context,
        "## Derivatives (perpetual funding and open interest)\n",
    );
    assert!(
        derivatives.contains(
            "- BTC funding +0.0020% per 1h at 11-02T12:00 (annualised +17.52%), mean of last 24 \
             +0.0013% · open interest 688.11 BTC ($18,545,252.61) at 11-02T12:00"
        ),
        "{derivatives}"
    );
    assert!(
        derivatives.contains("- ETH funding +0.0020% per 1h"),
        "{derivatives}"
    );
    let news = section(context, "## News (last 12h, top 8 by relevance)\n");
    assert!(
        news.contains("Bitcoin surges past $110K as ETF inflows hit a record"),
        "{news}"
    );
    let events = section(context, "## Upcoming events");
    assert!(events.contains("FOMC rate decision"), "{events}");
}
