//! [`StoreMemory`]: the outcome memory the recall tools and the `<trading_memory>` block read
//! ([`tools::TradeMemory`]), over a store's [`OutcomeStore`] — the same queries in a backtest
//! (its SQLite file or memory), the live runner (PostgreSQL) and the MCP server.

use db::{DbError, MemoryScope, OutcomeStore};
use outcomes::{RecallQuery, RecalledOutcome, SearchHits, SearchQuery};
use tools::{DataError, MemoryFuture, TradeMemory};

/// One deployment's (or one user's) outcome memory in `store`. Point in time is the store's:
/// every read passes the query's `as_of` (the tick time) to [`OutcomeStore::recall_outcomes`] /
/// [`OutcomeStore::search_memory`], which return only what was known then.
#[derive(Debug, Clone)]
pub struct StoreMemory<S> {
    store: S,
    scope: MemoryScope,
}

impl<S> StoreMemory<S> {
    /// The memory of `scope` in `store` (a clone of the store sharing its connections).
    #[must_use]
    pub const fn new(store: S, scope: MemoryScope) -> Self {
        Self { store, scope }
    }
}

fn data_error(e: &DbError) -> DataError {
    // The store's message names the problem (an empty search, a limit out of range) and never
    // the database URL.
    DataError::new("outcome memory", e.to_string())
}

impl<S> TradeMemory for StoreMemory<S>
where
    S: OutcomeStore + Send + Sync,
{
    fn recall<'a>(&'a self, query: &'a RecallQuery) -> MemoryFuture<'a, Vec<RecalledOutcome>> {
        Box::pin(async move {
            self.store
                .recall_outcomes(self.scope, query)
                .await
                .map_err(|e| data_error(&e))
        })
    }

    fn search<'a>(&'a self, query: &'a SearchQuery) -> MemoryFuture<'a, SearchHits> {
        Box::pin(async move {
            self.store
                .search_memory(self.scope, query)
                .await
                .map_err(|e| data_error(&e))
        })
    }
}
