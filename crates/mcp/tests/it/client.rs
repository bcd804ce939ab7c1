//! [`mcp::McpServers`] against `mcp-fixture-server`, a real child process over stdio.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeZone, Utc};
use mcp::{McpError, McpServers};
use serde_json::{Value, json};
use skill_schema::{McpServer, ToolSpec};
use tools::{Preloaded, RunMode, ToolContext, ToolError, build_tools};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

fn fixture(args: &[&str]) -> McpServer {
    McpServer {
        name: "fx".into(),
        command: FIXTURE.into(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
        allowed_tools: vec![],
        timeout_ms: 5_000,
    }
}

fn tool<'a>(set: &'a [Arc<dyn tools::Tool>], name: &str) -> &'a Arc<dyn tools::Tool> {
    set.iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// The message the model would read for a recoverable tool error.
fn recoverable(err: &ToolError) -> String {
    assert!(err.is_recoverable(), "{err:?} must be recoverable");
    err.to_string()
}

#[tokio::test]
async fn the_servers_tools_are_listed_named_described_and_called() {
    let servers = McpServers::start(&[fixture(&[])]).await.unwrap();
    assert_eq!(servers.server_names(), vec!["fx"]);
    let set = servers.tools();
    let names: Vec<&str> = set.iter().map(|t| t.name()).collect();
    assert_eq!(
        names,
        vec![
            "mcp__fx__echo",
            "mcp__fx__add",
            "mcp__fx__sleep_ms",
            "mcp__fx__fail"
        ]
    );
    let add = tool(&set, "mcp__fx__add");
    assert_eq!(add.description(), "Adds two integers.");
    assert_eq!(add.parameters()["required"], json!(["a", "b"]));
    assert_eq!(
        add.parameters()["properties"]["a"],
        json!({"type": "integer"})
    );
    // Only a tool annotated readOnlyHint: true cannot act.
    assert!(!add.can_act());
    assert!(tool(&set, "mcp__fx__sleep_ms").can_act());

    // structuredContent when the server gives it; the text otherwise.
    assert_eq!(
        add.call_async(json!({"a": 2, "b": 3})).await.unwrap(),
        json!({"sum": 5})
    );
    let echo = tool(&set, "mcp__fx__echo");
    assert_eq!(
        echo.call_async(json!({"text": "hi"})).await.unwrap(),
        json!({"text": "hi"})
    );
    assert_eq!(
        tool(&set, "mcp__fx__sleep_ms")
            .call_async(json!({"ms": 1}))
            .await
            .unwrap(),
        json!("slept 1 ms")
    );
    // Arguments that are not an object never reach the server.
    let err = echo.call_async(json!([1])).await.unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
    servers.shutdown().await;
}

#[tokio::test]
async fn allowed_tools_filter_the_listing_and_a_missing_one_is_a_start_error() {
    let mut spec = fixture(&[]);
    spec.allowed_tools = vec!["add".into()];
    let servers = McpServers::start(&[spec.clone()]).await.unwrap();
    let names: Vec<String> = servers
        .tools()
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, vec!["mcp__fx__add"]);
    servers.shutdown().await;

    spec.allowed_tools = vec!["add".into(), "subtract".into()];
    let err = McpServers::start(&[spec]).await.unwrap_err();
    assert!(matches!(err, McpError::MissingTool { ref tool, .. } if tool == "subtract"));
    assert_eq!(
        err.to_string(),
        format!(
            "tools.mcpServers[0] (fx): `{FIXTURE}` does not offer the allowed tool \"subtract\"; \
             it offers: echo, add, sleep_ms, fail"
        )
    );
}

#[tokio::test]
async fn a_slow_call_times_out_as_a_recoverable_error_and_the_server_still_answers() {
    let mut spec = fixture(&[]);
    spec.timeout_ms = 150;
    let servers = McpServers::start(&[spec]).await.unwrap();
    let set = servers.tools();
    let started = std::time::Instant::now();
    let err = tool(&set, "mcp__fx__sleep_ms")
        .call_async(json!({"ms": 5_000}))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        recoverable(&err),
        "mcp__fx__sleep_ms: data unavailable: MCP server fx: no answer within 150 ms; the call \
         was cancelled"
    );
    let sum = tool(&set, "mcp__fx__add")
        .call_async(json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(sum, json!({"sum": 2}));
    servers.shutdown().await;
}

