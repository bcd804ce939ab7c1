//! `EventStore`: market events.
pub(crate) fn validate_event(e: &types::MarketEvent) -> Result<(), crate::DbError> {
    crate::codec::check_len("market event kind", &e.kind, 1, 64)?;
    crate::codec::check_len("market event title", &e.title, 1, 500)?;
    if e.importance < rust_decimal::Decimal::ZERO || e.importance > rust_decimal::Decimal::ONE {
        return Err(crate::DbError::Invalid {
            what: "market event importance",
            detail: format!("{} is outside 0..=1", e.importance),
        });
    }
    Ok(())
}

macro_rules! impl_events {
    ($store:ty, $enc:ident) => {
        use crate::imp::events::validate_event;

        impl EventStore for $store {
            async fn upsert_event(&self, e: &MarketEvent) -> Result<(), DbError> {
                validate_event(e)?;
                sqlx::query(
                    "INSERT INTO market_events (id, kind, title, symbols, scheduled_at, importance, source) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET \
                     kind = excluded.kind, title = excluded.title, symbols = excluded.symbols, \
                     scheduled_at = excluded.scheduled_at, importance = excluded.importance, \
                     source = excluded.source",
                )
                .bind($enc::id(e.id))
                .bind(&e.kind)
                .bind(&e.title)
                .bind($enc::symbols(&e.symbols))
                .bind($enc::ts(e.scheduled_at))
                .bind($enc::dec(e.importance))
                .bind(&e.source)
                .execute(&self.pool)
                .await
                .map_err(ctx("upserting market event"))?;
                Ok(())
            }

            async fn events_between(
                &self,
                from: DateTime<Utc>,
                to: DateTime<Utc>,
                min_importance: Option<Decimal>,
            ) -> Result<Vec<MarketEvent>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM market_events WHERE scheduled_at >= $1 AND scheduled_at <= $2 \
                     ORDER BY scheduled_at, id",
                )
                .bind($enc::ts(from))
                .bind($enc::ts(to))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("reading market events"))?;
                // Importance is compared in Rust: SQLite stores it as text.
                let events = rows.iter().map(codec::event_from_row).collect::<Result<Vec<_>, _>>()?;
                Ok(events
                    .into_iter()
                    .filter(|e| min_importance.is_none_or(|m| e.importance >= m))
                    .collect())
            }
        }
    };
}

pub(crate) use impl_events;
