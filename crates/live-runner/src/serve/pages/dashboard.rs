//! The dashboard pages (issue #45 item 1), read as the caller under row-level security like the
//! memory page (another user's deployment is a 404 page):
//!
//! - `GET /deployments` — each of the caller's deployments: skill name and version, broker,
//!   status, equity and its change, realized / unrealized PnL, open positions, the last tick
//!   and its verdict, ticks / rejections / model errors and cost of the current UTC day, and
//!   the lessons held for review.
//! - `GET /deployments/{id}` — the summary (net PnL, win rate, fees, max drawdown), the equity
//!   and drawdown curves (inline SVG), open positions, cost and tokens per day, the active
//!   lesson note and the outcome grades; the controls stay on `/deployments/{id}/memory`.
//! - `GET /deployments/{id}/ticks[?outcome=&rule=&before=]` — the decision timeline, newest
//!   first, filtered by outcome (`executed`, `rejected`, `no_op`, `model_error`) and rule code,
//!   [`TICKS_PER_PAGE`] at a time (`before` is the cursor: the last tick time shown).
//! - `GET /deployments/{id}/ticks/{tick}` — what the model of one tick saw and did: system
//!   prompt and user message with their o200k token counts, every step with its tool calls,
//!   the proposal, the verdict, usage and cost.
//!
//! The equity curve is the ledger's: the deployment's starting equity, then after each closed
//! round trip its net PnL added, then the equity the runner recorded last (which holds the open
//! positions at their mark). Per-tick equity is not stored; the runner state (the paper
//! broker's marks) is not readable under the caller's row-level security, so a position's mark
//! is not shown and unrealized PnL is the equity's change less the realized PnL.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use db::Deployment;
use db::{
    HeldStatus, LedgerStore, MAX_TICKS_READ, NoteScope, NoteStore, OutcomeStore, RegistryStore,
    TickQuery, TickStore, UserScoped,
};
use minijinja::{Value, context};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use tick::{OutcomeKind, TickEntry, read_ticks};
use types::{RuleCode, TradeRecord, TradeStatus, Uuid, Verdict, text};

use super::chart::{EquityPoint, equity_and_drawdown, max_drawdown_pct};
use super::view::when;
use super::{Page, Viewer, not_found_page, page, server_error};
use crate::serve::api::{TOKENIZER, count_tokens};
use crate::serve::{AppState, Caller};

/// Ticks per timeline page.
pub(super) const TICKS_PER_PAGE: usize = 50;
/// Most ticks a page reads back (`MAX_TICKS_READ` at a time): about 2.3 years of hourly ticks.
const MAX_TICK_PAGES: usize = 20;
/// Most outcomes counted for the grades.
const OUTCOMES_LIMIT: u32 = 1000;
/// Most held lessons counted as waiting.
const HELD_LIMIT: u32 = 500;

const NO_DEPLOYMENT: &str = "You have no deployment with this id.";

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/deployments", get(list_page))
        .route("/deployments/{id}", get(deployment_page))
        .route("/deployments/{id}/ticks", get(ticks_page))
        .route("/deployments/{id}/ticks/{tick}", get(tick_page))
}

// ---------------------------------------------------------------------------------------------
// reads

/// Every stored tick of `id`, oldest first, without texts (up to [`MAX_TICK_PAGES`] reads).
async fn all_ticks(
    store: &UserScoped,
    id: Uuid,
    from: Option<DateTime<Utc>>,
) -> Result<Vec<TickEntry>, tick::ReadTicksError> {
    let mut query = TickQuery {
        from,
        ..TickQuery::of(id)
    };
    let mut out = Vec::new();
    for _ in 0..MAX_TICK_PAGES {
        let page = read_ticks(store, &query).await?;
        let full = page.len() == MAX_TICKS_READ as usize;
        let Some(last) = page.last() else { break };
        query.after = Some(last.tick_at);
        out.extend(page);
        if !full {
            break;
        }
    }
    Ok(out)
}

