//! What the pages show, as text: every value a template prints is written here (money, prices
//! and holding times in `types::text`'s styles, times in UTC), so the templates hold no formatting of their own and
//! print nothing but escaped strings.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::Serialize;
use types::{FactConfidence, ReflectionNote, TradeRecord, UserFact, text};

/// `2026-06-04 10:15 UTC`-style minute time, or an em dash for "never".
pub(crate) fn when(t: Option<DateTime<Utc>>) -> String {
    match t {
        Some(t) => {
            let mut out = String::with_capacity(16);
            text::push_date_minute(&mut out, t);
            out.replace('T', " ")
        }
        None => "—".to_owned(),
    }
}

/// One fact row of `/profile/facts`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FactView {
    pub(crate) id: String,
    pub(crate) fact: String,
    pub(crate) topic: String,
    pub(crate) source: &'static str,
    pub(crate) confidence: &'static str,
    pub(crate) last_referenced: String,
    pub(crate) created: String,
    /// Empty for an active fact.
    pub(crate) archived_at: String,
    pub(crate) archived_reason: &'static str,
    /// The confidence the row's promote/demote button sets, and its verb.
    pub(crate) toggle_confidence: &'static str,
    pub(crate) toggle_label: &'static str,
}

impl From<&UserFact> for FactView {
    fn from(f: &UserFact) -> Self {
        let (toggle, label) = match f.confidence {
            FactConfidence::Inferred => (FactConfidence::Asserted, "Promote"),
            FactConfidence::Asserted => (FactConfidence::Inferred, "Demote"),
        };
        Self {
            id: f.id.to_string(),
            fact: f.fact.clone(),
            topic: f.topic.clone().unwrap_or_default(),
            source: f.source.as_str(),
            confidence: f.confidence.as_str(),
            last_referenced: when(f.last_referenced_at),
            created: when(Some(f.created_at)),
            archived_at: f.archived_at.map(|t| when(Some(t))).unwrap_or_default(),
            archived_reason: f.archived_reason.map_or("", |r| r.as_str()),
            toggle_confidence: toggle.as_str(),
            toggle_label: label,
        }
    }
}

/// One closed trade of `/deployments/{id}/memory`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TradeView {
    pub(crate) symbol: String,
    pub(crate) side: &'static str,
    pub(crate) entry_at: String,
    pub(crate) exit_at: String,
    /// Notional opened.
    pub(crate) size: String,
    pub(crate) entry_price: String,
    pub(crate) exit_price: String,
    /// Gross realized PnL less fees, signed money.
    pub(crate) net_pnl: String,
    /// `pos`, `neg` or empty: the cell's colour.
    pub(crate) pnl_class: &'static str,
    pub(crate) holding: String,
    pub(crate) regime: String,
    pub(crate) entry_reason: String,
    pub(crate) exit_reason: String,
}

impl From<&TradeRecord> for TradeView {
    fn from(t: &TradeRecord) -> Self {
        let net = t.realized_pnl_usd - t.fees_usd;
        let holding = t.holding_minutes.map_or_else(
            || "—".to_owned(),
            |m| {
                let whole = m.trunc();
                i64::try_from(whole).map_or_else(|_| whole.to_string(), text::span)
            },
        );
        Self {
            symbol: t.symbol.clone(),
            side: t.side.as_str(),
            entry_at: when(Some(t.entry_tick_at)),
            exit_at: when(t.exit_tick_at),
            size: text::money(t.entry_size_usd),
            entry_price: text::price(t.entry_price),
            exit_price: t.exit_price.map_or_else(|| "—".to_owned(), text::price),
            net_pnl: text::signed_money(net),
            pnl_class: if net > Decimal::ZERO {
                "pos"
            } else if net < Decimal::ZERO {
                "neg"
            } else {
                ""
            },
            holding,
            regime: t
                .entry_regime_tag
                .map(|r| r.as_str().to_owned())
                .unwrap_or_default(),
            entry_reason: t.entry_reason.clone().unwrap_or_default(),
            exit_reason: t.exit_reason.clone().unwrap_or_default(),
        }
    }
}

