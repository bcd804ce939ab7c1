//! Backtests as jobs over HTTP: `POST /api/backtests` queues a backtest as the caller (the skill
//! file's text, each symbol's bars — the file's text, or the hash of bars they sent before —
//! the model and the run's options), `GET /api/backtests` lists the caller's jobs and
//! `GET /api/backtests/{id}` shows one: its status, progress (ticks done / total), cost so far
//! and, once done, its result. Workers (`sim-worker work`) run the jobs; a job's report is
//! served at `/backtests/{id}/report` ([`super::pages`]).
//!
//! Everything runs as the caller under row-level security ([`AppState::store_for`]): the job
//! and its bar files are theirs, and so are the deployment, ticks and ledger its run records.
//! A submit past the server's per-user limits ([`AppState::backtest_limits`]: jobs queued or
//! running, and their cost limits' sum) is a 429 naming the limit. The bars are parsed and the
//! skill validated before anything is stored: a bad file is a 422 naming the field.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use db::{BarsFormat, BarsRef, Job, JobFilter, JobSpec, JobStatus, JobStore, NewBars, NewJob};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use skill_schema::{Format, LoadError};
use utoipa::ToSchema;
use uuid::Uuid;
use validator::Validate;

use super::error::{ApiError, ApiJson, ApiPath};
use super::openapi;
use super::wire::ErrorBody;
use super::{AppState, Caller};

/// Most jobs `GET /api/backtests` (and the page) returns, newest first.
pub const BACKTESTS_SHOWN: u32 = 100;

/// The bars of one symbol: the file's text (`data`, in `format`), or the SHA-256 of a file the
/// caller sent before (`sha256`).
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BarsBody {
    /// `csv` (the backtesting.py layout: `,Open,High,Low,Close,Volume`) or `json` (Hyperliquid
    /// candles); with `data`.
    #[serde(default)]
    pub format: Option<String>,
    /// The file's text.
    #[serde(default)]
    pub data: Option<String>,
    /// Instead of `data`: the SHA-256 (64 lower-case hex digits) of bars sent before.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// `POST /api/backtests`: one backtest run.
#[derive(Debug, Clone, Deserialize, Validate, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BacktestBody {
    /// The skill file's text.
    #[validate(length(min = 1, message = "must not be empty"))]
    pub skill: String,
    /// Its format: `json`, `yaml` or `toml` (default: `json` when it starts with `{`, else
    /// `yaml`).
    #[serde(default)]
    pub skill_format: Option<String>,
    /// Each of the skill's symbols' bars at its interval.
    #[validate(nested)]
    #[schema(value_type = BTreeMap<String, BarsBody>)]
    pub bars: BTreeMap<String, BarsBody>,
    /// The model, overriding the skill's.
    #[serde(default)]
    #[validate(
        length(min = 1, max = 200, message = "must be 1..=200 characters"),
        custom(function = "super::input::one_line")
    )]
    pub model: Option<String>,
    /// First tick time (UTC).
    #[serde(default)]
    pub from: Option<DateTime<Utc>>,
    /// Last tick time (UTC).
    #[serde(default)]
    pub to: Option<DateTime<Utc>>,
    /// Starting equity in USD (default 10000).
    #[serde(default)]
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub equity_usd: Option<Decimal>,
    /// Taker fee in basis points (default 4.5).
    #[serde(default)]
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub fee_bps: Option<Decimal>,
    /// Slippage in basis points against the taker (default 1).
    #[serde(default)]
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub slippage_bps: Option<Decimal>,
    /// A blind run: the model reads neutral names, relative days and rescaled prices.
    #[serde(default)]
    pub blind: bool,
    /// The most the run may spend at the model's provider, in USD: required for a model that
    /// calls one (the per-user cost cap counts it).
    #[serde(default)]
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub max_cost_usd: Option<Decimal>,
    /// A batch of the caller's this job belongs to.
    #[serde(default)]
    pub batch_id: Option<Uuid>,
    /// A name for the job.
    #[serde(default)]
    #[validate(
        length(min = 1, max = 200, message = "must be 1..=200 characters"),
        custom(function = "super::input::one_line")
    )]
    pub label: Option<String>,
}

