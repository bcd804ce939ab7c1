//! Value mapping between Rust and the two dialects, and the row decoders both backends share.
//!
//! Decoding goes through [`RowExt`], implemented once per backend row type; every `*_from_row`
//! function below is therefore written once. Encoding is each database's
//! [`Dialect`](crate::imp::Dialect) (`D::dec(x)` in the generic store code).

use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use rust_decimal::Decimal;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::types::Json;
use sqlx::{Decode, Postgres, Row, Sqlite, Type};
use types::{
    ArchiveReason, CloseKind, EventKind, FactChange, FactChangeOp, FactConfidence, FactSource,
    Fill, FillTrigger, MarketEvent, NoteContent, NoteLint, NoteStatus, OrderSide, ReflectionNote,
    RegimeTag, Side, TradeRecord, TradeStatus, Usage, UserFact,
};
use uuid::Uuid;

use crate::DbError;
use crate::model::{
    Annotation, AnnotationTarget, BrokerKind, DecisionSnapshot, Deployment, DeploymentStatus,
    ReflectionRun, RunOutcome, SkillRecord, SkillVersion, StoredFill,
};

/// SQLite's text form of a time: RFC 3339, UTC, exactly six fractional digits, `Z`. Fixed width,
/// so comparing and sorting the text compares the times. PostgreSQL keeps microseconds too.
#[must_use]
pub fn time_text(t: DateTime<Utc>) -> String {
    let mut out = String::with_capacity(27);
    types::text::push_rfc3339(&mut out, t, SecondsFormat::Micros);
    out
}

pub(crate) fn decode_err(column: &str, e: impl std::fmt::Display) -> DbError {
    DbError::Decode {
        column: column.to_owned(),
        detail: e.to_string(),
    }
}

/// A type a column is read as that both backends decode (integers, booleans, floats, text,
/// bytes, JSON, and their options): [`RowExt::col`] reads it the same way from either row.
pub(crate) trait Col<'r>:
    Decode<'r, Sqlite> + Type<Sqlite> + Decode<'r, Postgres> + Type<Postgres>
{
}

impl<'r, T> Col<'r> for T where
    T: Decode<'r, Sqlite> + Type<Sqlite> + Decode<'r, Postgres> + Type<Postgres>
{
}

/// Typed column access over both backends' rows. Each row type gives [`col`](Self::col) and
/// the four reads the backends store differently (uuid, decimal and time are TEXT on SQLite, a
/// symbol list JSON text there and `text[]` on PostgreSQL); every other read is written once
/// here over `col`.
pub(crate) trait RowExt {
    /// Column `c` as a `T` both backends decode alike.
    fn col<'r, T: Col<'r>>(&'r self, c: &str) -> Result<T, DbError>;
    fn opt_uuid(&self, c: &str) -> Result<Option<Uuid>, DbError>;
    fn opt_dec(&self, c: &str) -> Result<Option<Decimal>, DbError>;
    fn opt_ts(&self, c: &str) -> Result<Option<DateTime<Utc>>, DbError>;
    fn symbols(&self, c: &str) -> Result<Vec<String>, DbError>;

    fn text(&self, c: &str) -> Result<String, DbError> {
        self.col(c)
    }
    fn opt_text(&self, c: &str) -> Result<Option<String>, DbError> {
        self.col(c)
    }
    fn int(&self, c: &str) -> Result<i32, DbError> {
        self.col(c)
    }
    fn big(&self, c: &str) -> Result<i64, DbError> {
        self.col(c)
    }
    fn opt_big(&self, c: &str) -> Result<Option<i64>, DbError> {
        self.col(c)
    }
    fn flag(&self, c: &str) -> Result<bool, DbError> {
        self.col(c)
    }
    fn opt_flag(&self, c: &str) -> Result<Option<bool>, DbError> {
        self.col(c)
    }
    fn opt_int(&self, c: &str) -> Result<Option<i32>, DbError> {
        self.col(c)
    }
    fn opt_f64(&self, c: &str) -> Result<Option<f64>, DbError> {
        self.col(c)
    }
    fn opt_json<T: DeserializeOwned>(&self, c: &str) -> Result<Option<T>, DbError> {
        Ok(self.col::<Option<Json<T>>>(c)?.map(|j| j.0))
    }
    fn opt_blob(&self, c: &str) -> Result<Option<Vec<u8>>, DbError> {
        self.col(c)
    }
    fn uuid(&self, c: &str) -> Result<Uuid, DbError> {
        self.opt_uuid(c)?
            .ok_or_else(|| decode_err(c, "unexpected null"))
    }
    fn dec(&self, c: &str) -> Result<Decimal, DbError> {
        self.opt_dec(c)?
            .ok_or_else(|| decode_err(c, "unexpected null"))
    }
    fn ts(&self, c: &str) -> Result<DateTime<Utc>, DbError> {
        self.opt_ts(c)?
            .ok_or_else(|| decode_err(c, "unexpected null"))
    }
    fn json<T: DeserializeOwned>(&self, c: &str) -> Result<T, DbError> {
        self.opt_json(c)?
            .ok_or_else(|| decode_err(c, "unexpected null"))
    }
    /// A `COUNT(*)` column.
    fn count(&self, c: &str) -> Result<u64, DbError> {
        u64::try_from(self.big(c)?).map_err(|e| decode_err(c, e))
    }
}

impl RowExt for SqliteRow {
    fn col<'r, T: Col<'r>>(&'r self, c: &str) -> Result<T, DbError> {
        self.try_get::<T, _>(c).map_err(|e| decode_err(c, e))
    }
    fn opt_uuid(&self, c: &str) -> Result<Option<Uuid>, DbError> {
        self.opt_text(c)?
            .map(|s| Uuid::parse_str(&s).map_err(|e| decode_err(c, e)))
            .transpose()
    }
    fn opt_dec(&self, c: &str) -> Result<Option<Decimal>, DbError> {
        self.opt_text(c)?
            .map(|s| Decimal::from_str(&s).map_err(|e| decode_err(c, e)))
            .transpose()
    }
    fn opt_ts(&self, c: &str) -> Result<Option<DateTime<Utc>>, DbError> {
        self.opt_text(c)?
            .map(|s| {
                DateTime::parse_from_rfc3339(&s)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|e| decode_err(c, format!("{e} in {s:?}")))
            })
            .transpose()
    }
    fn symbols(&self, c: &str) -> Result<Vec<String>, DbError> {
        self.json(c)
    }
}

