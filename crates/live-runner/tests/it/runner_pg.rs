//! The live runner on a real PostgreSQL with a mock Hyperliquid info server: two runners share
//! the deployments and tick each due one exactly once; a runner killed mid-tick loses nothing;
//! a paper deployment trades end to end and a restart resumes it.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use chrono::{DateTime, Utc};
use common::{hyperliquid_mock, postgres, runner, t};
use db::{LedgerStore, NoteScope, NoteStore, RegistryStore, TickStore};
use live_runner::admin::{self, DeployRequest};
use live_runner::runner::ModelResolver;
use live_runner::test_support::paper_deploy;
use rust_decimal::Decimal;
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0x0a11ce);

fn skill() -> skill_schema::Skill {
    admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("test skill")
}

/// Deploys `n` paper deployments created half an hour before `first_tick` (so they are first
/// due at `first_tick`, the next 1h close).
async fn deploy_many(pg: &common::Pg, n: usize, first_tick: DateTime<Utc>) -> Vec<Uuid> {
    let skill = skill();
    let mut ids = Vec::new();
    for i in 0..n {
        let req = DeployRequest {
            id: Some(Uuid::from_u128(0xd000 + i as u128)),
            ..paper_deploy(OWNER)
        };
        let d = admin::deploy(
            &pg.store,
            &skill,
            &req,
            first_tick - chrono::Duration::minutes(30),
        )
        .await
        .expect("deploy");
        assert_eq!(d.next_tick_at, Some(first_tick));
        ids.push(d.id);
    }
    ids
}

