//! The backtests page: `GET /backtests` lists the caller's backtest jobs, newest first, with
//! where each stands — queued, running (ticks done of the total, as a progress bar, and the
//! cost so far), done (net PnL, return, drawdown, a link to the report and to the run's
//! deployment pages), failed (why) — and reloads itself every few seconds while one is queued
//! or running (a `<meta>` refresh: no script). `GET /backtests/{id}/report` serves a job's
//! report, its style sheet linked (`…/report.css`) rather than inline, as the pages'
//! Content-Security-Policy wants.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use db::JobStatus;
use minijinja::context;
use rust_decimal::Decimal;
use serde::Serialize;
use types::{Uuid, text};

use super::render::render;
use super::{Page, Viewer, html, not_found_page, server_error, view};
use crate::serve::backtests::{WireBacktest, list_of, report};
use crate::serve::{AppState, Caller};

/// Seconds between the page's reloads while a job is queued or running.
const REFRESH_SECONDS: u32 = 5;

/// The page's routes, merged into the pages' router.
pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/backtests", get(backtests_page))
        .route("/backtests/{id}/report", get(report_page))
        .route("/backtests/{id}/report.css", get(report_css))
}

/// A signed amount with its colour class.
#[derive(Debug, Clone, Serialize)]
struct Signed {
    text: String,
    class: &'static str,
}

fn signed(d: Decimal, text: String) -> Signed {
    Signed {
        text,
        class: if d > Decimal::ZERO {
            "pos"
        } else if d < Decimal::ZERO {
            "neg"
        } else {
            ""
        },
    }
}

/// One job, as text.
#[derive(Debug, Clone, Serialize)]
struct JobView {
    id: String,
    label: String,
    skill: String,
    model: String,
    symbols: String,
    status: &'static str,
    /// `40 of 120 ticks`, or an em dash before a worker took it.
    progress: String,
    ticks_done: u32,
    /// 0 when unknown (the bar is left out).
    ticks_total: u32,
    percent: String,
    cost: String,
    attempts: u32,
    net_pnl: Option<Signed>,
    total_return: Option<Signed>,
    max_drawdown: String,
    trades: String,
    error: String,
    has_report: bool,
    deployment_id: String,
    created: String,
    finished: String,
}

impl From<WireBacktest> for JobView {
    fn from(j: WireBacktest) -> Self {
        let p = &j.progress;
        let (progress, percent) = match p.ticks_total {
            Some(total) => (
                format!("{} of {total} ticks", p.ticks_done),
                if total == 0 {
                    String::new()
                } else {
                    text::pct(
                        Decimal::from(p.ticks_done) * Decimal::ONE_HUNDRED / Decimal::from(total),
                    )
                },
            ),
            None => ("—".to_owned(), String::new()),
        };
        let r = j.result.as_ref();
        Self {
            id: j.id.to_string(),
            label: j.label.clone().unwrap_or_default(),
            skill: j.skill.clone(),
            model: j.model.clone(),
            symbols: j.symbols.join(", "),
            status: j.status.as_str(),
            progress,
            ticks_done: p.ticks_done,
            ticks_total: p.ticks_total.unwrap_or(0),
            percent,
            cost: text::cost(p.cost_usd),
            attempts: j.attempts,
            net_pnl: r.map(|r| signed(r.net_pnl_usd, text::signed_money(r.net_pnl_usd))),
            total_return: r.map(|r| signed(r.total_return_pct, text::pct(r.total_return_pct))),
            max_drawdown: r.map(|r| text::pct(r.max_drawdown_pct)).unwrap_or_default(),
            trades: r.map(|r| r.trades.to_string()).unwrap_or_default(),
            error: j.error.clone().unwrap_or_default(),
            has_report: j.report_url.is_some(),
            deployment_id: match j.status {
                JobStatus::Done => j.deployment_id.map(|d| d.to_string()).unwrap_or_default(),
                _ => String::new(),
            },
            created: view::when(Some(j.created_at)),
            finished: view::when(j.finished_at),
        }
    }
}

async fn backtests_page(State(state): State<AppState>, Viewer(caller): Viewer) -> Page {
    let jobs = match list_of(&state, &caller).await {
        Ok(j) => j,
        Err(e) => return server_error("reading your backtests", &e),
    };
    let open = jobs.iter().any(|j| !j.status.is_finished());
    let jobs: Vec<JobView> = jobs.into_iter().map(JobView::from).collect();
    match render(
        "backtests.html",
        context! {
            title => "Backtests",
            user => caller.user_id.to_string(),
            jobs,
            refresh => open.then_some(REFRESH_SECONDS),
        },
    ) {
        Ok(body) => html(StatusCode::OK, body),
        Err(e) => server_error("rendering your backtests", &e),
    }
}

const NO_REPORT: &str = "You have no backtest with this id, or it has no report yet.";

/// The caller's report of job `raw_id`, split for the pages' policy: the page and its style
/// sheet; a 404 page for no such job or no report, a 500 page for a store failure.
async fn report_parts(
    state: &AppState,
    caller: Caller,
    raw_id: &str,
) -> Result<(String, String), Page> {
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return Err(not_found_page(caller.user_id, NO_REPORT));
    };
    match report(state, &caller, id, &format!("/backtests/{id}/report.css")).await {
        Ok(Some(parts)) => Ok(parts),
        Ok(None) => Err(not_found_page(caller.user_id, NO_REPORT)),
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            Err(not_found_page(caller.user_id, NO_REPORT))
        }
        Err(e) => Err(server_error("reading the report", &e)),
    }
}

async fn report_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    match report_parts(&state, caller, &id).await {
        Ok((page, _)) => html(StatusCode::OK, page),
        Err(page) => page,
    }
}

async fn report_css(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    match report_parts(&state, caller, &id).await {
        Ok((_, css)) => ([(CONTENT_TYPE, "text/css; charset=utf-8")], css).into_response(),
        Err(page) => page,
    }
}