/// A job's progress.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireProgress {
    /// Ticks run.
    pub ticks_done: u32,
    /// Ticks in all, once a worker prepared the run.
    pub ticks_total: Option<u32>,
    /// Spent at the model's provider so far, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub cost_usd: Decimal,
}

/// A finished run's figures (its summary's).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireBacktestResult {
    /// Ticks run.
    pub ticks: u64,
    /// Round trips (closed or open at the end).
    pub trades: u64,
    /// Net PnL (realized, less fees), USD.
    #[schema(value_type = openapi::DecimalString)]
    pub net_pnl_usd: Decimal,
    /// Fees paid, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub fees_usd: Decimal,
    /// Equity at the end less equity at the start, as a percentage of the start (unrealized
    /// PnL included).
    #[schema(value_type = openapi::DecimalString)]
    pub total_return_pct: Decimal,
    /// The largest fall from a peak of equity, %.
    #[schema(value_type = openapi::DecimalString)]
    pub max_drawdown_pct: Decimal,
    /// Share of closed round trips that won, %; none without one.
    #[schema(value_type = Option<openapi::DecimalString>)]
    pub win_rate_pct: Option<Decimal>,
    /// What the model calls cost, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub cost_usd: Decimal,
}

impl WireBacktestResult {
    /// The figures of a summary (`summary.json`'s object); `None` for one without them.
    fn of(summary: &serde_json::Value) -> Option<Self> {
        let dec = |v: &serde_json::Value| v.as_str().and_then(|s| s.parse::<Decimal>().ok());
        Some(Self {
            ticks: summary["ticks"].as_u64()?,
            trades: summary["trades"].as_u64()?,
            net_pnl_usd: dec(&summary["pnl"]["net_usd"])?,
            fees_usd: dec(&summary["pnl"]["fees_usd"])?,
            total_return_pct: dec(&summary["total_return_pct"])?,
            max_drawdown_pct: dec(&summary["max_drawdown_pct"])?,
            win_rate_pct: dec(&summary["win_rate_pct"]),
            cost_usd: dec(&summary["cost_usd"]).unwrap_or_default(),
        })
    }
}

/// A backtest job as its owner sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WireBacktest {
    /// Its id.
    pub id: Uuid,
    /// Its batch.
    pub batch_id: Option<Uuid>,
    /// Its label.
    pub label: Option<String>,
    /// `queued`, `running`, `done`, `failed` or `cancelled`.
    #[schema(value_type = openapi::JobStatus)]
    pub status: JobStatus,
    /// The skill's name.
    pub skill: String,
    /// The model the run calls.
    pub model: String,
    /// The symbols it trades.
    pub symbols: Vec<String>,
    /// First tick time asked for.
    pub from: Option<DateTime<Utc>>,
    /// Last tick time asked for.
    pub to: Option<DateTime<Utc>>,
    /// How far it is.
    pub progress: WireProgress,
    /// The most the run may spend, USD.
    #[schema(value_type = openapi::DecimalString)]
    pub cost_limit_usd: Decimal,
    /// How many times a worker took it (more than 1: a worker died running it).
    pub attempts: u32,
    /// The deployment its run records into (its ticks and ledger: `/deployments/{id}`).
    pub deployment_id: Option<Uuid>,
    /// The run's figures, once done.
    pub result: Option<WireBacktestResult>,
    /// Why it failed.
    pub error: Option<String>,
    /// Where its report is, once done.
    pub report_url: Option<String>,
    /// When it was submitted.
    pub created_at: DateTime<Utc>,
    /// When a worker first took it.
    pub started_at: Option<DateTime<Utc>>,
    /// The worker's last heartbeat.
    pub heartbeat_at: Option<DateTime<Utc>>,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
}