impl RowExt for PgRow {
    fn col<'r, T: Col<'r>>(&'r self, c: &str) -> Result<T, DbError> {
        self.try_get::<T, _>(c).map_err(|e| decode_err(c, e))
    }
    fn opt_uuid(&self, c: &str) -> Result<Option<Uuid>, DbError> {
        self.try_get::<Option<Uuid>, _>(c)
            .map_err(|e| decode_err(c, e))
    }
    fn opt_dec(&self, c: &str) -> Result<Option<Decimal>, DbError> {
        self.try_get::<Option<Decimal>, _>(c)
            .map_err(|e| decode_err(c, e))
    }
    fn opt_ts(&self, c: &str) -> Result<Option<DateTime<Utc>>, DbError> {
        self.try_get::<Option<DateTime<Utc>>, _>(c)
            .map_err(|e| decode_err(c, e))
    }
    fn symbols(&self, c: &str) -> Result<Vec<String>, DbError> {
        self.try_get::<Vec<String>, _>(c)
            .map_err(|e| decode_err(c, e))
    }
}

// ---- enum spellings the shared types don't parse themselves --------------------------------

fn parse_enum<T>(c: &str, s: &str, parsed: Option<T>) -> Result<T, DbError> {
    parsed.ok_or_else(|| decode_err(c, format!("unknown value {s:?}")))
}

pub(crate) fn enum_col<R: RowExt, T>(
    r: &R,
    c: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<T, DbError> {
    let s = r.text(c)?;
    parse_enum(c, &s, parse(&s))
}

fn opt_enum_col<R: RowExt, T>(
    r: &R,
    c: &str,
    parse: impl Fn(&str) -> Option<T>,
) -> Result<Option<T>, DbError> {
    r.opt_text(c)?
        .map(|s| parse_enum(c, &s, parse(&s)))
        .transpose()
}

pub(crate) fn side_str(s: Side) -> &'static str {
    s.as_str()
}

fn parse_side(s: &str) -> Option<Side> {
    [Side::Long, Side::Short]
        .into_iter()
        .find(|v| v.as_str() == s)
}

fn parse_trade_status(s: &str) -> Option<TradeStatus> {
    [TradeStatus::Open, TradeStatus::Closed]
        .into_iter()
        .find(|v| v.as_str() == s)
}

fn parse_close_kind(s: &str) -> Option<CloseKind> {
    [
        CloseKind::Signal,
        CloseKind::Flip,
        CloseKind::Liquidation,
        CloseKind::External,
        CloseKind::Stop,
        CloseKind::Target,
    ]
    .into_iter()
    .find(|v| v.as_str() == s)
}

fn parse_fill_trigger(s: &str) -> Option<FillTrigger> {
    [FillTrigger::Stop, FillTrigger::Target]
        .into_iter()
        .find(|v| v.as_str() == s)
}

pub(crate) fn order_side_str(s: OrderSide) -> &'static str {
    match s {
        OrderSide::Buy => "buy",
        OrderSide::Sell => "sell",
    }
}

fn parse_order_side(s: &str) -> Option<OrderSide> {
    match s {
        "buy" => Some(OrderSide::Buy),
        "sell" => Some(OrderSide::Sell),
        _ => None,
    }
}

