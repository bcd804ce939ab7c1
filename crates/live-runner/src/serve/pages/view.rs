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
