//! The tick claim reads its rows off `deployments_claim_idx` (in the ORDER BY's order, stopping
//! at the limit) instead of sorting every due deployment; and a PostgreSQL store's pool has the
//! size and acquire timeout it was opened with.

use std::time::Duration;

use chrono::Utc;
use db::test_support::{Fixture, at, claim_due_sql, seed};
use db::{DbError, LeaseStore, PoolConfig, RegistryStore};

use crate::common::{self, RawSql};

/// Deployments all due at one bar close, as at a fleet's bar close: enough that reading them
/// all and sorting them costs far more than reading the first `LIMIT` off the index.
const DUE: i64 = 3_000;
const LIMIT: i64 = 100;

/// The statement inserting `DUE` active deployments of `user`'s `skill`, all due at `at(0)`.
fn insert_due(user: uuid::Uuid, skill: uuid::Uuid, postgres: bool) -> String {
    if postgres {
        format!(
            "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, \
             initial_equity_usd, equity_usd, next_tick_at) \
             SELECT format('00000000-0000-4000-8000-%s', lpad(i::text, 12, '0'))::uuid, \
             '{user}', '{skill}', 1, 'paper', 10000, 10000, '{}'::timestamptz \
             FROM generate_series(1, {DUE}) i",
            at(0).to_rfc3339()
        )
    } else {
        // SQLite keeps times as RFC 3339 text with 6 fractional digits.
        format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {DUE}) \
             INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, \
             initial_equity_usd, equity_usd, next_tick_at) \
             SELECT printf('00000000-0000-4000-8000-%012d', i), '{user}', '{skill}', 1, 'paper', \
             '10000', '10000', '{}' FROM n",
            db::time_text(at(0))
        )
    }
}

/// The seeded fixture (its deployment unscheduled: due before any other) and `DUE` more
/// deployments due at `at(0)`, with fresh statistics.
async fn seed_due<S: RegistryStore + RawSql>(store: &S, postgres: bool) -> Fixture {
    let fx = seed(store).await.unwrap();
    store
        .exec(&insert_due(fx.user.id, fx.skill.id, postgres))
        .await
        .unwrap();
    store.exec("ANALYZE").await.unwrap();
    fx
}

/// `plan` reads `index` and has no `sort` (how the backend's plan names one); the store's own
/// claim still takes the earliest rows, in order, up to its limit.
async fn assert_claims_off_the_index<S: LeaseStore>(
    store: &S,
    fx: &Fixture,
    plan: &str,
    index: &str,
    sort: &str,
) {
    assert!(plan.contains(index), "the claim reads {index}:\n{plan}");
    assert!(
        !plan.contains(sort),
        "the claim sorts nothing: the index has the ORDER BY's order\n{plan}"
    );
    assert!(
        !plan.contains("deployments_due_idx"),
        "the old index is gone\n{plan}"
    );
    let claimed = store
        .claim_due_deployments("runner-a", at(1), chrono::Duration::minutes(5), 100)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 100);
    assert_eq!(claimed[0].id, fx.deployment.id);
    assert_eq!(
        claimed[1].id.to_string(),
        "00000000-0000-4000-8000-000000000001"
    );
}

#[tokio::test]
async fn postgres_claims_off_the_index_without_sorting_the_due_rows() {
    let h = common::postgres().await;
    let fx = seed_due(&h.store, true).await;
    let plan: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN {}", claim_due_sql(true)))
        .bind("runner-a")
        .bind(at(1))
        .bind(at(5))
        .bind(LIMIT)
        .fetch_all(h.store.pool())
        .await
        .unwrap();
    let plan = plan.join("\n");
    assert_claims_off_the_index(
        &h.store,
        &fx,
        &plan,
        "Index Scan using deployments_claim_idx",
        "Sort",
    )
    .await;
}

#[tokio::test]
async fn sqlite_claims_off_the_index_without_a_sort() {
    let h = common::sqlite().await;
    let fx = seed_due(&h.store, false).await;
    let rows = sqlx::query(&format!("EXPLAIN QUERY PLAN {}", claim_due_sql(false)))
        .bind("runner-a")
        .bind(db::time_text(at(1)))
        .bind(db::time_text(at(5)))
        .bind(LIMIT)
        .fetch_all(h.store.pool())
        .await
        .unwrap();
    let plan = rows
        .iter()
        .map(|r| sqlx::Row::get::<String, _>(r, "detail"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_claims_off_the_index(
        &h.store,
        &fx,
        &plan,
        "USING INDEX deployments_claim_idx",
        "TEMP B-TREE",
    )
    .await;
}

#[tokio::test]
async fn a_postgres_pool_has_the_size_and_timeout_it_was_opened_with() {
    let h = common::postgres().await;
    let pool = PoolConfig {
        max_connections: 3,
        acquire_timeout: Duration::from_secs(2),
    };
    let store = db::connect_pooled(&h.url(), pool).await.unwrap();
    let db::Store::Postgres(pg) = &store else {
        panic!("a postgres URL opens PostgreSQL")
    };
    assert_eq!(pg.pool().options().get_max_connections(), 3);
    assert_eq!(
        pg.pool().options().get_acquire_timeout(),
        Duration::from_secs(2)
    );
    // Three connections held: a fourth statement waits its 2 s, then fails.
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pg.pool().acquire().await.unwrap());
    }
    let started = std::time::Instant::now();
    let err = store
        .claim_due_deployments("runner-a", Utc::now(), chrono::Duration::minutes(5), 1)
        .await
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(2), "{err}");
    assert!(
        err.to_string().contains("claiming due deployments"),
        "{err}"
    );
    drop(held);

    for (bad, what) in [
        (
            PoolConfig {
                max_connections: 0,
                ..pool
            },
            "connection pool size",
        ),
        (
            PoolConfig {
                acquire_timeout: Duration::ZERO,
                ..pool
            },
            "connection acquire timeout",
        ),
    ] {
        match db::connect_pooled(&h.url(), bad).await {
            Err(DbError::Invalid { what: w, .. }) => assert_eq!(w, what),
            other => panic!("{bad:?}: {:?}", other.map(|_| ())),
        }
    }
}
