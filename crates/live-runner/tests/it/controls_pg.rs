//! Controls and the runner on a real PostgreSQL with mock Hyperliquid servers: a paused
//! deployment does not tick and resumes where it was; one paused after its claim is released
//! untouched; a stop with flatten closes the position through the paper broker and through a
//! mock Hyperliquid account (retried after a refusal), exactly once; and a runner killed after
//! the stop leaves the flatten to the next one.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use agent_runtime::{LanguageModel, ModelError, ScriptedModel};
use chrono::{DateTime, Utc};
use common::hl_exchange::{self, TEST_KEY, test_account};
use common::{hyperliquid_mock, postgres, price_at, t};
use db::{ControlAction, ControlStore, DeploymentStatus, LedgerStore, RegistryStore, TickStore};
use hyperliquid::{ClientConfig, Network, RetryPolicy};
use live_runner::admin::{self, DeployRequest};
use live_runner::hl_broker::HyperliquidConfig;
use live_runner::metrics::Metrics;
use live_runner::runner::{ModelResolver, Runner, RunnerConfig};
use live_runner::test_support::{hyperliquid_deploy, paper_deploy};
use model::test_support::{answer, tool_call, tool_turn};
use rust_decimal::Decimal;
use serde_json::Value;
use types::{CloseKind, FixedClock, TradeStatus, Verdict};
use uuid::Uuid;
use wiremock::MockServer;

const OWNER: Uuid = Uuid::from_u128(0x0c0_a11ce);
const KEY_VAR: &str = "HL_CONTROLS_KEY";

fn skill() -> skill_schema::Skill {
    admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("test skill")
}

/// The skill's model proposes to go long 1,000 USD of BTC every tick (an add when long).
fn always_long() -> ModelResolver {
    Arc::new(|id: &str, skill: &skill_schema::Skill| {
        if id != skill.model {
            return agent_runtime::builtin_model(id, skill)
                .ok_or_else(|| ModelError::UnknownModel(id.to_owned()));
        }
        let propose = tool_turn(vec![tool_call(
            "c1",
            "propose_order",
            r#"{"action":"open_long","symbol":"BTC","size_usd":1000,"leverage":1,"reason":"scripted test proposal"}"#,
        )]);
        Ok(Arc::new(ScriptedModel::new(vec![propose, answer("done")])) as Arc<dyn LanguageModel>)
    })
}

/// A paper deployment first due at `first`.
async fn deploy_paper(pg: &common::Pg, id: u128, first: DateTime<Utc>) -> Uuid {
    let req = DeployRequest {
        id: Some(Uuid::from_u128(id)),
        ..paper_deploy(OWNER)
    };
    let d = admin::deploy(
        &pg.store,
        &skill(),
        &req,
        first - chrono::Duration::minutes(30),
    )
    .await
    .expect("deploy");
    assert_eq!(d.next_tick_at, Some(first));
    d.id
}

/// A `once` runner at `now` with `resolver` (and the Hyperliquid test key), run to the end.
async fn run(
    pg: &common::Pg,
    hl: &MockServer,
    now: DateTime<Utc>,
    name: &str,
    resolver: ModelResolver,
) -> Metrics {
    let info = hyperliquid::InfoClient::new(&ClientConfig::new(hl.uri())).expect("info");
    let mut config = RunnerConfig::new(format!("{name}:{}", Uuid::new_v4()));
    config.once = true;
    config.concurrency = 2;
    let metrics = Metrics::default();
    let runner = Runner::new(
        pg.store.clone(),
        info,
        Arc::new(FixedClock(now)),
        resolver,
        metrics.clone(),
        config,
    )
    .await
    .expect("runner")
    .with_env(Arc::new(|name: &str| {
        (name == KEY_VAR).then(|| TEST_KEY.to_owned())
    }))
    .with_exchange_http(
        ClientConfig::new("http://replaced.invalid").with_retry(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(2),
        }),
    );
    Arc::new(runner)
        .run(std::future::pending())
        .await
        .expect("run");
    metrics
}

async fn control(
    pg: &common::Pg,
    id: Uuid,
    action: ControlAction,
    flatten: bool,
    at: DateTime<Utc>,
) {
    live_runner::controls::control(
        &pg.store,
        id,
        action,
        flatten,
        None,
        Some("tester"),
        Some(format!("test {}", action.as_str())),
        at,
    )
    .await
    .expect("control");
}