/// An unsigned count in its signed column's width, or [`DbError::Invalid`] naming `what`.
pub(crate) fn to_signed<U, S>(what: &'static str, v: U) -> Result<S, DbError>
where
    U: Copy + std::fmt::Display,
    S: TryFrom<U>,
{
    S::try_from(v).map_err(|_| DbError::Invalid {
        what,
        detail: format!(
            "{v} does not fit a signed {}-bit column",
            8 * std::mem::size_of::<S>()
        ),
    })
}

/// A signed column's value as the unsigned count it stores, or [`DbError::Decode`] for `c`.
fn to_unsigned<S, U>(c: &str, v: S) -> Result<U, DbError>
where
    U: TryFrom<S>,
    U::Error: std::fmt::Display,
{
    U::try_from(v).map_err(|e| decode_err(c, e))
}

pub(crate) fn u64_to_i64(what: &'static str, v: u64) -> Result<i64, DbError> {
    to_signed(what, v)
}

fn i64_to_u64(c: &str, v: i64) -> Result<u64, DbError> {
    to_unsigned(c, v)
}

// ---- row decoders --------------------------------------------------------------------------

pub(crate) fn skill_from_row<R: RowExt>(r: &R) -> Result<SkillRecord, DbError> {
    Ok(SkillRecord {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        name: r.text("name")?,
        created_at: r.ts("created_at")?,
    })
}

pub(crate) fn skill_version_from_row<R: RowExt>(r: &R) -> Result<SkillVersion, DbError> {
    Ok(SkillVersion {
        skill_id: r.uuid("skill_id")?,
        version: r.int("version")?,
        body: r.json("body")?,
        model: r.text("model")?,
        created_at: r.ts("created_at")?,
    })
}

pub(crate) fn deployment_from_row<R: RowExt>(r: &R) -> Result<Deployment, DbError> {
    Ok(Deployment {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        skill_id: r.uuid("skill_id")?,
        skill_version: r.int("skill_version")?,
        broker: enum_col(r, "broker", BrokerKind::parse)?,
        status: enum_col(r, "status", DeploymentStatus::parse)?,
        initial_equity_usd: r.dec("initial_equity_usd")?,
        equity_usd: r.dec("equity_usd")?,
        config: r.json("config")?,
        created_at: r.ts("created_at")?,
        next_tick_at: r.opt_ts("next_tick_at")?,
        lease_owner: r.opt_text("lease_owner")?,
        lease_expires_at: r.opt_ts("lease_expires_at")?,
    })
}

pub(crate) fn control_from_row<R: RowExt>(r: &R) -> Result<crate::DeploymentControl, DbError> {
    Ok(crate::DeploymentControl {
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        action: enum_col(r, "action", crate::ControlAction::parse)?,
        flatten: r.flag("flatten")?,
        requested_by: r.text("requested_by")?,
        reason: r.opt_text("reason")?,
        requested_at: r.ts("requested_at")?,
        from_status: enum_col(r, "from_status", DeploymentStatus::parse)?,
        to_status: enum_col(r, "to_status", DeploymentStatus::parse)?,
    })
}

/// A `deployments` row's flatten columns; `None` when no flatten was requested.
pub(crate) fn flatten_from_row<R: RowExt>(r: &R) -> Result<Option<crate::FlattenState>, DbError> {
    let Some(requested_at) = r.opt_ts("flatten_requested_at")? else {
        return Ok(None);
    };
    let attempts = r.int("flatten_attempts")?;
    Ok(Some(crate::FlattenState {
        requested_at,
        attempts: u32::try_from(attempts).map_err(|e| decode_err("flatten_attempts", e))?,
        retry_at: r.opt_ts("flatten_retry_at")?,
        last_error: r.opt_text("flatten_error")?,
        done_at: r.opt_ts("flattened_at")?,
    }))
}

/// One text of a `decision_snapshots` row: held by the row itself (a row written before line
/// storage), or as a line list to put back together.
pub(crate) enum Stored<T> {
    /// The value as the row holds it.
    Value(T),
    /// The line list of its text.
    Lines(Vec<u8>),
}

/// A `decision_snapshots` row's texts, each as the row stores it.
pub(crate) struct StoredTexts {
    pub(crate) system_prompt: Stored<String>,
    pub(crate) context: Stored<String>,
    pub(crate) steps: Stored<types::JsonText>,
    pub(crate) proposal: Option<types::ProposedAction>,
    pub(crate) verdict: types::Verdict,
}

impl StoredTexts {
    /// The line lists among the texts.
    pub(crate) fn lists(&self) -> impl Iterator<Item = &[u8]> {
        fn list<T>(s: &Stored<T>) -> Option<&[u8]> {
            match s {
                Stored::Lines(l) => Some(l.as_slice()),
                Stored::Value(_) => None,
            }
        }
        [
            list(&self.system_prompt),
            list(&self.context),
            list(&self.steps),
        ]
        .into_iter()
        .flatten()
    }

    /// The texts, each line list put together by `text` (the steps' JSON checked, kept as it
    /// is).
    ///
    /// # Errors
    /// `text`'s, or [`DbError::Decode`] for steps that are not one JSON document.
    pub(crate) fn resolve(
        self,
        text: impl Fn(&[u8]) -> Result<String, DbError>,
    ) -> Result<SnapshotTexts, DbError> {
        fn value<T>(
            s: Stored<T>,
            text: &impl Fn(&[u8]) -> Result<String, DbError>,
            parse: impl FnOnce(String) -> Result<T, DbError>,
        ) -> Result<T, DbError> {
            match s {
                Stored::Value(v) => Ok(v),
                Stored::Lines(l) => parse(text(&l)?),
            }
        }
        Ok(SnapshotTexts {
            system_prompt: value(self.system_prompt, &text, Ok)?,
            context: value(self.context, &text, Ok)?,
            steps: value(self.steps, &text, |t| {
                types::JsonText::from_text(t).map_err(|e| decode_err("steps", e))
            })?,
            proposal: self.proposal,
            verdict: self.verdict,
        })
    }
}

/// A snapshot's texts, decoded.
pub(crate) struct SnapshotTexts {
    pub(crate) system_prompt: String,
    pub(crate) context: String,
    pub(crate) steps: types::JsonText,
    pub(crate) proposal: Option<types::ProposedAction>,
    pub(crate) verdict: types::Verdict,
}

/// A `decision_snapshots` row without its texts.
pub(crate) struct SnapshotHead {
    pub(crate) id: Uuid,
    pub(crate) deployment_id: Uuid,
    tick_at: DateTime<Utc>,
    model: String,
    finish_reason: Option<String>,
    usage: Usage,
    cost_usd: Decimal,
    error: Option<String>,
    model_error: bool,
}

impl SnapshotHead {
    /// The snapshot with its texts.
    pub(crate) fn with(self, t: SnapshotTexts) -> DecisionSnapshot {
        DecisionSnapshot {
            id: self.id,
            deployment_id: self.deployment_id,
            tick_at: self.tick_at,
            system_prompt: t.system_prompt,
            context: t.context,
            steps: t.steps,
            proposal: t.proposal,
            verdict: t.verdict,
            model: self.model,
            finish_reason: self.finish_reason,
            usage: self.usage,
            cost_usd: self.cost_usd,
            error: self.error,
            model_error: self.model_error,
        }
    }
}

impl SnapshotHead {
    /// The tick without its texts: the decision of `texts` (its proposal and verdict), its
    /// line lists left unread.
    pub(crate) fn tick_without_texts(self, texts: StoredTexts) -> crate::StoredTick {
        crate::StoredTick {
            id: self.id,
            deployment_id: self.deployment_id,
            tick_at: self.tick_at,
            proposal: texts.proposal,
            verdict: texts.verdict,
            model: self.model,
            finish_reason: self.finish_reason,
            usage: self.usage,
            cost_usd: self.cost_usd,
            error: self.error,
            model_error: self.model_error,
            texts: None,
        }
    }
}

/// A `decision_snapshots` row: the snapshot without its texts, and its texts.
pub(crate) fn stored_snapshot_from_row<R: RowExt>(
    r: &R,
) -> Result<(SnapshotHead, StoredTexts), DbError> {
    let text = |lines: &str, c: &str| -> Result<Stored<String>, DbError> {
        match (r.opt_blob(lines)?, r.opt_text(c)?) {
            (Some(l), None) => Ok(Stored::Lines(l)),
            (None, Some(t)) => Ok(Stored::Value(t)),
            (Some(_), Some(_)) => Err(decode_err(c, "both the text and its lines are stored")),
            (None, None) => Err(decode_err(c, "neither the text nor its lines are stored")),
        }
    };
    // The steps of a row written before line storage stay in their JSON column (the conversion
    // moves the prompts only); a new row leaves it NULL.
    let texts = StoredTexts {
        system_prompt: text("system_prompt_lines", "system_prompt")?,
        context: text("context_lines", "context")?,
        steps: match r.opt_blob("steps_lines")? {
            Some(l) => Stored::Lines(l),
            None => Stored::Value(r.json("steps")?),
        },
        proposal: r.opt_json("proposal")?,
        verdict: r.json("verdict")?,
    };
    let head = SnapshotHead {
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        tick_at: r.ts("tick_at")?,
        model: r.text("model")?,
        finish_reason: r.opt_text("finish_reason")?,
        usage: Usage {
            input: i64_to_u64("input_tokens", r.big("input_tokens")?)?,
            output: i64_to_u64("output_tokens", r.big("output_tokens")?)?,
            cache_read: i64_to_u64("cache_read_tokens", r.big("cache_read_tokens")?)?,
            cache_write: i64_to_u64("cache_write_tokens", r.big("cache_write_tokens")?)?,
        },
        cost_usd: r.dec("cost_usd")?,
        error: r.opt_text("error")?,
        model_error: r.flag("model_error")?,
    };
    Ok((head, texts))
}

pub(crate) fn trade_from_row<R: RowExt>(r: &R) -> Result<TradeRecord, DbError> {
    Ok(TradeRecord {
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        skill_id: r.uuid("skill_id")?,
        skill_version: r.int("skill_version")?,
        symbol: r.text("symbol")?,
        side: enum_col(r, "side", parse_side)?,
        status: enum_col(r, "status", parse_trade_status)?,
        entry_tick_at: r.ts("entry_tick_at")?,
        entry_price: r.dec("entry_price")?,
        entry_size_usd: r.dec("entry_size_usd")?,
        entry_leverage: r.opt_dec("entry_leverage")?,
        entry_reason: r.opt_text("entry_reason")?,
        entry_snapshot_id: r.opt_uuid("entry_snapshot_id")?,
        entry_regime_tag: opt_enum_col(r, "entry_regime_tag", RegimeTag::parse)?,
        opened_qty: r.dec("opened_qty")?,
        open_qty: r.dec("open_qty")?,
        exit_tick_at: r.opt_ts("exit_tick_at")?,
        exit_price: r.opt_dec("exit_price")?,
        exit_reason: r.opt_text("exit_reason")?,
        exit_snapshot_id: r.opt_uuid("exit_snapshot_id")?,
        close_kind: opt_enum_col(r, "close_kind", parse_close_kind)?,
        holding_minutes: r.opt_dec("holding_minutes")?,
        realized_pnl_usd: r.dec("realized_pnl_usd")?,
        fees_usd: r.dec("fees_usd")?,
        mfe_usd: r.dec("mfe_usd")?,
        mae_usd: r.dec("mae_usd")?,
        exit_size_usd: r.dec("exit_size_usd")?,
        broker_reconciled: r.flag("broker_reconciled")?,
    })
}

pub(crate) fn fill_from_row<R: RowExt>(r: &R) -> Result<StoredFill, DbError> {
    Ok(StoredFill {
        deployment_id: r.uuid("deployment_id")?,
        fill: Fill {
            id: r.text("broker_fill_id")?,
            symbol: r.text("symbol")?,
            side: enum_col(r, "side", parse_order_side)?,
            qty: r.dec("qty")?,
            price: r.dec("price")?,
            fee_usd: r.dec("fee_usd")?,
            time: r.ts("time")?,
            snapshot_id: r.opt_uuid("snapshot_id")?,
            client_order_id: r.opt_text("client_order_id")?,
            liquidation: r.flag("liquidation")?,
            trigger: opt_enum_col(r, "trigger_kind", parse_fill_trigger)?,
        },
        trade_id: r.opt_uuid("trade_id")?,
        flip_trade_id: r.opt_uuid("flip_trade_id")?,
    })
}

/// `reflection_notes.observations`: a note's observations and the ones its figures did not
/// bear out (NULL for a note of plain bullets).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct StoredObservations {
    #[serde(default)]
    pub observations: Vec<types::Observation>,
    #[serde(default)]
    pub dropped: Vec<types::DroppedObservation>,
}

