//! The API's wire types: what every JSON body and server-sent event of `/api` carries. Each is
//! built from the store's rows or the model loop's records, field by field, with camelCase
//! keys; no row is sent in its own (snake_case, storage) shape. Values keep their stored
//! vocabulary (`user_deleted`, `trending_down`, `latest_decision_snapshot`); amounts keep their
//! exact decimals as strings.
//!
//! A tool call's `arguments` and `result` are the tool's own JSON, as the model sent and read it
//! (their keys are the tool's parameters, not the API's).

use agent_runtime::{FinishReason, Step, StepCut, ToolCallRecord, ToolOutcome};
use chrono::{DateTime, Utc};
use db::{
    BrokerKind, ControlAction, Deployment, DeploymentControl, DeploymentStatus, FlattenState,
    HeldStatus, StoredHeldLesson,
};
use rust_decimal::Decimal;
use serde::Serialize;
use types::{
    ArchiveReason, CloseKind, FactChange, FactChangeOp, FactConfidence, FactSource, NoteStatus,
    ReflectionNote, RegimeTag, Side, TradeRecord, TradeStatus, Usage, UserFact,
};
use utoipa::ToSchema;
use uuid::Uuid;

use super::openapi;

/// Every error's body (any 4xx or 5xx status, and the chat stream's `error` event).
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody<'a> {
    /// What went wrong, for a person.
    #[schema(value_type = String)]
    pub error: &'a str,
    /// The request field at fault (`fact`, `messages[2].content`, `status`), when there is one;
    /// absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub field: Option<&'a str>,
}

/// `GET /api/me`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    /// The caller.
    pub user_id: Uuid,
}

/// Tokens of a model call or a turn.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireUsage {
    /// Uncached input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Input tokens read from the provider's prompt cache.
    pub cache_read: u64,
    /// Input tokens written to it.
    pub cache_write: u64,
}

impl From<Usage> for WireUsage {
    fn from(u: Usage) -> Self {
        Self {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
        }
    }
}

/// A tool call's arguments as JSON: the model's text parsed, or the text itself as a string
/// when it is not JSON.
fn arguments(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

/// What a tool call did.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum WireOutcome {
    /// The tool's result, as sent back to the model.
    Ok {
        /// The result's JSON.
        result: serde_json::Value,
    },
    /// The tool refused or failed.
    Error {
        /// The error as the model saw it.
        message: String,
        /// Whether it went back to the model (else it ended the turn).
        recoverable: bool,
    },
}

impl From<&ToolOutcome> for WireOutcome {
    fn from(o: &ToolOutcome) -> Self {
        match o {
            ToolOutcome::Ok { result } => Self::Ok {
                result: result.to_value().unwrap_or(serde_json::Value::Null),
            },
            ToolOutcome::Error {
                message,
                recoverable,
            } => Self::Error {
                message: message.clone(),
                recoverable: *recoverable,
            },
        }
    }
}

/// One tool call of a step, with its outcome.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireToolCall {
    /// The call id the model gave.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments (the tool's parameters).
    pub arguments: serde_json::Value,
    /// What it did.
    pub outcome: WireOutcome,
}

impl From<&ToolCallRecord> for WireToolCall {
    fn from(c: &ToolCallRecord) -> Self {
        Self {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: arguments(&c.arguments),
            outcome: WireOutcome::from(&c.outcome),
        }
    }
}

/// What a step left out by the stored bounds.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireStepCut {
    /// Tool calls refused past the per-response cap.
    pub refused_tool_calls: u64,
    /// Characters of text cut.
    pub text_chars: u64,
    /// Characters of tool call ids, names and arguments cut.
    pub argument_chars: u64,
    /// Bytes of tool results cut.
    pub result_bytes: u64,
    /// Tool calls not recorded.
    pub unrecorded_tool_calls: u64,
    /// Whether the turn's budget ran out.
    pub over_tick_budget: bool,
}