/// A deployment's ledger, summed.
#[derive(Debug, Default)]
struct Ledger {
    /// Σ (gross realized − fees) over every round trip, open ones included.
    realized_net: Decimal,
    fees: Decimal,
    closed: Vec<TradeRecord>,
    open: Vec<TradeRecord>,
    wins: usize,
}

impl Ledger {
    fn of(trades: Vec<TradeRecord>) -> Self {
        let mut l = Ledger::default();
        for t in trades {
            l.realized_net += t.realized_pnl_usd - t.fees_usd;
            l.fees += t.fees_usd;
            if t.status == TradeStatus::Closed {
                if t.realized_pnl_usd - t.fees_usd > Decimal::ZERO {
                    l.wins += 1;
                }
                l.closed.push(t);
            } else {
                l.open.push(t);
            }
        }
        l.closed.sort_by_key(|t| (t.exit_tick_at, t.id));
        l
    }

    /// The equity change not realized: the open positions at the runner's last mark (and
    /// anything else the broker counted, e.g. funding).
    fn unrealized(&self, d: &Deployment) -> Decimal {
        d.equity_usd - d.initial_equity_usd - self.realized_net
    }
}

fn pnl_class(d: Decimal) -> &'static str {
    if d > Decimal::ZERO {
        "pos"
    } else if d < Decimal::ZERO {
        "neg"
    } else {
        ""
    }
}

/// Signed money with its CSS class.
#[derive(Debug, Clone, Serialize)]
struct Signed {
    text: String,
    class: &'static str,
}

fn signed(d: Decimal) -> Signed {
    Signed {
        text: text::signed_money(d),
        class: pnl_class(d),
    }
}

fn change_pct(d: &Deployment) -> String {
    if d.initial_equity_usd > Decimal::ZERO {
        let pct =
            (d.equity_usd - d.initial_equity_usd) * Decimal::ONE_HUNDRED / d.initial_equity_usd;
        let mut s = text::pct(pct.round_dp(2));
        if pct > Decimal::ZERO {
            s.insert(0, '+');
        }
        s
    } else {
        "—".to_owned()
    }
}

/// What a verdict reads as in one cell: `executed`, `rejected R5_LEVERAGE_CAP`, `no-op`,
/// `model error`.
fn outcome_label(t: &TickEntry) -> String {
    match (t.outcome, t.rule) {
        (OutcomeKind::Rejected, Some(rule)) => format!("rejected {}", rule.as_str()),
        (OutcomeKind::Executed, _) => "executed".to_owned(),
        (OutcomeKind::Rejected, None) => "rejected".to_owned(),
        (OutcomeKind::NoOp, _) => "no-op".to_owned(),
        (OutcomeKind::ModelError, _) => "model error".to_owned(),
    }
}

fn verdict_detail(v: &Verdict) -> &str {
    match v {
        Verdict::Executed { detail } | Verdict::NoOp { detail } => detail,
        Verdict::Rejected { detail, .. } => detail,
    }
}

fn proposal_text(p: Option<&types::ProposedAction>) -> String {
    let Some(p) = p else {
        return "nothing proposed".to_owned();
    };
    let mut s = format!("{} {}", p.action.as_str(), p.symbol);
    if let Some(size) = p.size_usd {
        s.push_str(" · ");
        s.push_str(&text::money(size));
    }
    if let Some(lev) = p.leverage {
        s.push_str(&format!(" · {}x", text::num(lev)));
    }
    if let Some(stop) = p.stop {
        s.push_str(" · stop ");
        s.push_str(&text::price(stop));
    }
    if let Some(target) = p.target {
        s.push_str(" · target ");
        s.push_str(&text::price(target));
    }
    if let Some(c) = p.confidence {
        s.push_str(&format!(" · confidence {c}"));
    }
    s
}