/// A note's `observations` column: `None` when it has neither observations nor dropped ones,
/// else their JSON (at most [`crate::MAX_OBSERVATIONS_JSON_CHARS`] characters written compactly).
pub(crate) fn observations_json(c: &NoteContent) -> Result<Option<serde_json::Value>, DbError> {
    if c.observations.is_empty() && c.dropped.is_empty() {
        return Ok(None);
    }
    let json = serde_json::json!({"observations": &c.observations, "dropped": &c.dropped});
    check_len(
        "observations",
        &json.to_string(),
        0,
        crate::MAX_OBSERVATIONS_JSON_CHARS,
    )?;
    Ok(Some(json))
}

/// One `held_lessons` row.
pub(crate) fn held_from_row<R: RowExt>(r: &R) -> Result<crate::StoredHeldLesson, DbError> {
    Ok(crate::StoredHeldLesson {
        id: r.uuid("id")?,
        note_id: r.uuid("note_id")?,
        deployment_id: r.opt_uuid("deployment_id")?,
        held_at: r.ts("held_at")?,
        position: to_unsigned("position", r.int("position")?)?,
        text: r.text("text")?,
        reasons: r.json("reasons")?,
        status: enum_col(r, "status", crate::HeldStatus::parse)?,
        reviewed_at: r.opt_ts("reviewed_at")?,
        reviewed_by: r.opt_text("reviewed_by")?,
        review_reason: r.opt_text("review_reason")?,
        resulting_note_id: r.opt_uuid("resulting_note_id")?,
    })
}