async fn state_json(pg: &common::Pg, id: Uuid) -> Value {
    sqlx::query_scalar::<_, Option<Value>>(
        "SELECT state FROM live_runner_state WHERE deployment_id = $1",
    )
    .bind(id)
    .fetch_one(pg.pool())
    .await
    .expect("state row")
    .unwrap_or(Value::Null)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_deployment_does_not_tick_and_resumes_where_it_was() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let hour = chrono::Duration::hours(1);
    let id = deploy_paper(&pg, 0xc1, first).await;

    let m = run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "bar1",
        always_long(),
    )
    .await;
    assert_eq!(m.ticks("recorded"), 1);
    let before = state_json(&pg, id).await;
    assert!(
        before["broker"]["positions"]["BTC"].is_object(),
        "a position is open: {before}"
    );

    control(
        &pg,
        id,
        ControlAction::Pause,
        false,
        first + chrono::Duration::minutes(10),
    )
    .await;
    // Bars 2 and 3 close while it is paused: no runner ticks it, nothing of it changes.
    for h in 1..=2 {
        let m = run(
            &pg,
            &hl,
            first + hour * h + chrono::Duration::seconds(5),
            "paused",
            always_long(),
        )
        .await;
        assert_eq!(
            m.ticks("recorded") + m.ticks("failed"),
            0,
            "bar {h}: no tick"
        );
        assert_eq!(m.skipped_inactive_count(), 0, "not even claimed");
    }
    assert_eq!(pg.store.list_snapshots(id, 10).await.unwrap().len(), 1);
    assert_eq!(
        state_json(&pg, id).await,
        before,
        "the state is kept as it was"
    );
    let d = pg.store.get_deployment(id).await.unwrap();
    assert_eq!(d.status, DeploymentStatus::Paused);
    assert_eq!(d.next_tick_at, Some(first + hour), "the schedule is kept");

    // Resumed after bar 3 closed: it is due at once and ticks at the latest closed bar, on the
    // state it was paused with (its position carried into the prompt and the ledger).
    let third = first + hour * 2;
    control(
        &pg,
        id,
        ControlAction::Resume,
        false,
        third + chrono::Duration::minutes(10),
    )
    .await;
    let m = run(
        &pg,
        &hl,
        third + chrono::Duration::minutes(20),
        "resumed",
        always_long(),
    )
    .await;
    assert_eq!(m.ticks("recorded"), 1);
    let snaps = pg.store.list_snapshots(id, 10).await.unwrap();
    assert_eq!(
        snaps.iter().map(|s| s.tick_at).collect::<Vec<_>>(),
        vec![third, first],
        "no tick for the bars closed while paused"
    );
    assert!(
        snaps[0].context.contains("\n- BTC long "),
        "the resumed tick sees the position it was paused with: {}",
        snaps[0].context
    );
    let open = pg.store.open_trades(id).await.unwrap();
    assert_eq!(open.len(), 1, "one BTC row, added to");
    assert_eq!(pg.store.list_fills(id, None).await.unwrap().len(), 2);
    let after = state_json(&pg, id).await;
    assert_eq!(
        after["last_tick_at"].as_str(),
        Some(
            third
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
                .as_str()
        ),
        "{after}"
    );
    assert_eq!(
        pg.store.get_deployment(id).await.unwrap().next_tick_at,
        Some(third + hour)
    );
    // Audited: who and when, both changes.
    let trail = pg.store.deployment_controls(id, 10).await.unwrap();
    assert_eq!(
        trail
            .iter()
            .map(|c| (c.action, c.requested_by.as_str()))
            .collect::<Vec<_>>(),
        vec![
            (ControlAction::Resume, "operator:tester"),
            (ControlAction::Pause, "operator:tester")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_paused_between_its_claim_and_its_tick_is_not_ticked() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy_paper(&pg, 0xc2, first).await;
    // The pause lands right after the claim: the claiming UPDATE itself leaves it paused (as
    // a pause committed between the claim and the tick would).
    for sql in [
        "CREATE FUNCTION test_pause_on_claim() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN \
           IF OLD.lease_owner IS NULL AND NEW.lease_owner IS NOT NULL THEN \
             NEW.status := 'paused'; \
           END IF; \
           RETURN NEW; \
         END $$",
        "CREATE TRIGGER test_pause_on_claim BEFORE UPDATE OF lease_owner ON deployments \
         FOR EACH ROW EXECUTE FUNCTION test_pause_on_claim()",
    ] {
        sqlx::query(sql).execute(pg.pool()).await.expect(sql);
    }
    let m = run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "racy",
        always_long(),
    )
    .await;
    assert_eq!(m.skipped_inactive_count(), 1, "claimed, then found paused");
    assert_eq!(m.ticks("recorded") + m.ticks("failed"), 0);
    assert!(pg.store.list_snapshots(id, 10).await.unwrap().is_empty());
    let d = pg.store.get_deployment(id).await.unwrap();
    assert_eq!(
        (d.status, d.lease_owner, d.next_tick_at),
        (DeploymentStatus::Paused, None, Some(first)),
        "released untouched, its schedule kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_with_flatten_closes_the_paper_position_once() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy_paper(&pg, 0xc3, first).await;
    run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "bar1",
        always_long(),
    )
    .await;
    let open = pg.store.open_trades(id).await.unwrap();
    assert_eq!(open.len(), 1);

    let stop_at = first + chrono::Duration::minutes(10);
    control(&pg, id, ControlAction::Stop, true, stop_at).await;
    // Before its next tick time, a runner flattens it (and ticks nothing).
    let flat_at = first + chrono::Duration::minutes(11);
    let m = run(&pg, &hl, flat_at, "flattener", always_long()).await;
    assert_eq!(m.flattens("done"), 1);
    assert_eq!(m.ticks("recorded"), 0);
    assert!(pg.store.open_trades(id).await.unwrap().is_empty());
    let row = pg.store.get_trade(open[0].id).await.unwrap();
    assert_eq!(row.status, TradeStatus::Closed);
    assert_eq!(row.close_kind, Some(CloseKind::Signal));
    assert_eq!(row.exit_reason.as_deref(), Some(tick::FLATTEN_REASON));
    // The exit is at the mark of the last closed bar (the paper broker's), less its slippage.
    let mark = Decimal::from(price_at(first.timestamp_millis()));
    let exit = row.exit_price.unwrap();
    assert!(
        exit < mark && exit > mark * Decimal::new(99, 2),
        "{exit} vs {mark}"
    );
    let state = state_json(&pg, id).await;
    assert_eq!(
        state["broker"]["positions"],
        serde_json::json!({}),
        "the paper account is flat: {state}"
    );
    let snaps = pg.store.list_snapshots(id, 10).await.unwrap();
    assert_eq!(snaps[0].model, tick::FLATTEN_MODEL);
    assert!(matches!(snaps[0].verdict, Verdict::Executed { .. }));
    let flatten = pg.store.flatten_state(id).await.unwrap().unwrap();
    assert_eq!(
        (flatten.requested_at, flatten.done_at),
        (stop_at, Some(flat_at))
    );

    // Later runners: never a tick (stopped), never a second flatten.
    let m = run(
        &pg,
        &hl,
        first + chrono::Duration::hours(2) + chrono::Duration::seconds(5),
        "later",
        always_long(),
    )
    .await;
    assert_eq!(m.flattens("done") + m.ticks("recorded"), 0);
    assert_eq!(pg.store.list_snapshots(id, 10).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_runner_killed_after_the_stop_leaves_the_flatten_to_the_next_one() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let second = first + chrono::Duration::hours(1);
    let id = deploy_paper(&pg, 0xc4, first).await;
    run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(5),
        "bar1",
        always_long(),
    )
    .await;
    assert_eq!(pg.store.open_trades(id).await.unwrap().len(), 1);

    // Bar 2: a runner claims the tick and hangs in its model call.
    let stuck: ModelResolver = Arc::new(|_: &str, _: &skill_schema::Skill| {
        Ok(Arc::new(common::Stuck) as Arc<dyn LanguageModel>)
    });
    let info = hyperliquid::InfoClient::new(&ClientConfig::new(hl.uri())).expect("info");
    let mut config = RunnerConfig::new("doomed");
    config.once = true;
    let doomed = Arc::new(
        Runner::new(
            pg.store.clone(),
            info,
            Arc::new(FixedClock(second + chrono::Duration::seconds(5))),
            stuck,
            Metrics::default(),
            config,
        )
        .await
        .expect("runner"),
    );
    let task = tokio::spawn(doomed.clone().run(std::future::pending()));
    let mut started = false;
    for _ in 0..200 {
        if pg
            .count("SELECT count(*) FROM live_runner_state WHERE attempt_owner = 'doomed'")
            .await
            == 1
        {
            started = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(started, "the doomed runner started bar 2's tick");

    // The owner stops it with flatten, and the runner dies (no release, nothing recorded).
    control(
        &pg,
        id,
        ControlAction::Stop,
        true,
        second + chrono::Duration::seconds(10),
    )
    .await;
    task.abort();
    let _ = task.await;
    assert_eq!(
        pg.store
            .get_deployment(id)
            .await
            .unwrap()
            .lease_owner
            .as_deref(),
        Some("doomed")
    );

    // While the dead runner's lease lasts, nobody flattens (or ticks) it.
    let m = run(
        &pg,
        &hl,
        second + chrono::Duration::minutes(1),
        "early",
        always_long(),
    )
    .await;
    assert_eq!(m.flattens("done") + m.ticks("recorded"), 0);
    assert_eq!(pg.store.open_trades(id).await.unwrap().len(), 1);

    // After it expires (4-minute leases) the next runner flattens it; bar 2 never ticks.
    let m = run(
        &pg,
        &hl,
        second + chrono::Duration::minutes(5),
        "late",
        always_long(),
    )
    .await;
    assert_eq!(m.flattens("done"), 1);
    assert_eq!(m.ticks("recorded"), 0);
    assert!(pg.store.open_trades(id).await.unwrap().is_empty());
    let snaps = pg.store.list_snapshots(id, 10).await.unwrap();
    assert_eq!(snaps.len(), 2, "bar 1's tick and the flatten");
    assert!(snaps.iter().all(|s| s.tick_at != second));
    let d = pg.store.get_deployment(id).await.unwrap();
    assert_eq!((d.status, d.lease_owner), (DeploymentStatus::Stopped, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_with_flatten_closes_the_position_on_a_mock_hyperliquid() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let account = hl_exchange::account(10_000, &[], 0);
    hl_exchange::mount(&hl, account.clone()).await;
    let config = HyperliquidConfig {
        account: test_account(),
        network: Network::Testnet,
        key_env: KEY_VAR.to_owned(),
        base_url: Some(hl.uri()),
        max_slippage: Decimal::new(1, 2),
    };
    let req = DeployRequest {
        id: Some(Uuid::from_u128(0xc5)),
        ..hyperliquid_deploy(OWNER, config)
    };
    let id = admin::deploy(
        &pg.store,
        &skill(),
        &req,
        first - chrono::Duration::minutes(30),
    )
    .await
    .expect("deploy")
    .id;
    let mark = Decimal::from(price_at(first.timestamp_millis()));
    {
        let mut a = account.lock().unwrap();
        a.marks.insert("BTC".into(), mark);
        a.fill_time_ms = first.timestamp_millis() + 1500;
    }
    let m = run(
        &pg,
        &hl,
        first + chrono::Duration::seconds(2),
        "tick",
        always_long(),
    )
    .await;
    assert_eq!(m.ticks("recorded"), 1);
    let held = account.lock().unwrap().positions["BTC"].0;
    assert!(held > Decimal::ZERO, "long on the exchange");

    control(
        &pg,
        id,
        ControlAction::Stop,
        true,
        first + chrono::Duration::minutes(10),
    )
    .await;

    // The exchange refuses the closing order: recorded, retried after the backoff.
    let attempt = first + chrono::Duration::minutes(11);
    {
        let mut a = account.lock().unwrap();
        a.refuse_with =
            Some("Order could not immediately match against any resting orders.".into());
        a.fill_time_ms = attempt.timestamp_millis() + 200;
    }
    let m = run(&pg, &hl, attempt, "refused", always_long()).await;
    assert_eq!(m.flattens("retry"), 1);
    let f = pg.store.flatten_state(id).await.unwrap().unwrap();
    assert_eq!(f.attempts, 1);
    assert_eq!(f.retry_at, Some(attempt + chrono::Duration::seconds(30)));
    assert!(
        f.last_error
            .as_deref()
            .unwrap()
            .contains("could not immediately match"),
        "{f:?}"
    );
    assert_eq!(
        account.lock().unwrap().positions["BTC"].0,
        held,
        "still long"
    );
    assert!(matches!(
        pg.store.list_snapshots(id, 1).await.unwrap()[0].verdict,
        Verdict::Rejected { .. }
    ));

    // Not before its retry time; then it closes the position with one reduce-only sell.
    account.lock().unwrap().refuse_with = None;
    let m = run(
        &pg,
        &hl,
        attempt + chrono::Duration::seconds(10),
        "early",
        always_long(),
    )
    .await;
    assert_eq!(m.flattens("done") + m.flattens("retry"), 0);
    let posts_before = account.lock().unwrap().exchange_posts.len();
    let retry = attempt + chrono::Duration::seconds(31);
    account.lock().unwrap().fill_time_ms = retry.timestamp_millis() + 200;
    let m = run(&pg, &hl, retry, "retry", always_long()).await;
    assert_eq!(m.flattens("done"), 1);
    {
        let a = account.lock().unwrap();
        assert_eq!(a.positions["BTC"].0, Decimal::ZERO, "flat on the exchange");
        let orders: Vec<&Value> = a.exchange_posts[posts_before..]
            .iter()
            .filter(|p| p["action"]["type"] == "order")
            .collect();
        assert_eq!(orders.len(), 1, "one closing order");
        let order = &orders[0]["action"]["orders"][0];
        assert_eq!(
            (order["b"].as_bool(), order["r"].as_bool()),
            (Some(false), Some(true))
        );
        assert_eq!(
            order["s"].as_str().unwrap().parse::<Decimal>().unwrap(),
            held
        );
    }
    assert!(pg.store.open_trades(id).await.unwrap().is_empty());
    let trades = pg.store.all_trades(id).await.unwrap();
    assert_eq!(trades[0].exit_reason.as_deref(), Some(tick::FLATTEN_REASON));
    let f = pg.store.flatten_state(id).await.unwrap().unwrap();
    assert_eq!((f.done_at, f.last_error), (Some(retry), None));
}

/// `live-runner pause|resume|stop` run as a process.
fn live(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_live-runner"))
        .args(args)
        .env_remove("DATABASE_URL")
        .env("USER", "ops")
        .output()
        .expect("run live-runner");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_commands_change_the_status_audited_and_refuse_bad_input_with_exit_2() {
    let pg = postgres().await;
    let url = pg.url();
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy_paper(&pg, 0xc6, first).await.to_string();
    let owner = OWNER.to_string();
    let stranger = Uuid::from_u128(0xbad).to_string();

    let (code, out, err) = live(&["pause", &id, "--db", &url, "--reason", "CPI at 14:30"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!(
            "deployment {id} paused (was active) by operator:ops at "
        )),
        "{out}"
    );
    assert!(out.contains("reason: \"CPI at 14:30\""), "{out}");

    for (args, needle) in [
        (vec!["pause", &id, "--db", &url], "is paused"),
        (
            vec!["resume", &id, "--db", &url, "--user", &stranger],
            "not found",
        ),
        (
            vec!["resume", &id, "--db", &url, "--reason", "  "],
            "--reason",
        ),
        (
            vec!["resume", &id, "--db", &url, "--reason", "two\nlines"],
            "--reason",
        ),
        (vec!["resume", "not-a-uuid", "--db", &url], "not-a-uuid"),
        (
            vec!["stop", "00000000-0000-0000-0000-00000000dead", "--db", &url],
            "not found",
        ),
        (vec!["pause", &id, "--db", &url, "--flatten"], "--flatten"),
    ] {
        let (code, out, err) = live(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {needle:?} not in {err}");
        assert!(out.is_empty(), "{args:?}: nothing on stdout: {out}");
    }
    assert_eq!(
        pg.store
            .get_deployment(Uuid::parse_str(&id).unwrap())
            .await
            .unwrap()
            .status,
        DeploymentStatus::Paused
    );

    let (code, out, err) = live(&["resume", &id, "--db", &url, "--user", &owner]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("active (was paused) by {owner}")),
        "{out}"
    );
    let (code, out, err) = live(&["stop", &id, "--db", &url, "--flatten"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("closes its open positions"), "{out}");
    let (code, _, err) = live(&["resume", &id, "--db", &url]);
    assert_eq!(code, 2);
    assert!(err.contains("final"), "{err}");

    let trail = pg
        .store
        .deployment_controls(Uuid::parse_str(&id).unwrap(), 10)
        .await
        .unwrap();
    assert_eq!(
        trail
            .iter()
            .map(|c| (c.action, c.flatten, c.requested_by.clone()))
            .collect::<Vec<_>>(),
        vec![
            (ControlAction::Stop, true, "operator:ops".to_owned()),
            (ControlAction::Resume, false, owner.clone()),
            (ControlAction::Pause, false, "operator:ops".to_owned()),
        ]
    );
}
