//! Scheduled market events: the one event type the calendar file, the store, the tick's
//! Upcoming events section and the chat coach share.

use chrono::{DateTime, SecondsFormat, Utc};
use rust_decimal::Decimal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Upper bound on a market event's title, in characters (`market_events.title`).
pub const MAX_EVENT_TITLE_CHARS: usize = 500;

/// Kinds of scheduled market events (ADR-0018's `market_events`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A US Federal Reserve (FOMC) rate decision or statement.
    Fomc,
    /// A consumer price index (inflation) release.
    Cpi,
    /// The US non-farm payrolls (employment) report.
    Nfp,
    /// A gross domestic product release.
    Gdp,
    /// A rate decision of a central bank other than the Fed (ECB, BoE, BoJ, ...).
    CentralBank,
    /// A company's earnings report.
    Earnings,
    /// A scheduled release of locked tokens into circulation.
    TokenUnlock,
    /// A new listing of an asset on an exchange.
    Listing,
    /// Planned downtime or maintenance of an exchange.
    ExchangeMaintenance,
    /// Anything else worth knowing about ahead of time.
    Other,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 10] = [
        EventKind::Fomc,
        EventKind::Cpi,
        EventKind::Nfp,
        EventKind::Gdp,
        EventKind::CentralBank,
        EventKind::Earnings,
        EventKind::TokenUnlock,
        EventKind::Listing,
        EventKind::ExchangeMaintenance,
        EventKind::Other,
    ];

    /// The snake_case spelling (serde's and the store's).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            EventKind::Fomc => "fomc",
            EventKind::Cpi => "cpi",
            EventKind::Nfp => "nfp",
            EventKind::Gdp => "gdp",
            EventKind::CentralBank => "central_bank",
            EventKind::Earnings => "earnings",
            EventKind::TokenUnlock => "token_unlock",
            EventKind::Listing => "listing",
            EventKind::ExchangeMaintenance => "exchange_maintenance",
            EventKind::Other => "other",
        }
    }

    /// Parses the snake_case spelling.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// A scheduled market event (CPI print, FOMC, token unlock, ...).
///
/// Read from JSON, `id` and `source` may be left out: a missing `id` is
/// [`MarketEvent::derived_id`] of kind, time and title (so loading one calendar twice gives the
/// same ids), a missing `source` is empty. Reading checks the bounds ([`MarketEvent::check`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "EventFields")]
pub struct MarketEvent {
    /// The store's key.
    pub id: Uuid,
    /// What sort of event it is.
    pub kind: EventKind,
    /// 1..=[`MAX_EVENT_TITLE_CHARS`] characters.
    pub title: String,
    /// Symbols the event is expected to move; empty = market-wide.
    pub symbols: Vec<String>,
    /// When the event happens (UTC).
    pub scheduled_at: DateTime<Utc>,
    /// 0..=1.
    pub importance: Decimal,
    /// Where the event came from (a calendar's name, a file); may be empty.
    pub source: String,
}

/// A market event outside its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidEvent {
    /// The title is empty or longer than [`MAX_EVENT_TITLE_CHARS`].
    #[error("title has {chars} characters, expected 1..={max}", max = MAX_EVENT_TITLE_CHARS)]
    Title {
        /// The title's length in characters.
        chars: usize,
    },
    /// The importance is below 0 or above 1; carries the value given.
    #[error("importance {0} is outside 0..=1")]
    Importance(Decimal),
}

/// Namespace of [`MarketEvent::derived_id`].
const EVENT_ID_NAMESPACE: Uuid = Uuid::from_u128(0x6d61_726b_6574_2d65_7665_6e74_2d69_6473);

impl MarketEvent {
    /// The id of an event given without one: UUID v5 of its kind, time (RFC 3339, nanoseconds)
    /// and title. A revised importance or symbol list keeps the id; a new time or title is a
    /// new event.
    #[must_use]
    pub fn derived_id(kind: EventKind, scheduled_at: DateTime<Utc>, title: &str) -> Uuid {
        let name = format!(
            "{}\n{}\n{title}",
            kind.as_str(),
            scheduled_at.to_rfc3339_opts(SecondsFormat::Nanos, true)
        );
        Uuid::new_v5(&EVENT_ID_NAMESPACE, name.as_bytes())
    }

    /// Checks the bounds every write path enforces: a title of 1..=[`MAX_EVENT_TITLE_CHARS`]
    /// characters, an importance in 0..=1.
    ///
    /// # Errors
    /// The first bound the event breaks.
    pub fn check(&self) -> Result<(), InvalidEvent> {
        let chars = self.title.chars().count();
        if chars == 0 || chars > MAX_EVENT_TITLE_CHARS {
            return Err(InvalidEvent::Title { chars });
        }
        if self.importance < Decimal::ZERO || self.importance > Decimal::ONE {
            return Err(InvalidEvent::Importance(self.importance));
        }
        Ok(())
    }
}

/// [`MarketEvent`] as written in a file: `id` and `source` optional.
#[derive(Deserialize, JsonSchema)]
struct EventFields {
    #[serde(default)]
    id: Option<Uuid>,
    kind: EventKind,
    title: String,
    #[serde(default)]
    symbols: Vec<String>,
    scheduled_at: DateTime<Utc>,
    importance: Decimal,
    #[serde(default)]
    source: String,
}

impl TryFrom<EventFields> for MarketEvent {
    type Error = InvalidEvent;

    fn try_from(f: EventFields) -> Result<Self, InvalidEvent> {
        let event = MarketEvent {
            id: f
                .id
                .unwrap_or_else(|| MarketEvent::derived_id(f.kind, f.scheduled_at, &f.title)),
            kind: f.kind,
            title: f.title,
            symbols: f.symbols,
            scheduled_at: f.scheduled_at,
            importance: f.importance,
            source: f.source,
        };
        event.check()?;
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        for k in EventKind::ALL {
            assert_eq!(EventKind::parse(k.as_str()), Some(k));
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
        }
        assert_eq!(EventKind::parse("nonsense"), None);
    }

    #[test]
    fn a_file_event_without_id_or_source_gets_a_derived_id() {
        let text = r#"{"kind": "fomc", "title": "FOMC", "symbols": ["EURUSD"],
            "scheduled_at": "2017-02-01T19:00:00Z", "importance": 1.0}"#;
        let a: MarketEvent = serde_json::from_str(text).unwrap();
        let b: MarketEvent = serde_json::from_str(text).unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(
            a.id,
            MarketEvent::derived_id(EventKind::Fomc, a.scheduled_at, "FOMC")
        );
        assert_eq!(a.source, "");
        // What it writes reads back as itself.
        let again: MarketEvent = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(again, a);
    }

    #[test]
    fn reading_checks_the_bounds() {
        let err = serde_json::from_str::<MarketEvent>(
            r#"{"kind": "cpi", "title": "CPI", "scheduled_at": "2017-02-01T19:00:00Z",
                "importance": 1.5}"#,
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("importance 1.5 is outside 0..=1"),
            "{err}"
        );
        assert!(
            serde_json::from_str::<MarketEvent>(
                r#"{"kind": "cpi", "title": "", "scheduled_at": "2017-02-01T19:00:00Z",
                    "importance": 0.5}"#,
            )
            .is_err()
        );
    }
}
