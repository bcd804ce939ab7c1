//! `NewsStore`: polled headlines.

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;

use super::{Affected as _, Backend, Dialect, query};
use crate::DbError;
use crate::codec::{self, check_len, check_limit};
use crate::error::ctx;
use crate::model::{
    MAX_NEWS_KEY_CHARS, MAX_NEWS_SOURCE_CHARS, MAX_NEWS_SUMMARY_CHARS, MAX_NEWS_TITLE_CHARS,
    NewsRecord,
};
use crate::traits::NewsStore;

/// Most rows of a window read before the symbol filter and the ranking (in Rust: SQLite keeps
/// decimals as text, so `ORDER BY importance` would sort them as strings). The newest are kept.
const WINDOW_SCAN: i64 = 5000;

/// Every bound of `n` (the database checks them again).
fn validate_news(n: &NewsRecord) -> Result<(), DbError> {
    check_len("news feed", &n.feed, 1, MAX_NEWS_KEY_CHARS)?;
    check_len("news source", &n.source, 1, MAX_NEWS_SOURCE_CHARS)?;
    check_len("news guid", &n.guid, 1, MAX_NEWS_KEY_CHARS)?;
    check_len("news title", &n.title, 1, MAX_NEWS_TITLE_CHARS)?;
    if let Some(link) = &n.link {
        check_len("news link", link, 1, MAX_NEWS_KEY_CHARS)?;
    }
    if let Some(summary) = &n.summary {
        check_len("news summary", summary, 1, MAX_NEWS_SUMMARY_CHARS)?;
    }
    if n.sentiment < Decimal::NEGATIVE_ONE || n.sentiment > Decimal::ONE {
        return Err(DbError::Invalid {
            what: "news sentiment",
            detail: format!(
                "{} is outside -1..=1 (item {:?} of {})",
                n.sentiment, n.guid, n.feed
            ),
        });
    }
    if n.importance < Decimal::ZERO || n.importance > Decimal::ONE {
        return Err(DbError::Invalid {
            what: "news importance",
            detail: format!(
                "{} is outside 0..=1 (item {:?} of {})",
                n.importance, n.guid, n.feed
            ),
        });
    }
    if n.symbols.iter().any(|s| s.trim().is_empty()) {
        return Err(DbError::Invalid {
            what: "news symbols",
            detail: format!("an empty symbol (item {:?} of {})", n.guid, n.feed),
        });
    }
    Ok(())
}

/// The insert of one item, skipped when its (feed, guid) is stored; `$1`..`$13` in column order.
const INSERT_NEWS: &str = "INSERT INTO news_items \
     (id, feed, source, guid, title, link, summary, published_at, fetched_at, symbols, \
      sentiment, sentiment_source, importance) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
     ON CONFLICT DO NOTHING";

/// Most relevant first: importance descending, newest first, then title, then id.
fn rank(items: &mut [NewsRecord]) {
    items.sort_by(|a, b| {
        b.importance
            .cmp(&a.importance)
            .then(b.published_at.cmp(&a.published_at))
            .then_with(|| a.title.cmp(&b.title))
            .then(a.id.cmp(&b.id))
    });
}

impl<S: Backend<Db = D>, D: Dialect> NewsStore for S {
    async fn insert_news(&self, items: &[NewsRecord]) -> Result<u64, DbError> {
        for n in items {
            validate_news(n)?;
        }
        let mut tx = self.begin().await.map_err(ctx("beginning news insert"))?;
        let mut inserted = 0;
        for n in items {
            let done = query(INSERT_NEWS)
                .bind(D::id(n.id))
                .bind(&n.feed)
                .bind(&n.source)
                .bind(&n.guid)
                .bind(&n.title)
                .bind(n.link.as_deref())
                .bind(n.summary.as_deref())
                .bind(D::ts(n.published_at))
                .bind(D::ts(n.fetched_at))
                .bind(D::symbols(&n.symbols))
                .bind(D::dec(n.sentiment))
                .bind(n.sentiment_source.as_str())
                .bind(D::dec(n.importance))
                .execute(&mut *tx)
                .await
                .map_err(ctx("inserting news item"))?;
            inserted += done.rows_affected();
        }
        tx.commit().await.map_err(ctx("committing news insert"))?;
        Ok(inserted)
    }

    async fn news_window(
        &self,
        symbols: &[String],
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        as_of: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<NewsRecord>, DbError> {
        let limit = check_limit("news limit", limit, crate::MAX_NEWS_READ)?;
        let rows = query(
            "SELECT * FROM news_items WHERE published_at >= $1 AND published_at <= $2 \
             AND fetched_at <= $3 ORDER BY published_at DESC, id LIMIT $4",
        )
        .bind(D::ts(from))
        .bind(D::ts(to))
        .bind(D::ts(as_of))
        .bind(WINDOW_SCAN)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading news"))?;
        let mut items = rows
            .iter()
            .map(codec::news_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        items.retain(|n| n.symbols.is_empty() || n.symbols.iter().any(|s| symbols.contains(s)));
        rank(&mut items);
        items.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(items)
    }
}
