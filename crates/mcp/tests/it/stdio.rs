//! [`mcp::serve_stdio`] as a client meets it: `mcp-fixture-server` run as a process, spoken to
//! with raw JSON-RPC lines the way Claude Desktop, the MCP inspector or a person at a terminal
//! sends them — hostile ones included.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

use serde_json::{Value, json};

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");
const WAIT: Duration = Duration::from_secs(20);

/// The fixture server with its stdin to write and its stdout lines to read.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Server {
    fn start() -> Self {
        let mut child = Command::new(FIXTURE)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    /// The server after the handshake a real client performs.
    fn initialized() -> Self {
        let mut server = Self::start();
        server.send(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}}"#,
        );
        let init = server.next();
        assert_eq!(init["id"], json!(0), "{init}");
        assert_eq!(init["result"]["serverInfo"]["name"], "mcp-fixture-server");
        server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        server
    }

    fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, line: &str) {
        self.send_bytes(format!("{line}\n").as_bytes());
    }

    /// The next line the server writes, as JSON.
    fn next_raw(&self) -> String {
        match self.lines.recv_timeout(WAIT) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!("no answer within {WAIT:?}"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its stdout"),
        }
    }

    fn next(&self) -> Value {
        let line = self.next_raw();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// A ping answered: the server is still serving, and said nothing else before it.
    fn still_serving(&mut self, tag: &str) {
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":"ping-{tag}","method":"ping"}}"#
        ));
        let pong = self.next();
        assert_eq!(
            pong,
            json!({"jsonrpc": "2.0", "id": format!("ping-{tag}"), "result": {}}),
            "after {tag}"
        );
    }

    /// Closes stdin and waits for the server to exit.
    fn finish(mut self) {
        drop(self.stdin.take());
        for _ in 0..200 {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child.kill().unwrap();
        panic!("the server did not exit when its stdin closed");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The error of an answer: its id, code and message.
fn error_of(answer: &Value) -> (Value, i64, String) {
    let error = &answer["error"];
    assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    (
        answer["id"].clone(),
        error["code"].as_i64().unwrap_or_else(|| panic!("{answer}")),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn every_malformed_request_gets_its_json_rpc_error_and_the_server_keeps_serving() {
    let mut server = Server::initialized();
    // (line, id, code, a part of the message)
    let cases: &[(&str, Value, i64, &str)] = &[
        ("not json", Value::Null, -32700, "not JSON"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#,
            Value::Null,
            -32700,
            "not JSON",
        ),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            Value::Null,
            -32600,
            "batches are not supported",
        ),
        ("[]", Value::Null, -32600, "not an array"),
        ("42", Value::Null, -32600, "not a number"),
        (
            r#"{"jsonrpc":"2.0","id":2}"#,
            json!(2),
            -32600,
            "\"method\" is missing",
        ),
        (
            r#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#,
            json!(3),
            -32600,
            "\"jsonrpc\" must be \"2.0\" (\"1.0\")",
        ),
        (r#"{"id":4,"method":"ping"}"#, json!(4), -32600, "(missing)"),
        (
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            Value::Null,
            -32600,
            "\"id\" must be an integer or a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            Value::Null,
            -32600,
            "not the number 1.5",
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":7}"#,
            json!(5),
            -32600,
            "\"method\" must be a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/frobnicate"}"#,
            json!(6),
            -32601,
            "method not found: \"tools/frobnicate\"",
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":"{\"a\":1,\"b\":2}"}}"#,
            json!(7),
            -32602,
            "invalid params for tools/call: invalid type: string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"arguments":{}}}"#,
            json!(8),
            -32602,
            "missing field `name`",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":42}}"#,
            json!(9),
            -32602,
            "invalid params for tools/call",
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call"}"#,
            json!(10),
            -32602,
            "invalid params for tools/call",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"s-11","method":"tools/call","params":{"name":"triple","arguments":{}}}"#,
            json!("s-11"),
            -32602,
            "unknown tool \"triple\"; available: echo, add, sleep_ms, fail",
        ),
    ];
    for (i, (line, id, code, part)) in cases.iter().enumerate() {
        server.send(line);
        let answer = server.next();
        let (got_id, got_code, message) = error_of(&answer);
        assert_eq!((&got_id, got_code), (id, *code), "{line} → {answer}");
        assert!(message.contains(part), "{line} → {message:?}");
        server.still_serving(&i.to_string());
    }

    // Notifications are never answered, not even malformed ones; blank lines are nothing.
    for (i, line) in [
        r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#,
        r#"{"jsonrpc":"2.0","method":"tools/call","params":"x"}"#,
        r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}"#,
        "",
        "   ",
    ]
    .iter()
    .enumerate()
    {
        server.send(line);
        server.still_serving(&format!("notification-{i}"));
    }

    // A hand-typed line ending in CRLF is served; so is a good call after all of the above.
    server.send_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}}\r\n");
    let sum = server.next();
    assert_eq!(sum["id"], json!(12));
    assert_eq!(sum["result"]["structuredContent"], json!({"sum": 5}));
    server.finish();
}