pub(crate) fn note_from_row<R: RowExt>(r: &R) -> Result<ReflectionNote, DbError> {
    let StoredObservations {
        observations,
        dropped,
    } = r.opt_json("observations")?.unwrap_or_default();
    let lint = if r.flag("lint_flagged")? {
        Some(NoteLint {
            reason: r.opt_text("lint_reason")?.unwrap_or_default(),
        })
    } else {
        None
    };
    Ok(ReflectionNote {
        id: r.uuid("id")?,
        skill_id: r.uuid("skill_id")?,
        skill_version: r.int("skill_version")?,
        deployment_id: r.opt_uuid("deployment_id")?,
        status: enum_col(r, "status", NoteStatus::parse)?,
        generated_at: r.ts("generated_at")?,
        content: NoteContent {
            window_start: r.ts("window_start")?,
            window_end: r.ts("window_end")?,
            trades_considered: to_unsigned("trades_considered", r.int("trades_considered")?)?,
            lessons_text: r.text("lessons_text")?,
            model_used: r.text("model_used")?,
            input_tokens: r
                .opt_big("input_tokens")?
                .map(|v| i64_to_u64("input_tokens", v))
                .transpose()?,
            output_tokens: r
                .opt_big("output_tokens")?
                .map(|v| i64_to_u64("output_tokens", v))
                .transpose()?,
            cost_usd: r.opt_dec("cost_usd")?,
            observations,
            dropped,
            held: Vec::new(),
        },
        lint,
        superseded_at: r.opt_ts("superseded_at")?,
        superseded_by: r.opt_uuid("superseded_by")?,
        accepted_at: r.opt_ts("accepted_at")?,
        accepted_by: r.opt_text("accepted_by")?,
    })
}

