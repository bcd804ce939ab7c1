//! `builtin/replay`: a model that re-proposes, tick by tick, what another run recorded. Fed the
//! same bars, engine and broker settings, it reproduces that run's fills and ledger exactly —
//! which makes it the way to re-run a costly LLM backtest with other fees, slippage or caps
//! without calling the LLM again (the engine re-judges every proposal).
//!
//! It reads the tick time from the `## Time` section of the user message, proposes the recorded
//! proposal of that tick with one `propose_order` call (nothing when the tick recorded none or
//! the time is unknown), and answers the follow-up call with a plain stop. Honest about what it
//! is: its id starts with `builtin/replay`, it reports zero usage, and costs nothing.

use std::collections::BTreeMap;

use agent_runtime::{
    FinishReason, LanguageModel, Message, ModelError, ModelRequest, ModelResponse, ToolCall, Usage,
};
use chrono::{DateTime, Utc};
use serde_json::json;
use types::ProposedAction;

/// Replays recorded proposals by tick time.
#[derive(Debug, Clone)]
pub struct ReplayModel {
    id: String,
    proposals: BTreeMap<DateTime<Utc>, Option<ProposedAction>>,
}

impl ReplayModel {
    /// `id` should be the `builtin/replay:…` string the user gave.
    #[must_use]
    pub fn new(
        id: impl Into<String>,
        proposals: BTreeMap<DateTime<Utc>, Option<ProposedAction>>,
    ) -> Self {
        Self {
            id: id.into(),
            proposals,
        }
    }

    /// How many ticks were recorded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.proposals.len()
    }

    /// Whether nothing was recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.proposals.is_empty()
    }
}

/// The tick time from a user message's `## Time` section.
fn tick_time(message: &str) -> Option<DateTime<Utc>> {
    let mut lines = message.lines();
    lines.find(|l| *l == "## Time")?;
    let first = lines.next()?.split_whitespace().next()?;
    DateTime::parse_from_rfc3339(first)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn stop(text: &str) -> ModelResponse {
    ModelResponse {
        text: Some(text.to_owned()),
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
        usage: Usage::default(),
    }
}

#[async_trait::async_trait]
impl LanguageModel for ReplayModel {
    fn id(&self) -> &str {
        &self.id
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        if request
            .messages
            .iter()
            .any(|m| matches!(m, Message::Tool { .. }))
        {
            return Ok(stop("Replayed the recorded proposal."));
        }
        let user = request
            .messages
            .iter()
            .find_map(|m| match m {
                Message::User { content } => Some(content.as_str()),
                _ => None,
            })
            .unwrap_or_default();
        let Some(at) = tick_time(user) else {
            return Ok(stop(
                "Replay: no tick time in the message; nothing proposed.",
            ));
        };
        let Some(Some(p)) = self.proposals.get(&at) else {
            return Ok(stop("Replay: the recorded tick proposed nothing."));
        };
        let reason = if p.reason.trim().is_empty() {
            "replayed".to_owned()
        } else {
            p.reason.clone()
        };
        // Numbers go out as their exact decimal text (the tool's schema wants JSON numbers).
        let mut args = format!(
            "{{\"action\":{},\"symbol\":{},\"reason\":{}",
            json!(p.action),
            json!(p.symbol),
            json!(reason)
        );
        for (key, value) in [
            ("size_usd", p.size_usd),
            ("leverage", p.leverage),
            ("stop", p.stop),
            ("target", p.target),
        ] {
            if let Some(v) = value {
                args.push_str(&format!(",\"{key}\":{}", v.normalize()));
            }
        }
        if let Some(c) = p.confidence {
            args.push_str(&format!(",\"confidence\":{c}"));
        }
        args.push('}');
        Ok(ModelResponse {
            text: None,
            tool_calls: vec![ToolCall {
                id: "replay-1".to_owned(),
                name: tools::PROPOSE_ORDER.to_owned(),
                arguments: args,
            }],
            finish: FinishReason::ToolCalls,
            usage: Usage::default(),
        })
    }
}
