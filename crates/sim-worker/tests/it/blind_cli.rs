//! `sim-worker run --blind`: the rule-based baseline takes exactly the trades of the normal run,
//! and the leak scanner (`blind::LeakScanner`) finds nothing in what the model read — no stored
//! system prompt, user message, tool call or tool result of any tick. On the example (EURUSD,
//! the real central-bank calendar) and on a two-symbol skill with the 30 hostile headlines of
//! `crates/blind/tests/fixtures`.

use std::path::Path;

use db::TickStore;
use rust_decimal::Decimal;
use rust_decimal_macros::dec;

use crate::common::{repo, sim};

/// Runs `sim-worker run` with `extra` into `dir/name`: (summary, trades.csv, store url).
fn run(dir: &Path, name: &str, args: &[&str]) -> (serde_json::Value, String, String) {
    let out = dir.join(name);
    let url = format!("sqlite://{}", dir.join(format!("{name}.db")).display());
    let mut all = vec!["run", "--out", out.to_str().unwrap(), "--db", &url];
    all.extend_from_slice(args);
    let (code, _, stderr) = sim(&all);
    assert_eq!(code, 0, "{name}: {stderr}");
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    let trades = std::fs::read_to_string(out.join("trades.csv")).unwrap();
    (serde_json::from_str(&summary).unwrap(), trades, url)
}

/// trades.csv without the row ids (they derive from the deployment id, which names the blind
/// flag) and the reasons (the model's own words, written in the world it read).
fn trades_without_ids_and_reasons(csv: &str) -> Vec<String> {
    csv.lines()
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            fields[1..22].join(",")
        })
        .collect()
}

/// Every text the model read in the run stored at `url`: each tick's system prompt, user
/// message and steps (tool calls and results).
async fn model_texts(url: &str, deployment: &str) -> Vec<String> {
    let store = db::connect(url).await.unwrap();
    let snapshots = store
        .list_snapshots(deployment.parse().unwrap(), u32::MAX)
        .await
        .unwrap();
    store.close().await.unwrap();
    assert!(!snapshots.is_empty());
    snapshots
        .into_iter()
        .flat_map(|s| [s.system_prompt, s.context, s.steps.as_str().to_owned()])
        .collect()
}

