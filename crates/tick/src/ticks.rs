//! Reading back what the model saw: a deployment's stored ticks, oldest first, each as a
//! [`TickEntry`] — what the tick came to (executed, rejected with its rule code, no-op, model
//! error), the proposal, the engine's verdict, the usage and cost, and when asked the system
//! prompt, user message and steps (tool calls with their arguments and results) decoded from the
//! stored lines, byte for byte what the model was given. For the `ticks` commands of both
//! binaries and for services that link the crates.
//!
//! The latency of a tick is not stored (a backtest's rows are byte-identical across runs, which a
//! measured duration would break); a live runner's tick and model-call latencies are its
//! Prometheus histograms.

use agent_runtime::Step;
use chrono::{DateTime, Utc};
use db::{DbError, StoredTick, TickQuery, TickStore};
use rust_decimal::Decimal;
use serde::Serialize;
use types::{ProposedAction, RuleCode, Usage, Verdict};
use uuid::Uuid;

use crate::OutcomeKind;

/// One stored tick, as read back ([`read_ticks`]). Serialised with snake_case keys, decimals as
/// strings and times in RFC 3339 (as `summary.json`); without its prompt, no prompt keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickEntry {
    /// The tick's id (its snapshot's: UUID v5 of the deployment and the tick time).
    pub tick_id: Uuid,
    /// The deployment that ticked.
    pub deployment_id: Uuid,
    /// The bar close the tick ran at.
    pub tick_at: DateTime<Utc>,
    /// What the tick came to: `executed`, `rejected`, `no_op` or `model_error`.
    pub outcome: OutcomeKind,
    /// The rule that rejected the proposal, for a rejection.
    pub rule: Option<RuleCode>,
    /// What the model proposed (its last successful `propose_order`); `None`: nothing.
    pub proposal: Option<ProposedAction>,
    /// The execution engine's verdict, with its detail.
    pub verdict: Verdict,
    /// The model that ran the tick.
    pub model: String,
    /// Why the model's last response ended (`stop`, `length`, `tool-calls`, `error`).
    pub finish_reason: Option<String>,
    /// Tokens of every model call of the tick, summed.
    pub usage: Usage,
    /// Their estimated cost, in USD.
    pub cost_usd: Decimal,
    /// Why the model loop failed, when it did.
    pub error: Option<String>,
    /// What the model saw and did; `None` unless asked for.
    #[serde(flatten)]
    pub prompt: Option<TickPrompt>,
}

/// What the model of a tick saw and did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TickPrompt {
    /// The system prompt, byte for byte.
    pub system_prompt: String,
    /// The user message (the assembled context), byte for byte.
    pub user_message: String,
    /// Every model call of the tick, in order, with its tool calls (arguments as the model sent
    /// them, results as the model read them), usage and finish reason.
    pub steps: Vec<Step>,
}

/// Why stored ticks could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReadTicksError {
    /// The store refused the query or failed.
    #[error("reading the ticks: {0}")]
    Store(#[from] DbError),
    /// A tick's stored steps are not the runtime's step records.
    #[error("the steps of tick {tick_at} ({tick_id}) do not read back: {source}")]
    Steps {
        /// The tick.
        tick_id: Uuid,
        /// Its time.
        tick_at: DateTime<Utc>,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
}

impl TryFrom<StoredTick> for TickEntry {
    type Error = ReadTicksError;

    /// The stored tick with its outcome and, when it was read with its texts, its steps typed.
    fn try_from(t: StoredTick) -> Result<Self, ReadTicksError> {
        let prompt = match t.texts {
            None => None,
            Some(texts) => Some(TickPrompt {
                steps: serde_json::from_str(texts.steps.as_str()).map_err(|source| {
                    ReadTicksError::Steps {
                        tick_id: t.id,
                        tick_at: t.tick_at,
                        source,
                    }
                })?,
                system_prompt: texts.system_prompt,
                user_message: texts.user_message,
            }),
        };
        Ok(Self {
            tick_id: t.id,
            deployment_id: t.deployment_id,
            tick_at: t.tick_at,
            outcome: OutcomeKind::of(&t.verdict, t.model_error),
            rule: match &t.verdict {
                Verdict::Rejected { rule, .. } => Some(*rule),
                Verdict::Executed { .. } | Verdict::NoOp { .. } => None,
            },
            proposal: t.proposal,
            verdict: t.verdict,
            model: t.model,
            finish_reason: t.finish_reason,
            usage: t.usage,
            cost_usd: t.cost_usd,
            error: t.error,
            prompt,
        })
    }
}

/// One page of a deployment's stored ticks ([`TickStore::ticks`]: those in [`query.from`,
/// `query.to`] after `query.after`, oldest first, at most `query.limit`), each with its prompt
/// and steps when `query.texts` asks for them. The next page starts after the last tick of
/// this one:
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// # let store = db::connect("sqlite::memory:").await?;
/// # let deployment_id = db::test_support::seed(&store).await?.deployment.id;
/// let mut query = db::TickQuery { texts: true, ..db::TickQuery::of(deployment_id) };
/// loop {
///     let page = tick::read_ticks(&store, &query).await?;
///     let Some(last) = page.last() else { break };
///     query.after = Some(last.tick_at);
///     for t in &page {
///         let prompt = t.prompt.as_ref().expect("asked for");
///         println!("{} {:?}: {} steps", t.tick_at, t.outcome, prompt.steps.len());
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
/// [`ReadTicksError::Store`] as [`TickStore::ticks`] (a limit out of bounds, `from` after
/// `to`, a driver failure); [`ReadTicksError::Steps`] for steps that are not the runtime's.
pub async fn read_ticks<S: TickStore>(
    store: &S,
    query: &TickQuery,
) -> Result<Vec<TickEntry>, ReadTicksError> {
    store
        .ticks(query)
        .await?
        .into_iter()
        .map(TickEntry::try_from)
        .collect()
}
