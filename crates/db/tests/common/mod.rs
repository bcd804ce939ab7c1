//! Backends for the contract suite: a fresh SQLite file per test, and a fresh PostgreSQL database
//! per test (created on the server `TEST_DATABASE_URL` names, dropped when the test ends).

#![allow(dead_code)]

use std::future::Future;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use db::{PgStore, SqliteStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection, Executor, PgConnection, Row};

pub const DEFAULT_TEST_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";
const DB_PREFIX: &str = "agent_db_test_";

/// Raw SQL, bypassing the store API (for database-level rejection tests).
pub trait RawSql {
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
pub struct StoreHarness {
    pub store: db::Store,
    _dir: tempfile::TempDir,
}

pub async fn sqlite_via_store() -> StoreHarness {
    let dir = tempfile::tempdir().expect("temporary directory");
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("test.sqlite").display()
    );
    let store = db::connect(&url).await.expect("open SQLite store");
    StoreHarness { store, _dir: dir }
}

pub struct SqliteHarness {
    pub store: SqliteStore,
    _dir: tempfile::TempDir,
}

/// A migrated SQLite database in a fresh temporary directory, opened through `db::connect`.
pub async fn sqlite() -> SqliteHarness {
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

pub struct PgHarness {
    pub store: PgStore,
    admin: PgConnectOptions,
    name: String,
}

fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_TEST_DATABASE_URL.to_owned())
}

fn unix_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A fresh, migrated PostgreSQL database. Fails (never skips) when no server is reachable.
pub async fn postgres() -> PgHarness {
    let url = admin_url();
    let admin = PgConnectOptions::from_str(&url)
        .unwrap_or_else(|e| panic!("TEST_DATABASE_URL {url:?} is not a PostgreSQL URL: {e}"));
    let mut conn = match admin.connect().await {
        Ok(c) => c,
        Err(e) => panic!(
            "cannot reach PostgreSQL at {url} ({e}).\n\
             The PostgreSQL contract tests need a server: start it with\n    \
             pg_ctlcluster --skip-systemctl-redirect 15 main start\n\
             (trust auth for user postgres on 127.0.0.1:5432), or point TEST_DATABASE_URL at a \
             server where the user may CREATE DATABASE and CREATE ROLE."
        ),
    };
    sweep_stale(&mut conn).await;
    let name = format!(
        "{DB_PREFIX}{}_{}",
        unix_secs(),
        uuid::Uuid::new_v4().simple()
    );
    conn.execute(format!("CREATE DATABASE \"{name}\"").as_str())
        .await
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name} on {url}: {e}"));
    conn.close().await.ok();

    let pool = PgPoolOptions::new()
        .max_connections(6)
        .connect_with(admin.clone().database(&name))
        .await
        .unwrap_or_else(|e| panic!("connect to test database {name}: {e}"));
    let store = PgStore::from_pool(pool)
        .await
        .expect("migrate test database");
    PgHarness { store, admin, name }
}

/// Drops test databases left by runs that were killed more than an hour ago.
async fn sweep_stale(conn: &mut PgConnection) {
    let Ok(rows) =
        sqlx::query("SELECT datname FROM pg_database WHERE datname LIKE 'agent_db_test_%'")
            .fetch_all(&mut *conn)
            .await
    else {
        return;
    };
    let now = unix_secs();
    for row in rows {
        let name: String = row.get(0);
        let created = name
            .strip_prefix(DB_PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse::<u64>().ok());
        if created.is_some_and(|c| now.saturating_sub(c) > 3600) {
            let _ = conn
                .execute(format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str())
                .await;
        }
    }
}

impl PgHarness {
    /// A URL of the test database (TEST_DATABASE_URL with the database name replaced).
    pub fn url(&self) -> String {
        let admin = admin_url();
        let (base, _) = admin.rsplit_once('/').expect("a URL with a database path");
        format!("{base}/{}", self.name)
    }
}

impl Drop for PgHarness {
    fn drop(&mut self) {
        // Drop the database from a separate thread with its own runtime: Drop cannot await.
        let admin = self.admin.clone();
        let name = std::mem::take(&mut self.name);
        let pool = self.store.pool().clone();
        let dropper = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                drop(pool);
                if let Ok(mut conn) = admin.connect().await {
                    let _ = conn
                        .execute(
                            format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)").as_str(),
                        )
                        .await;
                    let _ = conn.close().await;
                }
            });
        });
        let _ = dropper.join();
    }
}
