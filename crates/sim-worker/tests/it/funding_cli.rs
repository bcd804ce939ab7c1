//! `sim-worker run --funding`: the README's funding example backtested with a Hyperliquid
//! `fundingHistory` response (the real one in the shared fixtures) for BTC and a CSV for ETH. A
//! local wiremock server stands in for an OpenAI-compatible model that first calls
//! `get_funding_rate`, then stands aside. The prompt's Derivatives section and the tool's
//! answer hold the prints stamped at or before the tick, never a later one.

use std::fmt::Write as _;
use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};
use wiremock::{Request, Respond, ResponseTemplate};

use crate::common::{chat_server, repo};

/// The tick: 2023-07-17 12:00 UTC. The fixture's BTC prints are stamped a few milliseconds
/// after each hour, so the 12:00 print is after the tick and the 11:00 one is the latest seen.
const TICK: &str = "2023-07-17T12:00:00Z";

/// Hourly bars from 2023-07-10 00:00 to the tick, in the backtesting.py layout.
fn bars(dir: &Path, name: &str, base: i64) -> String {
    let mut csv = String::from(",Open,High,Low,Close,Volume\n");
    for h in 0..(7 * 24 + 13) {
        let day = 10 + h / 24;
        let price = base + (h % 12) * 10;
        let _ = writeln!(
            csv,
            "2023-07-{day:02} {:02}:00:00,{price},{},{},{price},5",
            h % 24,
            price + 20,
            price - 20
        );
    }
    let path = dir.join(name);
    std::fs::write(&path, csv).unwrap();
    path.to_str().unwrap().to_owned()
}

/// First call: `get_funding_rate` for ETH; after its result: `propose_order` no_op; then a
/// closing text.
struct Script;

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let answered = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "tool")
            .count();
        let (name, args) = match answered {
            0 => ("get_funding_rate", json!({"symbol": "ETH"})),
            1 => (
                "propose_order",
                json!({"action": "no_op", "symbol": "ETH", "reason": "funding is neutral"}),
            ),
            _ => {
                return ResponseTemplate::new(200).set_body_json(json!({
                    "choices": [{
                        "message": {"role": "assistant", "content": "Done."},
                        "finish_reason": "stop",
                    }],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 2},
                }));
            }
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "choices": [{
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": format!("call-{name}"),
                        "type": "function",
                        "function": {"name": name, "arguments": args.to_string()},
                    }],
                },
                "finish_reason": "tool_calls",
            }],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5},
        }))
    }
}

#[tokio::test]
async fn a_backtest_with_funding_shows_it_in_the_prompt_and_the_tool_answers_it_point_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let btc = bars(dir.path(), "BTC.csv", 30_000);
    let eth = bars(dir.path(), "ETH.csv", 1_900);
    let eth_funding = dir.path().join("eth-funding.csv");
    std::fs::write(
        &eth_funding,
        "time,rate,premium\n\
         2023-07-17T10:00:00Z,0.00008,0.0001\n\
         2023-07-17T11:00:00Z,0.0001,0.0001\n\
         2023-07-17T12:00:00Z,0.00012,0.0001\n\
         2023-07-17T13:00:00Z,0.0099,0.0001\n",
    )
    .unwrap();
    let server = chat_server(Script).await;

    let out = dir.path().join("out");
    let o = Command::cargo_bin("sim-worker")
        .unwrap()
        .args([
            "run",
            "--skill",
            &repo("examples/skills/btc-eth-funding-thesis.yaml"),
            "--bars",
            &format!("BTC={btc}"),
            "--bars",
            &format!("ETH={eth}"),
            "--funding",
            &format!(
                "BTC={}",
                repo("crates/hyperliquid/tests/fixtures/fundingHistory.json")
            ),
            "--funding",
            &format!("ETH={}", eth_funding.display()),
            "--model",
            "openai/test-model",
            "--from",
            TICK,
            "--to",
            TICK,
            "--out",
            out.to_str().unwrap(),
        ])
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.uri())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests.len(),
        3,
        "the tool call, the proposal, the closing text"
    );
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let user = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let section = user
        .split("## Derivatives (perpetual funding and open interest)\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no Derivatives section:\n{user}"));
    let section = section.split("\n\n").next().unwrap();
    assert_eq!(
        section,
        "- BTC funding +0.0013% per 1h at 07-17T11:00 (annualised +10.95%), mean of last 24 \
         +0.0013% · open interest none up to now\n\
         - ETH funding +0.0120% per 1h at 07-17T12:00 (annualised +105.12%), mean of last 3 \
         +0.0100% · open interest none up to now"
    );
    assert!(!user.contains("0.9900%"), "a print after the tick: {user}");

    // The tool's answer, as the model received it.
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer: Value = serde_json::from_str(&result).unwrap_or_else(|e| panic!("{e}: {result}"));
    assert_eq!(answer["available"], true, "{answer}");
    assert_eq!(answer["latest"]["rate"], "0.00012", "{answer}");
    assert_eq!(answer["latest"]["time"], "2023-07-17T12:00:00Z", "{answer}");
    assert_eq!(answer["history"].as_array().unwrap().len(), 3, "{answer}");
    assert!(!result.contains("0.0099"), "{result}");
}

#[test]
fn bad_funding_flags_and_files_exit_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let btc = bars(dir.path(), "BTC.csv", 30_000);
    let eth = bars(dir.path(), "ETH.csv", 1_900);
    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "time,rate\n2023-07-17T10:00:00Z,x\n").unwrap();
    let good = dir.path().join("good.csv");
    std::fs::write(&good, "time,rate\n2023-07-17T10:00:00Z,0.0001\n").unwrap();
    let bad = format!("BTC={}", bad.display());
    let sol = format!("SOL={}", good.display());
    let twice = format!("BTC={}", good.display());
    for (extra, expected) in [
        (
            vec!["--funding", bad.as_str()],
            "bad.csv:2: rate: not a number: \"x\"",
        ),
        (
            vec!["--funding", sol.as_str()],
            "SOL is not one of the skill's symbols",
        ),
        (
            vec!["--funding", twice.as_str(), "--funding", twice.as_str()],
            "--funding: BTC given twice",
        ),
        (vec!["--funding", "BTC"], "expected SYMBOL=PATH"),
    ] {
        let btc_bars = format!("BTC={btc}");
        let eth_bars = format!("ETH={eth}");
        let mut args = vec![
            "run",
            "--skill",
            &repo_skill(),
            "--bars",
            &btc_bars,
            "--bars",
            &eth_bars,
            "--model",
            "builtin/sma-cross:10:20",
            "--out",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        args.push(dir.path().join("o").to_str().unwrap().to_owned());
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let o = Command::cargo_bin("sim-worker")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{expected}: {stderr}");
        assert!(o.stdout.is_empty());
        assert!(stderr.contains(expected), "{expected}: {stderr}");
    }
}

fn repo_skill() -> String {
    repo("examples/skills/btc-eth-funding-thesis.yaml")
}