/// The deployment, its skill's name, or the page answering for it (404 when the caller cannot
/// see it).
async fn owned(
    state: &AppState,
    caller: Caller,
    raw_id: &str,
) -> Result<(UserScoped, Deployment, String), Page> {
    let Ok(id) = Uuid::parse_str(raw_id) else {
        return Err(not_found_page(caller.user_id, NO_DEPLOYMENT));
    };
    let store = state.store_for(&caller);
    let deployment = match store.get_deployment(id).await {
        Ok(d) => d,
        Err(e) => return Err(store_error(caller, "reading the deployment", e)),
    };
    let skill = match store.get_skill(deployment.skill_id).await {
        Ok(s) => s.name,
        Err(e) => return Err(store_error(caller, "reading the deployment's skill", e)),
    };
    Ok((store, deployment, skill))
}

fn store_error(caller: Caller, what: &str, e: db::DbError) -> Page {
    if matches!(e, db::DbError::NotFound { .. }) {
        not_found_page(caller.user_id, NO_DEPLOYMENT)
    } else {
        server_error(what, &e)
    }
}

fn today(state: &AppState) -> DateTime<Utc> {
    let now = state.clock.now();
    now.date_naive()
        .and_hms_opt(0, 0, 0)
        .map_or(now, |d| d.and_utc())
}

// ---------------------------------------------------------------------------------------------
// /deployments

#[derive(Debug, Serialize)]
struct Row {
    id: String,
    skill: String,
    version: i32,
    broker: &'static str,
    status: &'static str,
    equity: String,
    change: Signed,
    change_pct: String,
    realized: Signed,
    unrealized: Signed,
    open_positions: usize,
    last_tick: String,
    last_verdict: String,
    ticks_today: usize,
    rejections_today: usize,
    model_errors_today: usize,
    cost_today: String,
    lessons_waiting: usize,
}

async fn row(state: &AppState, store: &UserScoped, d: &Deployment) -> Result<Row, String> {
    let skill = store
        .get_skill(d.skill_id)
        .await
        .map_err(|e| format!("skill: {e}"))?;
    let ledger = Ledger::of(store.all_trades(d.id).await.map_err(|e| e.to_string())?);
    let today = all_ticks(store, d.id, Some(today(state)))
        .await
        .map_err(|e| e.to_string())?;
    let last = match today.last() {
        Some(t) => Some(t.clone()),
        None => store
            .list_snapshots(d.id, 1)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .next()
            .map(db::StoredTick::from)
            .map(TickEntry::try_from)
            .transpose()
            .map_err(|e| e.to_string())?,
    };
    let held = store
        .held_lessons(
            NoteScope::Deployment(d.id),
            Some(HeldStatus::Pending),
            HELD_LIMIT,
        )
        .await
        .map_err(|e| e.to_string())?;
    let count = |k: OutcomeKind| today.iter().filter(|t| t.outcome == k).count();
    Ok(Row {
        id: d.id.to_string(),
        skill: skill.name,
        version: d.skill_version,
        broker: d.broker.as_str(),
        status: d.status.as_str(),
        equity: text::money(d.equity_usd),
        change: signed(d.equity_usd - d.initial_equity_usd),
        change_pct: change_pct(d),
        realized: signed(ledger.realized_net),
        unrealized: signed(ledger.unrealized(d)),
        open_positions: ledger.open.len(),
        last_tick: when(last.as_ref().map(|t| t.tick_at)),
        last_verdict: last.as_ref().map(outcome_label).unwrap_or_default(),
        ticks_today: today.len(),
        rejections_today: count(OutcomeKind::Rejected),
        model_errors_today: count(OutcomeKind::ModelError),
        cost_today: text::cost(today.iter().map(|t| t.cost_usd).sum()),
        lessons_waiting: held.len(),
    })
}

async fn list_page(State(state): State<AppState>, Viewer(caller): Viewer) -> Page {
    let store = state.store_for(&caller);
    let deployments = match store.user_deployments(caller.user_id).await {
        Ok(d) => d,
        Err(e) => return server_error("reading your deployments", &e),
    };
    let mut rows = Vec::with_capacity(deployments.len());
    for d in &deployments {
        match row(&state, &store, d).await {
            Ok(r) => rows.push(r),
            Err(e) => return server_error("reading a deployment", &e),
        }
    }
    page(
        StatusCode::OK,
        "deployments.html",
        context! {
            title => "Your deployments",
            user => caller.user_id.to_string(),
            rows,
            today => when(Some(today(&state))).split(' ').next().unwrap_or_default().to_owned(),
        },
    )
}