#[tokio::test]
async fn an_is_error_result_and_a_dead_server_are_recoverable_errors_with_their_text() {
    let servers = McpServers::start(&[fixture(&[])]).await.unwrap();
    let set = servers.tools();
    let err = tool(&set, "mcp__fx__fail")
        .call_async(json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        recoverable(&err),
        "mcp__fx__fail: data unavailable: MCP server fx: the tool failed: fail: data \
         unavailable: fixture: this tool always fails"
    );
    // The server's own argument check comes back as its isError text.
    let err = tool(&set, "mcp__fx__add")
        .call_async(json!({"a": 1}))
        .await
        .unwrap_err();
    assert!(recoverable(&err).ends_with("add: invalid arguments: b: must be an integer"));

    // The set is gone (its processes stopped); the tools a context still holds say so.
    servers.shutdown().await;
    let err = tool(&set, "mcp__fx__add")
        .call_async(json!({"a": 1, "b": 1}))
        .await
        .unwrap_err();
    assert!(
        recoverable(&err).starts_with(
            "mcp__fx__add: data unavailable: MCP server fx: the server is not answering"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_command_that_cannot_start_names_the_entry_the_command_and_the_os_error() {
    let mut spec = fixture(&[]);
    spec.name = "charts".into();
    spec.command = "/nonexistent/charts-mcp".into();
    spec.args = vec!["--stdio".into()];
    let ok = fixture(&[]);
    let err = McpServers::start(&[ok, spec]).await.unwrap_err();
    assert!(matches!(err, McpError::Spawn { .. }));
    assert_eq!(
        err.to_string(),
        "tools.mcpServers[1] (charts): cannot start `/nonexistent/charts-mcp --stdio`: No such \
         file or directory (os error 2)"
    );
}

#[tokio::test]
async fn a_server_that_exits_at_once_reports_its_status_and_last_stderr_lines() {
    let err = McpServers::start(&[fixture(&["--exit-at-once", "3"])])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "tools.mcpServers[0] (fx): `{FIXTURE} --exit-at-once 3` exited during start-up \
             (exit status: 3); its stderr ends with: fixture: refusing to start (asked to exit \
             with 3)"
        )
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_start() {
    let started = std::time::Instant::now();
    let err = McpServers::start_with(&[fixture(&["--silent"])], Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(
        err.to_string(),
        format!(
            "tools.mcpServers[0] (fx): `{FIXTURE} --silent` did not complete the MCP handshake \
             and tool listing within 300 ms"
        )
    );
}

#[tokio::test]
async fn a_tool_whose_name_does_not_fit_is_a_start_error_naming_it() {
    let err = McpServers::start(&[fixture(&["--bad-name"])])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "tools.mcpServers[0] (fx): tool \"look up\" would be offered to the model as \
         \"mcp__fx__look up\", which is not 1-64 of a-z, A-Z, 0-9, _ and -"
    );
    // Left out by allowedTools, it does not matter.
    let mut spec = fixture(&["--bad-name"]);
    spec.allowed_tools = vec!["echo".into()];
    McpServers::start(&[spec]).await.unwrap().shutdown().await;
}

/// Through the registry a tick builds: the started tools follow the built-ins, and a read-only
/// context refuses the one the server did not annotate read-only.
#[tokio::test]
async fn a_read_only_registry_refuses_tools_the_server_did_not_mark_read_only() {
    let servers = McpServers::start(&[fixture(&[])]).await.unwrap();
    let spec = ToolSpec {
        built_in: vec!["propose_order".into()],
        mcp_servers: vec![fixture(&[])],
    };
    let data = Arc::new(Preloaded::new());
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let ctx = ToolContext::new(now, RunMode::ReadOnly, vec![], data.clone(), data)
        .with_external(servers.tools());
    let registry = build_tools(&spec, &ctx).unwrap();
    assert_eq!(
        registry.names(),
        vec![
            "propose_order",
            "mcp__fx__add",
            "mcp__fx__echo",
            "mcp__fx__fail",
            "mcp__fx__sleep_ms"
        ]
    );
    let err = registry
        .call_async("mcp__fx__sleep_ms", json!({"ms": 1}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::ReadOnly { .. }), "{err}");
    let echoed: Value = registry
        .call_async("mcp__fx__echo", json!({"text": "ok"}))
        .await
        .unwrap();
    assert_eq!(echoed, json!({"text": "ok"}));
    servers.shutdown().await;
}
