//! What the CLI tests share: paths in the repository, running the binary, and a short backtest.

use std::path::Path;

use assert_cmd::Command;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// `p`, relative to the repository root, as an absolute path.
pub(crate) fn repo(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(p)
        .to_str()
        .unwrap()
        .to_owned()
}

/// Runs `sim-worker ARGS`: (exit code, stdout, stderr).
pub(crate) fn sim(args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("sim-worker")
        .unwrap()
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// What a run of the binary printed.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// A mock OpenAI-compatible server whose chat completions `responder` answers.
pub(crate) async fn chat_server(responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

/// The last message of a chat-completions request (`null` for a body that is not one).
pub(crate) fn last_message(request: &Request) -> Value {
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    body["messages"]
        .as_array()
        .and_then(|m| m.last().cloned())
        .unwrap_or(Value::Null)
}

/// Every mock answer's usage: 1,000 prompt and 30 completion tokens ($0.000168 on
/// `openai/gpt-4o-mini`).
fn usage() -> Value {
    json!({"prompt_tokens": 1000, "completion_tokens": 30})
}

/// A chat-completions answer calling `propose_order` with `args` (call id `call_N`).
pub(crate) fn proposing(n: usize, args: &Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{n}"), "type": "function",
            "function": {"name": "propose_order", "arguments": args.to_string()},
        }]}, "finish_reason": "tool_calls"}],
        "usage": usage(),
    }))
}

/// The answer after a tool result: `Done.`, no call.
pub(crate) fn done() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "choices": [{"message": {"role": "assistant", "content": "Done."},
                     "finish_reason": "stop"}],
        "usage": usage(),
    }))
}

/// Points `cmd`'s `openai/…` models at `base_url` with a test key; with `None`, at a closed
/// port without any key: nothing listens on port 9 (discard), so a request that escaped would
/// fail loudly.
pub(crate) fn openai_at<'c>(cmd: &'c mut Command, base_url: Option<&str>) -> &'c mut Command {
    cmd.env_remove("OPENAI_API_KEY")
        .env("OPENAI_BASE_URL", base_url.unwrap_or("http://127.0.0.1:9"));
    if base_url.is_some() {
        cmd.env("OPENAI_API_KEY", "sk-test");
    }
    cmd
}

impl Run {
    /// Runs `cmd` to its end.
    pub(crate) fn of(cmd: &mut Command) -> Self {
        let o = cmd.output().unwrap();
        Run {
            code: o.status.code().unwrap(),
            stdout: String::from_utf8(o.stdout).unwrap(),
            stderr: String::from_utf8(o.stderr).unwrap(),
        }
    }
}

/// Runs `sim-worker run` of `skill` on the EURUSD example bars from `from` to `to` on
/// `openai/gpt-4o-mini` at `base_url` (or at a closed port), then `extra`; the key is set only
/// when a server is given.
pub(crate) fn run_openai(
    skill: &str,
    base_url: Option<&str>,
    out: &Path,
    (from, to): (&str, &str),
    extra: &[&str],
) -> Run {
    let mut cmd = Command::cargo_bin("sim-worker").unwrap();
    cmd.args([
        "run",
        "--skill",
        skill,
        "--bars",
        &format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
        "--model",
        "openai/gpt-4o-mini",
        "--out",
        out.to_str().unwrap(),
        "--from",
        from,
        "--to",
        to,
    ])
    .args(extra);
    Run::of(openai_at(&mut cmd, base_url))
}

/// The README backtest up to `to` into `dir/run`; returns (store url, deployment id) as the
/// result's `store:` line prints them.
pub(crate) fn backtest_to(dir: &Path, to: &str) -> (String, String) {
    backtest_with(&dir.join("run"), to, &[])
}

/// The README backtest up to `to` into `out` with `extra` flags; returns (store url, deployment
/// id) as the result's `store:` line prints them.
pub(crate) fn backtest_with(out: &Path, to: &str, extra: &[&str]) -> (String, String) {
    let skill = repo("examples/skills/eurusd-sma-cross.yaml");
    let bars = format!("EURUSD={}", repo("examples/data/EURUSD.csv"));
    let out = out.to_str().unwrap();
    let mut args = vec![
        "run", "--skill", &skill, "--bars", &bars, "--out", out, "--to", to,
    ];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = sim(&args);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("store:"))
        .expect("the store line");
    let url = line.split_whitespace().nth(1).unwrap().to_owned();
    let id = line
        .rsplit("deployment ")
        .next()
        .unwrap()
        .trim_end_matches(')')
        .to_owned();
    (url, id)
}