impl From<Job> for WireBacktest {
    fn from(j: Job) -> Self {
        let skill = &j.spec.skill;
        let model = j
            .spec
            .model
            .clone()
            .or_else(|| skill["model"].as_str().map(str::to_owned))
            .unwrap_or_default();
        Self {
            id: j.id,
            batch_id: j.batch_id,
            label: j.label,
            status: j.status,
            skill: skill["name"].as_str().unwrap_or_default().to_owned(),
            model,
            symbols: j.spec.bars.keys().cloned().collect(),
            from: j.spec.from,
            to: j.spec.to,
            progress: WireProgress {
                ticks_done: j.progress.ticks_done,
                ticks_total: j.progress.ticks_total,
                cost_usd: j.progress.cost_usd,
            },
            cost_limit_usd: j.cost_limit_usd,
            attempts: j.attempts,
            deployment_id: j.deployment_id,
            result: j.result.as_ref().and_then(WireBacktestResult::of),
            error: j.error,
            report_url: j.has_report.then(|| format!("/backtests/{}/report", j.id)),
            created_at: j.created_at,
            started_at: j.started_at,
            heartbeat_at: j.heartbeat_at,
            finished_at: j.finished_at,
        }
    }
}

fn skill_format(body: &BacktestBody) -> Result<Format, ApiError> {
    match body.skill_format.as_deref().map(str::trim) {
        None if body.skill.trim_start().starts_with('{') => Ok(Format::Json),
        None | Some("yaml" | "yml") => Ok(Format::Yaml),
        Some("json") => Ok(Format::Json),
        Some("toml") => Ok(Format::Toml),
        Some(other) => Err(ApiError::invalid(
            "skillFormat",
            format!("skillFormat: {other:?} is not one of json, yaml, toml"),
        )),
    }
}

/// A decimal option within `min..=max`.
fn bounded(
    field: &str,
    v: Option<Decimal>,
    min: Decimal,
    max: Option<Decimal>,
) -> Result<Option<Decimal>, ApiError> {
    match v {
        Some(d) if d < min || max.is_some_and(|m| d > m) => Err(ApiError::invalid(
            field,
            format!(
                "{field}: {d} is outside {min}..={}",
                max.map_or_else(|| "∞".to_owned(), |m| m.to_string())
            ),
        )),
        other => Ok(other.map(|d| d.normalize())),
    }
}

