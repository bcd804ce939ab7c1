//! `db::connect`: the URL picks the backend, SQLite files are created on first use, migrations run
//! once and re-opening keeps the data.

use crate::common;

use db::test_support::{sample_skill, sample_user};
use db::{DbError, Durability, RegistryStore, Store};

/// A connection setting, as text.
async fn pragma(lite: &db::SqliteStore, name: &str) -> String {
    sqlx::query_scalar::<_, String>(&format!("SELECT CAST({name} AS TEXT) FROM pragma_{name}"))
        .fetch_one(lite.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn a_sqlite_file_is_created_on_first_use_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested-name.sqlite");
    assert!(!path.exists());
    let url = format!("sqlite://{}?mode=rwc", path.display());

    let store = db::connect(&url).await.unwrap();
    assert!(matches!(store, Store::Sqlite(_)));
    assert_eq!(store.backend_name(), "sqlite");
    assert!(path.exists(), "the file is created by connect");
    let user = sample_user();
    let skill = sample_skill(user.id);
    store.upsert_user(&user).await.unwrap();
    store.create_skill(&skill).await.unwrap();
    drop(store);

    // Re-opening applies no migration twice and sees the same rows.
    let again = db::connect(&url).await.unwrap();
    assert_eq!(again.get_skill(skill.id).await.unwrap(), skill);

    // The file is in WAL mode.
    let Store::Sqlite(lite) = &again else {
        unreachable!("matched above")
    };
    assert_eq!(pragma(lite, "journal_mode").await, "wal");
    // A commit is fsynced at checkpoints (synchronous = NORMAL is 1).
    assert_eq!(pragma(lite, "synchronous").await, "1");
}

#[tokio::test]
async fn a_scratch_sqlite_file_skips_fsyncs_and_close_leaves_every_row_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim.db");
    let url = format!("sqlite://{}?mode=rwc", path.display());

    let store = db::connect_with(&url, Durability::Scratch).await.unwrap();
    let Store::Sqlite(lite) = &store else {
        panic!("a sqlite URL opens the SQLite store")
    };
    assert_eq!(pragma(lite, "synchronous").await, "0", "synchronous = OFF");
    assert_eq!(
        pragma(lite, "temp_store").await,
        "2",
        "temporary journals in memory"
    );
    assert_eq!(
        pragma(lite, "journal_mode").await,
        "persist",
        "a rollback journal"
    );
    assert_eq!(
        pragma(lite, "page_size").await,
        db::SCRATCH_PAGE_SIZE.to_string(),
        "a new scratch file's pages"
    );
    let user = sample_user();
    let skill = sample_skill(user.id);
    store.upsert_user(&user).await.unwrap();
    store.create_skill(&skill).await.unwrap();
    let journal = dir.path().join("sim.db-journal");
    assert!(journal.exists(), "the journal is kept between transactions");

    store.close().await.unwrap();
    assert!(!journal.exists(), "close deletes the journal");
    assert!(
        !dir.path().join("sim.db-wal").exists(),
        "there never was a log"
    );
    // The file alone holds the rows; a normal open reads them back (and turns WAL on).
    let again = db::connect(&url).await.unwrap();
    assert_eq!(again.get_skill(skill.id).await.unwrap(), skill);
    let Store::Sqlite(lite) = &again else {
        unreachable!("matched above")
    };
    assert_eq!(
        pragma(lite, "page_size").await,
        db::SCRATCH_PAGE_SIZE.to_string(),
        "a file keeps the page size it was created with"
    );
}

#[tokio::test]
async fn an_in_memory_sqlite_store_keeps_its_data_across_calls() {
    let store = db::connect("sqlite::memory:").await.unwrap();
    let user = sample_user();
    let skill = sample_skill(user.id);
    store.upsert_user(&user).await.unwrap();
    store.create_skill(&skill).await.unwrap();
    assert_eq!(store.get_skill(skill.id).await.unwrap(), skill);
}

#[tokio::test]
async fn other_schemes_are_refused_by_name() {
    match db::connect("mysql://root@localhost/db").await {
        Err(DbError::UnsupportedUrl { scheme }) => assert_eq!(scheme, "mysql"),
        other => panic!("expected UnsupportedUrl, got {other:?}"),
    }
}

#[tokio::test]
async fn a_postgres_url_opens_the_postgres_store() {
    let h = common::postgres().await;
    let store = db::connect(&h.url()).await.unwrap();
    assert_eq!(store.backend_name(), "postgres");
    let user = sample_user();
    store.upsert_user(&user).await.unwrap();
    let skill = sample_skill(user.id);
    store.create_skill(&skill).await.unwrap();
    assert_eq!(store.get_skill(skill.id).await.unwrap(), skill);
    // Closing our pool before the harness drops the database.
    if let Store::Postgres(s) = store {
        s.pool().close().await;
    }
}
