//! [`BlindModel`]: a model call whose prompt was built outside a tick, shown through the lens.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use model::{LanguageModel, Message, ModelError, ModelRequest, ModelResponse};

use crate::Blind;

/// A `LanguageModel` decorator that shows the model every text of a request through
/// [`Blind::show`] at `now` (system prompt, user turns, tool results). Its `id()` is the inner
/// model's. For calls built outside a tick from data already anonymised — reflection, whose
/// input rows are [`Blind::trade_record`]s — the lens adds what only a text pass can: relative
/// times, no weekdays, no real symbol in the skill's words.
pub struct BlindModel {
    inner: Arc<dyn LanguageModel>,
    blind: Arc<Blind>,
    now: DateTime<Utc>,
}

impl BlindModel {
    /// `inner`, shown the world of `blind` as of `now`.
    #[must_use]
    pub fn new(inner: Arc<dyn LanguageModel>, blind: Arc<Blind>, now: DateTime<Utc>) -> Self {
        Self { inner, blind, now }
    }
}

#[async_trait::async_trait]
impl LanguageModel for BlindModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let show = |text: &str| self.blind.show(text, self.now);
        let mut shown = request.clone();
        shown.system = show(&request.system);
        for message in &mut shown.messages {
            match message {
                Message::User { content } | Message::Tool { content, .. } => {
                    *content = show(content);
                }
                Message::Assistant { .. } => {}
            }
        }
        self.inner.generate(&shown).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    use chrono::{NaiveDate, TimeZone};
    use model::{FinishReason, Usage};
    use rust_decimal_macros::dec;

    use super::*;

    /// Remembers the request it was sent.
    struct Capture(Mutex<Option<ModelRequest>>);

    #[async_trait::async_trait]
    impl LanguageModel for Capture {
        fn id(&self) -> &str {
            "test/capture"
        }

        async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
            *self.0.lock().unwrap() = Some(request.clone());
            Ok(ModelResponse {
                text: Some("ok".into()),
                tool_calls: Vec::new(),
                finish: FinishReason::Stop,
                usage: Usage::default(),
            })
        }
    }

    #[tokio::test]
    async fn a_reflection_prompt_reaches_the_model_through_the_lens() {
        let blind = Arc::new(
            Blind::new(
                &["EURUSD".to_owned()],
                &BTreeMap::from([("EURUSD".to_owned(), dec!(1.07))]),
                NaiveDate::from_ymd_opt(2017, 4, 19).unwrap(),
                0,
            )
            .unwrap(),
        );
        let inner = Arc::new(Capture(Mutex::new(None)));
        let now = Utc.with_ymd_and_hms(2017, 5, 4, 10, 0, 0).unwrap();
        let model = BlindModel::new(inner.clone(), blind, now);
        assert_eq!(model.id(), "test/capture");
        let request = ModelRequest {
            model: "capture".into(),
            system: "You review EURUSD trades.".into(),
            messages: vec![
                Message::User {
                    content: "- 05-03T09:00 held EURUSD long, closed 2017-05-04T08:00:00Z".into(),
                },
                Message::Tool {
                    call_id: "1".into(),
                    name: "t".into(),
                    content: r#"{"symbol":"EURUSD","at":"2017-05-01T00:00:00Z"}"#.into(),
                },
            ],
            tools: Vec::new(),
            max_output_tokens: 100,
            deadline: None,
        };
        model.generate(&request).await.unwrap();
        let seen = inner.0.lock().unwrap().clone().unwrap();
        assert_eq!(seen.system, "You review ASSET_A trades.");
        assert_eq!(
            seen.messages,
            vec![
                Message::User {
                    content: "- day 14 09:00 held ASSET_A long, closed day 15 08:00".into()
                },
                Message::Tool {
                    call_id: "1".into(),
                    name: "t".into(),
                    content: r#"{"symbol":"ASSET_A","at":"day 12 00:00"}"#.into(),
                },
            ]
        );
    }
}
