//! The embedded SQLite store (a file created on first use).

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::migrate::Migrator;
use sqlx::{Sqlite, SqlitePool, Transaction};
use uuid::Uuid;

use crate::imp::{Backend, Dialect, Leases, On, Plain, SqlxQuery};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

/// The SQLite schema, embedded at compile time from `migrations/sqlite`.
pub static SQLITE_MIGRATOR: Migrator = sqlx::migrate!("../../migrations/sqlite");

/// What every migration of [`SQLITE_MIGRATOR`] builds on an empty database, as one script:
/// `sqlite_master`'s statements in their order, without SQLite's own objects and the FTS5
/// shadow tables (their virtual tables create them). An empty database is given this script
/// and the migrations' rows in `_sqlx_migrations`, checksums included, instead of running the
/// migrations one by one: their `ALTER TABLE`s each parse the whole schema again (≈68M
/// instructions, ≈15 ms, the largest fixed cost of a backtest). The migrator then finds every
/// migration applied and checks their checksums as for any database. A test rebuilds the
/// script from the migrations and compares (`UPDATE_SQLITE_BASELINE=1` rewrites it).
pub const SQLITE_BASELINE: &str = include_str!("../../../migrations/sqlite-baseline.sql");

/// The page size of a new [`Durability::Scratch`] file, in bytes.
pub const SCRATCH_PAGE_SIZE: u32 = 8192;

/// Store over a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    durability: Durability,
    /// Which prompt lines the deployments' scopes hold (shared by the clones).
    lines: crate::imp::prompt_lines::LineCache,
}

/// How a SQLite file's commits reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// WAL with `synchronous = NORMAL`: a commit survives a crash of the process at once, and a
    /// power loss once the log is checkpointed (the log is fsynced at every checkpoint). For a
    /// file that holds data of its own.
    #[default]
    Normal,
    /// No fsync at all (`synchronous = OFF`), and a rollback journal instead of WAL: a new row
    /// is written once, into the file, where WAL writes it to the log and then again into the
    /// file; the journal keeps only the few pages a transaction changes in place. For a
    /// database created for one run, such as a backtest's `sim.db`, which the run can
    /// recreate: the file reaches the disk when the OS writes it back, as the run's other
    /// output files do. A commit, or a transaction cut short, still survives a crash of the
    /// process (the journal is written before the file is changed); a power loss or an OS
    /// crash before the OS has written the file back may damage it, and then it holds nothing
    /// but that run. The two save a backtest about half of its wall time on this project's VMs.
    /// The connection also keeps the file locked (`locking_mode = EXCLUSIVE`) from its first
    /// write until [`close`](SqliteStore::close): SQLite neither reopens the journal nor takes
    /// and checks the file's locks at every transaction (≈3,000 system calls fewer in the README
    /// backtest), and another process cannot read the file until the run has closed it (it
    /// waits out its busy timeout, then fails with `database is locked`).
    Scratch,
}

/// `url`'s options with foreign keys enforced and a 10 s busy timeout.
fn base_options(url: &str) -> Result<SqliteConnectOptions, crate::DbError> {
    Ok(SqliteConnectOptions::from_str(url)
        .map_err(|e| crate::DbError::Invalid {
            what: "SQLite URL",
            detail: e.to_string(),
        })?
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10)))
}

/// Gives an empty database [`SQLITE_BASELINE`] and records every migration as applied, in one
/// transaction; a database that holds anything is left to the migrator. Returns whether it did.
///
/// # Errors
/// [`DbError::Backend`](crate::DbError::Backend) when the script or the records fail (nothing
/// is written then).
pub async fn apply_sqlite_baseline(pool: &SqlitePool) -> Result<bool, crate::DbError> {
    use crate::error::ctx;
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(ctx("beginning the schema"))?;
    let objects: i64 = sqlx::query_scalar("SELECT count(*) FROM sqlite_master")
        .fetch_one(&mut *tx)
        .await
        .map_err(ctx("reading the schema"))?;
    if objects != 0 {
        return Ok(false);
    }
    sqlx::raw_sql(SQLITE_BASELINE)
        .execute(&mut *tx)
        .await
        .map_err(ctx("creating the schema"))?;
    for m in SQLITE_MIGRATOR
        .iter()
        .filter(|m| !m.migration_type.is_down_migration())
    {
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (?1, ?2, TRUE, ?3, 0)",
        )
        .bind(m.version)
        .bind(&*m.description)
        .bind(&*m.checksum)
        .execute(&mut *tx)
        .await
        .map_err(ctx("recording the migrations"))?;
    }
    tx.commit().await.map_err(ctx("committing the schema"))?;
    Ok(true)
}

