//! `sim-worker mcp-serve` over a backtest's SQLite file, driven by an MCP client (the official
//! Rust SDK, `rmcp`, through the `mcp` crate's client) in this process, the server in its own:
//! the tools are listed, the recall tools and the search answer from the file, `annotate`
//! writes and the search finds it, and `--read-only` leaves `annotate` out.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use skill_schema::McpServer;
use tools::Tool;

use crate::common::{backtest_to, sim};

fn server(args: &[&str]) -> McpServer {
    serde_json::from_value(json!({
        "name": "memory",
        "command": env!("CARGO_BIN_EXE_sim-worker"),
        "args": args,
        "timeoutMs": 30000,
    }))
    .expect("server entry")
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == format!("mcp__memory__{name}"))
        .unwrap_or_else(|| panic!("{name} is listed"))
}

#[tokio::test]
async fn an_mcp_client_lists_recalls_searches_and_annotates_a_backtest_store() {
    let dir = tempfile::tempdir().unwrap();
    let (url, deployment) = backtest_to(dir.path(), "2017-07-15");
    let servers = mcp::McpServers::start(&[server(&["mcp-serve", "--db", &url])])
        .await
        .expect("the server starts and lists its tools");
    let tools = servers.tools();
    let names: BTreeSet<&str> = tools.iter().map(|t| t.name()).collect();
    let expected: BTreeSet<String> = tools::RECALL_TOOLS
        .iter()
        .chain(&["annotate"])
        .map(|n| format!("mcp__memory__{n}"))
        .collect();
    assert_eq!(names, expected.iter().map(String::as_str).collect());
    // Recalls only read; annotate writes.
    assert!(!tool(&tools, "recall_symbol_history").can_act());
    assert!(tool(&tools, "annotate").can_act());

    let history = tool(&tools, "recall_symbol_history")
        .call_async(json!({"symbol": "EURUSD", "limit": 5}))
        .await
        .expect("recall");
    let outcomes = history["outcomes"].as_array().expect("outcomes");
    assert_eq!(outcomes.len(), 5, "{history}");
    // Rows are `id | at | symbol | … | grade | …` under a `columns` header.
    let columns: Vec<&str> = history["columns"].as_str().unwrap().split(" | ").collect();
    let column = |name: &str| columns.iter().position(|c| *c == name).unwrap();
    let rows: Vec<Vec<&str>> = outcomes
        .iter()
        .map(|o| o.as_str().unwrap().split(" | ").collect())
        .collect();
    // Read now, every outcome is graded but those within 24h of the backtest's end.
    for r in &rows {
        let recent = r[column("at")] > "2017-07-14";
        assert_eq!(r[column("grade")] == "pending", recent, "{r:?}");
    }
    // The id as the row lists it: annotate takes it as it is.
    let first = rows[0][column("id")].to_owned();

    // Narratives are searchable.
    let found = tool(&tools, "search_trade_memory")
        .call_async(json!({"query": "EURUSD long grade", "limit": 3}))
        .await
        .expect("search");
    let hits = found["hits"].as_array().expect("hits");
    assert_eq!(hits.len(), 3, "{found}");
    assert!(hits.iter().all(|h| h["kind"] == "outcome"));
    assert!(hits[0]["text"].as_str().unwrap().starts_with("EURUSD "));

    // Annotate an outcome, then find the note.
    let note = tool(&tools, "annotate")
        .call_async(
            json!({"outcome_id": first, "text": "kangaroo reversal on the ECB", "tags": ["news"]}),
        )
        .await
        .expect("annotate");
    assert_eq!(note["deployment_id"], deployment);
    let found = tool(&tools, "search_trade_memory")
        .call_async(json!({"query": "kangaroos"}))
        .await
        .expect("search");
    assert_eq!(found["hits"][0]["kind"], "annotation", "{found}");
    assert_eq!(found["hits"][0]["outcome"], Value::String(first));
    assert!(
        found["hits"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Tags: news")
    );

    // A bad call is the tool's error, and the server goes on answering.
    let missing = tool(&tools, "annotate")
        .call_async(json!({"outcome_id": "00000000-0000-0000-0000-000000000000", "text": "x"}))
        .await
        .expect_err("no such outcome");
    assert!(missing.to_string().contains("no outcome"), "{missing}");
    let blank = tool(&tools, "search_trade_memory")
        .call_async(json!({"query": "   "}))
        .await
        .expect_err("blank search");
    assert!(blank.to_string().contains("query"), "{blank}");
    servers.shutdown().await;

    // Read-only: the same recalls, no annotate.
    let servers = mcp::McpServers::start(&[server(&["mcp-serve", "--db", &url, "--read-only"])])
        .await
        .expect("read-only server");
    let names: Vec<String> = servers
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names.len(), 6);
    assert!(!names.iter().any(|n| n.ends_with("annotate")));
    servers.shutdown().await;
}

#[test]
fn mcp_serve_refuses_a_missing_store_and_an_unknown_deployment_before_serving() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("sqlite://{}", dir.path().join("none.db").display());
    let (code, stdout, stderr) = sim(&["mcp-serve", "--db", &missing]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("--db"), "{stderr}");

    let (url, _) = backtest_to(dir.path(), "2017-05-10");
    let (code, stdout, stderr) = sim(&[
        "mcp-serve",
        "--db",
        &url,
        "--deployment",
        "00000000-0000-0000-0000-000000000001",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(
        stderr.contains("--deployment 00000000-0000-0000-0000-000000000001: no deployment"),
        "{stderr}"
    );
}
