//! `EventStore`: market events.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use types::MarketEvent;

use super::{Backend, Dialect, Query, query};
use crate::DbError;
use crate::codec;
use crate::error::ctx;
use crate::traits::EventStore;

/// The event's bounds ([`types::MarketEvent::check`]) as the store's errors.
fn validate_event(e: &MarketEvent) -> Result<(), DbError> {
    match e.check() {
        Ok(()) => Ok(()),
        Err(types::InvalidEvent::Title { chars }) => Err(DbError::Bound {
            field: "market event title",
            actual: chars,
            min: 1,
            max: types::MAX_EVENT_TITLE_CHARS,
        }),
        Err(types::InvalidEvent::Importance(v)) => Err(DbError::Invalid {
            what: "market event importance",
            detail: format!("{v} is outside 0..=1"),
        }),
    }
}

/// The upsert of one event, `$1`..`$7` = id, kind, title, symbols, scheduled_at, importance,
/// source.
const UPSERT_EVENT: &str = "INSERT INTO market_events \
     (id, kind, title, symbols, scheduled_at, importance, source) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET \
     kind = excluded.kind, title = excluded.title, symbols = excluded.symbols, \
     scheduled_at = excluded.scheduled_at, importance = excluded.importance, \
     source = excluded.source";

/// [`UPSERT_EVENT`] with `e`'s values.
fn upsert_event_query<D: Dialect>(e: &MarketEvent) -> Query<'_, D> {
    query(UPSERT_EVENT)
        .bind(D::id(e.id))
        .bind(e.kind.as_str())
        .bind(&e.title)
        .bind(D::symbols(&e.symbols))
        .bind(D::ts(e.scheduled_at))
        .bind(D::dec(e.importance))
        .bind(&e.source)
}

impl<S: Backend<Db = D>, D: Dialect> EventStore for S {
    async fn upsert_event(&self, e: &MarketEvent) -> Result<(), DbError> {
        validate_event(e)?;
        upsert_event_query(e)
            .execute(self.pool())
            .await
            .map_err(ctx("upserting market event"))?;
        Ok(())
    }

    async fn upsert_events(&self, events: &[MarketEvent]) -> Result<(), DbError> {
        for e in events {
            validate_event(e)?;
        }
        let mut tx = self.begin().await.map_err(ctx("beginning event import"))?;
        for e in events {
            upsert_event_query(e)
                .execute(&mut *tx)
                .await
                .map_err(ctx("upserting market event"))?;
        }
        tx.commit().await.map_err(ctx("committing event import"))?;
        Ok(())
    }

    async fn events_between(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        min_importance: Option<Decimal>,
    ) -> Result<Vec<MarketEvent>, DbError> {
        let rows = query(
            "SELECT * FROM market_events WHERE scheduled_at >= $1 AND scheduled_at <= $2 \
             ORDER BY scheduled_at, id",
        )
        .bind(D::ts(from))
        .bind(D::ts(to))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading market events"))?;
        // Importance is compared in Rust: SQLite stores it as text.
        let events = rows
            .iter()
            .map(codec::event_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(events
            .into_iter()
            .filter(|e| min_importance.is_none_or(|m| e.importance >= m))
            .collect())
    }
}
