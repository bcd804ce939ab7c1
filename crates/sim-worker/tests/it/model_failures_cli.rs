//! `sim-worker run` against a model provider that fails (a local wiremock server standing in
//! for an OpenAI-compatible API): model errors are their own outcome, counted, stored with the
//! error text, and a run where more than half of the ticks failed exits 3 (#20 item 1).

use std::path::Path;

use assert_cmd::Command;

use crate::common::repo;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
    summary: Value,
    /// (model_error, error, finish_reason, verdict status) per snapshot, in tick order.
    snapshots: Vec<(bool, Option<String>, Option<String>, String)>,
}

/// Four hourly ticks of the EURUSD skill on `openai/test-model` served by `server`.
async fn run_against(server: &MockServer, out: &Path) -> Outcome {
    let o = Command::cargo_bin("sim-worker")
        .unwrap()
        .args([
            "run",
            "--skill",
            &repo("examples/skills/eurusd-sma-cross.yaml"),
            "--bars",
            &format!("EURUSD={}", repo("examples/data/EURUSD.csv")),
            "--model",
            "openai/test-model",
            "--out",
            out.to_str().unwrap(),
            "--to",
            "2017-04-19T13:00:00Z",
        ])
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_BASE_URL", server.uri())
        .output()
        .unwrap();
    let summary = std::fs::read_to_string(out.join("summary.json"))
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or(Value::Null);
    let url = format!("sqlite://{}", out.join("sim.db").display());
    let store = db::connect(&url).await.unwrap();
    let db::Store::Sqlite(lite) = &store else {
        unreachable!("a sqlite URL")
    };
    let rows: Vec<(bool, Option<String>, Option<String>, String)> = sqlx::query_as(
        "SELECT model_error, error, finish_reason, json_extract(verdict, '$.status') \
         FROM decision_snapshots ORDER BY tick_at",
    )
    .fetch_all(lite.pool())
    .await
    .unwrap();
    store.close().await.unwrap();
    Outcome {
        code: o.status.code().unwrap(),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
        summary,
        snapshots: rows,
    }
}

fn answer(text: &str) -> Value {
    json!({
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5},
    })
}

#[tokio::test]
async fn a_provider_answering_500_on_every_call_makes_every_tick_a_model_error_and_exits_3() {
    let server = MockServer::start().await;
    // A 1 ms retry hint keeps the retries fast; every attempt fails.
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(
            ResponseTemplate::new(500)
                .insert_header("retry-after-ms", "1")
                .set_body_string("upstream exploded"),
        )
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_against(&server, &out).await;

    assert_eq!(o.code, 3, "stdout: {}\nstderr: {}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("4 of 4 ticks failed on the model (more than 50%)"),
        "{}",
        o.stderr
    );
    // The outputs were written and the result printed all the same.
    assert!(o.stdout.starts_with("4 ticks "), "{}", o.stdout);
    assert!(o.stdout.contains(" · 4 model errors\n"), "{}", o.stdout);
    assert_eq!(o.summary["ticks"], 4);
    assert_eq!(o.summary["verdicts"], json!({"model_error": 4}));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("model_error 4"), "the report's verdicts");
    assert!(
        html.contains(
            "model error — model call failed at step 0: openai: HTTP 500: upstream exploded"
        ),
        "the report's snapshot names the model's error"
    );
    assert_eq!(o.snapshots.len(), 4);
    for (model_error, error, finish, verdict) in &o.snapshots {
        assert!(model_error);
        let error = error.as_deref().expect("the error text is stored");
        assert!(
            error.contains("HTTP 500") && error.contains("upstream exploded"),
            "{error}"
        );
        assert_eq!(finish.as_deref(), Some("error"));
        assert_eq!(verdict, "no_op");
    }
}

#[tokio::test]
async fn garbage_on_one_tick_of_four_is_counted_and_stored_but_exits_0() {
    let server = MockServer::start().await;
    // The first call gets a 200 whose body is not JSON (not retried); the rest a real answer.
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway</html>"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer("Nothing to do.")))
        .with_priority(2)
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let o = run_against(&server, &out).await;

    assert_eq!(o.code, 0, "stdout: {}\nstderr: {}", o.stdout, o.stderr);
    assert!(o.stdout.contains(" · 1 model error\n"), "{}", o.stdout);
    assert_eq!(o.summary["verdicts"], json!({"model_error": 1, "no_op": 3}));
    let (first, rest) = o.snapshots.split_first().unwrap();
    assert!(first.0);
    let error = first.1.as_deref().unwrap();
    assert!(
        error.contains("unexpected response") && error.contains("not JSON"),
        "{error}"
    );
    for (model_error, error, finish, verdict) in rest {
        assert!(!model_error);
        assert_eq!(error, &None);
        assert_eq!(finish.as_deref(), Some("stop"));
        assert_eq!(verdict, "no_op");
    }
}
