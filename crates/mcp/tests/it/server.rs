//! [`mcp::serve`] through an `rmcp` client over an in-memory duplex.

use std::sync::Arc;

use chrono::{TimeZone, Utc};
use rmcp::model::{CallToolRequestParams, ErrorCode};
use rmcp::{ServiceError, ServiceExt};
use serde_json::{Value, json};
use skill_schema::ToolSpec;
use tools::{Preloaded, RunMode, Tool, ToolContext, ToolError, ToolFuture, build_tools};

/// Doubles `n`, after yielding to the runtime (a tool that waits).
struct Double;

impl Tool for Double {
    fn name(&self) -> &str {
        "double"
    }
    fn description(&self) -> &str {
        "Doubles n."
    }
    fn parameters(&self) -> Arc<Value> {
        Arc::new(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
    }
    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(async move {
            tokio::task::yield_now().await;
            let n = args["n"]
                .as_i64()
                .ok_or_else(|| ToolError::InvalidArguments {
                    tool: "double".into(),
                    problems: vec!["n: must be an integer".into()],
                })?;
            Ok(json!(n * 2))
        })
    }
}

fn served_tools() -> Vec<Arc<dyn Tool>> {
    let data = Arc::new(Preloaded::new());
    let now = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
    let ctx = ToolContext::new(now, RunMode::Trade, vec!["BTC".into()], data.clone(), data);
    let mut tools = build_tools(&ToolSpec::default(), &ctx)
        .unwrap()
        .tools()
        .to_vec();
    tools.push(Arc::new(Double));
    tools
}

#[tokio::test]
async fn tools_are_listed_and_called_and_a_tool_error_is_an_is_error_result() {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(server_io);
    let info = mcp::ServeInfo::read_only("recall", "1.0.0");
    let server = tokio::spawn(mcp::serve(served_tools(), info, read, write));

    let client = ().serve(client_io).await.unwrap();
    let peer_info = client.peer_info().unwrap();
    assert_eq!(peer_info.server_info.as_ref().unwrap().name, "recall");

    let listed = client.peer().list_all_tools().await.unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, vec!["propose_order", "double"]);
    let double = &listed[1];
    assert_eq!(double.description.as_deref(), Some("Doubles n."));
    assert_eq!(
        double.input_schema["properties"]["n"],
        json!({"type": "integer"})
    );
    let hint = |i: usize| listed[i].annotations.as_ref().unwrap().read_only_hint;
    assert_eq!(hint(0), Some(false), "propose_order can act");
    assert_eq!(hint(1), Some(true));

    let call = |name: &'static str, args: Value| {
        CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
    };
    let result = client
        .peer()
        .call_tool(call("double", json!({"n": 21})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.content[0].as_text().unwrap().text, "42");

    // A tool's own error is a result the client's model can read, not a protocol error.
    let result = client
        .peer()
        .call_tool(call("double", json!({})))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(
        result.content[0].as_text().unwrap().text,
        "double: invalid arguments: n: must be an integer"
    );
    // The server is read-only: a tool that can act refuses, as an isError result.
    let args = json!({"action": "open_long", "symbol": "BTC", "size_usd": 100, "leverage": 1,
        "reason": "test"});
    let result = client
        .peer()
        .call_tool(call("propose_order", args))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        result.content[0]
            .as_text()
            .unwrap()
            .text
            .contains("read-only"),
        "{result:?}"
    );

    // An unknown tool is the protocol's invalid-params error.
    let err = client
        .peer()
        .call_tool(call("triple", json!({})))
        .await
        .unwrap_err();
    match err {
        ServiceError::McpError(e) => {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
            assert_eq!(
                e.message,
                "unknown tool \"triple\"; available: propose_order, double"
            );
        }
        other => panic!("expected an MCP error, got {other}"),
    }

    // The client leaves; the server returns.
    client.cancel().await.unwrap();
    server.await.unwrap().unwrap();
}