pub(crate) fn run_from_row<R: RowExt>(r: &R) -> Result<ReflectionRun, DbError> {
    let outcome = match r.text("outcome")?.as_str() {
        "succeeded" => RunOutcome::Succeeded {
            note_id: r.opt_uuid("note_id")?,
        },
        "failed" => RunOutcome::Failed {
            error: r.opt_text("error")?.unwrap_or_default(),
        },
        other => return Err(decode_err("outcome", format!("unknown value {other:?}"))),
    };
    Ok(ReflectionRun {
        id: r.uuid("id")?,
        skill_id: r.uuid("skill_id")?,
        skill_version: r.int("skill_version")?,
        deployment_id: r.opt_uuid("deployment_id")?,
        started_at: r.ts("started_at")?,
        finished_at: r.ts("finished_at")?,
        outcome,
        model: r.text("model")?,
        input_tokens: r.opt_big("input_tokens")?,
        output_tokens: r.opt_big("output_tokens")?,
        cost_usd: r.opt_dec("cost_usd")?,
    })
}

pub(crate) fn fact_from_row<R: RowExt>(r: &R) -> Result<UserFact, DbError> {
    Ok(UserFact {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        skill_id: r.opt_uuid("skill_id")?,
        fact: r.text("fact")?,
        source: enum_col(r, "source", FactSource::parse)?,
        confidence: enum_col(r, "confidence", FactConfidence::parse)?,
        topic: r.opt_text("topic")?,
        last_referenced_at: r.opt_ts("last_referenced_at")?,
        created_at: r.ts("created_at")?,
        archived_at: r.opt_ts("archived_at")?,
        archived_reason: opt_enum_col(r, "archived_reason", ArchiveReason::parse)?,
    })
}

pub(crate) fn fact_change_from_row<R: RowExt>(r: &R) -> Result<FactChange, DbError> {
    Ok(FactChange {
        id: r.big("id")?,
        fact_id: r.uuid("fact_id")?,
        user_id: r.uuid("user_id")?,
        op: enum_col(r, "op", FactChangeOp::parse)?,
        actor: r.opt_text("actor")?,
        db_role: r.text("db_role")?,
        jwt_sub: r.opt_uuid("jwt_sub")?,
        changed_at: r.ts("changed_at")?,
        old_fact: r.opt_text("old_fact")?,
        new_fact: r.opt_text("new_fact")?,
        reason: r.opt_text("reason")?,
    })
}

pub(crate) fn event_from_row<R: RowExt>(r: &R) -> Result<MarketEvent, DbError> {
    Ok(MarketEvent {
        id: r.uuid("id")?,
        kind: enum_col(r, "kind", EventKind::parse)?,
        title: r.text("title")?,
        symbols: r.symbols("symbols")?,
        scheduled_at: r.ts("scheduled_at")?,
        importance: r.dec("importance")?,
        source: r.text("source")?,
    })
}

