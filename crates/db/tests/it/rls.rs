//! Row-level security on PostgreSQL, exercised the way PostgREST does it: inside a transaction,
//! `set_config('request.jwt.claims', '{"sub": …, "role": …}', true)` and `SET LOCAL ROLE`.
//! Two users, A and B, each with a deployment that has ticked (snapshot, fill, open trade), a
//! deployment note, a skill-scoped note and a fact.

use crate::common;

use db::test_support::{
    Fixture, at, sample_fill, sample_note, sample_open_trade, sample_snapshot, seed, tick_record,
};
use db::{FactStore, FillTradeLink, NewFact, NoteStore, PgStore, TickRecord, TickStore};
use rust_decimal_macros::dec;
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use types::{FactConfidence, FactSource, UserFact};
use uuid::Uuid;

struct World {
    a: Fixture,
    b: Fixture,
    a_fact: UserFact,
    b_fact: UserFact,
}

async fn world(store: &PgStore) -> World {
    let a = populate(store).await;
    let b = populate(store).await;
    let a_fact = fact(store, a.user.id).await;
    let b_fact = fact(store, b.user.id).await;
    World {
        a,
        b,
        a_fact,
        b_fact,
    }
}

async fn populate(store: &PgStore) -> Fixture {
    let fx = seed(store).await.unwrap();
    let snapshot = sample_snapshot(fx.deployment.id, at(0));
    let mut fill = sample_fill("f-1", dec!(0.01), dec!(65200), at(0));
    fill.snapshot_id = Some(snapshot.id);
    let trade = sample_open_trade(&fx, at(0));
    store
        .record_tick(&TickRecord {
            fills: vec![fill],
            links: vec![FillTradeLink {
                broker_fill_id: "f-1".into(),
                trade_id: trade.id,
                flip_trade_id: None,
            }],
            trades: vec![trade],
            ..tick_record(snapshot)
        })
        .await
        .unwrap();
    store
        .insert_note(&sample_note(&fx, at(10), "- deployment lesson"))
        .await
        .unwrap();
    let mut skill_note = sample_note(&fx, at(10), "- skill lesson");
    skill_note.deployment_id = None;
    store.insert_note(&skill_note).await.unwrap();
    fx
}

async fn fact(store: &PgStore, user: Uuid) -> UserFact {
    store
        .remember(
            &NewFact {
                id: Uuid::new_v4(),
                user_id: user,
                skill_id: None,
                fact: "Trades BTC and ETH only.".into(),
                source: FactSource::Chat,
                confidence: FactConfidence::Asserted,
                topic: Some("symbols".into()),
                actor: "chat-agent".into(),
            },
            at(0),
        )
        .await
        .unwrap()
}

/// Runs `sql` in a transaction as `role` with the JWT claims of `sub` (none when `None`).
async fn as_role(
    pool: &PgPool,
    role: &str,
    sub: Option<Uuid>,
    sql: &str,
) -> Result<Vec<PgRow>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let claims = match sub {
        Some(sub) => serde_json::json!({"sub": sub, "role": role}).to_string(),
        None => String::new(),
    };
    sqlx::query("SELECT set_config('request.jwt.claims', $1, true)")
        .bind(claims)
        .execute(&mut *tx)
        .await?;
    sqlx::query(&format!("SET LOCAL ROLE {role}"))
        .execute(&mut *tx)
        .await?;
    let rows = sqlx::query(sql).fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(rows)
}

async fn as_user(pool: &PgPool, user: Uuid, sql: &str) -> Result<Vec<PgRow>, sqlx::Error> {
    as_role(pool, "authenticated", Some(user), sql).await
}

fn ids(rows: &[PgRow], column: &str) -> Vec<Uuid> {
    let mut v: Vec<Uuid> = rows.iter().map(|r| r.get::<Uuid, _>(column)).collect();
    v.sort();
    v.dedup();
    v
}

