//! A backtest with the six recall tools sends byte-identical model requests whether its store is
//! SQLite or PostgreSQL: recorded on SQLite, the same run on PostgreSQL replays the cassette in
//! replay mode (a miss ends the run) with every request found, and both stores hold the same
//! decisions.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use db::{DecisionSnapshot, OutcomeStore, RegistryStore, TickStore};
use serde_json::{Value, json};
use types::Uuid;
use wiremock::{Request, Respond, ResponseTemplate};

use crate::common::{Run, chat_server, repo, run_openai};

/// Five days of hourly ticks: outcomes are graded from the second day on.
const FROM: &str = "2017-04-19T10:00:00Z";
const TO: &str = "2017-04-24T10:00:00Z";
/// From this day on, every sixth hour + 1 calls the six recall tools.
const RECALL_FROM: &str = "2017-04-21";
/// A query every graded long's narrative matches ("EURUSD long - Grade …").
const SEARCH: &str = "EURUSD long";

/// The six recall tool calls of one answer, each with arguments that read the memory.
fn recall_calls() -> Vec<(&'static str, Value)> {
    vec![
        (
            "recall_symbol_history",
            json!({"symbol": "EURUSD", "limit": 20}),
        ),
        ("recall_recent_trades", json!({"days": 7, "limit": 20})),
        (
            "recall_signal_accuracy",
            json!({"confidence_min": 0, "confidence_max": 100}),
        ),
        (
            "recall_similar_setups",
            json!({"rsi_min": 0, "rsi_max": 100}),
        ),
        ("recall_what_worked", json!({"market_condition": "ranging"})),
        ("search_trade_memory", json!({"query": SEARCH, "limit": 20})),
    ]
}

/// A trader in the chat-completions format. At a tick (the last message is the user's context)
/// it opens a long at every 6th hour and closes at every 6th + 3; from [`RECALL_FROM`] on, at
/// every 6th + 1 it calls the six recall tools and, after their results, stands aside with a
/// `propose_order` no-op; otherwise it stands aside. After a `propose_order` result it stops.
struct Trader {
    calls: Arc<AtomicUsize>,
}

fn tool_calls(n: usize, calls: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_{n}_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    json!({
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 30},
    })
}

impl Respond for Trader {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or(Value::Null);
        if last["role"] == "tool" {
            // After the recall results: stand aside; after a proposal's result: stop.
            let recalled = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "assistant")
                .is_some_and(|m| m["tool_calls"][0]["function"]["name"] != "propose_order");
            if recalled {
                let no_op = json!({"action": "no_op", "symbol": "EURUSD",
                                   "reason": "read the memory"});
                return ResponseTemplate::new(200)
                    .set_body_json(tool_calls(n, &[("propose_order", no_op)]));
            }
            return ResponseTemplate::new(200).set_body_json(json!({
                "choices": [{"message": {"role": "assistant", "content": "Done."},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1000, "completion_tokens": 30},
            }));
        }
        let content = last["content"].as_str().unwrap_or_default();
        let time = content
            .lines()
            .skip_while(|l| *l != "## Time")
            .nth(1)
            .unwrap_or_default();
        let hour: u32 = time.get(11..13).and_then(|h| h.parse().ok()).unwrap_or(0);
        let day = time.get(..10).unwrap_or_default();
        if hour % 6 == 1 && day >= RECALL_FROM {
            return ResponseTemplate::new(200).set_body_json(tool_calls(n, &recall_calls()));
        }
        let args = match hour % 6 {
            0 => json!({"action": "open_long", "symbol": "EURUSD", "size_usd": 4000,
                        "leverage": 1, "confidence": 40 + hour, "reason": "hour 0 mod 6"}),
            3 => json!({"action": "close", "symbol": "EURUSD", "reason": "hour 3 mod 6"}),
            _ => json!({"action": "no_op", "symbol": "EURUSD", "reason": "nothing"}),
        };
        ResponseTemplate::new(200).set_body_json(tool_calls(n, &[("propose_order", args)]))
    }
}

