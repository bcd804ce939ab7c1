//! What the model saw reads back (`tick::read_ticks`): a backtest on SQLite and on PostgreSQL
//! with the model wrapped so that it logs every request it gets and every answer it gives; each
//! stored tick, read back a page at a time, is what the model was given byte for byte (system
//! prompt and user message), its steps are the model's answers (text, tool calls with their
//! arguments, usage) with the results the model read, and its outcome, usage and cost are the
//! run's.

use std::sync::Mutex;

use agent_runtime::{
    LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolOutcome, builtin_model,
};
use backtest::register;
use db::{Store, TickQuery};
use rust_decimal::Decimal;
use tick::TickEntry;
use types::Interval;

use crate::common;

/// One model call: the system prompt and messages it was given, and its answer.
type Call = (String, Vec<Message>, ModelResponse);

/// The tick's model, logging every call.
struct Logging<'m> {
    inner: &'m dyn LanguageModel,
    calls: Mutex<Vec<Call>>,
}

#[async_trait::async_trait]
impl LanguageModel for Logging<'_> {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let response = self.inner.generate(request).await?;
        self.calls.lock().unwrap().push((
            request.system.clone(),
            request.messages.clone(),
            response.clone(),
        ));
        Ok(response)
    }
}

/// Runs 150 hours of the example backtest into `store`, logging the model; checks every
/// stored tick read back against the log.
async fn ticks_read_back_as_the_model_saw_them(store: Store) {
    let bars = common::eurusd(150);
    let input = common::eurusd_input(&bars, Decimal::ZERO, Decimal::ZERO);
    let first = input.market.all_bars("EURUSD", Interval::H1)[0].close_time(Interval::H1);
    register(&store, &input, serde_json::json!({"name": "eurusd"}), first)
        .await
        .unwrap();
    let inner = builtin_model(&input.deployment.skill.model, &input.deployment.skill).unwrap();
    let model = Logging {
        inner: inner.as_ref(),
        calls: Mutex::new(Vec::new()),
    };
    let result = common::run_stored(&input, &model, &store).await.unwrap();
    let calls = model.calls.into_inner().unwrap();
    // The calls of each tick: a tick's first request holds the user message alone.
    let mut ticks: Vec<Vec<Call>> = Vec::new();
    for call in calls {
        if let [Message::User { .. }] = call.1.as_slice() {
            ticks.push(Vec::new());
        }
        ticks.last_mut().expect("a tick's first call").push(call);
    }

    // Read back a page of 40 at a time, with the texts.
    let d = input.deployment.deployment_id;
    let mut query = TickQuery {
        limit: 40,
        texts: true,
        ..TickQuery::of(d)
    };
    let mut read: Vec<TickEntry> = Vec::new();
    loop {
        let page = tick::read_ticks(&store, &query).await.unwrap();
        let Some(last) = page.last() else { break };
        query.after = Some(last.tick_at);
        read.extend(page);
    }
    assert_eq!(read.len(), result.points.len(), "every tick of the run");
    assert_eq!(ticks.len(), read.len(), "one first request a tick");
    let (mut steps_with_calls, mut results_sent) = (0, 0);
    for (i, ((view, point), calls)) in read.iter().zip(&result.points).zip(&ticks).enumerate() {
        assert_eq!(view.tick_at, point.tick_at, "tick {i}");
        assert_eq!(view.tick_id, tick::snapshot_id(d, point.tick_at));
        assert_eq!(view.outcome.as_str(), point.verdict, "tick {i}");
        assert_eq!(view.usage, point.usage, "tick {i}");
        assert_eq!(view.cost_usd, point.cost_usd, "tick {i}");
        let prompt = view.prompt.as_ref().expect("asked for");
        let (system, messages, _) = &calls[0];
        let Message::User { content } = &messages[0] else {
            unreachable!("grouped by it")
        };
        assert_eq!(&prompt.system_prompt, system, "system prompt of tick {i}");
        assert_eq!(&prompt.user_message, content, "user message of tick {i}");
        // A step per model call, each the call's answer.
        assert_eq!(prompt.steps.len(), calls.len(), "steps of tick {i}");
        for (k, (step, (_, _, response))) in prompt.steps.iter().zip(calls).enumerate() {
            assert_eq!(step.index as usize, k);
            assert_eq!(step.text, response.text, "tick {i} step {k}");
            assert_eq!(step.usage, response.usage);
            assert_eq!(step.finish, response.finish);
            let made: Vec<(&str, &str, &str)> = response
                .tool_calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            let stored: Vec<(&str, &str, &str)> = step
                .tool_calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
                .collect();
            assert_eq!(stored, made, "tool calls of tick {i} step {k}");
            steps_with_calls += usize::from(!made.is_empty());
            // The results the next call of the tick sent back to the model.
            if let Some((_, next, _)) = calls.get(k + 1) {
                for call in &step.tool_calls {
                    let sent = next.iter().find_map(|m| match m {
                        Message::Tool {
                            call_id, content, ..
                        } if *call_id == call.id => Some(content.as_str()),
                        _ => None,
                    });
                    let read = match &call.outcome {
                        ToolOutcome::Ok { result } => result.as_str().to_owned(),
                        ToolOutcome::Error { message, .. } => {
                            serde_json::json!({ "error": message }).to_string()
                        }
                    };
                    assert_eq!(sent, Some(read.as_str()), "tick {i} step {k}");
                    results_sent += 1;
                }
            }
        }
    }
    assert!(steps_with_calls > 0, "the run's model called tools");
    assert!(results_sent > 0, "and read their results");
    let kinds: std::collections::BTreeSet<&str> = read.iter().map(|v| v.outcome.as_str()).collect();
    assert!(kinds.len() > 1, "more than one outcome: {kinds:?}");

    // A window reads the same ticks as the whole run holds there, both ends included.
    let window = tick::read_ticks(
        &store,
        &TickQuery {
            from: Some(read[10].tick_at),
            to: Some(read[29].tick_at),
            texts: true,
            ..TickQuery::of(d)
        },
    )
    .await
    .unwrap();
    assert_eq!(window, read[10..30]);
}

#[tokio::test]
async fn sqlite_ticks_read_back_as_the_model_saw_them() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("sim.db").display());
    ticks_read_back_as_the_model_saw_them(db::connect(&url).await.unwrap()).await;
}

#[tokio::test]
async fn postgres_ticks_read_back_as_the_model_saw_them() {
    let test_db = db::test_support::pg::TestDatabase::create("backtest_ticks_", 4).await;
    let store = db::PgStore::from_pool(test_db.pool.clone()).await.unwrap();
    ticks_read_back_as_the_model_saw_them(Store::Postgres(store)).await;
}