fn assert_permission_denied(result: Result<Vec<PgRow>, sqlx::Error>, what: &str) {
    match result {
        Err(sqlx::Error::Database(e)) => {
            assert_eq!(e.code().as_deref(), Some("42501"), "{what}: {e}");
        }
        other => panic!("{what}: expected permission denied, got {other:?}"),
    }
}

#[tokio::test]
async fn owners_read_only_their_own_rows() {
    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let (a, b) = (&w.a, &w.b);

    for (table, column) in [
        ("deployments", "id"),
        ("decision_snapshots", "deployment_id"),
        ("fills", "deployment_id"),
        ("trade_history", "deployment_id"),
    ] {
        let rows = as_user(pool, a.user.id, &format!("SELECT {column} FROM {table}"))
            .await
            .unwrap();
        assert_eq!(
            ids(&rows, column),
            vec![a.deployment.id],
            "A sees only A's {table}"
        );
        let rows = as_user(pool, b.user.id, &format!("SELECT {column} FROM {table}"))
            .await
            .unwrap();
        assert_eq!(
            ids(&rows, column),
            vec![b.deployment.id],
            "B sees only B's {table}"
        );
    }
    // Notes: deployment-scoped via the deployment, skill-scoped via the skill.
    let rows = as_user(
        pool,
        a.user.id,
        "SELECT skill_id, deployment_id FROM reflection_notes",
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 2, "A's deployment note and A's skill note");
    assert_eq!(ids(&rows, "skill_id"), vec![a.skill.id]);
    for (table, column) in [("skills", "id"), ("skill_versions", "skill_id")] {
        let rows = as_user(pool, a.user.id, &format!("SELECT {column} FROM {table}"))
            .await
            .unwrap();
        assert_eq!(
            ids(&rows, column),
            vec![a.skill.id],
            "A sees only A's {table}"
        );
    }
    // Facts and their audit trail.
    let rows = as_user(pool, a.user.id, "SELECT id FROM user_facts")
        .await
        .unwrap();
    assert_eq!(ids(&rows, "id"), vec![w.a_fact.id]);
    let rows = as_user(pool, a.user.id, "SELECT fact_id FROM user_fact_changes")
        .await
        .unwrap();
    assert_eq!(ids(&rows, "fact_id"), vec![w.a_fact.id]);
    // Explicitly asking for B's rows returns nothing.
    let rows = as_user(
        pool,
        a.user.id,
        &format!(
            "SELECT id FROM trade_history WHERE deployment_id = '{}'",
            b.deployment.id
        ),
    )
    .await
    .unwrap();
    assert!(rows.is_empty());
    // No claims at all: nothing is visible.
    let rows = as_role(pool, "authenticated", None, "SELECT id FROM trade_history")
        .await
        .unwrap();
    assert!(rows.is_empty());
}

#[tokio::test]
async fn owners_cannot_write_ledger_notes_snapshots_or_fills() {
    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let a = &w.a;
    let d = a.deployment.id;

    let insert_trade = format!(
        "INSERT INTO trade_history (id, deployment_id, skill_id, skill_version, symbol, side, status, \
         entry_tick_at, entry_price, entry_size_usd, opened_qty, open_qty) \
         VALUES ('{}', '{d}', '{}', 1, 'ETH', 'long', 'open', now(), 3400, 200, 0.05, 0.05)",
        Uuid::new_v4(),
        a.skill.id
    );
    assert_permission_denied(
        as_user(pool, a.user.id, &insert_trade).await,
        "insert own trade",
    );
    for sql in [
        format!("UPDATE trade_history SET realized_pnl_usd = 1000000 WHERE deployment_id = '{d}'"),
        format!("DELETE FROM trade_history WHERE deployment_id = '{d}'"),
        format!(
            "UPDATE reflection_notes SET lessons_text = 'ignore the strategy' WHERE deployment_id = '{d}'"
        ),
        format!(
            "INSERT INTO reflection_notes (skill_id, skill_version, deployment_id, status, window_start, \
             window_end, trades_considered, lessons_text, model_used) \
             VALUES ('{}', 1, '{d}', 'superseded', now(), now(), 1, 'x', 'm')",
            a.skill.id
        ),
        format!("UPDATE decision_snapshots SET context = 'x' WHERE deployment_id = '{d}'"),
        format!("DELETE FROM decision_snapshots WHERE deployment_id = '{d}'"),
        format!("UPDATE fills SET price = 1 WHERE deployment_id = '{d}'"),
        format!("UPDATE deployments SET equity_usd = 1000000 WHERE id = '{d}'"),
        format!("DELETE FROM user_facts WHERE id = '{}'", w.a_fact.id),
        format!(
            "DELETE FROM user_fact_changes WHERE fact_id = '{}'",
            w.a_fact.id
        ),
    ] {
        assert_permission_denied(as_user(pool, a.user.id, &sql).await, &sql);
    }
    // Nothing changed.
    let rows = sqlx::query(
        "SELECT realized_pnl_usd::text AS p FROM trade_history WHERE deployment_id = $1",
    )
    .bind(d)
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<String, _>("p"), "0");
}

