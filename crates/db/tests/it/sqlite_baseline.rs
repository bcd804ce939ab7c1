//! The SQLite baseline (`migrations/sqlite-baseline.sql`): an empty database given the script
//! ends exactly where running every migration ends — the same schema, the same migration
//! records — so the migrator treats both alike.

use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
use sqlx::{Row, SqlitePool};
use std::str::FromStr;

const BASELINE_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../migrations/sqlite-baseline.sql"
);

async fn empty() -> SqlitePool {
    let options = SqliteConnectOptions::from_str("sqlite::memory:")
        .expect("url")
        .foreign_keys(true);
    SqlitePoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(options)
        .await
        .expect("in-memory database")
}

/// `sqlite_master`'s statements in their order, without SQLite's own objects and the FTS5
/// shadow tables (what the baseline holds).
async fn schema(pool: &SqlitePool) -> String {
    let rows = sqlx::query(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' \
         ESCAPE '\\' AND name NOT IN (SELECT name FROM pragma_table_list WHERE type = 'shadow') \
         ORDER BY rowid",
    )
    .fetch_all(pool)
    .await
    .expect("schema");
    let mut script = String::from(
        "-- Generated from migrations/sqlite by the db crate's test `sqlite_baseline` \
         (UPDATE_SQLITE_BASELINE=1 rewrites it):\n-- what every migration builds on an empty \
         database, given to an empty database in their stead. Do not edit.\n",
    );
    for row in rows {
        script.push('\n');
        script.push_str(&row.get::<String, _>("sql"));
        script.push_str(";\n");
    }
    script
}

/// Every table's columns and every index's, foreign keys included: what the statements build,
/// compared beside the statements' text.
async fn shape(pool: &SqlitePool) -> Vec<String> {
    let rows = sqlx::query(
        "SELECT m.name AS t, p.* FROM sqlite_master m, pragma_table_xinfo(m.name) p \
         WHERE m.type = 'table' ORDER BY m.name, p.cid",
    )
    .fetch_all(pool)
    .await
    .expect("columns");
    let mut out: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "{}.{} {} notnull={} default={:?} pk={}",
                r.get::<String, _>("t"),
                r.get::<String, _>("name"),
                r.get::<String, _>("type"),
                r.get::<i64, _>("notnull"),
                r.get::<Option<String>, _>("dflt_value"),
                r.get::<i64, _>("pk"),
            )
        })
        .collect();
    let fks = sqlx::query(
        "SELECT m.name AS t, f.* FROM sqlite_master m, pragma_foreign_key_list(m.name) f \
         WHERE m.type = 'table' ORDER BY m.name, f.id, f.seq",
    )
    .fetch_all(pool)
    .await
    .expect("foreign keys");
    out.extend(fks.iter().map(|r| {
        format!(
            "{} fk {}→{}.{:?} on delete {}",
            r.get::<String, _>("t"),
            r.get::<String, _>("from"),
            r.get::<String, _>("table"),
            r.get::<Option<String>, _>("to"),
            r.get::<String, _>("on_delete"),
        )
    }));
    out
}

async fn migrations(pool: &SqlitePool) -> Vec<(i64, String, bool, Vec<u8>)> {
    sqlx::query(
        "SELECT version, description, success, checksum FROM _sqlx_migrations ORDER BY version",
    )
    .fetch_all(pool)
    .await
    .expect("migrations")
    .iter()
    .map(|r| {
        (
            r.get("version"),
            r.get("description"),
            r.get("success"),
            r.get("checksum"),
        )
    })
    .collect()
}

#[tokio::test]
async fn the_baseline_builds_what_the_migrations_build() {
    let migrated = empty().await;
    db::SQLITE_MIGRATOR
        .run(&migrated)
        .await
        .expect("migrations");
    let expected = schema(&migrated).await;
    if std::env::var_os("UPDATE_SQLITE_BASELINE").is_some() {
        std::fs::write(BASELINE_FILE, &expected).expect("writing the baseline");
    }
    assert!(
        db::SQLITE_BASELINE == expected,
        "migrations/sqlite-baseline.sql is not what the migrations build: a migration was \
         added or changed. Rewrite it with `UPDATE_SQLITE_BASELINE=1 cargo test -p db \
         --test it sqlite_baseline` (then rebuild: the script is embedded) and commit it"
    );

    let based = empty().await;
    assert!(db::apply_sqlite_baseline(&based).await.expect("baseline"));
    assert_eq!(schema(&based).await, expected);
    assert_eq!(shape(&based).await, shape(&migrated).await);
    assert_eq!(migrations(&based).await, migrations(&migrated).await);
    // The migrator finds nothing to do and every checksum matching.
    db::SQLITE_MIGRATOR
        .run(&based)
        .await
        .expect("nothing to migrate");
    assert_eq!(migrations(&based).await, migrations(&migrated).await);
    // A database that holds anything is the migrator's.
    assert!(!db::apply_sqlite_baseline(&based).await.expect("not empty"));
    assert!(
        !db::apply_sqlite_baseline(&migrated)
            .await
            .expect("not empty")
    );
}

/// A store opened on a new file gets the baseline, and one opened again finds it migrated.
#[tokio::test]
async fn a_new_file_gets_the_baseline_and_opens_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("new.db").display());
    let store = db::SqliteStore::connect(&url).await.expect("new file");
    store.close().await.expect("close");
    let again = db::SqliteStore::connect(&url)
        .await
        .expect("the same file again");
    again.close().await.expect("close");
    let pool = SqlitePool::connect(&url).await.expect("raw");
    let migrated = empty().await;
    db::SQLITE_MIGRATOR
        .run(&migrated)
        .await
        .expect("migrations");
    assert_eq!(schema(&pool).await, schema(&migrated).await);
    assert_eq!(migrations(&pool).await, migrations(&migrated).await);
}
