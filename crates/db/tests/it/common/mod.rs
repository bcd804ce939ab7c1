//! Backends for the contract suite: a fresh SQLite file per test, and a fresh PostgreSQL database
//! per test (created on the server `TEST_DATABASE_URL` names, dropped when the test ends).

#![allow(dead_code)]

use std::future::Future;

use db::test_support::pg::TestDatabase;
use db::{PgStore, SqliteStore};
use sqlx::Row;

const DB_PREFIX: &str = "agent_db_test_";

/// Raw SQL, bypassing the store API (for database-level rejection tests).
pub(crate) trait RawSql {
    fn exec(&self, sql: &str) -> impl Future<Output = Result<u64, sqlx::Error>> + Send;
    fn count(&self, sql: &str) -> impl Future<Output = i64> + Send;
}

impl RawSql for SqliteStore {
    async fn exec(&self, sql: &str) -> Result<u64, sqlx::Error> {
        sqlx::query(sql)
            .execute(self.pool())
            .await
            .map(|r| r.rows_affected())
    }
    async fn count(&self, sql: &str) -> i64 {
        let row = sqlx::query(sql).fetch_one(self.pool()).await.unwrap();
        row.get::<i64, _>(0)
    }
}

impl RawSql for PgStore {
    async fn exec(&self, sql: &str) -> Result<u64, sqlx::Error> {
        sqlx::query(sql)
            .execute(self.pool())
            .await
            .map(|r| r.rows_affected())
    }
    async fn count(&self, sql: &str) -> i64 {
        let row = sqlx::query(sql).fetch_one(self.pool()).await.unwrap();
        row.get::<i64, _>(0)
    }
}

impl RawSql for db::Store {
    async fn exec(&self, sql: &str) -> Result<u64, sqlx::Error> {
        match self {
            db::Store::Sqlite(s) => s.exec(sql).await,
            db::Store::Postgres(s) => s.exec(sql).await,
        }
    }
    async fn count(&self, sql: &str) -> i64 {
        match self {
            db::Store::Sqlite(s) => s.count(sql).await,
            db::Store::Postgres(s) => s.count(sql).await,
        }
    }
}

/// A migrated SQLite database behind the run-time [`db::Store`] enum (exercises its dispatch).
pub(crate) struct StoreHarness {
    pub store: db::Store,
    _dir: tempfile::TempDir,
}

pub(crate) async fn sqlite_via_store() -> StoreHarness {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("test.sqlite").display()
    );
    let store = db::connect(&url).await.expect("open SQLite store");
    StoreHarness { store, _dir: dir }
}

pub(crate) struct SqliteHarness {
    pub store: SqliteStore,
    _dir: tempfile::TempDir,
}

/// A migrated SQLite database in a fresh temporary directory, opened through `db::connect`.
pub(crate) async fn sqlite() -> SqliteHarness {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("test.sqlite").display()
    );
    let store = match db::connect(&url).await.expect("open SQLite store") {
        db::Store::Sqlite(s) => s,
        db::Store::Postgres(_) => unreachable!("a sqlite URL opens SQLite"),
    };
    SqliteHarness { store, _dir: dir }
}

/// A fresh, migrated PostgreSQL database (dropped with the harness). Fails, never skips, when no
/// server is reachable.
pub(crate) struct PgHarness {
    pub store: PgStore,
    db: TestDatabase,
}

pub(crate) async fn postgres() -> PgHarness {
    let db = TestDatabase::create(DB_PREFIX, 6).await;
    let store = PgStore::from_pool(db.pool.clone())
        .await
        .expect("migrate test database");
    PgHarness { store, db }
}

impl PgHarness {
    /// A URL of the test database (TEST_DATABASE_URL with the database name replaced).
    pub(crate) fn url(&self) -> String {
        self.db.url()
    }
}

/// A connection to the SQLite file at `url` (created), migrated up to but not including
/// `version`: the schema an older build wrote, for migration tests.
pub(crate) async fn sqlite_before(url: &str, version: i64) -> sqlx::SqliteConnection {
    use sqlx::ConnectOptions;
    use sqlx::migrate::Migrate;
    let mut conn = url
        .parse::<sqlx::sqlite::SqliteConnectOptions>()
        .unwrap()
        .foreign_keys(true)
        .connect()
        .await
        .unwrap();
    conn.ensure_migrations_table().await.unwrap();
    for m in db::SQLITE_MIGRATOR.iter().filter(|m| m.version < version) {
        conn.apply(m).await.unwrap();
    }
    conn
}

/// `pool`'s database migrated up to but not including `version`.
pub(crate) async fn postgres_before(pool: &sqlx::PgPool, version: i64) {
    use sqlx::migrate::Migrate;
    let mut conn = pool.acquire().await.unwrap();
    conn.ensure_migrations_table().await.unwrap();
    for m in db::POSTGRES_MIGRATOR.iter().filter(|m| m.version < version) {
        conn.apply(m).await.unwrap();
    }
}

/// Each case of the module `crate::$module::cases` (an `async fn(&S)` per case) as a test on
/// every backend: SQLite, SQLite through the `Store` enum, PostgreSQL.
macro_rules! on_every_backend {
    ($module:ident; $($case:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $case() {
                    let h = crate::common::sqlite().await;
                    crate::$module::cases::$case(&h.store).await;
                }
            )*
        }
        mod sqlite_via_store_enum {
            $(
                #[tokio::test]
                async fn $case() {
                    let h = crate::common::sqlite_via_store().await;
                    crate::$module::cases::$case(&h.store).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $case() {
                    let h = crate::common::postgres().await;
                    crate::$module::cases::$case(&h.store).await;
                }
            )*
        }
    };
}
pub(crate) use on_every_backend;