impl From<&StepCut> for WireStepCut {
    fn from(c: &StepCut) -> Self {
        Self {
            refused_tool_calls: c.refused_tool_calls,
            text_chars: c.text_chars,
            argument_chars: c.argument_chars,
            result_bytes: c.result_bytes,
            unrecorded_tool_calls: c.unrecorded_tool_calls,
            over_tick_budget: c.over_tick_budget,
        }
    }
}

/// One model call of a turn and the tool calls it asked for.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireStep {
    /// 0-based.
    pub index: u32,
    /// The text the model wrote in this call.
    pub text: Option<String>,
    /// The tool calls, in order, with their outcomes.
    pub tool_calls: Vec<WireToolCall>,
    /// Tokens of this call.
    pub usage: WireUsage,
    /// Why the model stopped.
    #[schema(value_type = openapi::FinishReason)]
    pub finish: FinishReason,
    /// What was cut; absent when nothing was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<WireStepCut>,
}

impl From<&Step> for WireStep {
    fn from(s: &Step) -> Self {
        Self {
            index: s.index,
            text: s.text.clone(),
            tool_calls: s.tool_calls.iter().map(WireToolCall::from).collect(),
            usage: s.usage.into(),
            finish: s.finish,
            cut: s.cut.as_ref().map(WireStepCut::from),
        }
    }
}

/// What a chat turn answers (the JSON response, and the SSE `answer` event).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChatResponse {
    /// The turn's id (its row in `chat_turns`).
    pub turn_id: Uuid,
    /// The kept conversation the turn belongs to (`null` for a request that sent the whole
    /// conversation in `messages`).
    pub conversation_id: Option<Uuid>,
    /// The assistant's answer: every text it wrote this turn; when the turn ran out of steps,
    /// followed by what it did and that it stopped.
    pub answer: String,
    /// The turn stopped at its limit of model calls before the model wrote its answer.
    pub out_of_steps: bool,
    /// The model loop's steps.
    pub steps: Vec<WireStep>,
    /// The model that answered.
    pub model: String,
    /// Tokens of the turn.
    pub usage: WireUsage,
    /// What the turn cost (USD; zero for offline models and models not in the rate table).
    #[schema(value_type = openapi::DecimalString)]
    pub cost_usd: Decimal,
    /// How many facts the system prompt showed.
    pub facts_injected: usize,
    /// The actions the turn prepared (`prepare_action`), pending: nothing changes until the
    /// user confirms one (`POST /api/actions/{id}/confirm`). Empty when the turn failed.
    pub actions: Vec<super::actions::WireAction>,
    /// Why the turn ended in error (a model failure), if it did.
    pub error: Option<String>,
}

/// A model step as it happens (SSE event `step`): the calls it asks for, before they run.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepEvent<'a> {
    /// 0-based.
    pub index: u32,
    /// The text the model wrote.
    #[schema(value_type = Option<String>)]
    pub text: Option<&'a str>,
    /// The calls it asks for.
    pub tool_calls: Vec<CallEvent<'a>>,
}

/// A tool call as the model asks for it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CallEvent<'a> {
    /// The call id.
    #[schema(value_type = String)]
    pub id: &'a str,
    /// The tool.
    #[schema(value_type = String)]
    pub name: &'a str,
    /// Its arguments (the tool's parameters).
    pub arguments: serde_json::Value,
}

impl<'a> CallEvent<'a> {
    /// The event of a call whose arguments are `text`.
    pub fn new(id: &'a str, name: &'a str, text: &str) -> Self {
        Self {
            id,
            name,
            arguments: arguments(text),
        }
    }
}

/// A tool's result as the loop sent it back to the model (SSE event `toolResult`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultEvent<'a> {
    /// The call it answers.
    #[schema(value_type = String)]
    pub call_id: &'a str,
    /// The tool.
    #[schema(value_type = String)]
    pub name: &'a str,
    /// The result's text, as the model read it.
    #[schema(value_type = String)]
    pub content: &'a str,
}