// ---------------------------------------------------------------------------------------------
// /deployments/{id}

#[derive(Debug, Serialize)]
struct PositionRow {
    symbol: String,
    side: &'static str,
    qty: String,
    size: String,
    entry: String,
    opened: String,
    stop: String,
    target: String,
    leverage: String,
}

#[derive(Debug, Serialize)]
struct DayRow {
    day: String,
    ticks: usize,
    input: u64,
    output: u64,
    cost: String,
}

async fn deployment_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
) -> Page {
    let (store, d, skill) = match owned(&state, caller, &id).await {
        Ok(x) => x,
        Err(p) => return p,
    };
    let ledger = match store.all_trades(d.id).await {
        Ok(t) => Ledger::of(t),
        Err(e) => return server_error("reading the ledger", &e),
    };
    let ticks = match all_ticks(&store, d.id, None).await {
        Ok(t) => t,
        Err(e) => return server_error("reading the ticks", &e),
    };
    let now = state.clock.now();
    let (note, outcomes) = match (
        store.active_note(NoteScope::Deployment(d.id), now).await,
        store.outcomes(d.id, OUTCOMES_LIMIT).await,
    ) {
        (Ok(n), Ok(o)) => (n, o),
        (Err(e), _) | (_, Err(e)) => return server_error("reading the lessons", &e),
    };

    // The equity curve: start, each closed round trip, the last recorded equity.
    let mut points = vec![EquityPoint {
        at: d.created_at,
        equity: d.initial_equity_usd,
    }];
    let mut running = d.initial_equity_usd;
    for t in &ledger.closed {
        running += t.realized_pnl_usd - t.fees_usd;
        points.push(EquityPoint {
            at: t.exit_tick_at.unwrap_or(t.entry_tick_at),
            equity: running,
        });
    }
    let last_at = ticks.last().map_or(now, |t| t.tick_at);
    if points.last().is_none_or(|p| p.at <= last_at) {
        points.push(EquityPoint {
            at: last_at,
            equity: d.equity_usd,
        });
    }
    let chart = Value::from_safe_string(equity_and_drawdown(&points));

    // Stop and target of the proposal that opened each position.
    let by_id: BTreeMap<Uuid, &TickEntry> = ticks.iter().map(|t| (t.tick_id, t)).collect();
    let positions: Vec<PositionRow> = ledger
        .open
        .iter()
        .map(|t| {
            let proposal = t
                .entry_snapshot_id
                .and_then(|s| by_id.get(&s))
                .and_then(|tick| tick.proposal.as_ref());
            PositionRow {
                symbol: t.symbol.clone(),
                side: t.side.as_str(),
                qty: text::num(t.open_qty),
                size: text::money(t.open_qty * t.entry_price),
                entry: text::price(t.entry_price),
                opened: when(Some(t.entry_tick_at)),
                stop: proposal
                    .and_then(|p| p.stop)
                    .map_or_else(|| "—".to_owned(), text::price),
                target: proposal
                    .and_then(|p| p.target)
                    .map_or_else(|| "—".to_owned(), text::price),
                leverage: t
                    .entry_leverage
                    .map_or_else(|| "—".to_owned(), |l| format!("{}x", text::num(l))),
            }
        })
        .collect();

    let mut days: BTreeMap<NaiveDate, (usize, u64, u64, Decimal)> = BTreeMap::new();
    for t in &ticks {
        let e = days.entry(t.tick_at.date_naive()).or_default();
        e.0 += 1;
        e.1 += t.usage.input;
        e.2 += t.usage.output;
        e.3 += t.cost_usd;
    }
    let days: Vec<DayRow> = days
        .into_iter()
        .rev()
        .map(|(day, (ticks, input, output, cost))| DayRow {
            day: day.to_string(),
            ticks,
            input,
            output,
            cost: text::cost(cost),
        })
        .collect();

    let mut grades: BTreeMap<&'static str, usize> = BTreeMap::new();
    for o in &outcomes {
        let g = o.score.outcome_grade.map_or("ungraded", |g| g.as_str());
        *grades.entry(g).or_default() += 1;
    }
    let grades: Vec<_> = grades
        .into_iter()
        .map(|(grade, n)| context! { grade, n })
        .collect();

    let closed = ledger.closed.len();
    let win_rate = if closed > 0 {
        text::pct(Decimal::from(ledger.wins) * Decimal::ONE_HUNDRED / Decimal::from(closed))
    } else {
        "—".to_owned()
    };
    let count = |k: OutcomeKind| ticks.iter().filter(|t| t.outcome == k).count();
    let summary = context! {
        equity => text::money(d.equity_usd),
        initial => text::money(d.initial_equity_usd),
        change => signed(d.equity_usd - d.initial_equity_usd),
        change_pct => change_pct(&d),
        realized => signed(ledger.realized_net),
        unrealized => signed(ledger.unrealized(&d)),
        fees => text::money(ledger.fees),
        closed, wins => ledger.wins, win_rate,
        max_drawdown => text::pct(max_drawdown_pct(&points).round_dp(2)),
        ticks => ticks.len(),
        executed => count(OutcomeKind::Executed),
        rejected => count(OutcomeKind::Rejected),
        no_op => count(OutcomeKind::NoOp),
        model_errors => count(OutcomeKind::ModelError),
        cost => text::cost(ticks.iter().map(|t| t.cost_usd).sum()),
    };
    let note = note.map(|n| {
        context! {
            generated_at => when(Some(n.generated_at)),
            lessons => n.content.lessons_text,
            trades_considered => n.content.trades_considered,
        }
    });
    page(
        StatusCode::OK,
        "deployment.html",
        context! {
            title => format!("{skill} · deployment"),
            user => caller.user_id.to_string(),
            deployment_id => d.id.to_string(),
            skill, version => d.skill_version,
            broker => d.broker.as_str(), status => d.status.as_str(),
            created => when(Some(d.created_at)),
            summary, chart, positions, days, grades, note,
        },
    )
}

