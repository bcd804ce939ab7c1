//! The production PostgreSQL store (row-level security; the runner writes as the service role).

use std::time::Duration;

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::PgPoolOptions;

/// The PostgreSQL schema (auth shim, tables, RLS), embedded at compile time from
/// `migrations/postgres`.
pub static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("../../migrations/postgres");

/// Store over a PostgreSQL database. The connecting role must own the tables or bypass RLS
/// (superuser, or a role granted `service_role`).
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Which prompt lines the deployments' scopes hold (shared by the clones).
    lines: crate::imp::prompt_lines::LineCache,
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations (sqlx takes
    /// an advisory lock, so many runner processes may start at once).
    ///
    /// # Errors
    /// [`DbError::Backend`](crate::DbError::Backend) when the server cannot be reached,
    /// [`DbError::Migrate`](crate::DbError::Migrate) when the schema cannot be applied.
    pub async fn connect(url: &str) -> Result<Self, crate::DbError> {
        let pool = Self::new_pool(url).await?;
        Self::from_pool(pool).await
    }

    /// Connects to `url` without applying migrations ([`open_existing`](crate::open_existing)).
    ///
    /// # Errors
    /// [`DbError::Backend`](crate::DbError::Backend) when the server cannot be reached,
    /// [`DbError::NotMigrated`](crate::DbError::NotMigrated).
    pub async fn open_existing(url: &str) -> Result<Self, crate::DbError> {
        let pool = Self::new_pool(url).await?;
        crate::check_migrated(&pool, &POSTGRES_MIGRATOR, "PostgreSQL").await?;
        Ok(PgStore {
            pool,
            lines: crate::imp::prompt_lines::LineCache::default(),
        })
    }

    /// A pool on `url`: 8 connections, 10 s to acquire one.
    async fn new_pool(url: &str) -> Result<PgPool, crate::DbError> {
        PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(crate::error::ctx("connecting to PostgreSQL"))
    }

    /// Wraps an existing pool and applies the migrations.
    ///
    /// # Errors
    /// [`DbError::Migrate`](crate::DbError::Migrate) when the schema cannot be applied,
    /// [`DbError::Backend`](crate::DbError::Backend) when converting the snapshots an older
    /// build wrote fails.
    pub async fn from_pool(pool: PgPool) -> Result<Self, crate::DbError> {
        let store = PgStore {
            pool,
            lines: crate::imp::prompt_lines::LineCache::default(),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// The schema of this build: the migrations not applied yet, and snapshots an older build
    /// wrote converted to line lists ([`from_pool`](Self::from_pool) calls it).
    ///
    /// # Errors
    /// As [`from_pool`](Self::from_pool).
    pub async fn migrate(&self) -> Result<(), crate::DbError> {
        POSTGRES_MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|source| crate::DbError::Migrate {
                backend: "PostgreSQL",
                source,
            })?;
        // Snapshots an older build wrote keep their texts until converted to line lists.
        self.convert_legacy_snapshots().await.map(|_| ())
    }

    /// Closes every connection (waiting for those in use); calls made afterwards fail.
    ///
    /// # Errors
    /// None today; the signature matches [`SqliteStore::close`](crate::SqliteStore::close).
    pub async fn close(&self) -> Result<(), crate::DbError> {
        self.pool.close().await;
        Ok(())
    }

    /// The connection pool, for queries the store traits don't cover.
    #[must_use]
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

crate::imp::impl_stores!(
    PgStore,
    sqlx::Postgres,
    pg,
    "auth.users",
    "BEGIN",
    " FOR UPDATE SKIP LOCKED"
);