async fn duplicated_ticks(pg: &common::Pg) -> i64 {
    pg.count(
        "SELECT count(*) FROM (SELECT deployment_id, tick_at FROM decision_snapshots \
         GROUP BY 1, 2 HAVING count(*) > 1) d",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_runners_tick_100_due_deployments_exactly_once_then_resume_the_next_bar() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let ids = deploy_many(&pg, 100, first).await;

    // Bar 1: two runners at once over 100 deployments, 8 ticks in flight each.
    let a = runner(&pg, &hl, first + chrono::Duration::seconds(5), "a", 8, None).await;
    let b = runner(&pg, &hl, first + chrono::Duration::seconds(5), "b", 8, None).await;
    let (ra, rb) = tokio::join!(
        a.clone().run(std::future::pending()),
        b.clone().run(std::future::pending())
    );
    ra.expect("runner a");
    rb.expect("runner b");
    let recorded = a.metrics().ticks("recorded") + b.metrics().ticks("recorded");
    assert_eq!(recorded, 100, "100 due ticks, each recorded by one runner");
    assert_eq!(
        a.metrics().ticks("already_recorded") + b.metrics().ticks("already_recorded"),
        0
    );
    assert_eq!(a.metrics().ticks("failed") + b.metrics().ticks("failed"), 0);
    assert!(
        a.metrics().ticks("recorded") > 0 && b.metrics().ticks("recorded") > 0,
        "both runners took a share: a={} b={}",
        a.metrics().ticks("recorded"),
        b.metrics().ticks("recorded")
    );
    assert_eq!(
        pg.count("SELECT count(*) FROM decision_snapshots").await,
        100
    );
    assert_eq!(duplicated_ticks(&pg).await, 0);
    for id in &ids {
        let d = pg.store.get_deployment(*id).await.expect("deployment");
        assert_eq!(
            d.next_tick_at,
            Some(first + chrono::Duration::hours(1)),
            "next bar close"
        );
        assert_eq!(d.lease_owner, None, "released");
        let snaps = pg.store.list_snapshots(*id, 10).await.expect("snapshots");
        assert_eq!(snaps.len(), 1);
        assert_eq!(snaps[0].tick_at, first);
        assert_eq!(snaps[0].id, tick::snapshot_id(*id, first));
    }

    // Running again within the same bar finds nothing due.
    let again = runner(
        &pg,
        &hl,
        first + chrono::Duration::minutes(10),
        "a2",
        8,
        None,
    )
    .await;
    again
        .clone()
        .run(std::future::pending())
        .await
        .expect("rerun");
    assert_eq!(again.metrics().ticks("recorded"), 0);
    assert_eq!(
        pg.count("SELECT count(*) FROM decision_snapshots").await,
        100
    );

    // Bar 2, by new runner processes (a restart): each deployment resumes from its state row.
    let second = first + chrono::Duration::hours(1);
    let a = runner(
        &pg,
        &hl,
        second + chrono::Duration::seconds(3),
        "a3",
        8,
        None,
    )
    .await;
    let b = runner(
        &pg,
        &hl,
        second + chrono::Duration::seconds(3),
        "b3",
        8,
        None,
    )
    .await;
    let (ra, rb) = tokio::join!(
        a.clone().run(std::future::pending()),
        b.clone().run(std::future::pending())
    );
    ra.expect("runner a");
    rb.expect("runner b");
    assert_eq!(
        a.metrics().ticks("recorded") + b.metrics().ticks("recorded"),
        100
    );
    assert_eq!(
        pg.count("SELECT count(*) FROM decision_snapshots").await,
        200
    );
    assert_eq!(duplicated_ticks(&pg).await, 0);
    assert_eq!(
        pg.count(&format!(
            "SELECT count(*) FROM live_runner_state WHERE tick_at = '{}'",
            second.to_rfc3339()
        ))
        .await,
        100,
        "every state row moved to the second bar"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_killed_mid_tick_loses_nothing_and_its_leases_are_taken_over_after_expiry() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let ids = deploy_many(&pg, 20, first).await;
    let now = first + chrono::Duration::seconds(5);

    let stuck: ModelResolver = Arc::new(|_: &str, _: &skill_schema::Skill| {
        Ok(Arc::new(common::Stuck) as Arc<dyn LanguageModel>)
    });
    let doomed = runner(&pg, &hl, now, "doomed", 20, Some(stuck)).await;
    let owner = doomed.owner().to_owned();
    let task = tokio::spawn(doomed.clone().run(std::future::pending()));
    // Wait until it holds every lease and has started every tick (its model is called).
    let mut started = 0;
    for _ in 0..200 {
        started = pg
            .count(&format!(
                "SELECT count(*) FROM live_runner_state WHERE attempt_owner = '{owner}'"
            ))
            .await;
        if started == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(started, 20, "the doomed runner started all 20 ticks");
    assert_eq!(
        pg.count(&format!(
            "SELECT count(*) FROM deployments WHERE lease_owner = '{owner}'"
        ))
        .await,
        20
    );
    task.abort(); // kill -9, as far as the database can tell: no release, no state written
    let _ = task.await;
    assert_eq!(pg.count("SELECT count(*) FROM decision_snapshots").await, 0);

    // While the leases are live, another runner finds nothing to do.
    let early = runner(
        &pg,
        &hl,
        now + chrono::Duration::minutes(1),
        "early",
        8,
        None,
    )
    .await;
    early
        .clone()
        .run(std::future::pending())
        .await
        .expect("early runner");
    assert_eq!(
        early.metrics().ticks("recorded"),
        0,
        "leases not expired yet"
    );

    // After expiry (4-minute leases), it takes every one over and completes the tick once.
    let late = runner(
        &pg,
        &hl,
        now + chrono::Duration::minutes(5),
        "late",
        8,
        None,
    )
    .await;
    late.clone()
        .run(std::future::pending())
        .await
        .expect("late runner");
    assert_eq!(late.metrics().ticks("recorded"), 20);
    assert_eq!(late.metrics().lease_takeovers(), 20);
    assert_eq!(
        pg.count("SELECT count(*) FROM decision_snapshots").await,
        20
    );
    assert_eq!(duplicated_ticks(&pg).await, 0);
    for id in &ids {
        let snaps = pg.store.list_snapshots(*id, 10).await.expect("snapshots");
        assert_eq!(snaps.len(), 1);
        assert_eq!(
            snaps[0].tick_at, first,
            "the interrupted bar's tick, not a later one"
        );
        let d = pg.store.get_deployment(*id).await.expect("deployment");
        assert_eq!(d.lease_owner, None);
        assert_eq!(d.next_tick_at, Some(first + chrono::Duration::hours(1)));
    }
    let text = late.metrics().render();
    assert!(
        text.contains("live_runner_lease_takeovers_total 20\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paper_deployment_trades_end_to_end_across_restarts() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let ids = deploy_many(&pg, 1, first).await;
    let id = ids[0];

    // 36 hourly bars, a fresh runner process for every one of them (each tick resumes from
    // PostgreSQL only).
    let mut takeovers = 0;
    for h in 0..36 {
        let now = first + chrono::Duration::hours(h) + chrono::Duration::seconds(2);
        let r = runner(&pg, &hl, now, &format!("r{h}"), 2, None).await;
        r.clone().run(std::future::pending()).await.expect("run");
        assert_eq!(r.metrics().ticks("recorded"), 1, "bar {h}: one tick");
        takeovers += r.metrics().lease_takeovers();
    }
    assert_eq!(takeovers, 0);

    let snaps = pg.store.list_snapshots(id, 100).await.expect("snapshots");
    assert_eq!(snaps.len(), 36);
    let executed = snaps
        .iter()
        .filter(|s| matches!(s.verdict, types::Verdict::Executed { .. }))
        .count();
    assert!(
        executed >= 4,
        "the 12-hour wave crosses the averages: {executed} executed"
    );

    let fills = pg.store.list_fills(id, None).await.expect("fills");
    assert!(
        fills.len() >= executed,
        "{} fills for {executed} orders",
        fills.len()
    );
    let trades = pg.store.all_trades(id).await.expect("ledger");
    let closed: Vec<_> = trades
        .iter()
        .filter(|t| t.status == types::TradeStatus::Closed)
        .collect();
    assert!(closed.len() >= 2, "{} closed rows", closed.len());
    assert!(
        trades
            .iter()
            .filter(|t| t.status == types::TradeStatus::Open)
            .count()
            <= 1,
        "one open row at most for BTC"
    );
    // Every fill is linked to a ledger row: nothing lost, nothing applied twice.
    assert_eq!(
        pg.count(&format!(
            "SELECT count(*) FROM fills WHERE deployment_id = '{id}'"
        ))
        .await,
        fills.len() as i64
    );

    let notes = pg
        .store
        .note_history(NoteScope::Deployment(id), 50)
        .await
        .expect("notes");
    assert!(
        !notes.is_empty(),
        "a stats reflection every 2 closed trades"
    );

    // The operator listing agrees with the ledger.
    let rows = admin::list(&pg.store).await.expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].last_tick, Some(first + chrono::Duration::hours(35)));
    let realized: Decimal = trades.iter().map(|t| t.realized_pnl_usd).sum();
    assert_eq!(rows[0].realized_pnl_usd, realized);
    assert_eq!(
        rows[0].open_positions,
        trades
            .iter()
            .filter(|t| t.status == types::TradeStatus::Open)
            .count()
    );
    let table = admin::render_table(&rows);
    assert!(table.contains(&id.to_string()), "{table}");

    // Row-level security: the owner reads the firehose, the ledger and the notes; another user
    // reads none of them, and no end user reads the runner's state.
    let stranger = Uuid::from_u128(0xbad);
    for table in ["decision_snapshots", "trade_history", "reflection_notes"] {
        let sql = format!("SELECT count(*) FROM {table} WHERE deployment_id = '{id}'");
        assert!(
            as_user(&pg, OWNER, &sql).await.expect("owner reads") > 0,
            "{table}"
        );
        assert_eq!(
            as_user(&pg, stranger, &sql).await.expect("stranger reads"),
            0,
            "{table}"
        );
    }
    let state = as_user(&pg, OWNER, "SELECT count(*) FROM live_runner_state").await;
    assert!(
        !matches!(state, Ok(n) if n > 0),
        "the runner state is not an end user's to read: {state:?}"
    );
}

/// `SELECT count(*)` as an authenticated end user (JWT `sub` = `user`), through RLS.
async fn as_user(pg: &common::Pg, user: Uuid, sql: &str) -> Result<i64, sqlx::Error> {
    let mut tx = pg.pool().begin().await?;
    let claims = serde_json::json!({"sub": user, "role": "authenticated"}).to_string();
    sqlx::query("SELECT set_config('request.jwt.claims', $1, true)")
        .bind(claims)
        .execute(&mut *tx)
        .await?;
    sqlx::query("SET LOCAL ROLE authenticated")
        .execute(&mut *tx)
        .await?;
    let n: i64 = sqlx::query_scalar(sql).fetch_one(&mut *tx).await?;
    tx.rollback().await?;
    Ok(n)
}

/// The builtin model, answering after a pause (a slow provider).
struct Slow(Arc<dyn LanguageModel>);

#[async_trait::async_trait]
impl LanguageModel for Slow {
    fn id(&self) -> &str {
        self.0.id()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        tokio::time::sleep(Duration::from_millis(400)).await;
        self.0.generate(request).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_finishes_the_ticks_in_flight_and_claims_no_more() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    deploy_many(&pg, 10, first).await;
    let slow: ModelResolver = Arc::new(|id: &str, skill: &skill_schema::Skill| {
        let inner = agent_runtime::builtin_model(id, skill)
            .ok_or_else(|| ModelError::UnknownModel(id.to_owned()))?;
        Ok(Arc::new(Slow(inner)) as Arc<dyn LanguageModel>)
    });
    // Not `once`: it would keep polling; 4 in flight out of 10 due.
    let r = {
        let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))
            .expect("info client");
        let mut config = live_runner::runner::RunnerConfig::new("graceful");
        config.concurrency = 4;
        Arc::new(
            live_runner::runner::Runner::new(
                pg.store.clone(),
                info,
                Arc::new(types::FixedClock(first + chrono::Duration::seconds(1))),
                slow,
                live_runner::metrics::Metrics::default(),
                config,
            )
            .await
            .expect("runner"),
        )
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(r.clone().run(async move {
        let _ = stopped.await;
    }));
    for _ in 0..200 {
        if pg.count("SELECT count(*) FROM live_runner_state").await >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(()).expect("signal the runner");
    task.await.expect("join").expect("run");
    // The 4 ticks in flight completed and were released; the other 6 were never claimed.
    assert_eq!(r.metrics().ticks("recorded"), 4);
    assert_eq!(pg.count("SELECT count(*) FROM decision_snapshots").await, 4);
    assert_eq!(
        pg.count("SELECT count(*) FROM deployments WHERE lease_owner IS NOT NULL")
            .await,
        0,
        "no lease left behind"
    );
    assert_eq!(
        pg.count(&format!(
            "SELECT count(*) FROM deployments WHERE next_tick_at = '{}'",
            first.to_rfc3339()
        ))
        .await,
        6,
        "the rest is still due for another runner"
    );
}

/// Makes a deployment's runner "die" right after `record_tick`: while the deployment is listed
/// in `test_dies_after_record`, releasing its lease fails, so the runner ends with the tick
/// recorded and the lease still held — what a kill -9 at that point leaves behind. And makes the
/// database refuse any runner state written outside the transaction that recorded its tick, so
/// "right after record_tick" is also "before any other write of the runner".
async fn die_after_record_tick(pg: &common::Pg) {
    for sql in [
        "CREATE FUNCTION test_state_with_its_tick() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN \
           IF NEW.tick_at IS NOT NULL \
              AND (TG_OP = 'INSERT' OR NEW.tick_at IS DISTINCT FROM OLD.tick_at) \
              AND NOT EXISTS (SELECT 1 FROM decision_snapshots s \
                              WHERE s.deployment_id = NEW.deployment_id AND s.tick_at = NEW.tick_at \
                                AND s.xmin::text = (txid_current() % 4294967296)::text) THEN \
             RAISE EXCEPTION 'test: a runner state written outside its tick''s transaction'; \
           END IF; \
           RETURN NEW; \
         END $$",
        "CREATE TRIGGER test_state_with_its_tick BEFORE INSERT OR UPDATE ON live_runner_state \
         FOR EACH ROW EXECUTE FUNCTION test_state_with_its_tick()",
        "CREATE TABLE test_dies_after_record (deployment_id uuid PRIMARY KEY)",
        "CREATE FUNCTION test_refuse_release() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN \
           IF NEW.lease_owner IS NULL AND OLD.lease_owner IS NOT NULL \
              AND EXISTS (SELECT 1 FROM test_dies_after_record WHERE deployment_id = NEW.id) THEN \
             RAISE EXCEPTION 'test: the runner died right after record_tick'; \
           END IF; \
           RETURN NEW; \
         END $$",
        "CREATE TRIGGER test_refuse_release BEFORE UPDATE ON deployments \
         FOR EACH ROW EXECUTE FUNCTION test_refuse_release()",
    ] {
        sqlx::query(sql)
            .execute(pg.pool())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
}

async fn committed_state(pg: &common::Pg, id: Uuid) -> db::StoredRunnerState {
    pg.store
        .runner_state(id)
        .await
        .expect("runner state")
        .expect("a committed state")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_killed_right_after_record_tick_is_resumed_from_the_committed_state() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    // Two identical deployments: `crashing` dies after every record_tick, `twin` never does.
    let ids = deploy_many(&pg, 2, first).await;
    let (crashing, twin) = (ids[0], ids[1]);
    die_after_record_tick(&pg).await;

    for h in 0..14 {
        let bar = first + chrono::Duration::hours(h);
        sqlx::query("INSERT INTO test_dies_after_record VALUES ($1)")
            .bind(crashing)
            .execute(pg.pool())
            .await
            .expect("arm");
        let r = runner(
            &pg,
            &hl,
            bar + chrono::Duration::seconds(2),
            &format!("r{h}"),
            2,
            None,
        )
        .await;
        r.clone().run(std::future::pending()).await.expect("run");
        assert_eq!(r.metrics().ticks("recorded"), 2, "bar {h}");
        // The process is gone: the tick and the state after it are committed together, the
        // lease is still held and the deployment still due at this bar.
        let dead = pg.store.get_deployment(crashing).await.expect("deployment");
        assert!(dead.lease_owner.is_some(), "bar {h}: never released");
        assert_eq!(dead.next_tick_at, Some(bar), "bar {h}");
        let committed = committed_state(&pg, crashing).await;
        assert_eq!(
            committed.tick_at, bar,
            "bar {h}: the state is the recorded tick's"
        );
        let snapshots = pg
            .store
            .list_snapshots(crashing, 100)
            .await
            .expect("snapshots");
        assert_eq!(snapshots[0].tick_at, bar);
        sqlx::query("DELETE FROM test_dies_after_record")
            .execute(pg.pool())
            .await
            .expect("disarm");

        // A runner restarted after the lease expired takes the deployment over: the committed
        // state holds the due tick, so nothing runs again, and the next bar is scheduled.
        let restarted = runner(
            &pg,
            &hl,
            bar + chrono::Duration::minutes(5),
            &format!("restarted{h}"),
            2,
            None,
        )
        .await;
        restarted
            .clone()
            .run(std::future::pending())
            .await
            .expect("restart");
        assert_eq!(restarted.metrics().ticks("skipped_done"), 1, "bar {h}");
        assert_eq!(restarted.metrics().ticks("recorded"), 0, "bar {h}");
        assert_eq!(restarted.metrics().ticks("already_recorded"), 0, "bar {h}");
        assert_eq!(
            pg.store
                .list_snapshots(crashing, 100)
                .await
                .expect("snapshots")
                .len(),
            snapshots.len(),
            "bar {h}: no tick re-run"
        );
        assert_eq!(committed_state(&pg, crashing).await, committed, "bar {h}");
        let d = pg.store.get_deployment(crashing).await.expect("deployment");
        assert_eq!(d.lease_owner, None);
        assert_eq!(d.next_tick_at, Some(bar + chrono::Duration::hours(1)));
    }
    assert_eq!(duplicated_ticks(&pg).await, 0);
    // (The guard is live: a state written on its own, as the runner once did after
    // record_tick, is refused.)
    let separate = sqlx::query(
        "UPDATE live_runner_state SET tick_at = tick_at + interval '1 hour' WHERE deployment_id = $1",
    )
    .bind(crashing)
    .execute(pg.pool())
    .await;
    assert!(
        matches!(&separate, Err(e) if e.to_string().contains("outside its tick")),
        "{separate:?}"
    );

    // Crashing after every tick changed nothing: the same decisions, fills, ledger and state as
    // the twin that never crashed.
    let a = pg
        .store
        .list_snapshots(crashing, 100)
        .await
        .expect("snapshots");
    let b = pg.store.list_snapshots(twin, 100).await.expect("snapshots");
    assert_eq!(a.len(), 14);
    let decisions = |s: &[db::DecisionSnapshot]| {
        s.iter()
            .map(|x| (x.tick_at, x.proposal.clone(), x.verdict.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(decisions(&a), decisions(&b));
    let executed = a
        .iter()
        .filter(|s| matches!(s.verdict, types::Verdict::Executed { .. }))
        .count();
    assert!(executed >= 2, "crashed after {executed} executed ticks");
    let fills = |f: Vec<db::StoredFill>| {
        f.into_iter()
            .map(|x| {
                (
                    x.fill.time,
                    x.fill.side,
                    x.fill.qty,
                    x.fill.price,
                    x.fill.fee_usd,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        fills(pg.store.list_fills(crashing, None).await.expect("fills")),
        fills(pg.store.list_fills(twin, None).await.expect("fills"))
    );
    let ledger = |t: Vec<types::TradeRecord>| {
        t.into_iter()
            .map(|x| {
                (
                    x.entry_tick_at,
                    x.exit_tick_at,
                    x.entry_price,
                    x.exit_price,
                    x.realized_pnl_usd,
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        ledger(pg.store.all_trades(crashing).await.expect("ledger")),
        ledger(pg.store.all_trades(twin).await.expect("ledger"))
    );
    assert_eq!(
        committed_state(&pg, crashing).await.state,
        committed_state(&pg, twin).await.state
    );
}

/// A clock the test moves forward.
struct MovingClock(std::sync::Mutex<DateTime<Utc>>);

impl types::Clock for MovingClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().expect("clock")
    }
}

impl MovingClock {
    fn advance(&self, by: chrono::Duration) {
        let mut t = self.0.lock().expect("clock");
        *t += by;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_heartbeat_keeps_a_slow_tick_leased_past_its_initial_lease() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy_many(&pg, 1, first).await[0];
    let clock = Arc::new(MovingClock(std::sync::Mutex::new(
        first + chrono::Duration::seconds(1),
    )));
    let make = |name: &str, resolver: Option<ModelResolver>| {
        let info = hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))
            .expect("info client");
        let mut config = live_runner::runner::RunnerConfig::new(name);
        config.once = true;
        // A 3 s lease, extended every second while the tick runs.
        config.lease_for = chrono::Duration::seconds(3);
        let store = pg.store.clone();
        let clock = clock.clone();
        async move {
            Arc::new(
                live_runner::runner::Runner::new(
                    store,
                    info,
                    clock,
                    resolver.unwrap_or_else(live_runner::runner::default_resolver),
                    live_runner::metrics::Metrics::default(),
                    config,
                )
                .await
                .expect("runner"),
            )
        }
    };
    // The slow runner's model answers after 2.5 s of real time, while the clock moves 2 s per
    // real second: 5 s of clock, well past the 3 s lease it was claimed with.
    let slow: ModelResolver = Arc::new(|id: &str, skill: &skill_schema::Skill| {
        let inner = agent_runtime::builtin_model(id, skill)
            .ok_or_else(|| ModelError::UnknownModel(id.to_owned()))?;
        Ok(Arc::new(VerySlow(inner)) as Arc<dyn LanguageModel>)
    });
    let slow_runner = make("slow", Some(slow)).await;
    let other = make("other", None).await;
    let task = tokio::spawn(slow_runner.clone().run(std::future::pending()));
    let mut other_recorded = 0;
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        clock.advance(chrono::Duration::milliseconds(500));
        other
            .clone()
            .run(std::future::pending())
            .await
            .expect("other runner");
        other_recorded = other.metrics().ticks("recorded");
    }
    task.await.expect("join").expect("slow runner");
    assert_eq!(other_recorded, 0, "the other runner never got the lease");
    assert_eq!(slow_runner.metrics().ticks("recorded"), 1);
    assert_eq!(slow_runner.metrics().ticks("already_recorded"), 0);
    assert_eq!(
        pg.store
            .list_snapshots(id, 10)
            .await
            .expect("snapshots")
            .len(),
        1
    );
}

/// The builtin model, answering after 2.5 s.
struct VerySlow(Arc<dyn LanguageModel>);

#[async_trait::async_trait]
impl LanguageModel for VerySlow {
    fn id(&self) -> &str {
        self.0.id()
    }
    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        self.0.generate(request).await
    }
}

/// A paper deployment's broker is the one a backtest of its skill builds
/// (`PaperBrokerConfig::for_skill`), so both put the liquidation at the same price (#16 item
/// 10): the maintenance margin of the skill's `maxLeverage`, or per asset the exchange's where
/// the deployment was given the exchange's `meta`.
#[tokio::test]
async fn a_paper_deployment_stores_the_broker_a_backtest_of_its_skill_builds() {
    let pg = postgres().await;
    let skill = admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("skill");
    let exchange = common::exchange_max_leverage();
    for (id, given) in [(1, Default::default()), (2, exchange.clone())] {
        let d = admin::deploy(
            &pg.store,
            &skill,
            &DeployRequest {
                id: Some(Uuid::from_u128(id)),
                exchange_max_leverage: given.clone(),
                ..paper_deploy(Uuid::from_u128(0x0a11ce))
            },
            t("2026-06-04T09:00:00Z"),
        )
        .await
        .expect("deploy");
        let stored: execution_engine::PaperBrokerConfig =
            serde_json::from_value(d.config["paper"].clone()).expect("paper config");
        let backtest =
            execution_engine::PaperBrokerConfig::for_skill(Decimal::from(10_000), &skill, &given)
                .expect("config");
        assert_eq!(stored, backtest);
        // 0.5 / maxLeverage, not the adapter's generic 0.5 %.
        assert_eq!(
            stored.maintenance_margin_rate,
            Decimal::new(5, 1) / skill.risk.max_leverage
        );
        // Per asset: only the skill's own symbol is kept from the whole universe, at the
        // exchange's 0.5 / 50 = 1 %.
        let btc = stored.maintenance_margin_rate_for("BTC");
        if given.is_empty() {
            assert!(stored.exchange_max_leverage.is_empty());
            assert_eq!(btc, stored.maintenance_margin_rate);
        } else {
            assert_eq!(
                stored.exchange_max_leverage,
                std::collections::BTreeMap::from([("BTC".to_owned(), Decimal::from(50))])
            );
            assert_eq!(btc, Decimal::new(1, 2));
        }
    }
}
