//! The embedded SQLite store (a file created on first use).

use std::str::FromStr;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// The SQLite schema, embedded at compile time from `migrations/sqlite`.
pub static SQLITE_MIGRATOR: Migrator = sqlx::migrate!("../../migrations/sqlite");

/// Store over a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating when missing) the database at `url` — `sqlite://path?mode=rwc`,
    /// `sqlite:path` or `sqlite::memory:` — and applies the migrations. Foreign keys are enforced
    /// and the journal is WAL with `synchronous = NORMAL` (checkpointed into the file at
    /// [`close`](Self::close) too): a commit survives a crash of the process
    /// (WAL is fsynced at checkpoints, not at every commit), and after a power loss the database
    /// is intact but may lack its last transactions — the embedded store's trade-off for
    /// backtest speed; production deployments run on PostgreSQL. An in-memory database lives in
    /// one connection that is never recycled.
    ///
    /// # Errors
    /// [`DbError::Invalid`](crate::DbError::Invalid) for a malformed URL,
    /// [`DbError::Backend`](crate::DbError::Backend) when the file cannot be opened,
    /// [`DbError::Migrate`](crate::DbError::Migrate) when the schema cannot be applied.
    pub async fn connect(url: &str) -> Result<Self, crate::DbError> {
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let options = SqliteConnectOptions::from_str(url)
            .map_err(|e| crate::DbError::Invalid {
                what: "SQLite URL",
                detail: e.to_string(),
            })?
            .create_if_missing(true)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let options = if in_memory {
            options
        } else {
            options
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
        };
        // One connection: SQLite has one writer at a time anyway, and a single connection keeps
        // one warm page cache and one set of prepared statements (with four, a backtest's
        // batches landed on cold connections that prepared every statement again: ≈10% of its
        // instructions). An in-memory database must also live in one connection, never
        // recycled.
        let pool_options = SqlitePoolOptions::new().max_connections(1);
        let pool_options = if in_memory {
            pool_options
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            pool_options
        };
        let pool = pool_options
            .connect_with(options)
            .await
            .map_err(crate::error::ctx("opening SQLite database"))?;
        SQLITE_MIGRATOR
            .run(&pool)
            .await
            .map_err(|source| crate::DbError::Migrate {
                backend: "SQLite",
                source,
            })?;
        Ok(SqliteStore { pool })
    }

    /// Folds the write-ahead log into the database file (a `TRUNCATE` checkpoint: the file
    /// alone then holds every row) and closes every connection; calls made afterwards fail.
    ///
    /// # Errors
    /// [`DbError::Backend`](crate::DbError::Backend) when the checkpoint fails (the rows stay
    /// in the log, which the next open folds in).
    pub async fn close(&self) -> Result<(), crate::DbError> {
        let checkpoint = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&self.pool)
            .await
            .map_err(crate::error::ctx("checkpointing the SQLite log"));
        self.pool.close().await;
        checkpoint.map(|_| ())
    }

    /// The connection pool, for queries the store traits don't cover.
    #[must_use]
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

crate::imp::impl_stores!(
    SqliteStore,
    sqlx::Sqlite,
    lite,
    "users",
    "BEGIN IMMEDIATE",
    ""
);