/// One reflection note of the lessons history.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NoteView {
    pub(crate) status: &'static str,
    pub(crate) generated_at: String,
    pub(crate) window: String,
    pub(crate) trades_considered: u32,
    pub(crate) lessons: String,
}

impl From<&ReflectionNote> for NoteView {
    fn from(n: &ReflectionNote) -> Self {
        Self {
            status: n.status.as_str(),
            generated_at: when(Some(n.generated_at)),
            window: format!(
                "{} → {}",
                when(Some(n.content.window_start)),
                when(Some(n.content.window_end))
            ),
            trades_considered: n.content.trades_considered,
            lessons: n.content.lessons_text.clone(),
        }
    }
}

/// The controls section of a deployment's page: its status, the buttons its status allows, the
/// flatten if one was asked for, the audit trail.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ControlsView {
    pub(crate) status: &'static str,
    pub(crate) status_note: &'static str,
    pub(crate) can_pause: bool,
    pub(crate) can_resume: bool,
    pub(crate) can_stop: bool,
    /// Stopped without a flatten: its positions may still be closed.
    pub(crate) can_flatten: bool,
    /// Where the flatten stands, one sentence; empty without one.
    pub(crate) flatten: String,
    pub(crate) trail: Vec<ControlRowView>,
}

/// One audited control.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ControlRowView {
    pub(crate) at: String,
    pub(crate) action: &'static str,
    pub(crate) change: String,
    pub(crate) by: String,
    pub(crate) reason: String,
}

impl From<&db::DeploymentControl> for ControlRowView {
    fn from(c: &db::DeploymentControl) -> Self {
        Self {
            at: when(Some(c.requested_at)),
            action: match (c.action, c.flatten) {
                (db::ControlAction::Pause, _) => "pause",
                (db::ControlAction::Resume, _) => "resume",
                (db::ControlAction::Stop, false) => "stop",
                (db::ControlAction::Stop, true) => "stop, closing the positions",
            },
            change: format!("{} → {}", c.from_status.as_str(), c.to_status.as_str()),
            by: c.requested_by.clone(),
            reason: c.reason.clone().unwrap_or_default(),
        }
    }
}

impl ControlsView {
    pub(crate) fn new(
        status: db::DeploymentStatus,
        flatten: Option<&db::FlattenState>,
        trail: &[db::DeploymentControl],
    ) -> Self {
        use db::DeploymentStatus::{Active, Paused, Stopped};
        let flatten_text = match flatten {
            None => String::new(),
            Some(f) => match f.done_at {
                Some(done) => format!(
                    "Open positions closed through the broker at {} UTC (asked at {} UTC).",
                    when(Some(done)),
                    when(Some(f.requested_at))
                ),
                None if f.attempts == 0 => format!(
                    "Closing the open positions through the broker: asked at {} UTC, waiting \
                     for a runner.",
                    when(Some(f.requested_at))
                ),
                None => format!(
                    "Closing the open positions through the broker: asked at {} UTC; {} \
                     attempt(s) failed, the next at {} UTC. Last error: {}",
                    when(Some(f.requested_at)),
                    f.attempts,
                    when(f.retry_at),
                    f.last_error.as_deref().unwrap_or("—")
                ),
            },
        };
        Self {
            status: status.as_str(),
            status_note: match status {
                Active => "ticking at every bar close",
                Paused => "no tick until it is resumed; its state and schedule are kept",
                Stopped => "stopped for good: it never ticks again",
            },
            can_pause: status == Active,
            can_resume: status == Paused,
            can_stop: status != Stopped,
            can_flatten: status == Stopped && flatten.is_none(),
            flatten: flatten_text,
            trail: trail.iter().map(ControlRowView::from).collect(),
        }
    }
}