/// A fact about the user.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fact {
    /// Its id.
    pub id: Uuid,
    /// Whose.
    pub user_id: Uuid,
    /// The skill it is about, if any.
    pub skill_id: Option<Uuid>,
    /// The text.
    pub fact: String,
    /// Who stated it (`profile`, `chat`, ...).
    #[schema(value_type = openapi::FactSource)]
    pub source: FactSource,
    /// `asserted` or `inferred`.
    #[schema(value_type = openapi::FactConfidence)]
    pub confidence: FactConfidence,
    /// A short tag.
    pub topic: Option<String>,
    /// When a prompt last showed it.
    pub last_referenced_at: Option<DateTime<Utc>>,
    /// When it was stored.
    pub created_at: DateTime<Utc>,
    /// When it was archived.
    pub archived_at: Option<DateTime<Utc>>,
    /// Why.
    #[schema(value_type = Option<openapi::ArchiveReason>)]
    pub archived_reason: Option<ArchiveReason>,
}

impl From<UserFact> for Fact {
    fn from(f: UserFact) -> Self {
        Self {
            id: f.id,
            user_id: f.user_id,
            skill_id: f.skill_id,
            fact: f.fact,
            source: f.source,
            confidence: f.confidence,
            topic: f.topic,
            last_referenced_at: f.last_referenced_at,
            created_at: f.created_at,
            archived_at: f.archived_at,
            archived_reason: f.archived_reason,
        }
    }
}

/// One entry of a fact's audit trail.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FactChangeEntry {
    /// The entry's id.
    pub id: i64,
    /// The fact.
    pub fact_id: Uuid,
    /// Its user.
    pub user_id: Uuid,
    /// What changed.
    #[schema(value_type = openapi::FactChangeOp)]
    pub op: FactChangeOp,
    /// Who changed it (`profile`, a chat turn, ...).
    pub actor: Option<String>,
    /// The database role of the change.
    pub db_role: String,
    /// The token subject of the change.
    pub jwt_sub: Option<Uuid>,
    /// When.
    pub changed_at: DateTime<Utc>,
    /// The text before.
    pub old_fact: Option<String>,
    /// The text after.
    pub new_fact: Option<String>,
    /// Why, when archived.
    pub reason: Option<String>,
}

impl From<FactChange> for FactChangeEntry {
    fn from(c: FactChange) -> Self {
        Self {
            id: c.id,
            fact_id: c.fact_id,
            user_id: c.user_id,
            op: c.op,
            actor: c.actor,
            db_role: c.db_role,
            jwt_sub: c.jwt_sub,
            changed_at: c.changed_at,
            old_fact: c.old_fact,
            new_fact: c.new_fact,
            reason: c.reason,
        }
    }
}

/// A deployment of the caller's (its runner lease and broker configuration stay server-side).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireDeployment {
    /// Its id.
    pub id: Uuid,
    /// Its owner.
    pub user_id: Uuid,
    /// The skill it runs.
    pub skill_id: Uuid,
    /// The skill's version.
    pub skill_version: i32,
    /// `paper` or `hyperliquid`.
    #[schema(value_type = openapi::BrokerKind)]
    pub broker: BrokerKind,
    /// `active`, `paused`, ...
    #[schema(value_type = openapi::DeploymentStatus)]
    pub status: DeploymentStatus,
    /// Equity at the start, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub initial_equity_usd: Decimal,
    /// Equity now, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub equity_usd: Decimal,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it ticks next.
    pub next_tick_at: Option<DateTime<Utc>>,
}

impl From<Deployment> for WireDeployment {
    fn from(d: Deployment) -> Self {
        Self {
            id: d.id,
            user_id: d.user_id,
            skill_id: d.skill_id,
            skill_version: d.skill_version,
            broker: d.broker,
            status: d.status,
            initial_equity_usd: d.initial_equity_usd,
            equity_usd: d.equity_usd,
            created_at: d.created_at,
            next_tick_at: d.next_tick_at,
        }
    }
}