/// The job `body` describes for `caller`, with the bar files it sends, checked: the skill
/// valid, every symbol's bars given (parsed, at the skill's interval), the options in range, a
/// provider's model with its `maxCostUsd`.
///
/// # Errors
/// 422 naming the field.
pub fn checked(
    body: &BacktestBody,
    caller: &Caller,
    now: DateTime<Utc>,
) -> Result<(NewJob, Vec<NewBars>), ApiError> {
    let skill = skill_schema::parse_skill(&body.skill, skill_format(body)?)
        .map_err(|e| match e {
            LoadError::Invalid { report } => {
                ApiError::invalid("skill", format!("skill: {}", report.to_string().trim()))
            }
            other => ApiError::invalid("skill", format!("skill: {other}")),
        })?
        .skill;
    let interval = skill.context.bars_interval;
    let mut refs = BTreeMap::new();
    let mut files = Vec::new();
    for (symbol, b) in &body.bars {
        let field = format!("bars.{symbol}");
        if !skill.context.symbols.contains(symbol) {
            return Err(ApiError::invalid(
                &field,
                format!(
                    "{field}: {symbol} is not one of the skill's symbols ({})",
                    skill.context.symbols.join(", ")
                ),
            ));
        }
        let format = || {
            b.format
                .as_deref()
                .and_then(BarsFormat::parse)
                .ok_or_else(|| {
                    ApiError::invalid(
                        format!("{field}.format"),
                        format!("{field}.format: csv or json"),
                    )
                })
        };
        let reference = match (&b.data, &b.sha256) {
            (Some(data), None) => {
                let format = format()?;
                let name = format!("{symbol}.{}", format.as_str());
                let bars = market_data::parse_bars(&name, data.as_bytes())
                    .map_err(|e| ApiError::invalid(&field, format!("{field}: {e}")))?;
                match market_data::detect_interval(&bars) {
                    Some(i) if i == interval => {}
                    found => {
                        return Err(ApiError::invalid(
                            &field,
                            format!(
                                "{field}: the skill trades {interval} bars; these are {}",
                                found
                                    .map_or_else(|| "of no interval".to_owned(), |i| i.to_string())
                            ),
                        ));
                    }
                }
                let file = NewBars::of(format, data.clone().into_bytes());
                let reference = file.reference();
                files.push(file);
                reference
            }
            (None, Some(hash)) if db::jobs::is_sha256_hex(hash) => BarsRef {
                sha256: hash.clone(),
                format: format()?,
            },
            _ => {
                return Err(ApiError::invalid(
                    &field,
                    format!(
                        "{field}: give `format` with either `data` (the file's text) or \
                         `sha256` (64 lower-case hex digits of bars sent before)"
                    ),
                ));
            }
        };
        refs.insert(symbol.clone(), reference);
    }
    if let Some(missing) = skill
        .context
        .symbols
        .iter()
        .find(|s| !refs.contains_key(*s))
    {
        return Err(ApiError::invalid(
            "bars",
            format!(
                "bars: no bars for {missing} (the skill trades {})",
                skill.context.symbols.join(", ")
            ),
        ));
    }
    let model = body.model.clone().unwrap_or_else(|| skill.model.clone());
    if let Some(cap) = body.max_cost_usd {
        if cap <= Decimal::ZERO {
            return Err(ApiError::invalid(
                "maxCostUsd",
                "maxCostUsd: must be above 0",
            ));
        }
        if agent_runtime::rates_for(&model).is_none() {
            return Err(ApiError::invalid(
                "maxCostUsd",
                format!(
                    "maxCostUsd: {model} is not in the rate table, so what it spends cannot be \
                     measured"
                ),
            ));
        }
    }
    let bps_max = Some(Decimal::from(1000));
    let spec = JobSpec {
        skill: serde_json::to_value(&skill)
            .map_err(|e| ApiError::internal("serializing the skill", &e))?,
        bars: refs,
        model: body.model.clone(),
        from: body.from,
        to: body.to,
        equity_usd: bounded("equityUsd", body.equity_usd, Decimal::ONE, None)?,
        fee_bps: bounded("feeBps", body.fee_bps, Decimal::ZERO, bps_max)?,
        slippage_bps: bounded("slippageBps", body.slippage_bps, Decimal::ZERO, bps_max)?,
        blind: body.blind,
        max_cost_usd: body.max_cost_usd.map(|d| d.normalize()),
        cassette: None,
    };
    let cost_limit_usd = spec.cost_budget(&skill.model).map_err(|e| {
        ApiError::invalid("maxCostUsd", e.replace("max_cost_usd: ", "maxCostUsd: "))
    })?;
    let job = NewJob {
        id: Uuid::new_v4(),
        user_id: caller.user_id,
        batch_id: body.batch_id,
        label: body.label.as_deref().map(str::trim).map(str::to_owned),
        spec,
        cost_limit_usd,
        created_at: now,
    };
    Ok((job, files))
}

/// `POST /api/backtests`: 201 with the job queued.
#[utoipa::path(
    post,
    path = "/api/backtests",
    operation_id = "submitBacktest",
    tag = "backtests",
    request_body = BacktestBody,
    responses(
        (status = 201, description = "Queued; a worker runs it.", body = WireBacktest),
        (status = 429, description = "Past the caller's limits: jobs queued or running, or \
                                      their cost limits' sum.", body = ErrorBody),
    )
)]
pub(super) async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<BacktestBody>,
) -> Result<(StatusCode, axum::Json<WireBacktest>), ApiError> {
    let (job, bars) = checked(&body, &caller, state.clock.now())?;
    let store = state.store_for(&caller);
    store
        .submit_jobs(std::slice::from_ref(&job), &bars, state.backtest_limits)
        .await?;
    let stored = store.job(job.id).await?;
    tracing::info!(user = %caller.user_id, job = %job.id, "backtest queued");
    Ok((StatusCode::CREATED, axum::Json(stored.into())))
}