pub(crate) fn news_from_row<R: RowExt>(r: &R) -> Result<crate::model::NewsRecord, DbError> {
    Ok(crate::model::NewsRecord {
        id: r.uuid("id")?,
        feed: r.text("feed")?,
        source: r.text("source")?,
        guid: r.text("guid")?,
        title: r.text("title")?,
        link: r.opt_text("link")?,
        summary: r.opt_text("summary")?,
        published_at: r.ts("published_at")?,
        fetched_at: r.ts("fetched_at")?,
        symbols: r.symbols("symbols")?,
        sentiment: r.dec("sentiment")?,
        sentiment_source: enum_col(r, "sentiment_source", crate::model::SentimentSource::parse)?,
        importance: r.dec("importance")?,
    })
}

// ---- outcome memory (seed 003) ---------------------------------------------------------------

pub(crate) fn outcome_from_row<R: RowExt>(r: &R) -> Result<outcomes::TradeOutcome, DbError> {
    let confidence = r
        .opt_int("confidence")?
        .map(|c| u8::try_from(c).map_err(|e| decode_err("confidence", e)))
        .transpose()?;
    Ok(outcomes::TradeOutcome {
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        decision_snapshot_id: r.uuid("decision_snapshot_id")?,
        snapshot_id: r.uuid("snapshot_id")?,
        tick_at: r.ts("tick_at")?,
        symbol: r.text("symbol")?,
        direction: enum_col(r, "direction", parse_side)?,
        confidence,
        entry_price: r.dec("entry_price")?,
        predicted_stop: r.opt_dec("predicted_stop")?,
        predicted_target: r.opt_dec("predicted_target")?,
        verdict: enum_col(r, "verdict", outcomes::OutcomeVerdict::parse)?,
        reason: r.opt_text("reason")?,
        market_condition: enum_col(r, "market_condition", types::RegimeTag::parse)?,
        score: outcomes::OutcomeScore {
            price_1h: r.opt_dec("price_1h")?,
            price_4h: r.opt_dec("price_4h")?,
            price_24h: r.opt_dec("price_24h")?,
            pnl_percent_1h: r.opt_dec("pnl_percent_1h")?,
            pnl_percent_4h: r.opt_dec("pnl_percent_4h")?,
            pnl_percent_24h: r.opt_dec("pnl_percent_24h")?,
            hit_target: r.opt_flag("hit_target")?,
            hit_stop: r.opt_flag("hit_stop")?,
            first_hit: opt_enum_col(r, "first_hit", outcomes::FirstHit::parse)?,
            max_favorable: r.opt_dec("max_favorable")?,
            max_adverse: r.opt_dec("max_adverse")?,
            outcome_grade: opt_enum_col(r, "outcome_grade", outcomes::Grade::parse)?,
            scored_at: r.opt_ts("scored_at")?,
            narrative: r.opt_text("narrative")?,
        },
    })
}

/// An outcome with its market snapshot's indicators: a `trade_outcomes` row joined with the
/// snapshot's indicator columns (the snapshot's regime as `snapshot_market_condition`).
pub(crate) fn recalled_from_row<R: RowExt>(r: &R) -> Result<outcomes::RecalledOutcome, DbError> {
    Ok(outcomes::RecalledOutcome {
        outcome: outcome_from_row(r)?,
        indicators: indicators_from_row(r, "snapshot_market_condition")?,
    })
}

/// The indicator columns of a `market_snapshots` row, its regime read from `condition`.
fn indicators_from_row<R: RowExt>(r: &R, condition: &str) -> Result<outcomes::Indicators, DbError> {
    Ok(outcomes::Indicators {
        rsi_15m: r.opt_f64("rsi_15m")?,
        rsi_1h: r.opt_f64("rsi_1h")?,
        rsi_4h: r.opt_f64("rsi_4h")?,
        macd_signal: opt_enum_col(r, "macd_signal", outcomes::MacdState::parse)?,
        volatility_percentile: r.opt_f64("volatility_percentile")?,
        volume_ratio: r.opt_f64("volume_ratio")?,
        trend_strength: r.opt_f64("trend_strength")?,
        btc_correlation: r.opt_f64("btc_correlation")?,
        market_condition: enum_col(r, condition, types::RegimeTag::parse)?,
    })
}

/// A search hit: columns `kind` (`outcome` / `annotation`), `id`, `deployment_id`,
/// `outcome_id`, `trade_id`, `symbol`, `at`, `body`, `tags` (annotations; NULL for outcomes)
/// and `score` (higher is better).
pub(crate) fn hit_from_row<R: RowExt>(r: &R) -> Result<outcomes::MemoryHit, DbError> {
    let kind = match r.text("kind")?.as_str() {
        "outcome" => outcomes::HitKind::Outcome,
        "annotation" => outcomes::HitKind::Annotation,
        other => return Err(decode_err("kind", format!("unknown value {other:?}"))),
    };
    let mut text = r.opt_text("body")?.unwrap_or_default();
    if kind == outcomes::HitKind::Annotation {
        let tags = r.symbols("tags")?;
        if !tags.is_empty() {
            text.push_str("\nTags: ");
            text.push_str(&tags.join(", "));
        }
    }
    Ok(outcomes::MemoryHit {
        kind,
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        outcome_id: r.opt_uuid("outcome_id")?,
        trade_id: r.opt_uuid("trade_id")?,
        symbol: r.opt_text("symbol")?,
        at: r.ts("at")?,
        text,
        // Ranked in Rust (`outcomes::search::rank`), never by the backend.
        rank: 0.0,
    })
}