// ---------------------------------------------------------------------------------------------
// /deployments/{id}/ticks

/// The timeline's filters and cursor.
#[derive(Debug, Default, Deserialize)]
struct TicksQuery {
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    before: Option<String>,
}

/// The checked filters.
struct Filter {
    outcome: Option<OutcomeKind>,
    rule: Option<RuleCode>,
    before: Option<DateTime<Utc>>,
}

impl TicksQuery {
    fn check(&self) -> Result<Filter, String> {
        fn blank(s: &Option<String>) -> Option<&str> {
            s.as_deref().map(str::trim).filter(|s| !s.is_empty())
        }
        let outcome = match blank(&self.outcome) {
            None => None,
            Some(s) => Some(
                [
                    OutcomeKind::Executed,
                    OutcomeKind::Rejected,
                    OutcomeKind::NoOp,
                    OutcomeKind::ModelError,
                ]
                .into_iter()
                .find(|k| k.as_str() == s)
                .ok_or_else(|| {
                    "outcome: one of executed, rejected, no_op, model_error".to_owned()
                })?,
            ),
        };
        let rule = match blank(&self.rule) {
            None => None,
            Some(s) => Some(
                RuleCode::ALL
                    .into_iter()
                    .find(|r| r.as_str() == s)
                    .ok_or_else(|| "rule: not a rule code (e.g. R5_LEVERAGE_CAP)".to_owned())?,
            ),
        };
        let before = match blank(&self.before) {
            None => None,
            Some(s) => Some(
                DateTime::parse_from_rfc3339(s)
                    .map(|t| t.with_timezone(&Utc))
                    .map_err(|_| "before: an RFC 3339 time".to_owned())?,
            ),
        };
        Ok(Filter {
            outcome,
            rule,
            before,
        })
    }
}