/// A round trip of the closed-trade ledger.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Trade {
    /// Its id.
    pub id: Uuid,
    /// The deployment.
    pub deployment_id: Uuid,
    /// The skill.
    pub skill_id: Uuid,
    /// The skill's version.
    pub skill_version: i32,
    /// The symbol.
    pub symbol: String,
    /// `long` or `short`.
    #[schema(value_type = openapi::Side)]
    pub side: Side,
    /// `open` or `closed`.
    #[schema(value_type = openapi::TradeStatus)]
    pub status: TradeStatus,
    /// The tick that opened it.
    pub entry_tick_at: DateTime<Utc>,
    /// Average entry price.
    #[schema(value_type = openapi::DecimalString)]
    pub entry_price: Decimal,
    /// Notional opened, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub entry_size_usd: Decimal,
    /// Leverage at entry.
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub entry_leverage: Option<Decimal>,
    /// The agent's reason to open.
    pub entry_reason: Option<String>,
    /// The decision snapshot that opened it.
    pub entry_snapshot_id: Option<Uuid>,
    /// The regime at entry.
    #[schema(value_type = Option<openapi::RegimeTag>)]
    pub entry_regime_tag: Option<RegimeTag>,
    /// Quantity opened.
    #[schema(value_type = openapi::DecimalString)]
    pub opened_qty: Decimal,
    /// Quantity still open.
    #[schema(value_type = openapi::DecimalString)]
    pub open_qty: Decimal,
    /// The tick that closed it.
    pub exit_tick_at: Option<DateTime<Utc>>,
    /// Average exit price.
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub exit_price: Option<Decimal>,
    /// Notional closed, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub exit_size_usd: Decimal,
    /// The agent's reason to close.
    pub exit_reason: Option<String>,
    /// The decision snapshot that closed it.
    pub exit_snapshot_id: Option<Uuid>,
    /// Why it ended (`signal`, `stop`, `liquidation`, ...).
    #[schema(value_type = Option<openapi::CloseKind>)]
    pub close_kind: Option<CloseKind>,
    /// Minutes held.
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub holding_minutes: Option<Decimal>,
    /// Realized PnL before fees, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub realized_pnl_usd: Decimal,
    /// Fees, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub fees_usd: Decimal,
    /// Best open PnL, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub mfe_usd: Decimal,
    /// Worst open PnL, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub mae_usd: Decimal,
    /// Whether it was reconciled against the broker's positions.
    pub broker_reconciled: bool,
}

impl From<TradeRecord> for Trade {
    fn from(t: TradeRecord) -> Self {
        Self {
            id: t.id,
            deployment_id: t.deployment_id,
            skill_id: t.skill_id,
            skill_version: t.skill_version,
            symbol: t.symbol,
            side: t.side,
            status: t.status,
            entry_tick_at: t.entry_tick_at,
            entry_price: t.entry_price,
            entry_size_usd: t.entry_size_usd,
            entry_leverage: t.entry_leverage,
            entry_reason: t.entry_reason,
            entry_snapshot_id: t.entry_snapshot_id,
            entry_regime_tag: t.entry_regime_tag,
            opened_qty: t.opened_qty,
            open_qty: t.open_qty,
            exit_tick_at: t.exit_tick_at,
            exit_price: t.exit_price,
            exit_size_usd: t.exit_size_usd,
            exit_reason: t.exit_reason,
            exit_snapshot_id: t.exit_snapshot_id,
            close_kind: t.close_kind,
            holding_minutes: t.holding_minutes,
            realized_pnl_usd: t.realized_pnl_usd,
            fees_usd: t.fees_usd,
            mfe_usd: t.mfe_usd,
            mae_usd: t.mae_usd,
            broker_reconciled: t.broker_reconciled,
        }
    }
}

