//! The recall migration (`*_outcome_recall.sql`) over a database the previous schema wrote: its
//! rows stay, `market_condition` is backfilled from each outcome's market snapshot, its
//! annotations become searchable, and the full-text index follows later writes.

use db::{MemoryScope, OutcomeStore, PgStore, SqliteStore};
use outcomes::{OutcomeScore, RecallQuery, SearchQuery};
use types::RegimeTag;
use uuid::Uuid;

use db::test_support::at;

/// The first migration of the recall memory.
const RECALL_MIGRATION: i64 = 20261124000060;

/// The ids the old rows were written with.
struct Old {
    deployment: Uuid,
    user: Uuid,
    outcome: Uuid,
    annotation: Uuid,
}

/// Rows in the schema before [`RECALL_MIGRATION`]: a user, skill, deployment, tick, a
/// `volatile` market snapshot, its outcome (without the new columns), and an annotation on it.
fn old_rows(users_table: &str, tags: &str) -> (Old, Vec<String>) {
    let old = Old {
        deployment: Uuid::new_v4(),
        user: Uuid::new_v4(),
        outcome: Uuid::new_v4(),
        annotation: Uuid::new_v4(),
    };
    let (skill, tick, market) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let (d, user) = (old.deployment, old.user);
    let t = db::time_text(at(0));
    let sql = vec![
        format!("INSERT INTO {users_table} (id) VALUES ('{user}')"),
        format!("INSERT INTO skills (id, user_id, name) VALUES ('{skill}', '{user}', 'old')"),
        format!(
            "INSERT INTO skill_versions (skill_id, version, body, model) \
             VALUES ('{skill}', 1, '{{}}', 'builtin/scripted')"
        ),
        format!(
            "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, \
             initial_equity_usd, equity_usd) VALUES ('{d}', '{user}', '{skill}', 1, 'paper', '10000', '10000')"
        ),
        format!(
            "INSERT INTO decision_snapshots (id, deployment_id, tick_at, system_prompt, context, \
             verdict, model) VALUES ('{tick}', '{d}', '{t}', 's', 'c', '{{\"kind\": \"no_op\"}}', 'builtin/scripted')"
        ),
        format!(
            "INSERT INTO market_snapshots (id, deployment_id, decision_snapshot_id, tick_at, symbol, \
             reference_symbol, market_condition) \
             VALUES ('{market}', '{d}', '{tick}', '{t}', 'BTC', 'BTC', 'volatile')"
        ),
        format!(
            "INSERT INTO trade_outcomes (id, deployment_id, decision_snapshot_id, snapshot_id, \
             tick_at, symbol, direction, entry_price, verdict) \
             VALUES ('{}', '{d}', '{tick}', '{market}', '{t}', 'BTC', 'long', '65000', 'executed')",
            old.outcome
        ),
        format!(
            "INSERT INTO trade_annotations (id, deployment_id, outcome_id, annotation, tags, created_at) \
             VALUES ('{}', '{d}', '{}', 'Liquidation cascade, ignore', '{tags}', '{t}')",
            old.annotation, old.outcome
        ),
    ];
    (old, sql)
}

/// What the migrated store holds and finds.
async fn check<S: OutcomeStore>(store: &S, old: &Old) {
    let rows = store.outcomes(old.deployment, 10).await.unwrap();
    assert_eq!(rows.len(), 1, "the old outcome is kept");
    let o = &rows[0];
    assert_eq!(o.id, old.outcome);
    assert_eq!(o.market_condition, RegimeTag::Volatile, "backfilled");
    assert_eq!((o.reason.clone(), o.score.narrative.clone()), (None, None));
    let recalled = store
        .recall_outcomes(MemoryScope::User(old.user), &RecallQuery::new(at(1), 10))
        .await
        .unwrap();
    assert_eq!(recalled.len(), 1);
    assert_eq!(recalled[0].indicators.market_condition, RegimeTag::Volatile);

    let search = |text: &str| SearchQuery {
        as_of: at(48 * 60),
        text: text.into(),
        limit: 10,
    };
    let scope = MemoryScope::Deployment(old.deployment);
    let hits = store
        .search_memory(scope, &search("liquidations"))
        .await
        .unwrap();
    assert_eq!(hits.hits.len(), 1, "the old annotation is searchable");
    assert_eq!(hits.hits[0].id, old.annotation);
    assert_eq!(hits.hits[0].symbol.as_deref(), Some("BTC"));
    assert_eq!(hits.hits[0].text, "Liquidation cascade, ignore\nTags: news");
    // Scoring the old outcome now indexes its narrative.
    let score = OutcomeScore {
        scored_at: Some(at(24 * 60)),
        narrative: Some("BTC long - Grade none\nCascade".into()),
        ..OutcomeScore::default()
    };
    assert_eq!(
        store.score_outcomes(&[(old.outcome, score)]).await.unwrap(),
        1
    );
    let hits = store
        .search_memory(scope, &search("cascade"))
        .await
        .unwrap();
    assert_eq!(
        hits.hits.len(),
        2,
        "the narrative and the annotation: {hits:?}"
    );
}