impl Filter {
    fn keeps(&self, t: &TickEntry) -> bool {
        self.outcome.is_none_or(|k| t.outcome == k)
            && self.rule.is_none_or(|r| t.rule == Some(r))
            && self.before.is_none_or(|b| t.tick_at < b)
    }
}

#[derive(Debug, Serialize)]
struct TickRow {
    id: String,
    at: String,
    outcome: &'static str,
    label: String,
    proposal: String,
    detail: String,
    tokens: u64,
    cost: String,
    model: String,
}

impl From<&TickEntry> for TickRow {
    fn from(t: &TickEntry) -> Self {
        Self {
            id: t.tick_id.to_string(),
            at: when(Some(t.tick_at)),
            outcome: t.outcome.as_str(),
            label: outcome_label(t),
            proposal: proposal_text(t.proposal.as_ref()),
            detail: t
                .error
                .clone()
                .unwrap_or_else(|| verdict_detail(&t.verdict).to_owned()),
            tokens: t.usage.input + t.usage.output,
            cost: text::cost(t.cost_usd),
            model: t.model.clone(),
        }
    }
}

async fn ticks_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path(id): Path<String>,
    query: Result<Query<TicksQuery>, QueryRejection>,
) -> Page {
    let (store, d, skill) = match owned(&state, caller, &id).await {
        Ok(x) => x,
        Err(p) => return p,
    };
    let q = query.map(|Query(q)| q).unwrap_or_default();
    let (filter, error) = match q.check() {
        Ok(f) => (f, None),
        Err(e) => (
            Filter {
                outcome: None,
                rule: None,
                before: None,
            },
            Some(e),
        ),
    };
    let ticks = match all_ticks(&store, d.id, None).await {
        Ok(t) => t,
        Err(e) => return server_error("reading the ticks", &e),
    };
    let total = ticks.len();
    let mut kept: Vec<&TickEntry> = ticks.iter().rev().filter(|t| filter.keeps(t)).collect();
    let more = kept.len() > TICKS_PER_PAGE;
    kept.truncate(TICKS_PER_PAGE);
    let rows: Vec<TickRow> = kept.iter().map(|t| TickRow::from(*t)).collect();
    let outcome = filter.outcome.map_or("", OutcomeKind::as_str);
    let rule = filter.rule.map_or("", RuleCode::as_str);
    let next = if more {
        kept.last().map(|t| {
            let mut q = format!(
                "?before={}",
                t.tick_at.to_rfc3339_opts(SecondsFormat::Secs, true)
            );
            if !outcome.is_empty() {
                q.push_str(&format!("&outcome={outcome}"));
            }
            if !rule.is_empty() {
                q.push_str(&format!("&rule={rule}"));
            }
            q.replace('+', "%2B")
        })
    } else {
        None
    };
    let outcomes: Vec<_> = [
        ("", "any"),
        ("executed", "executed"),
        ("rejected", "rejected"),
        ("no_op", "no-op"),
        ("model_error", "model error"),
    ]
    .into_iter()
    .map(|(value, label)| context! { value, label, selected => value == outcome })
    .collect();
    let rules: Vec<_> = RuleCode::ALL
        .iter()
        .map(|r| context! { value => r.as_str(), selected => r.as_str() == rule })
        .collect();
    page(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        "ticks.html",
        context! {
            title => format!("{skill} · decisions"),
            user => caller.user_id.to_string(),
            deployment_id => d.id.to_string(),
            skill, rows, total, next, error, outcomes, rules,
            paged => filter.before.is_some(),
            per_page => TICKS_PER_PAGE,
        },
    )
}

// ---------------------------------------------------------------------------------------------
// /deployments/{id}/ticks/{tick}

#[derive(Debug, Serialize)]
struct StepView {
    index: u32,
    text: String,
    finish: &'static str,
    usage: String,
    calls: Vec<CallView>,
}

#[derive(Debug, Serialize)]
struct CallView {
    name: String,
    arguments: String,
    ok: bool,
    result: String,
}

