//! A tiny MCP server over stdio for the tests, built on `mcp::serve_stdio`.
//!
//! Tools: `echo` (its arguments back), `add` (`a + b` of two integers), `sleep_ms` (waits `ms`
//! milliseconds; it can act), `fail` (always an `isError` result, repeating its `why` argument). Flags change its behaviour
//! for the failure paths: `--exit-at-once CODE` writes a line to stderr and exits with `CODE`
//! before the handshake, `--bad-name` also offers a tool whose name does not fit a model's tool
//! name, `--silent` never answers (a start that times out). Any other argument exits 2.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tools::{DataError, RunMode, Tool, ToolError, ToolFuture};

struct Fixture {
    name: &'static str,
    description: &'static str,
    schema: Arc<Value>,
    acts: bool,
}

impl Fixture {
    fn new(name: &'static str, description: &'static str, schema: Value, acts: bool) -> Self {
        Self {
            name,
            description,
            schema: Arc::new(schema),
            acts,
        }
    }

    fn int(&self, args: &Value, key: &str) -> Result<i64, ToolError> {
        args.get(key)
            .and_then(Value::as_i64)
            .ok_or_else(|| ToolError::InvalidArguments {
                tool: self.name.to_owned(),
                problems: vec![format!("{key}: must be an integer")],
            })
    }

    async fn run(&self, args: Value) -> Result<Value, ToolError> {
        match self.name {
            "echo" => Ok(args),
            "add" => {
                let (a, b) = (self.int(&args, "a")?, self.int(&args, "b")?);
                Ok(json!({"sum": a.saturating_add(b)}))
            }
            "sleep_ms" => {
                let ms = self.int(&args, "ms")?;
                tokio::time::sleep(Duration::from_millis(u64::try_from(ms).unwrap_or(0))).await;
                Ok(json!(format!("slept {ms} ms")))
            }
            _ => {
                // `why`, when given, is repeated in the error (a tool echoing its input).
                let why = args.get("why").and_then(Value::as_str);
                let message = why.map_or_else(
                    || "this tool always fails".to_owned(),
                    |why| format!("this tool always fails: {why}"),
                );
                Err(ToolError::Data {
                    tool: self.name.to_owned(),
                    source: DataError::new("fixture", message),
                })
            }
        }
    }
}

impl Tool for Fixture {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        self.description
    }
    fn parameters(&self) -> Arc<Value> {
        self.schema.clone()
    }
    fn can_act(&self) -> bool {
        self.acts
    }
    fn call_async(&self, args: Value) -> ToolFuture<'_> {
        Box::pin(self.run(args))
    }
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--exit-at-once" => {
                rest.next();
            }
            "--bad-name" | "--silent" => {}
            other => {
                eprintln!(
                    "fixture: unknown argument {other:?}; flags: --exit-at-once CODE, \
                     --bad-name, --silent"
                );
                return std::process::ExitCode::from(2);
            }
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--exit-at-once") {
        let code = args.get(i + 1).and_then(|c| c.parse().ok()).unwrap_or(1);
        eprintln!("fixture: refusing to start (asked to exit with {code})");
        return std::process::ExitCode::from(code);
    }
    if args.iter().any(|a| a == "--silent") {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return std::process::ExitCode::SUCCESS;
    }
    let int = json!({"type": "integer"});
    let mut tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Fixture::new(
            "echo",
            "Returns its arguments.",
            object(json!({"text": {"type": "string"}}), &[]),
            false,
        )),
        Arc::new(Fixture::new(
            "add",
            "Adds two integers.",
            object(json!({"a": int, "b": int}), &["a", "b"]),
            false,
        )),
        Arc::new(Fixture::new(
            "sleep_ms",
            "Waits the given milliseconds.",
            object(json!({"ms": int}), &["ms"]),
            true,
        )),
        Arc::new(Fixture::new(
            "fail",
            "Always fails.",
            object(json!({"why": {"type": "string"}}), &[]),
            false,
        )),
    ];
    if args.iter().any(|a| a == "--bad-name") {
        tools.push(Arc::new(Fixture::new(
            "look up",
            "A name with a space.",
            object(json!({}), &[]),
            false,
        )));
    }
    let info = mcp::ServeInfo {
        name: "mcp-fixture-server".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: None,
        mode: RunMode::Trade,
    };
    match mcp::serve_stdio(tools, info).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fixture: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