/// The example skill with the `<trading_memory>` block on, the six recall tools whitelisted and
/// room for a recall step.
fn skill(dir: &Path) -> String {
    let text = std::fs::read_to_string(repo("examples/skills/eurusd-sma-cross.yaml")).unwrap();
    assert!(text.contains("maxSteps: 2\n") && text.contains("    recentTradesK: 10\n"));
    let text = text.replace("maxSteps: 2\n", "maxSteps: 4\n").replace(
        "    recentTradesK: 10\n",
        "    recentTradesK: 10\n    tradingMemory: true\n",
    ) + "tools:\n  builtIn: [propose_order, recall_symbol_history, recall_recent_trades, \
           recall_signal_accuracy, recall_similar_setups, recall_what_worked, \
           search_trade_memory]\n";
    let path = dir.join("recall.yaml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn run(skill: &str, base_url: Option<&str>, db: &str, out: &Path, extra: &[&str]) -> Run {
    run_openai(
        skill,
        base_url,
        out,
        (FROM, TO),
        &[&["--db", db], extra].concat(),
    )
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The graded figures of an outcome: its tick, grade and 24h PnL.
type Graded = (
    chrono::DateTime<chrono::Utc>,
    Option<outcomes::Grade>,
    Option<rust_decimal::Decimal>,
);

/// A store's decisions, oldest first, without the row ids (the rest is what the tick saw and
/// did: prompts, every step with the tool results, the proposal and the verdict), and its
/// outcomes' grades.
async fn decisions(url: &str) -> (Vec<DecisionSnapshot>, Vec<Graded>) {
    let store = db::open_existing(url).await.unwrap();
    let deployments = store.list_deployments(None).await.unwrap();
    assert_eq!(deployments.len(), 1, "one deployment in {url}");
    let d = deployments[0].id;
    let mut rows = store.list_snapshots(d, 10_000).await.unwrap();
    rows.sort_by_key(|s| s.tick_at);
    for r in &mut rows {
        r.id = Uuid::nil();
        r.deployment_id = Uuid::nil();
    }
    let graded: Vec<Graded> = store
        .outcomes(d, 1000)
        .await
        .unwrap()
        .iter()
        .map(|o| (o.tick_at, o.score.outcome_grade, o.score.pnl_percent_24h))
        .collect();
    let n = graded.iter().filter(|g| g.1.is_some()).count();
    assert!(n >= 8, "{n} graded outcomes in {url}");
    (rows, graded)
}

/// The recorded requests, in order, as the cassette stores them (canonical JSON).
async fn recorded(tape: &Path) -> Vec<(String, Value)> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=ro", tape.display()))
        .await
        .unwrap();
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT fingerprint, request FROM responses ORDER BY seq")
            .fetch_all(&pool)
            .await
            .unwrap();
    pool.close().await;
    rows.into_iter()
        .map(|(f, r)| (f, serde_json::from_str(&r).unwrap()))
        .collect()
}

#[tokio::test]
async fn a_recall_backtest_recorded_on_sqlite_replays_on_postgres_request_for_request() {
    let dir = tempfile::tempdir().unwrap();
    let skill = skill(dir.path());
    let tape = dir.path().join("recall.cassette");
    let tape_arg = tape.to_str().unwrap();

    // SQLite, recording against the mock server.
    let calls = Arc::new(AtomicUsize::new(0));
    let server = chat_server(Trader {
        calls: calls.clone(),
    })
    .await;
    let lite_url = format!("sqlite://{}?mode=rwc", dir.path().join("sim.db").display());
    let lite_out = dir.path().join("sqlite");
    let r = run(
        &skill,
        Some(&server.uri()),
        &lite_url,
        &lite_out,
        &["--cassette", tape_arg, "--cassette-mode", "record"],
    );
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    drop(server);
    let sent = calls.load(Ordering::SeqCst);
    assert!(
        r.stdout
            .contains(&format!("0 replayed, {sent} sent and recorded")),
        "{}",
        r.stdout
    );

    // Not vacuous: the recall tools answered with rows, the search with many hits.
    let requests = recorded(&tape).await;
    assert_eq!(requests.len(), sent, "every request recorded once");
    let results: Vec<(&str, Value)> = requests
        .iter()
        .flat_map(|(_, r)| r["messages"].as_array().unwrap().iter())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| {
            let v = serde_json::from_str(m["content"].as_str()?).ok()?;
            Some((m["name"].as_str()?, v))
        })
        .collect();
    for (name, _) in recall_calls() {
        assert!(
            results.iter().any(|(n, _)| *n == name),
            "{name} answered with JSON"
        );
    }
    let rows = |name: &str, key: &str| {
        results
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| {
                v[key].as_array().map_or(0, Vec::len) + v["left_out"].as_u64().unwrap_or(0) as usize
            })
            .max()
            .unwrap_or(0)
    };
    let hits = rows("search_trade_memory", "hits");
    assert!(hits >= 5, "the search matched {hits} outcomes");
    let history = rows("recall_symbol_history", "outcomes");
    assert!(history >= 5, "the history listed {history} outcomes");

    // PostgreSQL, replaying: no server, no key, a miss would end the run (exit 5).
    let test_db = db::test_support::pg::TestDatabase::create("sim_worker_xbackend_", 4).await;
    let pg_url = test_db.url();
    let pg_out = dir.path().join("postgres");
    let r = run(
        &skill,
        None,
        &pg_url,
        &pg_out,
        &["--cassette", tape_arg, "--cassette-mode", "replay"],
    );
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("{sent} replayed, 0 sent")),
        "every request of the PostgreSQL run was a recorded one: {}",
        r.stdout
    );

    // The same decisions, trades and prompts in both stores.
    assert_eq!(
        read(&lite_out.join("trades.csv")),
        read(&pg_out.join("trades.csv"))
    );
    let (lite, lite_outcomes) = decisions(&lite_url).await;
    let (pg, pg_outcomes) = decisions(&pg_url).await;
    assert_eq!(lite_outcomes, pg_outcomes);
    assert_eq!(lite.len(), pg.len());
    for (a, b) in lite.iter().zip(&pg) {
        assert_eq!(a, b, "the decision of {}", a.tick_at);
    }
}