/// Every price of a backtesting.py CSV (open, high, low, close).
fn raw_prices(csv: &str) -> Vec<Decimal> {
    csv.lines()
        .skip(1)
        .flat_map(|l| {
            l.split(',')
                .skip(1)
                .take(4)
                .map(|p| p.parse().unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Asserts that the scanner finds no leak in any text and that the texts hold enough to scan.
fn assert_blind(texts: &[String], symbols: &[&str], prices: Vec<Decimal>) {
    let symbols: Vec<String> = symbols.iter().map(|s| (*s).to_owned()).collect();
    let scanner = blind::LeakScanner::new(&symbols).with_prices(prices);
    for text in texts {
        let leaks = scanner.scan(text);
        assert!(
            leaks.is_empty(),
            "leaks {leaks:?} in a blind prompt:\n{text}"
        );
    }
    let read: usize = texts.iter().map(String::len).sum();
    assert!(read > 100_000, "only {read} bytes were read");
}

#[tokio::test]
async fn a_blind_run_of_the_example_takes_the_same_trades_and_shows_no_real_market() {
    let dir = tempfile::tempdir().unwrap();
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let events = repo("examples/events/central-bank-decisions-2017-2018.json");
    let skill = dir.path().join("skill.yaml");
    // The example with its central-bank calendar on (the avoid rule's decisions, in the prompt).
    let text = std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml")).unwrap();
    let text = text.replace(
        "  memory:\n",
        "  events:\n    enabled: true\n    lookaheadHours: 48\n  memory:\n",
    );
    std::fs::write(&skill, text).unwrap();
    let args = [
        "--skill",
        skill.to_str().unwrap(),
        "--bars",
        &bars,
        "--events",
        &events,
    ];
    let (normal, normal_trades, _) = run(dir.path(), "normal", &args);
    let mut blind_args = args.to_vec();
    blind_args.push("--blind");
    let (blind, blind_trades, url) = run(dir.path(), "blind", &blind_args);

    // The same trades, one for one: times, sides, prices, sizes, PnL, fees.
    assert!(normal["trades"].as_u64().unwrap() > 200, "{normal}");
    assert_eq!(
        trades_without_ids_and_reasons(&normal_trades),
        trades_without_ids_and_reasons(&blind_trades)
    );
    assert!(blind_trades.contains(",EURUSD,"), "the ledger stays real");
    assert_eq!(blind["blind"], true);
    let strip = |mut v: serde_json::Value| {
        let o = v.as_object_mut().unwrap();
        o.remove("deployment_id");
        o.remove("blind");
        v
    };
    assert_eq!(strip(normal), strip(blind.clone()));

    // Nothing the model read names the market, its dates or its prices.
    let texts = model_texts(&url, blind["deployment_id"].as_str().unwrap()).await;
    assert!(
        texts
            .iter()
            .any(|t| t.contains("## Upcoming events") && t.contains("ECB")),
        "the calendar reached the prompt"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("ASSET_A") && t.contains("day "))
    );
    let csv = std::fs::read_to_string(repo("examples/data/EURUSD.csv")).unwrap();
    assert_blind(&texts, &["EURUSD"], raw_prices(&csv));
}

#[tokio::test]
async fn a_blind_run_of_two_symbols_with_news_takes_the_same_trades_and_shows_no_real_market() {
    let dir = tempfile::tempdir().unwrap();
    let eurusd = std::fs::read_to_string(repo("examples/data/EURUSD.csv")).unwrap();
    // A second market: the EURUSD bars 50 hours later, at 1.17 × the price (GBPUSD-like), on
    // EURUSD's timestamps, so the two cross at different times.
    let lines: Vec<&str> = eurusd.lines().take(1_500).collect();
    let mut gbp = String::from(lines[0]);
    gbp.push('\n');
    for (at, from) in lines[1..].iter().zip(&lines[51..]) {
        let time = at.split(',').next().unwrap();
        let mut fields = from.split(',').skip(1);
        let mut row = time.to_owned();
        for _ in 0..4 {
            let p: rust_decimal::Decimal = fields.next().unwrap().parse().unwrap();
            row.push(',');
            row.push_str(
                &(p * rust_decimal_macros::dec!(1.17))
                    .normalize()
                    .to_string(),
            );
        }
        row.push(',');
        row.push_str(fields.next().unwrap());
        gbp.push_str(&row);
        gbp.push('\n');
    }
    let gbp_path = dir.path().join("GBPUSD.csv");
    std::fs::write(&gbp_path, &gbp).unwrap();
    // Three headlines written for this run, then the hostile ones, one a weekday at 10:00 from
    // Monday 24 April (the market is shut at weekends: a Saturday headline would never be
    // within a tick's 24 hours).
    let mut items = serde_json::json!([
        {"time": "2017-04-25T08:30:00Z", "headline": "EUR/USD jumps to 1.0912 as ECB holds rates on Tuesday, April 25 2017",
         "source": "wire", "sentiment": "0.4", "importance": "0.9", "symbols": ["EURUSD"]},
        {"time": "2017-05-04T09:15:00Z", "headline": "GBPUSD slips after 2017-05-04 data; cable eyes May lows",
         "source": "wire", "sentiment": "-0.3", "importance": "0.7", "symbols": ["GBPUSD"]},
        {"time": "2017-05-10T12:00:00Z", "headline": "Dollar broad rally on Wednesday hits EURUSD and GBPUSD",
         "source": "wire", "sentiment": "-0.2", "importance": "0.6", "symbols": ["EURUSD", "GBPUSD"]}
    ]);
    let headlines: Vec<String> = serde_json::from_str(
        &std::fs::read_to_string(repo("crates/blind/tests/fixtures/hostile-headlines.json"))
            .unwrap(),
    )
    .unwrap();
    let symbols = [vec!["EURUSD"], vec!["GBPUSD"], vec![]];
    let weekdays = (0..)
        .map(|d| chrono::NaiveDate::from_ymd_opt(2017, 4, 24).unwrap() + chrono::Days::new(d))
        .filter(|d| chrono::Datelike::weekday(d).number_from_monday() <= 5);
    for (i, (headline, day)) in headlines.iter().zip(weekdays).enumerate() {
        let time = day.and_hms_opt(10, 0, 0).unwrap().and_utc();
        items.as_array_mut().unwrap().push(serde_json::json!({
            "time": time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "headline": headline, "source": "wire", "sentiment": "0.1", "importance": "0.5",
            "symbols": symbols[i % 3],
        }));
    }
    let news = dir.path().join("news.json");
    std::fs::write(&news, items.to_string()).unwrap();
    let skill = dir.path().join("skill.yaml");
    let text = std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml")).unwrap();
    let text = text
        .replace("symbols: [EURUSD]", "symbols: [EURUSD, GBPUSD]")
        .replace(
            "allowedSymbols: [EURUSD]",
            "allowedSymbols: [EURUSD, GBPUSD]",
        )
        .replace("name: EURUSD 1h", "name: EURUSD and GBPUSD 1h")
        .replace("newsLookbackHours: 6", "newsLookbackHours: 24")
        // Room for a position in each.
        .replace("maxPositionPct: 60", "maxPositionPct: 45")
        .replace("maxTotalExposurePct: 60", "maxTotalExposurePct: 100");
    std::fs::write(&skill, text).unwrap();
    let eur = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let gbp_bars = format!("GBPUSD={}", gbp_path.display());
    let args = [
        "--skill",
        skill.to_str().unwrap(),
        "--bars",
        &eur,
        "--bars",
        &gbp_bars,
        "--news",
        news.to_str().unwrap(),
        "--to",
        "2017-06-15T00:00:00Z",
    ];
    let (normal, normal_trades, _) = run(dir.path(), "normal", &args);
    let mut blind_args = args.to_vec();
    blind_args.push("--blind");
    let (blind, blind_trades, url) = run(dir.path(), "blind", &blind_args);

    assert!(normal["trades"].as_u64().unwrap() > 20, "{normal}");
    assert!(normal_trades.contains(",GBPUSD,") && normal_trades.contains(",EURUSD,"));
    assert_eq!(
        trades_without_ids_and_reasons(&normal_trades),
        trades_without_ids_and_reasons(&blind_trades)
    );

    let texts = model_texts(&url, blind["deployment_id"].as_str().unwrap()).await;
    let news_seen = texts
        .iter()
        .find(|t| t.contains("ASSET_A jumps to [price]"))
        .expect("the EUR/USD headline, masked");
    assert!(
        news_seen.contains("ECB holds rates on [weekday], [month] [day] [year]"),
        "{news_seen}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.contains("ASSET_B slips after day 15 data")),
        "the GBPUSD headline, masked"
    );
    assert!(texts.iter().any(|t| t.contains("### ASSET_B 1h")));
    // Every headline reached a prompt: 33 news lines, each shown at a tick.
    let shown: std::collections::BTreeSet<&str> = texts
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| l.contains(" wire ["))
        .collect();
    assert_eq!(shown.len(), 3 + headlines.len(), "{shown:#?}");
    let mut prices = raw_prices(&eurusd);
    prices.extend(raw_prices(&gbp));
    prices.extend([dec!(1.0912), dec!(1.0950), dec!(1.0921), dec!(1.2950)]);
    assert_blind(&texts, &["EURUSD", "GBPUSD"], prices);
}
