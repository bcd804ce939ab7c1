//! The cassette over a counting model: record, replay with no model, auto, and a miss that
//! names the differing section.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use cassette::{Cassette, CassetteError, Mode};
use model::test_support::{tool_call, tool_turn};
use model::{
    LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolDefinition, Usage,
};

/// Answers every request with a tool call whose id and arguments depend on how many calls it
/// has answered, so a replay that called it would be visible.
struct Counting {
    calls: AtomicU64,
}

#[async_trait::async_trait]
impl LanguageModel for Counting {
    fn id(&self) -> &str {
        "openai/gpt-4o-mini"
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(ModelResponse {
            text: Some(format!("answer {n} to {} messages", request.messages.len())),
            usage: Usage {
                input: 1_000 + n,
                output: 20,
                cache_read: 0,
                cache_write: 0,
            },
            ..tool_turn(vec![tool_call(
                format!("call_{n}"),
                "propose_order",
                format!("{{\"n\":{n}}}"),
            )])
        })
    }
}

fn request(hour: u32, equity: &str) -> ModelRequest {
    ModelRequest {
        model: "gpt-4o-mini".into(),
        system: "You trade EURUSD.".into(),
        messages: vec![Message::User {
            content: format!(
                "## Time\n2017-04-19T{hour:02}:00:00Z\n\n## Portfolio\nequity {equity}\n\n## Your turn\nDecide."
            ),
        }],
        tools: vec![ToolDefinition {
            name: "propose_order".into(),
            description: "Propose.".into(),
            parameters: Arc::new(serde_json::json!({"type": "object"})),
        }],
        max_output_tokens: 256,
        deadline: None,
    }
}

#[tokio::test]
async fn recorded_answers_replay_without_the_model_and_a_changed_section_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.cassette");
    let model = Arc::new(Counting {
        calls: AtomicU64::new(0),
    });

    let recorder = Cassette::open(&path, Mode::Record, "ignored", Some(model.clone()))
        .await
        .unwrap();
    assert_eq!(recorder.id(), "openai/gpt-4o-mini", "the model's own id");
    let mut recorded = Vec::new();
    for hour in 10..13 {
        recorded.push(recorder.generate(&request(hour, "10000")).await.unwrap());
    }
    assert_eq!(model.calls.load(Ordering::SeqCst), 3);
    assert_eq!(recorder.stats().recorded, 3);
    recorder.close().await;

    // Replay: no model at all, the same answers (usage included), in any order.
    let player = Cassette::open(&path, Mode::Replay, "openai/gpt-4o-mini", None)
        .await
        .unwrap();
    assert_eq!(player.len(), 3);
    for hour in [12, 10, 11] {
        let answer = player.generate(&request(hour, "10000")).await.unwrap();
        assert_eq!(answer, recorded[(hour - 10) as usize]);
    }
    assert_eq!(player.stats().replayed, 3);
    assert_eq!(model.calls.load(Ordering::SeqCst), 3, "nothing sent");

    // A miss names the fingerprint, the nearest recording (same tick) and the section.
    let err = player.generate(&request(11, "9999")).await.unwrap_err();
    let ModelError::Other(text) = err else {
        panic!("{err:?}")
    };
    let fp = cassette::fingerprint(&cassette::canonical_json(&cassette::canonical_request(
        "openai/gpt-4o-mini",
        &request(11, "9999"),
    )));
    assert!(text.contains(&format!("(fingerprint {fp})")), "{text}");
    assert!(text.contains("tick 2017-04-19T11:00:00Z"), "{text}");
    assert!(
        text.ends_with(
            "message 1 (user): section `## Portfolio` differs at its line 1, column 8: recorded \
             `equity 10000`, this request `equity 9999`"
        ),
        "{text}"
    );
    assert_eq!(player.first_miss(), Some(text));
    assert_eq!(player.stats().missed, 1);
    player.close().await;

    // Auto: the recorded ones replay, the new one is sent and recorded.
    let auto = Cassette::open(&path, Mode::Auto, "x", Some(model.clone()))
        .await
        .unwrap();
    auto.generate(&request(10, "10000")).await.unwrap();
    auto.generate(&request(13, "10000")).await.unwrap();
    assert_eq!(model.calls.load(Ordering::SeqCst), 4);
    let s = auto.stats();
    assert_eq!((s.replayed, s.recorded, s.missed), (1, 1, 0));
    assert_eq!(auto.len(), 4);
    auto.close().await;
}

#[tokio::test]
async fn replay_needs_the_file_and_record_needs_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.cassette");
    let e = Cassette::open(&path, Mode::Replay, "openai/x", None)
        .await
        .unwrap_err();
    assert!(matches!(e, CassetteError::Missing { .. }), "{e}");
    assert!(!path.exists(), "replay creates nothing");
    let e = Cassette::open(&path, Mode::Record, "openai/x", None)
        .await
        .unwrap_err();
    assert!(
        matches!(e, CassetteError::NoModel { mode: "record" }),
        "{e}"
    );

    // Any other SQLite file is refused, not written into.
    let other = dir.path().join("other.db");
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=rwc", other.display()))
        .await
        .unwrap();
    sqlx::query("CREATE TABLE t (x)")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let e = Cassette::open(&other, Mode::Replay, "openai/x", None)
        .await
        .unwrap_err();
    assert!(matches!(e, CassetteError::Format { .. }), "{e}");
}

/// `sim-worker` opens the cassette while checking its inputs, on a runtime it then drops, and
/// records on the run's runtime.
#[test]
fn a_cassette_opened_on_one_runtime_records_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.cassette");
    let runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    };
    let model = Arc::new(Counting {
        calls: AtomicU64::new(0),
    });
    let cassette = runtime()
        .block_on(Cassette::open(&path, Mode::Auto, "x", Some(model.clone())))
        .unwrap();
    runtime().block_on(async {
        cassette.generate(&request(10, "1")).await.unwrap();
        cassette.generate(&request(11, "1")).await.unwrap();
        cassette.close().await;
    });
    let again = runtime()
        .block_on(Cassette::open(
            &path,
            Mode::Replay,
            "openai/gpt-4o-mini",
            None,
        ))
        .unwrap();
    assert_eq!(again.len(), 2);
}