#[tokio::test]
async fn the_service_role_reads_and_writes_everything() {
    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let service = Uuid::new_v4();

    let rows = as_role(
        pool,
        "service_role",
        Some(service),
        "SELECT deployment_id FROM trade_history",
    )
    .await
    .unwrap();
    let mut both = vec![w.a.deployment.id, w.b.deployment.id];
    both.sort();
    assert_eq!(ids(&rows, "deployment_id"), both);

    let d = w.b.deployment.id;
    let rows = as_role(
        pool,
        "service_role",
        Some(service),
        &format!(
            "UPDATE trade_history SET mfe_usd = 12.5 WHERE deployment_id = '{d}' RETURNING id"
        ),
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    let rows = as_role(
        pool,
        "service_role",
        Some(service),
        &format!(
            "INSERT INTO reflection_notes (skill_id, skill_version, deployment_id, status, window_start, \
             window_end, trades_considered, lessons_text, model_used) \
             VALUES ('{}', 1, '{d}', 'superseded', now(), now(), 1, '- archived lesson', 'm') RETURNING id",
            w.b.skill.id
        ),
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
}

#[tokio::test]
async fn owners_remember_and_forget_only_their_own_facts() {
    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let (a, b) = (w.a.user.id, w.b.user.id);

    // A remembers a fact for A.
    let new_id = Uuid::new_v4();
    let rows = as_user(
        pool,
        a,
        &format!(
            "INSERT INTO user_facts (id, user_id, fact, source, confidence, updated_by) \
             VALUES ('{new_id}', '{a}', 'Prefers swing trades.', 'profile', 'asserted', 'profile') RETURNING id"
        ),
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    // A cannot write a fact for B.
    let forged = as_user(
        pool,
        a,
        &format!(
            "INSERT INTO user_facts (user_id, fact, source, confidence) \
             VALUES ('{b}', 'Loves 50x leverage.', 'chat', 'asserted')"
        ),
    )
    .await;
    assert_permission_denied(forged, "insert a fact for another user");

    // A forgets A's fact.
    let forget = |id: Uuid| {
        format!(
            "UPDATE user_facts SET archived_at = now(), archived_reason = 'user_deleted' \
             WHERE id = '{id}' RETURNING id"
        )
    };
    assert_eq!(
        as_user(pool, a, &forget(w.a_fact.id)).await.unwrap().len(),
        1
    );
    // A's attempt on B's fact touches nothing; B's fact stays active.
    assert!(
        as_user(pool, a, &forget(w.b_fact.id))
            .await
            .unwrap()
            .is_empty()
    );
    let archived: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query("SELECT archived_at FROM user_facts WHERE id = $1")
            .bind(w.b_fact.id)
            .fetch_one(pool)
            .await
            .unwrap()
            .get("archived_at");
    assert_eq!(archived, None);
    // A cannot hand A's fact over to B either.
    let handover = as_user(
        pool,
        a,
        &format!("UPDATE user_facts SET user_id = '{b}' WHERE id = '{new_id}'"),
    )
    .await;
    assert_permission_denied(handover, "move a fact to another user");

    // The audit trail records who: the request's user and the database role.
    let changes = h.store.fact_changes(w.a_fact.id).await.unwrap();
    let archive = changes.last().unwrap();
    assert_eq!(archive.op, types::FactChangeOp::Archive);
    assert_eq!(archive.jwt_sub, Some(a));
    assert_eq!(archive.db_role, "authenticated");
    let inserted = h.store.fact_changes(new_id).await.unwrap();
    assert_eq!(inserted.len(), 1);
    assert_eq!(
        (inserted[0].jwt_sub, inserted[0].actor.as_deref()),
        (Some(a), Some("profile"))
    );
}

#[tokio::test]
async fn anon_reads_market_events_and_nothing_else() {
    let h = common::postgres().await;
    let _w = world(&h.store).await;
    let pool = h.store.pool();
    assert!(
        as_role(pool, "anon", None, "SELECT id FROM market_events")
            .await
            .is_ok()
    );
    assert_permission_denied(
        as_role(pool, "anon", None, "SELECT id FROM trade_history").await,
        "anon reads the ledger",
    );
    assert_permission_denied(
        as_role(pool, "anon", None, "SELECT id FROM user_facts").await,
        "anon reads facts",
    );
}

#[tokio::test]
async fn authenticated_users_read_news_and_only_the_service_role_writes_it() {
    let h = common::postgres().await;
    let pool = h.store.pool();
    let insert = "INSERT INTO news_items (id, feed, source, guid, title, published_at, \
                  fetched_at, sentiment, sentiment_source, importance) VALUES \
                  (gen_random_uuid(), 'https://f.example/rss', 'F', 'g1', 'T', now(), now(), 0, \
                  'lexicon', 0.5)";
    assert!(as_role(pool, "service_role", None, insert).await.is_ok());
    let user = Some(Uuid::from_u128(0x5e));
    let rows = as_role(pool, "authenticated", user, "SELECT guid FROM news_items")
        .await
        .unwrap();
    assert!(rows.iter().any(|r| r.get::<String, _>("guid") == "g1"));
    assert_permission_denied(
        as_role(pool, "authenticated", user, &insert.replace("'g1'", "'g2'")).await,
        "a user writes news",
    );
    assert_permission_denied(
        as_role(pool, "authenticated", user, "DELETE FROM news_items").await,
        "a user deletes news",
    );
    assert_permission_denied(
        as_role(pool, "anon", None, "SELECT id FROM news_items").await,
        "anon reads news",
    );
}

#[tokio::test]
async fn migrations_are_idempotent_and_the_auth_shim_reads_the_claims() {
    let h = common::postgres().await;
    // Re-running is a no-op (the role/shim DO blocks already ran in every test database).
    db::POSTGRES_MIGRATOR.run(h.store.pool()).await.unwrap();
    let uid: Option<Uuid> = as_role(
        h.store.pool(),
        "authenticated",
        Some(Uuid::nil()),
        "SELECT auth.uid() AS uid",
    )
    .await
    .unwrap()[0]
        .get("uid");
    assert_eq!(uid, Some(Uuid::nil()));
    let role: Option<String> = as_role(
        h.store.pool(),
        "authenticated",
        Some(Uuid::nil()),
        "SELECT auth.role() AS r",
    )
    .await
    .unwrap()[0]
        .get("r");
    assert_eq!(role.as_deref(), Some("authenticated"));
}

#[tokio::test]
async fn the_runner_state_is_the_service_roles_only() {
    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let a = &w.a;
    let d = a.deployment.id;
    let tick = TickRecord {
        runner_state: Some(serde_json::json!({"broker": {"cash": "10000"}})),
        ..tick_record(sample_snapshot(d, at(60)))
    };
    h.store.record_tick(&tick).await.unwrap();

    // The owner of the deployment can neither read nor write its runner state.
    for sql in [
        "SELECT deployment_id FROM live_runner_state".to_owned(),
        format!("UPDATE live_runner_state SET state = '{{}}' WHERE deployment_id = '{d}'"),
        format!("DELETE FROM live_runner_state WHERE deployment_id = '{d}'"),
    ] {
        assert_permission_denied(as_user(pool, a.user.id, &sql).await, &sql);
        assert_permission_denied(as_role(pool, "anon", None, &sql).await, &sql);
    }
    // The service role reads and writes it.
    let rows = as_role(
        pool,
        "service_role",
        Some(Uuid::new_v4()),
        "SELECT deployment_id FROM live_runner_state",
    )
    .await
    .unwrap();
    assert_eq!(ids(&rows, "deployment_id"), vec![d]);
    let rows = as_role(
        pool,
        "service_role",
        Some(Uuid::new_v4()),
        &format!(
            "UPDATE live_runner_state SET attempt_owner = 'r' WHERE deployment_id = '{d}' RETURNING deployment_id"
        ),
    )
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    let rls: bool = sqlx::query_scalar(
        "SELECT relrowsecurity FROM pg_class WHERE oid = 'public.live_runner_state'::regclass",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert!(rls);
}

/// Databases where an earlier live-runner created `live_runner_state` itself (same columns, RLS
/// on, no policy): the migration adopts the table and keeps its rows.
#[tokio::test]
async fn the_migration_adopts_the_runner_state_table_an_older_runner_created() {
    const RUNNER_STATE_MIGRATION: i64 = 20261122000004;

    let test_db = db::test_support::pg::TestDatabase::create("agent_db_test_", 4).await;
    let pool = &test_db.pool;
    // The schema as it was before the migration.
    crate::common::postgres_before(pool, RUNNER_STATE_MIGRATION).await;
    let (user, skill, d) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    for sql in [
        format!("INSERT INTO auth.users (id) VALUES ('{user}')"),
        format!("INSERT INTO skills (id, user_id, name) VALUES ('{skill}', '{user}', 'old')"),
        format!(
            "INSERT INTO skill_versions (skill_id, version, body, model) \
             VALUES ('{skill}', 1, '{{}}', 'builtin/scripted')"
        ),
        format!(
            "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, \
             initial_equity_usd, equity_usd) VALUES ('{d}', '{user}', '{skill}', 1, 'paper', 10000, 10000)"
        ),
        // What live-runner's `ensure_schema` ran, and a state it saved.
        "CREATE TABLE IF NOT EXISTS live_runner_state (deployment_id uuid PRIMARY KEY \
         REFERENCES deployments(id) ON DELETE CASCADE, tick_at timestamptz, state jsonb, \
         attempt_owner text, attempt_tick_at timestamptz, \
         updated_at timestamptz NOT NULL DEFAULT now())"
            .to_owned(),
        "ALTER TABLE live_runner_state ENABLE ROW LEVEL SECURITY".to_owned(),
        format!(
            "INSERT INTO live_runner_state (deployment_id, tick_at, state, attempt_owner, attempt_tick_at) \
             VALUES ('{d}', '{}', '{{\"broker\": {{\"cash\": \"9876.5\"}}}}', 'old-runner', '{}')",
            at(0).to_rfc3339(),
            at(0).to_rfc3339()
        ),
    ] {
        sqlx::query(&sql)
            .execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }

    // Opening the store applies the new migration over it.
    let store = PgStore::from_pool(pool.clone()).await.unwrap();
    let kept = store.runner_state(d).await.unwrap().expect("the old row");
    assert_eq!(kept.tick_at, at(0));
    assert_eq!(
        kept.state,
        serde_json::json!({"broker": {"cash": "9876.5"}})
    );
    // The adopted table moves forward with the ticks like a new one.
    store
        .record_tick(&TickRecord {
            runner_state: Some(serde_json::json!({"n": 60})),
            ..tick_record(sample_snapshot(d, at(60)))
        })
        .await
        .unwrap();
    assert_eq!(
        store.runner_state(d).await.unwrap().map(|r| r.tick_at),
        Some(at(60))
    );
    assert_permission_denied(
        as_user(pool, user, "SELECT deployment_id FROM live_runner_state").await,
        "owner reads the adopted runner state",
    );
    let policies: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_policies WHERE tablename = 'live_runner_state'",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(
        policies, 1,
        "the service role's policy, nothing for end users"
    );
    // Re-running every migration changes nothing.
    db::POSTGRES_MIGRATOR.run(pool).await.unwrap();
}

/// `PgStore::as_user`: the scoping is the database's, not the caller's. The same store methods,
/// asked for B's rows BY ID as A, find nothing or are refused — the filter is row-level security
/// on A's transaction (role `authenticated`, A's claims), not a `WHERE user_id` in the code
/// (`get_deployment` has none).
#[tokio::test]
async fn a_user_scoped_store_cannot_reach_another_users_rows_even_by_id() {
    use db::{
        ChatTurnRecord, ChatTurnStore, DbError, FactEdit, Forget, LedgerStore, RegistryStore,
        TickStore,
    };
    use types::ArchiveReason;

    let h = common::postgres().await;
    let w = world(&h.store).await;
    let (a, b) = (&w.a, &w.b);
    let as_a = h.store.as_user(a.user.id);
    assert_eq!(as_a.user_id(), a.user.id);
    assert!(as_a.claims().contains(&a.user.id.to_string()));

    // A's own rows are there.
    assert_eq!(
        as_a.get_deployment(a.deployment.id).await.unwrap().id,
        a.deployment.id
    );
    assert_eq!(as_a.all_trades(a.deployment.id).await.unwrap().len(), 1);
    assert_eq!(
        as_a.list_facts(a.user.id, true).await.unwrap(),
        vec![w.a_fact.clone()]
    );

    // B's deployment read by id: not found — the unscoped store finds it.
    assert!(h.store.get_deployment(b.deployment.id).await.is_ok());
    match as_a.get_deployment(b.deployment.id).await {
        Err(DbError::NotFound { .. }) => {}
        other => panic!("A read B's deployment: {other:?}"),
    }
    assert!(matches!(
        as_a.get_skill(b.skill.id).await,
        Err(DbError::NotFound { .. })
    ));
    assert!(as_a.all_trades(b.deployment.id).await.unwrap().is_empty());
    assert!(
        as_a.list_snapshots(b.deployment.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        as_a.list_deployments(None)
            .await
            .unwrap()
            .iter()
            .all(|d| d.user_id == a.user.id),
        "listing everyone's deployments yields only A's"
    );
    assert!(as_a.list_facts(b.user.id, true).await.unwrap().is_empty());
    assert!(as_a.fact_changes(w.b_fact.id).await.unwrap().is_empty());

    // Writes of B's rows: refused or not found, and B's fact is unchanged.
    let edit = FactEdit {
        fact: Some("Written by A into B's memory.".into()),
        confidence: None,
        topic: None,
    };
    assert!(matches!(
        as_a.edit_fact(b.user.id, w.b_fact.id, &edit, "profile", at(20))
            .await,
        Err(DbError::NotFound { .. })
    ));
    let forget = Forget {
        reason: ArchiveReason::UserDeleted,
        at: at(20),
        actor: "profile".into(),
    };
    assert!(matches!(
        as_a.forget(b.user.id, w.b_fact.id, &forget).await,
        Err(DbError::NotFound { .. })
    ));
    let mut planted = NewFact {
        id: Uuid::new_v4(),
        user_id: b.user.id,
        skill_id: None,
        fact: "Planted by A for B.".into(),
        source: FactSource::Profile,
        confidence: FactConfidence::Asserted,
        topic: None,
        actor: "profile".into(),
    };
    assert!(
        as_a.remember(&planted, at(20)).await.is_err(),
        "RLS refuses the insert"
    );
    assert_eq!(
        as_a.mark_referenced(b.user.id, &[w.b_fact.id], at(20))
            .await
            .unwrap(),
        0,
        "B's fact is not A's to mark referenced"
    );
    let turn = ChatTurnRecord {
        id: Uuid::new_v4(),
        user_id: b.user.id,
        at: at(20),
        mode: "coach".into(),
        model: "builtin/scripted".into(),
        steps: 1,
        usage: types::Usage::default(),
        cost_usd: rust_decimal::Decimal::ZERO,
        error: None,
    };
    assert!(
        as_a.record_chat_turn(&turn).await.is_err(),
        "RLS refuses B's turn"
    );
    assert_eq!(
        h.store.list_facts(b.user.id, true).await.unwrap(),
        vec![w.b_fact.clone()]
    );

    // The same writes for A go through, audited as A under the authenticated role.
    planted.user_id = a.user.id;
    as_a.remember(&planted, at(20)).await.unwrap();
    as_a.record_chat_turn(&ChatTurnRecord {
        user_id: a.user.id,
        ..turn
    })
    .await
    .unwrap();
    assert_eq!(
        as_a.mark_referenced(a.user.id, &[w.a_fact.id], at(21))
            .await
            .unwrap(),
        1
    );
    let changes = as_a.fact_changes(planted.id).await.unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].db_role, "authenticated");
    assert_eq!(changes[0].jwt_sub, Some(a.user.id));

    // A user store may not write what only the runner writes.
    assert!(
        as_a.record_tick(&tick_record(sample_snapshot(a.deployment.id, at(30))))
            .await
            .is_err()
    );
}

/// Prompt lines are stored per deployment and read only by its owner: the same text in A's and
/// B's snapshots is two blocks, each visible to its owner alone, and no owner may write them.
#[tokio::test]
async fn prompt_lines_are_read_only_by_their_deployments_owner() {
    use db::TickStore;

    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let (a, b) = (&w.a, &w.b);
    let join = "SELECT s.deployment_id, l.body FROM prompt_blocks l \
                JOIN prompt_scopes s ON s.id = l.scope_id";
    let everyone = sqlx::query(join).fetch_all(pool).await.unwrap();
    assert_eq!(
        ids(&everyone, "deployment_id"),
        {
            let mut v = vec![a.deployment.id, b.deployment.id];
            v.sort();
            v
        },
        "the same text is stored for each deployment"
    );
    for fx in [a, b] {
        let rows = as_user(pool, fx.user.id, join).await.unwrap();
        assert_eq!(ids(&rows, "deployment_id"), vec![fx.deployment.id]);
        assert_eq!(rows.len() * 2, everyone.len(), "all of its own lines");
        let rows = as_user(pool, fx.user.id, "SELECT deployment_id FROM prompt_scopes")
            .await
            .unwrap();
        assert_eq!(ids(&rows, "deployment_id"), vec![fx.deployment.id]);
    }
    // Asking for B's scope by id: nothing.
    let b_scope: i64 = sqlx::query_scalar("SELECT id FROM prompt_scopes WHERE deployment_id = $1")
        .bind(b.deployment.id)
        .fetch_one(pool)
        .await
        .unwrap();
    let rows = as_user(
        pool,
        a.user.id,
        &format!("SELECT body FROM prompt_blocks WHERE scope_id = {b_scope}"),
    )
    .await
    .unwrap();
    assert!(rows.is_empty());
    for sql in [
        "UPDATE prompt_blocks SET body = '\\x00'".to_owned(),
        format!(
            "INSERT INTO prompt_blocks (scope_id, first_seq, line_count, body) \
             VALUES ({b_scope}, 999, 1, '\\x00')"
        ),
        "DELETE FROM prompt_blocks".to_owned(),
        "UPDATE prompt_scopes SET next_seq = 0".to_owned(),
        format!(
            "INSERT INTO prompt_scopes (deployment_id) VALUES ('{}')",
            Uuid::new_v4()
        ),
    ] {
        assert_permission_denied(as_user(pool, a.user.id, &sql).await, &sql);
    }
    // The owner's store puts the texts back together under RLS; B's snapshots stay hidden.
    let as_a = h.store.as_user(a.user.id);
    let mine = as_a.list_snapshots(a.deployment.id, 10).await.unwrap();
    assert_eq!(
        mine,
        h.store.list_snapshots(a.deployment.id, 10).await.unwrap()
    );
    assert_eq!(mine.len(), 1);
    assert_eq!(
        as_a.get_snapshot(mine[0].id).await.unwrap().context,
        sample_snapshot(a.deployment.id, at(0)).context
    );
    assert!(
        as_a.list_snapshots(b.deployment.id, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The ticks read too: A's with their texts, none of B's.
    let with_texts = |d| db::TickQuery {
        texts: true,
        ..db::TickQuery::of(d)
    };
    let ticks = as_a.ticks(&with_texts(a.deployment.id)).await.unwrap();
    assert_eq!(
        ticks,
        vec![db::StoredTick::from(mine[0].clone())],
        "decoded under RLS as the service role decodes it"
    );
    assert!(
        as_a.ticks(&with_texts(b.deployment.id))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn held_lessons_are_read_only_by_their_notes_owner() {
    let h = common::postgres().await;
    let w = world(&h.store).await;
    let pool = h.store.pool();
    let held = |text: &str| types::HeldLesson {
        text: text.into(),
        reasons: vec!["names a price level".into()],
    };
    let mut notes = Vec::new();
    for fx in [&w.a, &w.b] {
        let mut deployment_note = sample_note(fx, at(20), "- deployment lesson");
        deployment_note.content.held = vec![held("- deployment bullet")];
        let mut skill_note = sample_note(fx, at(20), "- skill lesson");
        skill_note.deployment_id = None;
        skill_note.content.held = vec![held("- skill bullet")];
        for note in [deployment_note, skill_note] {
            h.store.insert_note(&note).await.unwrap();
            notes.push((fx.user.id, note.id));
        }
    }
    let everyone = sqlx::query("SELECT note_id FROM held_lessons")
        .fetch_all(pool)
        .await
        .unwrap();
    assert_eq!(everyone.len(), 4);
    for fx in [&w.a, &w.b] {
        let rows = as_user(pool, fx.user.id, "SELECT note_id FROM held_lessons")
            .await
            .unwrap();
        let mut own: Vec<Uuid> = notes
            .iter()
            .filter(|(user, _)| *user == fx.user.id)
            .map(|(_, note)| *note)
            .collect();
        own.sort();
        assert_eq!(
            ids(&rows, "note_id"),
            own,
            "the deployment's and the skill's rows"
        );
    }
    let b_note = notes[2].1;
    for sql in [
        "UPDATE held_lessons SET status = 'accepted'".to_owned(),
        "DELETE FROM held_lessons".to_owned(),
        format!(
            "INSERT INTO held_lessons (id, note_id, position, text, reasons) \
             VALUES ('{}', '{b_note}', 9, '- injected', '[]')",
            Uuid::new_v4()
        ),
    ] {
        assert_permission_denied(as_user(pool, w.a.user.id, &sql).await, &sql);
    }
    let rows = as_role(pool, "anon", None, "SELECT note_id FROM held_lessons").await;
    assert_permission_denied(rows, "anon reads no held lessons");
    // The service role reviews them.
    let rows = as_role(
        pool,
        "service_role",
        None,
        &format!(
            "UPDATE held_lessons SET status = 'rejected', reviewed_at = now(), \
             reviewed_by = 'ops' WHERE note_id = '{b_note}' RETURNING note_id"
        ),
    )
    .await
    .unwrap();
    assert_eq!(ids(&rows, "note_id"), vec![b_note]);
}
