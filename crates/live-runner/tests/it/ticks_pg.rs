//! `live-runner ticks` over PostgreSQL (the same export as `sim-worker ticks`, one
//! implementation, `tick::ticks_cmd`): ticks written with a model that logs what it was given
//! read back byte for byte, a window, a CSV that reads back, and bad input refused with exit 2
//! and nothing on stdout.

use std::process::Command;
use std::sync::Mutex;

use agent_runtime::{
    LanguageModel, Message, ModelError, ModelRequest, ModelResponse, builtin_model,
};
use backtest::{BacktestInput, RunOptions, register};
use chrono::Duration;
use execution_engine::PaperBrokerConfig;
use rust_decimal::Decimal;
use serde_json::Value;
use tools::Preloaded;
use types::Interval;
use uuid::Uuid;

use crate::common::{self, mock_bars, postgres, t};

const TICKS: i64 = 30;

/// The tick's model, logging the system prompt and user message of each tick's first call.
struct Logging {
    inner: std::sync::Arc<dyn LanguageModel>,
    seen: Mutex<Vec<(String, String)>>,
}

#[async_trait::async_trait]
impl LanguageModel for Logging {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if let [Message::User { content }] = request.messages.as_slice() {
            self.seen
                .lock()
                .unwrap()
                .push((request.system.clone(), content.clone()));
        }
        self.inner.generate(request).await
    }
}

async fn live(args: Vec<String>) -> (i32, String, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_live-runner"))
            .args(&args)
            .env_remove("DATABASE_URL")
            .output()
            .expect("run live-runner")
    })
    .await
    .expect("join");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

fn lines(jsonl: &str) -> Vec<Value> {
    jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ticks_export_what_the_model_saw_over_postgres() {
    let pg = postgres().await;
    let url = pg.url();
    // 30 hourly ticks of the BTC skill written to PostgreSQL by the shared tick code.
    let skill =
        live_runner::admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let first = t("2026-06-04T10:00:00Z");
    let (from, to) = (first - Duration::days(60), first + Duration::hours(TICKS));
    let mut market =
        Preloaded::new().with_bars("BTC", Interval::H1, mock_bars(Interval::H1, from, to));
    for h in skill.context.effective_higher_timeframes() {
        market.insert_bars("BTC", h, mock_bars(h, from, to));
    }
    let equity = Decimal::from(10_000);
    let input = BacktestInput::for_test(skill.clone(), market)
        .with_ids(
            Uuid::from_u128(0x0a11ce),
            Uuid::from_u128(0x71c),
            Uuid::from_u128(0x5c1),
        )
        .with_offline_reflection()
        .with_range(first, first + Duration::hours(TICKS - 1))
        .with_broker(
            PaperBrokerConfig::for_skill(equity, &skill, &common::exchange_max_leverage())
                .expect("broker"),
        );
    register(
        &pg.store,
        &input,
        serde_json::to_value(&skill).expect("json"),
        first,
    )
    .await
    .expect("register");
    let model = Logging {
        inner: builtin_model(&skill.model, &skill).expect("model"),
        seen: Mutex::new(Vec::new()),
    };
    backtest::run(&input, &model, &pg.store, RunOptions::default())
        .await
        .expect("ticks")
        .stored()
        .await
        .expect("stored");
    let seen = model.seen.into_inner().unwrap();
    assert_eq!(seen.len() as i64, TICKS);

    // Every tick, with what its model was given, byte for byte.
    let (code, out, err) = live(args(&["ticks", "--db", &url, "--prompts"])).await;
    assert_eq!(code, 0, "{err}");
    let all = lines(&out);
    assert_eq!(all.len() as i64, TICKS);
    for (i, (tick, (system, user))) in all.iter().zip(&seen).enumerate() {
        assert_eq!(
            tick["tick_at"],
            serde_json::to_value(first + Duration::hours(i as i64)).unwrap()
        );
        assert_eq!(
            tick["deployment_id"],
            "00000000-0000-0000-0000-00000000071c"
        );
        assert_eq!(
            tick["system_prompt"].as_str(),
            Some(system.as_str()),
            "tick {i}"
        );
        assert_eq!(
            tick["user_message"].as_str(),
            Some(user.as_str()),
            "tick {i}"
        );
        assert!(!tick["steps"].as_array().unwrap().is_empty(), "tick {i}");
    }
    let executed = all.iter().filter(|t| t["outcome"] == "executed").count();
    assert!(executed > 0, "the run traded");

    // A window of ten, as CSV: it reads back, a row a tick.
    let (code, out, err) = live(args(&[
        "ticks",
        "--db",
        &url,
        "--from",
        "2026-06-04 15:00",
        "--to",
        "2026-06-05T00:00:00Z",
        "--format",
        "csv",
    ]))
    .await;
    assert_eq!(code, 0, "{err}");
    let mut reader = csv::Reader::from_reader(out.as_bytes());
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 10, "15:00 to 00:00, both included");
    for (row, tick) in rows.iter().zip(&all[5..15]) {
        assert_eq!(&row[col("tick_id")], tick["tick_id"].as_str().unwrap());
        assert_eq!(&row[col("outcome")], tick["outcome"].as_str().unwrap());
        assert_eq!(
            &row[col("verdict_detail")],
            tick["verdict"]["detail"].as_str().unwrap()
        );
    }

    // Bad input: exit 2, the flag named, nothing on stdout.
    for (extra, names) in [
        (vec!["--from", "2026-06-05", "--to", "2026-06-04"], "--from"),
        (vec!["--format", "xml"], "--format"),
        (vec!["--prompts", "--format", "csv"], "--prompts"),
        (
            vec!["--deployment", "00000000-0000-0000-0000-000000000001"],
            "no such deployment",
        ),
    ] {
        let mut a = args(&["ticks", "--db", &url]);
        a.extend(extra.iter().map(|s| (*s).to_owned()));
        let (code, out, err) = live(a.clone()).await;
        assert_eq!(code, 2, "{a:?}: {err}");
        assert!(out.is_empty(), "{a:?}");
        assert!(err.contains(names), "{a:?}: {err}");
    }
}