#[test]
fn what_an_answer_repeats_of_the_input_is_bounded() {
    let mut server = Server::initialized();
    let huge = "x".repeat(1_000_000);
    let small = |line: &str, limit: usize| {
        assert!(
            line.len() < limit,
            "{} bytes: {}…",
            line.len(),
            &line[..200]
        );
    };

    // A tool's own error repeating a 1 MB argument: an isError result of bounded text.
    server.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "fail", "arguments": {"why": huge}}})
        .to_string(),
    );
    let line = server.next_raw();
    small(&line, 3_000);
    let result: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(result["id"], json!(1));
    assert_eq!(result["result"]["isError"], json!(true));
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("fail: data unavailable: fixture: this tool always fails: xxx"));
    assert!(text.ends_with("more characters cut)"), "{text}");
    assert!(
        text.chars().count() < mcp::MAX_TOOL_ERROR_CHARS + 40,
        "{text}"
    );

    // Arguments as a 1 MB string, a 1 MB tool name, a 1 MB method, a 1 MB id.
    let hostile = [
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "echo", "arguments": huge}}),
            json!(2),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": huge, "arguments": {}}}),
            json!(3),
            -32602,
        ),
        (
            json!({"jsonrpc": "2.0", "id": 4, "method": huge}),
            json!(4),
            -32601,
        ),
        (
            json!({"jsonrpc": "2.0", "id": huge, "method": "ping"}),
            Value::Null,
            -32600,
        ),
        (
            json!({"jsonrpc": huge, "id": 5, "method": "ping"}),
            json!(5),
            -32600,
        ),
    ];
    for (i, (request, id, code)) in hostile.iter().enumerate() {
        server.send(&request.to_string());
        let line = server.next_raw();
        small(&line, 1_000);
        let (got_id, got_code, message) = error_of(&serde_json::from_str(&line).unwrap());
        assert_eq!((&got_id, got_code), (id, *code), "case {i}: {message}");
        if *code != -32600 || i == 4 {
            assert!(
                message.contains("more characters cut"),
                "case {i}: {message}"
            );
        }
        server.still_serving(&format!("huge-{i}"));
    }
    server.finish();
}

#[test]
fn an_over_long_line_is_skipped_and_answered_and_the_next_line_served() {
    let mut server = Server::initialized();
    // Longer than the limit, valid JSON or not, and split over many writes.
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
        "y".repeat(mcp::MAX_LINE_BYTES)
    );
    for chunk in long.as_bytes().chunks(64 * 1024) {
        server.send_bytes(chunk);
    }
    server.send_bytes(b"\n");
    let line = server.next_raw();
    assert!(line.len() < 500, "{line}");
    let (id, code, message) = error_of(&serde_json::from_str(&line).unwrap());
    assert_eq!((id, code), (Value::Null, -32600));
    assert_eq!(
        message,
        format!(
            "invalid request: a line of {} bytes is longer than the {} bytes a message may have; \
             it was skipped",
            long.len(),
            mcp::MAX_LINE_BYTES
        )
    );
    server.still_serving("long");
    // A line just under the limit is served.
    let text = "z".repeat(mcp::MAX_LINE_BYTES - 200);
    server.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}}})
        .to_string(),
    );
    let echoed = server.next();
    assert_eq!(echoed["result"]["structuredContent"]["text"], json!(text));
    server.finish();
}

#[test]
fn before_initialize_a_stray_notification_or_response_does_not_end_the_server() {
    let mut server = Server::start();
    server.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    server.send(r#"{"jsonrpc":"2.0","id":99,"result":{}}"#);
    server.send("{oops");
    let (id, code, _) = error_of(&server.next());
    assert_eq!((id, code), (Value::Null, -32700));
    server.send(
        r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"inspector","version":"0.16"}}}"#,
    );
    let init = server.next();
    assert_eq!(init["id"], json!("init"), "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    server.still_serving("after-init");
    server.finish();
}

#[test]
fn the_fixture_refuses_a_flag_it_does_not_know_with_exit_2() {
    let out = Command::new(FIXTURE).arg("--frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--frobnicate"), "{stderr}");
}