pub(crate) fn market_snapshot_from_row<R: RowExt>(
    r: &R,
) -> Result<outcomes::MarketSnapshot, DbError> {
    Ok(outcomes::MarketSnapshot {
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        decision_snapshot_id: r.uuid("decision_snapshot_id")?,
        tick_at: r.ts("tick_at")?,
        symbol: r.text("symbol")?,
        reference_symbol: r.text("reference_symbol")?,
        indicators: indicators_from_row(r, "market_condition")?,
    })
}

pub(crate) fn annotation_from_row<R: RowExt>(r: &R) -> Result<Annotation, DbError> {
    let target = match (r.opt_uuid("outcome_id")?, r.opt_uuid("trade_id")?) {
        (Some(id), None) => AnnotationTarget::Outcome(id),
        (None, Some(id)) => AnnotationTarget::Trade(id),
        _ => {
            return Err(decode_err(
                "outcome_id",
                "not exactly one of outcome_id, trade_id",
            ));
        }
    };
    Ok(Annotation {
        id: r.uuid("id")?,
        deployment_id: r.uuid("deployment_id")?,
        target,
        annotation: r.text("annotation")?,
        tags: r.symbols("tags")?,
        created_at: r.ts("created_at")?,
    })
}

// ---- bounds ----------------------------------------------------------------------------------

/// Checks a text's length in characters (what `char_length` / SQLite `length` count).
pub(crate) fn check_len(
    field: &'static str,
    s: &str,
    min: usize,
    max: usize,
) -> Result<(), DbError> {
    let actual = s.chars().count();
    if actual < min || actual > max {
        return Err(DbError::Bound {
            field,
            actual,
            min,
            max,
        });
    }
    Ok(())
}

/// Caps a list limit at `max`.
pub(crate) fn check_limit(what: &'static str, limit: u32, max: u32) -> Result<i64, DbError> {
    if limit > max {
        return Err(DbError::Invalid {
            what,
            detail: format!("{limit} exceeds the cap of {max}"),
        });
    }
    Ok(i64::from(limit))
}

/// The first `max` characters of `s` ([`types::cut_chars`]).
pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    types::cut_chars(s, max).0.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn time_text_has_fixed_width_and_sorts_like_time() {
        let a = Utc.with_ymd_and_hms(2026, 6, 4, 10, 0, 0).unwrap();
        let b = a + chrono::Duration::microseconds(1);
        let c = a + chrono::Duration::hours(1);
        assert_eq!(time_text(a), "2026-06-04T10:00:00.000000Z");
        assert_eq!(time_text(b), "2026-06-04T10:00:00.000001Z");
        assert!(time_text(a) < time_text(b) && time_text(b) < time_text(c));
    }

    proptest::proptest! {
        /// SQLite stores times as text: text order must be time order, and parsing gives the
        /// time back (at microsecond precision, which PostgreSQL keeps too).
        #[test]
        fn time_text_orders_and_round_trips(a in 0i64..4_102_444_800_000_000, b in 0i64..4_102_444_800_000_000) {
            let ta = DateTime::<Utc>::from_timestamp_micros(a).unwrap();
            let tb = DateTime::<Utc>::from_timestamp_micros(b).unwrap();
            proptest::prop_assert_eq!(ta.cmp(&tb), time_text(ta).cmp(&time_text(tb)));
            let back = DateTime::parse_from_rfc3339(&time_text(ta)).unwrap().with_timezone(&Utc);
            proptest::prop_assert_eq!(back, ta);
        }

        /// SQLite stores decimals as text: the text gives back the same value and scale.
        #[test]
        fn decimal_text_round_trips_exactly(m in proptest::num::i64::ANY, scale in 0u32..=28) {
            let d = Decimal::new(m, scale);
            let back = Decimal::from_str(&<Sqlite as crate::imp::Dialect>::dec(d)).unwrap();
            proptest::prop_assert_eq!(back, d);
            proptest::prop_assert_eq!(back.scale(), d.scale());
        }
    }

    #[test]
    fn length_bounds_count_characters_not_bytes() {
        // "é" is 2 bytes, 1 character: 500 of them are 1000 bytes but within the 500 cap.
        assert!(check_len("fact", &"é".repeat(500), 4, 500).is_ok());
        let err = check_len("fact", &"é".repeat(501), 4, 500).unwrap_err();
        assert!(matches!(err, DbError::Bound { actual: 501, .. }));
        assert!(check_len("fact", "abc", 4, 500).is_err());
    }
}
