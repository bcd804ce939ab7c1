//! Shared test helpers: a map-backed environment and fast transport options.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use model::{Message, ModelRequest, ToolCall, ToolDefinition};
use providers::{RetryPolicy, TransportOptions};
use serde_json::json;

/// An environment lookup over fixed pairs; the process environment is never read or written.
pub(crate) fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

/// 3 attempts, 1 ms base backoff, 20 ms cap, 2 s per-attempt timeout.
pub(crate) fn fast() -> TransportOptions {
    TransportOptions {
        timeout: Duration::from_secs(2),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(20),
        },
    }
}

pub(crate) fn tools() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: "get_bars".into(),
            description: "Recent OHLCV bars for a symbol.".into(),
            parameters: Arc::new(json!({
                "type": "object",
                "properties": {"symbol": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["symbol"],
            })),
        },
        ToolDefinition {
            name: "propose_order".into(),
            description: "Propose one order.".into(),
            parameters: Arc::new(json!({
                "type": "object",
                "properties": {"side": {"type": "string", "enum": ["buy", "sell"]}},
                "required": ["side"],
            })),
        },
    ]
}

/// A conversation with a full tool round trip: user → assistant (text + 2 calls) → 2 results →
/// user.
pub(crate) fn conversation() -> ModelRequest {
    ModelRequest {
        model: "not-sent".into(),
        system: "You trade BTC.".into(),
        messages: vec![
            Message::User {
                content: "Tick at 2026-01-01T00:00:00Z.".into(),
            },
            Message::Assistant {
                text: Some("Looking at the bars.".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "call_1".into(),
                        name: "get_bars".into(),
                        arguments: r#"{"symbol":"BTC","limit":3}"#.into(),
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "get_bars".into(),
                        arguments: r#"{"symbol":"ETH"}"#.into(),
                    },
                ],
            },
            Message::Tool {
                call_id: "call_1".into(),
                name: "get_bars".into(),
                content: "close 100.5, 101.25, 99.75".into(),
            },
            Message::Tool {
                call_id: "call_2".into(),
                name: "get_bars".into(),
                content: "close 3000".into(),
            },
            Message::User {
                content: "Decide.".into(),
            },
        ],
        tools: tools(),
        max_output_tokens: 1024,
        deadline: None,
    }
}

/// A request with only a user turn.
pub(crate) fn hello() -> ModelRequest {
    ModelRequest {
        model: "not-sent".into(),
        system: "sys".into(),
        messages: vec![Message::User {
            content: "hi".into(),
        }],
        tools: vec![],
        max_output_tokens: 16,
        deadline: None,
    }
}

/// The message of a [`ModelError::Decode`](model::ModelError::Decode); any other error fails the
/// test.
pub(crate) fn decode_message(err: model::ModelError) -> String {
    match err {
        model::ModelError::Decode { message, .. } => message,
        other => panic!("expected a decode error, got {other:?}"),
    }
}
