//! #18 items 1 and 3 end to end: `sim-worker run --cassette` against a local mock
//! OpenAI-compatible server (the real chat-completions wire format) serving a model the rate
//! table prices (`openai/gpt-4o-mini`), then replayed with the server gone; and `--max-cost`.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rust_decimal::Decimal;
use serde_json::{Value, json};
use wiremock::{MockServer, Request, Respond, ResponseTemplate};

use crate::common::{Run, chat_server, done, last_message, proposing, repo, run_openai};

/// 30 hourly ticks of the example skill.
const FROM: &str = "2017-04-19T10:00:00Z";
const TO: &str = "2017-04-20T15:00:00Z";
const TICKS: u64 = 30;

/// A trader that answers in the chat-completions format: at a tick (the last message is the
/// user's context) it opens a long at every 6th hour, closes at every 6th + 3, stands aside
/// otherwise, always with one `propose_order` call; after the tool result it stops. Every
/// answer reports 1,000 prompt and 30 completion tokens.
struct Trader {
    calls: Arc<AtomicUsize>,
}

impl Respond for Trader {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let last = last_message(request);
        if last["role"] == "tool" {
            return done();
        }
        let content = last["content"].as_str().unwrap_or_default();
        let hour: u32 = content
            .lines()
            .skip_while(|l| *l != "## Time")
            .nth(1)
            .and_then(|l| l.get(11..13))
            .and_then(|h| h.parse().ok())
            .unwrap_or(0);
        let args = match hour % 6 {
            0 => json!({"action": "open_long", "symbol": "EURUSD", "size_usd": 4000,
                        "leverage": 1, "reason": "hour 0 mod 6"}),
            3 => json!({"action": "close", "symbol": "EURUSD", "reason": "hour 3 mod 6"}),
            _ => json!({"action": "no_op", "symbol": "EURUSD", "reason": "nothing"}),
        };
        proposing(n, &args)
    }
}

async fn trader() -> (MockServer, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let server = chat_server(Trader {
        calls: calls.clone(),
    })
    .await;
    (server, calls)
}