/// A reflection note: the lessons and what they were drawn from.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    /// Its id.
    pub id: Uuid,
    /// The skill.
    pub skill_id: Uuid,
    /// The skill's version.
    pub skill_version: i32,
    /// The deployment it reflects on.
    pub deployment_id: Option<Uuid>,
    /// `active`, `superseded`, `pending_review`, ...
    #[schema(value_type = openapi::NoteStatus)]
    pub status: NoteStatus,
    /// When it was written.
    pub generated_at: DateTime<Utc>,
    /// The first exit it considered.
    pub window_start: DateTime<Utc>,
    /// The last.
    pub window_end: DateTime<Utc>,
    /// How many closed trades it considered.
    pub trades_considered: u32,
    /// The lessons.
    pub lessons_text: String,
    /// The model that wrote them.
    pub model_used: String,
    /// Input tokens of the reflection.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// What it cost, USD.
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub cost_usd: Option<Decimal>,
    /// Why the linter flagged it, when it did.
    pub lint_reason: Option<String>,
    /// When a newer note replaced it.
    pub superseded_at: Option<DateTime<Utc>>,
    /// The note that did.
    pub superseded_by: Option<Uuid>,
    /// When a reviewer accepted it.
    pub accepted_at: Option<DateTime<Utc>>,
    /// Who accepted it.
    pub accepted_by: Option<String>,
}

impl From<ReflectionNote> for Note {
    fn from(n: ReflectionNote) -> Self {
        Self {
            id: n.id,
            skill_id: n.skill_id,
            skill_version: n.skill_version,
            deployment_id: n.deployment_id,
            status: n.status,
            generated_at: n.generated_at,
            window_start: n.content.window_start,
            window_end: n.content.window_end,
            trades_considered: n.content.trades_considered,
            lessons_text: n.content.lessons_text,
            model_used: n.content.model_used,
            input_tokens: n.content.input_tokens,
            output_tokens: n.content.output_tokens,
            cost_usd: n.content.cost_usd,
            lint_reason: n.lint.map(|l| l.reason),
            superseded_at: n.superseded_at,
            superseded_by: n.superseded_by,
            accepted_at: n.accepted_at,
            accepted_by: n.accepted_by,
        }
    }
}

/// What the agent of a deployment sees: the system prompt and user message of its latest
/// recorded tick, with exact token counts.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptView {
    /// Where the text comes from: always `latest_decision_snapshot` (a fresh context needs
    /// live market data; the stored snapshot is the exact text of the last tick).
    #[schema(value_type = String)]
    pub source: &'static str,
    /// The tick the snapshot is of: the prompt as of that time, not now.
    pub as_of: DateTime<Utc>,
    /// The snapshot's id.
    pub snapshot_id: Uuid,
    /// The model of that tick.
    pub model: String,
    /// The system prompt, exactly as sent.
    pub system_prompt: String,
    /// Its `o200k_base` token count.
    pub system_prompt_tokens: usize,
    /// The user message (assembled context), exactly as sent.
    pub user_message: String,
    /// Its `o200k_base` token count.
    pub user_message_tokens: usize,
    /// The tokenizer of the counts.
    #[schema(value_type = String)]
    pub tokenizer: &'static str,
}

/// `GET /api/deployments/{id}/memory`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    /// The deployment.
    pub deployment: WireDeployment,
    /// Its skill's name.
    pub skill_name: String,
    /// Closed round trips, newest exit first.
    pub closed_trades: Vec<Trade>,
    /// Open ones.
    pub open_trades: Vec<Trade>,
    /// The deployment's reflection notes, newest first.
    pub notes: Vec<Note>,
    /// What the agent saw at its latest tick; `null` before the first tick.
    pub prompt: Option<PromptView>,
}

/// One audited control of a deployment (`POST /api/deployments/{id}/pause|resume|stop`
/// answers it; `GET …/controls` lists them).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireControl {
    /// The audit row's id.
    pub id: Uuid,
    /// The deployment.
    pub deployment_id: Uuid,
    /// `pause`, `resume` or `stop`.
    #[schema(value_type = openapi::ControlAction)]
    pub action: ControlAction,
    /// Whether the stop asked for the open positions to be closed.
    pub flatten: bool,
    /// Who asked: a user id, or `operator:<name>`.
    pub requested_by: String,
    /// Why, when given.
    pub reason: Option<String>,
    /// When.
    pub requested_at: DateTime<Utc>,
    /// The status before.
    #[schema(value_type = openapi::DeploymentStatus)]
    pub from_status: DeploymentStatus,
    /// The status after.
    #[schema(value_type = openapi::DeploymentStatus)]
    pub to_status: DeploymentStatus,
}