fn pretty(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| json.to_owned())
}

fn usage_text(u: &types::Usage) -> String {
    format!(
        "{} in · {} out · {} cache read · {} cache write",
        u.input, u.output, u.cache_read, u.cache_write
    )
}

async fn tick_page(
    State(state): State<AppState>,
    Viewer(caller): Viewer,
    Path((id, tick)): Path<(String, String)>,
) -> Page {
    let (store, d, skill) = match owned(&state, caller, &id).await {
        Ok(x) => x,
        Err(p) => return p,
    };
    let missing = || not_found_page(caller.user_id, "This deployment has no tick with this id.");
    let Ok(tick_id) = Uuid::parse_str(&tick) else {
        return missing();
    };
    let ticks = match all_ticks(&store, d.id, None).await {
        Ok(t) => t,
        Err(e) => return server_error("reading the ticks", &e),
    };
    let Some(row) = ticks.iter().find(|t| t.tick_id == tick_id) else {
        return missing();
    };
    let query = TickQuery {
        from: Some(row.tick_at),
        to: Some(row.tick_at),
        limit: 1,
        texts: true,
        ..TickQuery::of(d.id)
    };
    let t = match read_ticks(&store, &query).await {
        Ok(mut v) if !v.is_empty() => v.remove(0),
        Ok(_) => return missing(),
        Err(e) => return server_error("reading the tick", &e),
    };
    let Some(prompt) = t.prompt.as_ref() else {
        return server_error("reading the tick", &"the texts were not read");
    };
    let (system, user) = (prompt.system_prompt.clone(), prompt.user_message.clone());
    let (system_tokens, user_tokens) =
        match tokio::task::spawn_blocking(move || (count_tokens(&system), count_tokens(&user)))
            .await
        {
            Ok(c) => c,
            Err(e) => return server_error("counting tokens", &e),
        };
    let steps: Vec<StepView> = prompt
        .steps
        .iter()
        .map(|s| StepView {
            index: s.index,
            text: s.text.clone().unwrap_or_default(),
            finish: s.finish.as_str(),
            usage: usage_text(&s.usage),
            calls: s
                .tool_calls
                .iter()
                .map(|c| {
                    let (ok, result) = match &c.outcome {
                        agent_runtime::ToolOutcome::Ok { result } => {
                            (true, pretty(result.as_str()))
                        }
                        agent_runtime::ToolOutcome::Error {
                            message,
                            recoverable,
                        } => (
                            false,
                            format!(
                                "{message}{}",
                                if *recoverable {
                                    " (sent back to the model)"
                                } else {
                                    " (ended the tick)"
                                }
                            ),
                        ),
                    };
                    CallView {
                        name: c.name.clone(),
                        arguments: pretty(&c.arguments),
                        ok,
                        result,
                    }
                })
                .collect(),
        })
        .collect();
    let at = t.tick_at.to_rfc3339_opts(SecondsFormat::Secs, true);
    page(
        StatusCode::OK,
        "tick.html",
        context! {
            title => format!("{skill} · tick {}", when(Some(t.tick_at))),
            user => caller.user_id.to_string(),
            deployment_id => d.id.to_string(),
            skill,
            tick_id => t.tick_id.to_string(),
            at => when(Some(t.tick_at)),
            at_rfc3339 => at,
            outcome => t.outcome.as_str(),
            label => outcome_label(&t),
            verdict => verdict_detail(&t.verdict),
            rule => t.rule.map(RuleCode::as_str),
            proposal => proposal_text(t.proposal.as_ref()),
            reason => t.proposal.as_ref().map(|p| p.reason.clone()),
            model => &t.model,
            finish_reason => t.finish_reason.clone().unwrap_or_default(),
            error => t.error.clone(),
            usage => usage_text(&t.usage),
            cost => text::cost(t.cost_usd),
            system => &prompt.system_prompt,
            user_message => &prompt.user_message,
            system_tokens, user_tokens, tokenizer => TOKENIZER,
            steps,
        },
    )
}