/// The caller's jobs, newest first (at most [`BACKTESTS_SHOWN`]).
///
/// # Errors
/// A store failure.
pub async fn list_of(state: &AppState, caller: &Caller) -> Result<Vec<WireBacktest>, ApiError> {
    let jobs = state
        .store_for(caller)
        .jobs(&JobFilter {
            user_id: Some(caller.user_id),
            batch_id: None,
            limit: BACKTESTS_SHOWN,
        })
        .await?;
    Ok(jobs.into_iter().map(Into::into).collect())
}

/// `GET /api/backtests`.
#[utoipa::path(
    get,
    path = "/api/backtests",
    operation_id = "listBacktests",
    tag = "backtests",
    responses((status = 200, description = "The caller's backtest jobs, newest first (at most 100).", body = [WireBacktest]))
)]
pub(super) async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<axum::Json<Vec<WireBacktest>>, ApiError> {
    Ok(axum::Json(list_of(&state, &caller).await?))
}

/// `GET /api/backtests/{id}`.
#[utoipa::path(
    get,
    path = "/api/backtests/{id}",
    operation_id = "getBacktest",
    tag = "backtests",
    params(("id" = Uuid, Path, description = "The job.")),
    responses(
        (status = 200, description = "The job: status, progress, cost so far, result.", body = WireBacktest),
        (status = 404, description = "The caller has no job with this id.", body = ErrorBody),
    )
)]
pub(super) async fn read(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<Uuid>,
) -> Result<axum::Json<WireBacktest>, ApiError> {
    let job = state.store_for(&caller).job(id).await?;
    Ok(axum::Json(job.into()))
}

/// The report of the caller's job `id` split for the pages' Content-Security-Policy (no inline
/// style): the page with its `<style>` element replaced by a link to `css_href`, and the style
/// sheet. `None` when the job has no report.
///
/// # Errors
/// 404 for a job the caller does not have.
pub async fn report(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    css_href: &str,
) -> Result<Option<(String, String)>, ApiError> {
    let Some(html) = state.store_for(caller).job_report(id).await? else {
        return Ok(None);
    };
    Ok(Some(split_style(&html, css_href)))
}

/// `html` with its `<style>…</style>` elements removed and a link to `css_href` in their place,
/// and their text joined.
fn split_style(html: &str, css_href: &str) -> (String, String) {
    let mut page = String::with_capacity(html.len());
    let mut css = String::new();
    let mut rest = html;
    let mut linked = false;
    while let Some(start) = rest.find("<style>") {
        let Some(len) = rest[start..].find("</style>") else {
            break;
        };
        page.push_str(&rest[..start]);
        if !linked {
            page.push_str(&format!("<link rel=\"stylesheet\" href=\"{css_href}\">"));
            linked = true;
        }
        css.push_str(&rest[start + "<style>".len()..start + len]);
        rest = &rest[start + len + "</style>".len()..];
    }
    page.push_str(rest);
    (page, css)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reports_style_moves_to_a_linked_sheet() {
        let (page, css) = split_style(
            "<html><head><title>x</title><style>body{color:red}</style></head><body>b</body></html>",
            "/backtests/1/report.css",
        );
        assert_eq!(
            page,
            "<html><head><title>x</title><link rel=\"stylesheet\" \
             href=\"/backtests/1/report.css\"></head><body>b</body></html>"
        );
        assert_eq!(css, "body{color:red}");
        assert_eq!(split_style("<p>no style</p>", "x").0, "<p>no style</p>");
    }
}