#[tokio::test]
async fn sqlite_the_recall_migration_keeps_backfills_and_indexes_old_rows() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("old.sqlite").display()
    );
    let (old, sql) = old_rows("users", "[\"news\"]");
    {
        let mut conn = crate::common::sqlite_before(&url, RECALL_MIGRATION).await;
        for s in &sql {
            sqlx::query(s)
                .execute(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        }
    }
    // Opening the store applies the new migrations.
    let store = SqliteStore::connect(&url).await.unwrap();
    check(&store, &old).await;
}

#[tokio::test]
async fn postgres_the_recall_migration_keeps_backfills_and_indexes_old_rows() {
    let test_db = db::test_support::pg::TestDatabase::create("agent_db_test_", 4).await;
    let pool = &test_db.pool;
    let (old, sql) = old_rows("auth.users", "{news}");
    crate::common::postgres_before(pool, RECALL_MIGRATION).await;
    for s in &sql {
        sqlx::query(s)
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    let store = PgStore::from_pool(pool.clone()).await.unwrap();
    check(&store, &old).await;
    // As the owner, under row-level security, the same.
    check_as_user(&store, &old).await;
}

/// The owner's search of the migrated rows (RLS applies to the new columns as to the old).
async fn check_as_user(store: &PgStore, old: &Old) {
    let hits = store
        .as_user(old.user)
        .search_memory(
            MemoryScope::User(old.user),
            &SearchQuery {
                as_of: at(48 * 60),
                text: "cascade".into(),
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert_eq!(hits.hits.len(), 2);
    let stranger = store
        .as_user(Uuid::new_v4())
        .search_memory(
            MemoryScope::User(old.user),
            &SearchQuery {
                as_of: at(48 * 60),
                text: "cascade".into(),
                limit: 10,
            },
        )
        .await
        .unwrap();
    assert!(stranger.hits.is_empty());
}

/// SQLite: the FTS5 tables stay in step with their content tables through scoring, annotating
/// and a cascading delete (FTS5's own `integrity-check` compares the index with the content).
#[tokio::test]
async fn sqlite_full_text_tables_stay_in_step_through_updates_and_cascades() {
    use db::test_support::{sample_outcome_rows, sample_snapshot, seed, tick_record};
    use db::{
        AnnotationTarget, NewAnnotation, OutcomeWrites, RegistryStore, TickRecord, TickStore,
    };

    let dir = tempfile::tempdir().unwrap();
    let url = format!(
        "sqlite://{}?mode=rwc",
        dir.path().join("fts.sqlite").display()
    );
    let store = SqliteStore::connect(&url).await.unwrap();
    let mut deployments = Vec::new();
    for _ in 0..2 {
        let fx = seed(&store).await.unwrap();
        let snapshot = sample_snapshot(fx.deployment.id, at(0));
        let (market, outcome) = sample_outcome_rows(&snapshot);
        store
            .record_tick(&TickRecord {
                outcomes: OutcomeWrites {
                    snapshots: vec![market],
                    outcomes: vec![outcome.clone()],
                    scores: vec![],
                },
                ..tick_record(snapshot)
            })
            .await
            .unwrap();
        let score = OutcomeScore {
            scored_at: Some(at(24 * 60)),
            narrative: Some("BTC long - Grade none\nSqueeze".into()),
            ..OutcomeScore::default()
        };
        store.score_outcomes(&[(outcome.id, score)]).await.unwrap();
        store
            .annotate(&NewAnnotation {
                id: Uuid::new_v4(),
                target: AnnotationTarget::Outcome(outcome.id),
                annotation: "Short squeeze".into(),
                tags: vec!["squeeze".into()],
                created_at: at(5),
            })
            .await
            .unwrap();
        deployments.push(fx);
    }
    let check = async || {
        for table in ["trade_outcomes_fts", "trade_annotations_fts"] {
            // With rank 1, FTS5 also compares the index with the external content table.
            sqlx::query(&format!(
                "INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)"
            ))
            .execute(store.pool())
            .await
            .unwrap_or_else(|e| panic!("{table}: {e}"));
        }
    };
    check().await;
    let search = SearchQuery {
        as_of: at(48 * 60),
        text: "squeeze".into(),
        limit: 10,
    };
    let gone = &deployments[0];
    sqlx::query("DELETE FROM users WHERE id = $1")
        .bind(gone.user.id.to_string())
        .execute(store.pool())
        .await
        .unwrap();
    assert!(
        store.get_deployment(gone.deployment.id).await.is_err(),
        "cascaded"
    );
    check().await;
    let kept = &deployments[1];
    let hits = store
        .search_memory(MemoryScope::User(kept.user.id), &search)
        .await
        .unwrap();
    assert_eq!(hits.hits.len(), 2, "{hits:?}");
    assert!(
        store
            .search_memory(MemoryScope::User(gone.user.id), &search)
            .await
            .unwrap()
            .hits
            .is_empty()
    );
    let left: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM trade_outcomes_fts WHERE trade_outcomes_fts MATCH 'squeeze') \
         + (SELECT count(*) FROM trade_annotations_fts WHERE trade_annotations_fts MATCH 'squeeze')",
    )
    .fetch_one(store.pool())
    .await
    .unwrap();
    assert_eq!(left, 2, "the deleted rows left the index");
}