impl From<DeploymentControl> for WireControl {
    fn from(c: DeploymentControl) -> Self {
        Self {
            id: c.id,
            deployment_id: c.deployment_id,
            action: c.action,
            flatten: c.flatten,
            requested_by: c.requested_by,
            reason: c.reason,
            requested_at: c.requested_at,
            from_status: c.from_status,
            to_status: c.to_status,
        }
    }
}

/// Where a stopped deployment's flatten stands.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireFlatten {
    /// When the stop asked for it.
    pub requested_at: DateTime<Utc>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// When a runner tries again after a failure.
    pub retry_at: Option<DateTime<Utc>>,
    /// The last failure, until an attempt succeeds.
    pub last_error: Option<String>,
    /// When a runner closed the positions; `null` while still to do.
    pub done_at: Option<DateTime<Utc>>,
}

impl From<FlattenState> for WireFlatten {
    fn from(f: FlattenState) -> Self {
        Self {
            requested_at: f.requested_at,
            attempts: f.attempts,
            retry_at: f.retry_at,
            last_error: f.last_error,
            done_at: f.done_at,
        }
    }
}

/// `GET /api/deployments/{id}/controls`: the status, the flatten if one was asked for, and the
/// audit trail, newest first.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentControls {
    /// The deployment.
    pub deployment_id: Uuid,
    /// Its status now.
    #[schema(value_type = openapi::DeploymentStatus)]
    pub status: DeploymentStatus,
    /// Its flatten; `null` when no stop asked for one.
    pub flatten: Option<WireFlatten>,
    /// Every control, newest first.
    pub controls: Vec<WireControl>,
}

/// A bullet a reflection's lesson defences held back, with its review (`GET
/// /api/lessons/held` lists them; `POST /api/lessons/{id}/accept|reject` answers one).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireHeldLesson {
    /// Its id.
    pub id: Uuid,
    /// The deployment whose reflection held it back; `null` for a skill-scoped note's.
    pub deployment_id: Option<Uuid>,
    /// The deployment's skill.
    pub skill_name: String,
    /// The note it was held beside.
    pub note_id: Uuid,
    /// Its place among the note's held bullets, from 0.
    pub position: u32,
    /// The bullet (`- ` and the text).
    pub text: String,
    /// Why it was held back: every finding of the defences, one each.
    pub reasons: Vec<String>,
    /// When the reflection that held it back ran (its note's `generatedAt`).
    pub held_at: DateTime<Utc>,
    /// `pending`, `accepted` or `rejected`.
    #[schema(value_type = openapi::HeldStatus)]
    pub status: HeldStatus,
    /// When a person decided; `null` while pending.
    pub reviewed_at: Option<DateTime<Utc>>,
    /// Who decided: a user id, or an operator's name; `null` while pending.
    pub reviewed_by: Option<String>,
    /// Why, when the reviewer said.
    pub review_reason: Option<String>,
    /// The note the acceptance wrote (in force from `reviewedAt`); `null` unless accepted.
    pub resulting_note_id: Option<Uuid>,
}

impl WireHeldLesson {
    /// The row with its skill's name.
    #[must_use]
    pub fn new(h: StoredHeldLesson, skill_name: String) -> Self {
        Self {
            id: h.id,
            deployment_id: h.deployment_id,
            skill_name,
            note_id: h.note_id,
            position: h.position,
            text: h.text,
            reasons: h.reasons,
            held_at: h.held_at,
            status: h.status,
            reviewed_at: h.reviewed_at,
            reviewed_by: h.reviewed_by,
            review_reason: h.review_reason,
            resulting_note_id: h.resulting_note_id,
        }
    }
}
