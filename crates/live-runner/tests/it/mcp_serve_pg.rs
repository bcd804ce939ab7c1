//! `live-runner mcp-serve` over PostgreSQL, driven by an MCP client (rmcp, through the `mcp`
//! crate) with the server in its own process: a user's server recalls and searches that user's
//! deployments only, annotates an outcome by the short id a recall tool lists, and cannot
//! annotate another user's outcome, by its full or its short id.

use std::sync::Arc;

use db::OutcomeStore;
use db::test_support::{at, record_sample_outcome, seed};
use outcomes::{FirstHit, Grade, OutcomeScore, TradeOutcome};
use rust_decimal::Decimal;
use serde_json::json;
use skill_schema::McpServer;
use tools::Tool;

use crate::common::{Pg, postgres};

/// One graded BTC outcome of a fresh user's deployment, its narrative naming `word`.
async fn graded_outcome(pg: &Pg, word: &str) -> (uuid::Uuid, TradeOutcome) {
    let fx = seed(&pg.store).await.unwrap();
    let outcome = record_sample_outcome(&pg.store, fx.deployment.id, at(0))
        .await
        .unwrap();
    let d = |s: &str| s.parse::<Decimal>().unwrap();
    let score = OutcomeScore {
        price_1h: Some(d("65100")),
        price_4h: Some(d("65650")),
        price_24h: Some(d("66000")),
        pnl_percent_1h: Some(d("0.1538")),
        pnl_percent_4h: Some(d("1")),
        pnl_percent_24h: Some(d("1.5385")),
        hit_target: Some(true),
        hit_stop: Some(false),
        first_hit: Some(FirstHit::Target),
        max_favorable: Some(d("66600")),
        max_adverse: Some(d("64900")),
        outcome_grade: Some(Grade::A),
        scored_at: Some(at(24 * 60)),
        narrative: Some(format!("BTC long - Grade A\nReason: {word} breakout")),
    };
    pg.store
        .score_outcomes(&[(outcome.id, score)])
        .await
        .unwrap();
    (fx.user.id, outcome)
}

fn tool<'a>(tools: &'a [Arc<dyn Tool>], name: &str) -> &'a Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.name() == format!("mcp__memory__{name}"))
        .unwrap_or_else(|| panic!("{name} is listed"))
}

#[tokio::test]
async fn a_users_memory_server_sees_and_annotates_only_that_users_deployments() {
    let pg = postgres().await;
    let (alice, hers) = graded_outcome(&pg, "kangaroo").await;
    let (_bob, his) = graded_outcome(&pg, "wombat").await;
    let entry: McpServer = serde_json::from_value(json!({
        "name": "memory",
        "command": env!("CARGO_BIN_EXE_live-runner"),
        "args": ["mcp-serve", "--db", pg.url(), "--user", alice.to_string()],
        "timeoutMs": 30000,
    }))
    .unwrap();
    let servers = mcp::McpServers::start(&[entry]).await.expect("server");
    let tools = servers.tools();
    assert_eq!(tools.len(), 7);

    let history = tool(&tools, "recall_symbol_history")
        .call_async(json!({"symbol": "BTC"}))
        .await
        .expect("recall");
    assert_eq!(
        history["outcomes"].as_array().unwrap().len(),
        1,
        "{history}"
    );
    // Rows are `id | at | symbol | … | grade | …` under a `columns` header, the id short.
    let short = |id: uuid::Uuid| id.simple().to_string()[..8].to_owned();
    let columns: Vec<&str> = history["columns"].as_str().unwrap().split(" | ").collect();
    let row: Vec<&str> = history["outcomes"][0]
        .as_str()
        .unwrap()
        .split(" | ")
        .collect();
    assert_eq!(row[0], short(hers.id), "{history}");
    let grade = columns.iter().position(|c| *c == "grade").unwrap();
    assert_eq!(row[grade], "A", "{history}");

    let search = tool(&tools, "search_trade_memory");
    let found = search
        .call_async(json!({"query": "kangaroo"}))
        .await
        .unwrap();
    assert_eq!(found["hits"][0]["id"], short(hers.id), "{found}");
    let other = search.call_async(json!({"query": "wombat"})).await.unwrap();
    assert_eq!(
        other["hits"],
        json!([]),
        "bob's narrative stays out: {other}"
    );

    let annotate = tool(&tools, "annotate");
    annotate
        .call_async(
            json!({"outcome_id": hers.id, "text": "held through the FOMC", "tags": ["fomc"]}),
        )
        .await
        .expect("her own outcome");
    // By the id exactly as the recall row lists it.
    annotate
        .call_async(json!({"outcome_id": row[0], "text": "by its short id"}))
        .await
        .expect("her own outcome by its short id");
    assert_eq!(
        pg.store
            .annotations(hers.deployment_id, 10)
            .await
            .unwrap()
            .len(),
        2
    );
    for given in [his.id.to_string(), short(his.id)] {
        let refused = annotate
            .call_async(json!({"outcome_id": given, "text": "not mine"}))
            .await
            .expect_err("another user's outcome");
        assert!(
            refused.to_string().contains(&format!("no outcome {given}")),
            "{refused}"
        );
    }
    let unknown = annotate
        .call_async(json!({"outcome_id": "0badf00d", "text": "x"}))
        .await
        .expect_err("an unknown short id");
    assert!(
        unknown.to_string().contains("no outcome 0badf00d"),
        "{unknown}"
    );
    assert!(
        pg.store
            .annotations(his.deployment_id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    servers.shutdown().await;
}