fn run(skill: &str, base_url: Option<&str>, out: &Path, extra: &[&str]) -> Run {
    run_openai(skill, base_url, out, (FROM, TO), extra)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn decimal(v: &Value) -> Decimal {
    v.as_str()
        .map(|s| s.parse().unwrap())
        .or_else(|| v.as_f64().map(|f| Decimal::try_from(f).unwrap()))
        .unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test]
async fn a_recorded_backtest_replays_byte_identical_with_no_server_and_a_changed_skill_line_is_named()
 {
    let dir = tempfile::tempdir().unwrap();
    let tape = dir.path().join("eurusd.cassette");
    let tape_arg = tape.to_str().unwrap();
    let skill = repo("examples/skills/eurusd-sma-cross.yaml");

    // Record against the mock server.
    let (server, calls) = trader().await;
    let recorded = dir.path().join("recorded");
    let r = run(
        &skill,
        Some(&server.uri()),
        &recorded,
        &["--cassette", tape_arg, "--cassette-mode", "record"],
    );
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    let sent = calls.load(Ordering::SeqCst);
    let received = server.received_requests().await.unwrap().len();
    assert_eq!(sent, received);
    // One call per tick, and a follow-up after every propose_order (each tick proposes).
    assert!(sent >= TICKS as usize, "{sent} requests for {TICKS} ticks");
    let summary: Value = serde_json::from_str(&read(&recorded.join("summary.json"))).unwrap();
    assert_eq!(summary["ticks"], TICKS);
    assert!(
        summary["trades"].as_u64().unwrap() >= 2,
        "the trader trades: {summary}"
    );
    // gpt-4o-mini: 1,000 × $0.15 + 30 × $0.60 per million tokens = $0.000168 a call.
    let cost = decimal(&summary["cost_usd"]);
    assert_eq!(cost, Decimal::new(168, 6) * Decimal::from(sent));
    assert!(
        r.stdout.contains(&format!(
            "(openai/gpt-4o-mini, record) · 0 replayed, {sent} sent and recorded"
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!(
            "spent:   {} at the provider ({sent} calls",
            types::text::cost(cost)
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("cost: tick 1 cost $0.000336"),
        "{}",
        r.stderr
    );

    // The server goes away; replay without a key.
    drop(server);
    let replayed = dir.path().join("replayed");
    let r = run(
        &skill,
        None,
        &replayed,
        &["--cassette", tape_arg, "--cassette-mode", "replay"],
    );
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    for file in ["trades.csv", "summary.json"] {
        assert_eq!(
            read(&recorded.join(file)),
            read(&replayed.join(file)),
            "{file} is byte-identical"
        );
    }
    assert!(
        r.stdout.contains(&format!(
            "(openai/gpt-4o-mini, replay) · {sent} replayed, 0 sent"
        )),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("spent:   $0.00 at the provider (0 calls"),
        "{}",
        r.stdout
    );

    // One skill line changed: the replay stops at the first tick, naming the section.
    let changed = dir.path().join("changed.yaml");
    let text = read(Path::new(&skill));
    assert!(text.contains("maxOrdersPerHour: 2\n"));
    std::fs::write(
        &changed,
        text.replace("maxOrdersPerHour: 2\n", "maxOrdersPerHour: 3\n"),
    )
    .unwrap();
    let missed = dir.path().join("missed");
    let r = run(
        changed.to_str().unwrap(),
        None,
        &missed,
        &["--cassette", tape_arg, "--cassette-mode", "replay"],
    );
    assert_eq!(r.code, 5, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("no recording of this request (fingerprint "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!("tick {FROM}")),
        "the nearest recording is the same tick's: {}",
        r.stderr
    );
    assert!(
        r.stderr.contains(
            "message 1 (user): section `## Risk caps (engine-enforced)` differs at its line 5, column 24: \
             recorded `- Max orders per hour: 2`, this request `- Max orders per hour: 3`"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("the run stopped at tick 1 of 30"),
        "{}",
        r.stderr
    );
    assert!(
        !missed.join("summary.json").exists(),
        "no summary for a failed run"
    );
}

#[tokio::test]
async fn max_cost_stops_before_the_cap_with_the_store_and_summary_consistent() {
    let (server, calls) = trader().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capped");
    // Each tick costs $0.000336 (two calls); 10 ticks would be $0.00336.
    let r = run(
        &repo("examples/skills/eurusd-sma-cross.yaml"),
        Some(&server.uri()),
        &out,
        &["--max-cost", "0.0035"],
    );
    assert_eq!(r.code, 4, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    let sent = calls.load(Ordering::SeqCst) as u64;
    let summary: Value = serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    let ticks = summary["ticks"].as_u64().unwrap();
    let cost = decimal(&summary["cost_usd"]);
    let cap = Decimal::new(35, 4);
    assert!(cost <= cap, "spent {cost} within the cap {cap}");
    assert_eq!(
        ticks, 10,
        "stopped when one more tick would pass the cap: {summary}"
    );
    assert_eq!(cost, Decimal::new(168, 6) * Decimal::from(sent));
    assert_eq!(
        summary["stopped"],
        json!({"reason": "max_cost", "max_cost_usd": "0.0035",
               "spent_usd": cost.normalize().to_string(), "costliest_tick_usd": "0.000336",
               "ticks_run": 10, "ticks_planned": TICKS})
    );
    assert!(
        r.stdout.starts_with("10 ticks "),
        "the result is printed: {}",
        r.stdout
    );
    assert!(
        r.stderr.contains("stopped: --max-cost $0.0035"),
        "{}",
        r.stderr
    );

    // The store holds exactly the ticks the summary counts, and their cost.
    let url = format!("sqlite://{}", out.join("sim.db").display());
    let store = db::connect(&url).await.unwrap();
    let db::Store::Sqlite(lite) = &store else {
        unreachable!("a sqlite URL")
    };
    let (n, last): (i64, String) =
        sqlx::query_as("SELECT COUNT(*), MAX(tick_at) FROM decision_snapshots")
            .fetch_one(lite.pool())
            .await
            .unwrap();
    let costs: Vec<(String,)> =
        sqlx::query_as("SELECT CAST(cost_usd AS TEXT) FROM decision_snapshots")
            .fetch_all(lite.pool())
            .await
            .unwrap();
    store.close().await.unwrap();
    assert_eq!(n as u64, ticks);
    assert!(
        last.starts_with(summary["last_tick"].as_str().unwrap().get(..19).unwrap()),
        "{last} vs {}",
        summary["last_tick"]
    );
    let stored: Decimal = costs.iter().map(|(c,)| c.parse::<Decimal>().unwrap()).sum();
    assert_eq!(stored, cost);
    assert_eq!(
        summary["trades"].as_u64().unwrap() + summary["open_trades"].as_u64().unwrap(),
        read(&out.join("trades.csv")).lines().count() as u64 - 1,
        "trades.csv holds the summary's rows"
    );
}

#[test]
fn what_cannot_be_measured_or_mixes_two_replays_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let skill = repo("examples/skills/eurusd-sma-cross.yaml");
    let base = [
        "run",
        "--skill",
        &skill,
        "--bars",
        &bars,
        "--out",
        out.to_str().unwrap(),
    ];
    let with = |extra: &[&str]| {
        let args: Vec<&str> = base.iter().copied().chain(extra.iter().copied()).collect();
        crate::common::sim(&args)
    };

    let (code, stdout, stderr) = with(&["--model", "openrouter/acme/unpriced", "--max-cost", "1"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("--max-cost: openrouter/acme/unpriced is not in the rate table"),
        "{stderr}"
    );
    let (code, _, stderr) = with(&["--max-cost", "0"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--max-cost: must be above 0"), "{stderr}");

    let tape = dir.path().join("t.cassette");
    let (code, _, stderr) = with(&[
        "--model",
        "builtin/replay:sqlite://nowhere.db",
        "--cassette",
        tape.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("builtin/replay: re-proposes a stored run's decisions"),
        "{stderr}"
    );

    // Replay of a cassette that does not exist: refused, and nothing is created.
    let (code, _, stderr) = with(&[
        "--cassette",
        tape.to_str().unwrap(),
        "--cassette-mode",
        "replay",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no cassette there"), "{stderr}");
    assert!(!tape.exists());
    assert!(!out.join("summary.json").exists());
}