impl SqliteStore {
    /// Opens (creating when missing) the database at `url` — `sqlite://path?mode=rwc`,
    /// `sqlite:path` or `sqlite::memory:` — and applies the migrations, with
    /// [`Durability::Normal`]. Foreign keys are enforced; production deployments run on
    /// PostgreSQL.
    /// An in-memory database lives in one connection that is never recycled.
    ///
    /// # Errors
    /// [`DbError::Invalid`](crate::DbError::Invalid) for a malformed URL,
    /// [`DbError::Backend`](crate::DbError::Backend) when the file cannot be opened,
    /// [`DbError::Migrate`](crate::DbError::Migrate) when the schema cannot be applied,
    /// [`DbError::Backend`](crate::DbError::Backend) when converting the snapshots an older
    /// build wrote fails.
    pub async fn connect(url: &str) -> Result<Self, crate::DbError> {
        Self::connect_with(url, Durability::Normal).await
    }

    /// [`connect`](Self::connect) with a chosen [`Durability`] (an in-memory database has no
    /// disk to sync and ignores it).
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub async fn connect_with(url: &str, durability: Durability) -> Result<Self, crate::DbError> {
        let (options, pool_options) = Self::options(url, durability)?;
        let pool = pool_options
            .connect_with(options)
            .await
            .map_err(crate::error::ctx("opening SQLite database"))?;
        let store = SqliteStore {
            pool,
            durability,
            lines: crate::imp::prompt_lines::LineCache::default(),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// [`connect_with`](Self::connect_with) in two halves: the store, with no connection
    /// opened and nothing created yet (no I/O here), and [`migrate`](Self::migrate), which
    /// opens the file (creating it), gives it the schema and converts what an older build
    /// wrote. Nothing else may use the store before `migrate` has returned `Ok`: a backtest
    /// runs its first ticks meanwhile (`backtest::RunOptions::store_ready`).
    ///
    /// # Errors
    /// [`DbError::Invalid`](crate::DbError::Invalid) for a malformed URL.
    pub fn connect_lazy(url: &str, durability: Durability) -> Result<Self, crate::DbError> {
        let (options, pool_options) = Self::options(url, durability)?;
        Ok(SqliteStore {
            pool: pool_options.connect_lazy_with(options),
            durability,
            lines: crate::imp::prompt_lines::LineCache::default(),
        })
    }

    /// The schema of this build on the store's database: the baseline on an empty one, the
    /// migrations not applied yet, and snapshots an older build wrote converted to line lists
    /// ([`connect_with`](Self::connect_with) calls it; after
    /// [`connect_lazy`](Self::connect_lazy) the caller does).
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    pub async fn migrate(&self) -> Result<(), crate::DbError> {
        apply_sqlite_baseline(&self.pool).await?;
        SQLITE_MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|source| crate::DbError::Migrate {
                backend: "SQLite",
                source,
            })?;
        // Snapshots an older build wrote keep their texts until converted to line lists.
        crate::imp::tick::convert_legacy_snapshots(self)
            .await
            .map(|_| ())
    }

    /// The connection and pool options of a store at `url` with `durability`.
    fn options(
        url: &str,
        durability: Durability,
    ) -> Result<(SqliteConnectOptions, SqlitePoolOptions), crate::DbError> {
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let options = base_options(url)?.create_if_missing(true);
        let options = if in_memory {
            options
        } else {
            match durability {
                Durability::Normal => options
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal),
                // PERSIST: the journal file is reused across transactions, not created and
                // deleted by each; `close` deletes it. Statement and savepoint journals stay in
                // memory instead of temporary files (4,000 writes fewer in the README backtest).
                // 8 KiB pages (a new file's; an existing file keeps its own): SQLite writes a
                // page per system call, and a journaled page in three (its number, the page,
                // a checksum), so half as many pages is ≈a third fewer writes — 10,619 → 7,142
                // in the README backtest, with the file no larger (7,020,544 → 6,995,968 B).
                Durability::Scratch => options
                    .journal_mode(SqliteJournalMode::Persist)
                    .synchronous(SqliteSynchronous::Off)
                    .pragma("temp_store", "MEMORY")
                    .page_size(SCRATCH_PAGE_SIZE)
                    .locking_mode(sqlx::sqlite::SqliteLockingMode::Exclusive),
            }
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
        Ok((options, pool_options))
    }

    /// Opens an existing database file without creating it or applying migrations
    /// ([`open_existing`](crate::open_existing)).
    ///
    /// # Errors
    /// [`DbError::Invalid`](crate::DbError::Invalid) for a malformed URL,
    /// [`DbError::Backend`](crate::DbError::Backend) when the file does not exist or cannot be
    /// opened, [`DbError::NotMigrated`](crate::DbError::NotMigrated).
    pub async fn open_existing(url: &str) -> Result<Self, crate::DbError> {
        // Whatever `mode=rwc` says: a mistyped path is an error, not a new database.
        let options = base_options(url)?.create_if_missing(false);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(options)
            .await
            .map_err(crate::error::ctx("opening SQLite database"))?;
        crate::check_migrated(&pool, &SQLITE_MIGRATOR, "SQLite").await?;
        Ok(SqliteStore {
            pool,
            durability: Durability::Normal,
            lines: crate::imp::prompt_lines::LineCache::default(),
        })
    }

    /// Leaves the file alone holding every row and closes every connection; calls made
    /// afterwards fail. With [`Durability::Normal`], a `TRUNCATE` checkpoint folds the
    /// write-ahead log into the file (fsyncing both); with [`Durability::Scratch`], the
    /// rollback journal is deleted (`journal_mode = DELETE`).
    ///
    /// # Errors
    /// [`DbError::Backend`](crate::DbError::Backend) when the checkpoint fails (the rows stay
    /// in the log, which the next open folds in) or the journal cannot be deleted.
    pub async fn close(&self) -> Result<(), crate::DbError> {
        let finish = match self.durability {
            Durability::Normal => "PRAGMA wal_checkpoint(TRUNCATE)",
            Durability::Scratch => "PRAGMA journal_mode = DELETE",
        };
        let finished = sqlx::query(finish)
            .execute(&self.pool)
            .await
            .map_err(crate::error::ctx("finishing the SQLite file"));
        self.pool.close().await;
        finished.map(|_| ())
    }

    /// The connection pool, for queries the store traits don't cover.
    #[must_use]
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

/// SQLite binds uuids, decimals and times as TEXT (times fixed-width, see
/// [`time_text`](crate::time_text)) and a symbol list as JSON text; one writer at a time, so no
/// row locks, and write transactions take the write lock when they begin.
impl Dialect for Sqlite {
    /// Generated multi-row statements use anonymous `?` parameters: the driver looks a numbered
    /// one up by name, a linear scan per parameter in SQLite (quadratic in a long `VALUES`).
    const NUMBERED_PARAMS: bool = false;
    const USERS: &'static str = "users";
    const BEGIN: &'static str = "BEGIN IMMEDIATE";
    const SKIP_LOCKED: &'static str = "";

    type Id = String;
    type OptId = Option<String>;
    type Dec = String;
    type OptDec = Option<String>;
    type Ts = String;
    type OptTs = Option<String>;
    type Symbols = String;

    fn id(v: Uuid) -> String {
        v.to_string()
    }
    fn oid(v: Option<Uuid>) -> Option<String> {
        v.map(Self::id)
    }
    fn dec(v: Decimal) -> String {
        v.to_string()
    }
    fn odec(v: Option<Decimal>) -> Option<String> {
        v.map(Self::dec)
    }
    fn ts(v: DateTime<Utc>) -> String {
        crate::time_text(v)
    }
    fn ots(v: Option<DateTime<Utc>>) -> Option<String> {
        v.map(Self::ts)
    }
    fn symbols(v: &[String]) -> String {
        // Serialising a list of strings cannot fail.
        serde_json::to_string(v).unwrap_or_else(|_| "[]".to_owned())
    }

    fn bind_plain<'q, T: Plain<'q>>(q: SqlxQuery<'q, Self>, v: T) -> SqlxQuery<'q, Self> {
        q.bind(v)
    }
}

impl Backend for SqliteStore {
    type Db = Sqlite;

    fn pool(&self) -> impl On<Sqlite> {
        &self.pool
    }

    fn begin(
        &self,
    ) -> impl Future<Output = Result<Transaction<'static, Sqlite>, sqlx::Error>> + Send {
        self.pool.begin_with(Sqlite::BEGIN)
    }

    fn lines(&self) -> &crate::imp::prompt_lines::LineCache {
        &self.lines
    }
}

impl Leases for SqliteStore {}
