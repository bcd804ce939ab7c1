//! The production PostgreSQL store (row-level security; the runner writes as the service role).

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::migrate::Migrator;
use sqlx::postgres::PgPoolOptions;
use sqlx::{Encode, PgPool, Postgres, Transaction, Type};
use uuid::Uuid;

use crate::imp::{Backend, Dialect, Leases, On, Param, Plain, SqlxQuery};

/// The PostgreSQL schema (auth shim, tables, RLS), embedded at compile time from
/// `migrations/postgres`.
pub static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("../../migrations/postgres");

/// A PostgreSQL store's connection pool: how many connections it opens at most and how long a
/// statement waits for one before it fails. The default, 8 connections and 10 s, suits a
/// command or a small runner; `live-runner run` sizes its pool from its concurrency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// The most connections open at once (at least 1).
    pub max_connections: u32,
    /// How long a statement waits for a free connection before it fails (longer than zero).
    pub acquire_timeout: Duration,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(10),
        }
    }
}

impl PoolConfig {
    /// Refuses a pool of no connections or a zero acquire timeout.
    fn check(self) -> Result<(), crate::DbError> {
        if self.max_connections == 0 {
            return Err(crate::DbError::Invalid {
                what: "connection pool size",
                detail: "0 connections; a pool needs at least 1".to_owned(),
            });
        }
        if self.acquire_timeout.is_zero() {
            return Err(crate::DbError::Invalid {
                what: "connection acquire timeout",
                detail: "0 s; it must be longer than zero".to_owned(),
            });
        }
        Ok(())
    }
}

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
        Self::connect_pooled(url, PoolConfig::default()).await
    }

    /// [`connect`](Self::connect) with a pool of `pool`'s size and acquire timeout.
    ///
    /// # Errors
    /// [`DbError::Invalid`](crate::DbError::Invalid) for a pool of no connections or no
    /// timeout; otherwise as [`connect`](Self::connect).
    pub async fn connect_pooled(url: &str, pool: PoolConfig) -> Result<Self, crate::DbError> {
        let pool = Self::new_pool(url, pool).await?;
        Self::from_pool(pool).await
    }

    /// Connects to `url` without applying migrations ([`open_existing`](crate::open_existing)).
    ///
    /// # Errors
    /// [`DbError::Backend`](crate::DbError::Backend) when the server cannot be reached,
    /// [`DbError::NotMigrated`](crate::DbError::NotMigrated).
    pub async fn open_existing(url: &str) -> Result<Self, crate::DbError> {
        let pool = Self::new_pool(url, PoolConfig::default()).await?;
        crate::check_migrated(&pool, &POSTGRES_MIGRATOR, "PostgreSQL").await?;
        Ok(PgStore {
            pool,
            lines: crate::imp::prompt_lines::LineCache::default(),
        })
    }

    /// A pool on `url` of `config`'s size and acquire timeout.
    async fn new_pool(url: &str, config: PoolConfig) -> Result<PgPool, crate::DbError> {
        config.check()?;
        PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(config.acquire_timeout)
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
        crate::imp::tick::convert_legacy_snapshots(self)
            .await
            .map(|_| ())
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

/// PostgreSQL binds uuids, decimals, times and symbol lists natively (`uuid`, `numeric`,
/// `timestamptz`, `text[]`); a lease claim locks the rows it chooses.
impl Dialect for Postgres {
    /// PostgreSQL has only numbered `$n` parameters.
    const NUMBERED_PARAMS: bool = true;
    const USERS: &'static str = "auth.users";
    const BEGIN: &'static str = "BEGIN";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";

    type Id = Native<Uuid>;
    type OptId = Native<Option<Uuid>>;
    type Dec = Native<Decimal>;
    type OptDec = Native<Option<Decimal>>;
    type Ts = Native<DateTime<Utc>>;
    type OptTs = Native<Option<DateTime<Utc>>>;
    type Symbols = Native<Vec<String>>;

    fn id(v: Uuid) -> Native<Uuid> {
        Native(v)
    }
    fn oid(v: Option<Uuid>) -> Native<Option<Uuid>> {
        Native(v)
    }
    fn dec(v: Decimal) -> Native<Decimal> {
        Native(v)
    }
    fn odec(v: Option<Decimal>) -> Native<Option<Decimal>> {
        Native(v)
    }
    fn ts(v: DateTime<Utc>) -> Native<DateTime<Utc>> {
        Native(v)
    }
    fn ots(v: Option<DateTime<Utc>>) -> Native<Option<DateTime<Utc>>> {
        Native(v)
    }
    fn symbols(v: &[String]) -> Native<Vec<String>> {
        Native(v.to_vec())
    }

    fn bind_plain<'q, T: Plain<'q>>(q: SqlxQuery<'q, Self>, v: T) -> SqlxQuery<'q, Self> {
        q.bind(v)
    }
}

/// A value PostgreSQL binds as its own type (`uuid`, `numeric`, `timestamptz`, `text[]`) where
/// SQLite binds text: what [`Dialect`]'s encoders give for PostgreSQL.
pub(crate) struct Native<T>(pub(crate) T);

impl<'q, T: 'q + Send + Encode<'q, Postgres> + Type<Postgres>> Param<'q, Postgres> for Native<T> {
    fn bind_to(self, q: SqlxQuery<'q, Postgres>) -> SqlxQuery<'q, Postgres> {
        q.bind(self.0)
    }
}

impl Backend for PgStore {
    type Db = Postgres;

    fn pool(&self) -> impl On<Postgres> {
        &self.pool
    }

    fn begin(
        &self,
    ) -> impl Future<Output = Result<Transaction<'static, Postgres>, sqlx::Error>> + Send {
        self.pool.begin_with(Postgres::BEGIN)
    }

    fn lines(&self) -> &crate::imp::prompt_lines::LineCache {
        &self.lines
    }
}

impl Leases for PgStore {}
