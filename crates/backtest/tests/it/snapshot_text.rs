//! The firehose stays exact under content-addressed storage (#17 item 1): a backtest over a
//! SQLite file, with the model wrapped so that it records the system prompt and user message it
//! was given on each tick; every stored snapshot, read back from the store, is that text byte
//! for byte.

use std::sync::Mutex;

use agent_runtime::{
    LanguageModel, Message, ModelError, ModelRequest, ModelResponse, builtin_model,
};
use backtest::register;
use db::TickStore;
use rust_decimal::Decimal;
use types::Interval;

use crate::common;

/// The tick's model, recording the first request of each tick (the one with the user message
/// alone; tool rounds follow it).
struct Recording<'m> {
    inner: &'m dyn LanguageModel,
    seen: Mutex<Vec<(String, String)>>,
}

#[async_trait::async_trait]
impl LanguageModel for Recording<'_> {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if let [Message::User { content }] = request.messages.as_slice() {
            self.seen
                .lock()
                .unwrap()
                .push((request.system.clone(), content.clone()));
        }
        self.inner.generate(request).await
    }
}

#[tokio::test]
async fn every_stored_snapshot_is_the_text_the_model_was_given() {
    // 1,000 ticks: four write batches, so later batches find the lines earlier ones stored.
    let bars = common::eurusd(1_000);
    let input = common::eurusd_input(&bars, Decimal::ZERO, Decimal::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("sim.db").display());
    let store = db::connect(&url).await.unwrap();
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .unwrap();
    let inner = builtin_model(&input.deployment.skill.model, &input.deployment.skill).unwrap();
    let model = Recording {
        inner: inner.as_ref(),
        seen: Mutex::new(Vec::new()),
    };
    common::run_stored(&input, &model, &store).await.unwrap();
    let seen = model.seen.into_inner().unwrap();

    let mut stored = store
        .list_snapshots(input.deployment.deployment_id, 100_000)
        .await
        .unwrap();
    stored.sort_by_key(|s| s.tick_at);
    assert_eq!(stored.len(), 1_000);
    assert_eq!(seen.len(), stored.len(), "one model request per tick");
    let mut distinct_system = std::collections::BTreeSet::new();
    for (i, (s, (system, user))) in stored.iter().zip(&seen).enumerate() {
        assert_eq!(
            &s.system_prompt, system,
            "system prompt of tick {i} ({})",
            s.tick_at
        );
        assert_eq!(&s.context, user, "user message of tick {i} ({})", s.tick_at);
        distinct_system.insert(system.as_str());
    }
    // One by one too (the single-snapshot read path), a sample.
    for s in stored.iter().step_by(97) {
        assert_eq!(&store.get_snapshot(s.id).await.unwrap(), s);
    }
    // Stored once: far fewer lines than the texts hold.
    let db::Store::Sqlite(lite) = &store else {
        unreachable!("a sqlite URL")
    };
    let lines: i64 = sqlx::query_scalar("SELECT COALESCE(SUM(line_count), 0) FROM prompt_blocks")
        .fetch_one(lite.pool())
        .await
        .unwrap();
    let total: usize = seen
        .iter()
        .map(|(a, b)| a.split_inclusive('\n').count() + b.split_inclusive('\n').count())
        .sum();
    assert!(
        (lines as usize) * 10 < total,
        "{lines} lines stored for {total} lines of text ({} distinct system prompts)",
        distinct_system.len()
    );
}
