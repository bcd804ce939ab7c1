//! Reflection off the tick path, on a real PostgreSQL with a mock Hyperliquid: a tick only
//! checks the cadence; the reflection runs on the runner's reflection worker after the lease is
//! released, so a slow one delays no tick; a shutdown waits for it; a failed one is a failed run;
//! one lost with its process is found due again at the next tick.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse, builtin_model};
use chrono::{DateTime, Utc};
use common::{hyperliquid_mock, postgres, runner, t};
use db::{LedgerStore, NoteScope, NoteStore, RegistryStore, RunOutcome, TickStore};
use live_runner::admin::{self, DeployRequest};
use live_runner::metrics::Metrics;
use live_runner::runner::{ModelResolver, Runner, RunnerConfig};
use live_runner::test_support::paper_deploy;
use model::test_support::answer;
use uuid::Uuid;

const OWNER: Uuid = Uuid::from_u128(0x0a11ce);
const GATE: &str = "openai/test-gate";

/// The tests' skill (sma-cross, a reflection every 2 closed trades) with its reflection model
/// replaced by the test's [`Gate`].
fn skill() -> skill_schema::Skill {
    let mut skill =
        admin::load_skill_file(&common::fixture("btc-sma-cross.yaml")).expect("test skill");
    skill.context.memory.reflection.model = GATE.to_owned();
    skill
}

async fn deploy(pg: &common::Pg, first_tick: DateTime<Utc>) -> Uuid {
    let req = DeployRequest {
        id: Some(Uuid::from_u128(0xd1)),
        ..paper_deploy(OWNER)
    };
    admin::deploy(
        &pg.store,
        &skill(),
        &req,
        first_tick - chrono::Duration::minutes(30),
    )
    .await
    .expect("deploy")
    .id
}

/// The reflection model: counts its calls, answers once opened (never, if never opened), with
/// lessons or with a provider error.
struct Gate {
    calls: AtomicUsize,
    open: tokio::sync::Semaphore,
    fail: bool,
}

impl Gate {
    fn new(open: bool, fail: bool) -> Arc<Self> {
        let gate = Arc::new(Gate {
            calls: AtomicUsize::new(0),
            open: tokio::sync::Semaphore::new(0),
            fail,
        });
        if open {
            gate.open();
        }
        gate
    }

    fn open(&self) {
        self.open.add_permits(1 << 20);
    }

    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn resolver(self: &Arc<Self>) -> ModelResolver {
        let gate = self.clone();
        Arc::new(move |id: &str, skill: &skill_schema::Skill| {
            if id == GATE {
                return Ok(gate.clone() as Arc<dyn LanguageModel>);
            }
            builtin_model(id, skill).ok_or_else(|| ModelError::UnknownModel(id.to_owned()))
        })
    }
}

#[async_trait::async_trait]
impl LanguageModel for Gate {
    fn id(&self) -> &str {
        GATE
    }

    async fn generate(&self, _: &ModelRequest) -> Result<ModelResponse, ModelError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let _open = self
            .open
            .acquire()
            .await
            .map_err(|_| ModelError::UnknownModel("gate closed".to_owned()))?;
        if self.fail {
            return Err(ModelError::Http {
                provider: "openai".to_owned(),
                status: 503,
                body: "overloaded".to_owned(),
            });
        }
        Ok(answer(
            "- Reversals on the opposite cross cut the losing trades short.\n\
             - Entries right after a cross paid; late entries gave back the move.",
        ))
    }
}

/// Waits until the tick at `bar` is recorded and its lease released (next tick one bar later).
async fn wait_released(pg: &common::Pg, id: Uuid, bar: DateTime<Utc>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let d = pg.store.get_deployment(id).await.expect("deployment");
        let recorded = pg
            .store
            .list_snapshots(id, 1)
            .await
            .expect("snapshots")
            .first()
            .is_some_and(|s| s.tick_at == bar);
        if recorded
            && d.lease_owner.is_none()
            && d.next_tick_at == Some(bar + chrono::Duration::hours(1))
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the tick at {bar} was not recorded and released: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_calls(gate: &Gate, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while gate.calls() < n {
        assert!(
            Instant::now() < deadline,
            "{} reflection calls",
            gate.calls()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether the cadence finds a reflection due after the tick at `bar` (the same pure decision
/// the tick makes), for a deployment without notes or failed runs.
async fn due_after(pg: &common::Pg, id: Uuid, bar: DateTime<Utc>) -> bool {
    let trades = pg.store.all_trades(id).await.expect("ledger");
    matches!(
        reflection::reflection_due(&skill().context.memory, &trades, None, None, bar),
        Ok(reflection::Due::Yes(_))
    )
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
        *self.0.lock().expect("clock") += by;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_reflection_delays_no_tick_and_a_shutdown_waits_for_it() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy(&pg, first).await;
    let gate = Gate::new(false, false);
    let clock = Arc::new(MovingClock(std::sync::Mutex::new(
        first + chrono::Duration::seconds(2),
    )));
    let mut config = RunnerConfig::new("continuous");
    config.poll = Duration::from_millis(20);
    config.concurrency = 1;
    config.reflection_concurrency = 1;
    let r = Arc::new(
        Runner::new(
            pg.store.clone(),
            hyperliquid::InfoClient::new(&hyperliquid::ClientConfig::new(hl.uri()))
                .expect("info client"),
            clock.clone(),
            gate.resolver(),
            Metrics::default(),
            config,
        )
        .await
        .expect("runner"),
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(r.clone().run(async move {
        let _ = stopped.await;
    }));

    // Bar by bar until the cadence asks for a reflection.
    let mut bar = first;
    loop {
        wait_released(&pg, id, bar).await;
        if due_after(&pg, id, bar).await {
            break;
        }
        assert_eq!(gate.calls(), 0, "no reflection before it is due");
        assert!(bar < first + chrono::Duration::hours(36), "never due");
        clock.advance(chrono::Duration::hours(1));
        bar += chrono::Duration::hours(1);
    }
    let reflect_at = bar;
    // Its tick was recorded and released; the reflection runs (and waits) after it.
    wait_calls(&gate, 1).await;
    let notes = |pg: &common::Pg| {
        let store = pg.store.clone();
        async move {
            store
                .note_history(NoteScope::Deployment(id), 10)
                .await
                .expect("notes")
        }
    };
    assert!(notes(&pg).await.is_empty());

    // The next bar ticks while the reflection still waits: it holds no tick slot and no lease.
    // Its cadence asks again (no note yet); one reflection per deployment runs at a time.
    clock.advance(chrono::Duration::hours(1));
    bar += chrono::Duration::hours(1);
    wait_released(&pg, id, bar).await;
    assert_eq!(
        r.metrics().ticks("recorded"),
        bar.signed_duration_since(first).num_hours() as u64 + 1
    );
    assert_eq!(gate.calls(), 1);
    assert!(notes(&pg).await.is_empty());
    let deadline = Instant::now() + Duration::from_secs(10);
    while r.metrics().reflections("skipped_in_flight") == 0 {
        assert!(
            Instant::now() < deadline,
            "the second due reflection was not skipped"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // A shutdown claims nothing more and waits for the reflection in flight.
    stop.send(()).expect("signal the runner");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!task.is_finished(), "the runner waits for the reflection");
    gate.open();
    tokio::time::timeout(Duration::from_secs(20), task)
        .await
        .expect("the runner stops once the reflection is done")
        .expect("join")
        .expect("run");

    let notes = notes(&pg).await;
    assert_eq!(notes.len(), 1);
    assert_eq!(
        notes[0].generated_at, reflect_at,
        "the note of the tick that found it due"
    );
    assert_eq!(notes[0].id, tick::note_id(id, reflect_at));
    let runs = pg
        .store
        .reflection_runs(NoteScope::Deployment(id), 10)
        .await
        .expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, tick::run_id(id, reflect_at));
    assert!(matches!(runs[0].outcome, RunOutcome::Succeeded { .. }));
    assert_eq!(r.metrics().reflections("flagged"), 1, "ungrounded lessons");
    assert_eq!(r.metrics().ticks("failed"), 0);
    let text = r.metrics().render();
    assert!(
        text.contains("live_runner_reflections_total{outcome=\"skipped_in_flight\"} 1\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failed_reflection_is_a_failed_run_and_a_lost_one_is_due_again_after_a_restart() {
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy(&pg, first).await;

    // The reflection model fails: recorded as a failed run; every tick is recorded.
    let failing = Gate::new(true, true);
    let mut bar = first;
    loop {
        let r = runner(
            &pg,
            &hl,
            bar + chrono::Duration::seconds(2),
            "failing",
            1,
            Some(failing.resolver()),
        )
        .await;
        r.clone().run(std::future::pending()).await.expect("run");
        assert_eq!(r.metrics().ticks("recorded"), 1, "{bar}");
        if failing.calls() > 0 {
            assert_eq!(r.metrics().reflections("failed"), 1);
            break;
        }
        assert!(bar < first + chrono::Duration::hours(36), "never due");
        bar += chrono::Duration::hours(1);
    }
    let failed_at = bar;
    let runs = pg
        .store
        .reflection_runs(NoteScope::Deployment(id), 10)
        .await
        .expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].started_at, failed_at);
    assert!(
        matches!(&runs[0].outcome, RunOutcome::Failed { error } if error.contains("503")),
        "{:?}",
        runs[0].outcome
    );
    assert!(
        pg.store
            .note_history(NoteScope::Deployment(id), 10)
            .await
            .expect("notes")
            .is_empty()
    );

    // Next bar (past the back-off): due again; the process dies while the reflection runs.
    bar += chrono::Duration::hours(1);
    let stuck = Gate::new(false, false);
    let r = runner(
        &pg,
        &hl,
        bar + chrono::Duration::seconds(2),
        "doomed",
        1,
        Some(stuck.resolver()),
    )
    .await;
    let task = tokio::spawn(r.clone().run(std::future::pending()));
    wait_released(&pg, id, bar).await;
    wait_calls(&stuck, 1).await;
    task.abort(); // kill -9 mid-reflection
    let _ = task.await;
    assert_eq!(
        pg.store
            .reflection_runs(NoteScope::Deployment(id), 10)
            .await
            .expect("runs")
            .len(),
        1,
        "nothing of the lost reflection is stored"
    );

    // The restarted runner's next tick finds the reflection due again and runs it.
    bar += chrono::Duration::hours(1);
    let working = Gate::new(true, false);
    let r = runner(
        &pg,
        &hl,
        bar + chrono::Duration::seconds(2),
        "restarted",
        1,
        Some(working.resolver()),
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(r.metrics().ticks("recorded"), 1);
    // The reflection and the check call on the bullet the deterministic layers let through
    // ("… cut the losing trades short" names the window's shorts); the gate's answer to the
    // check is no verdict, so that bullet is held too.
    assert_eq!(working.calls(), 2);
    let notes = pg
        .store
        .note_history(NoteScope::Deployment(id), 10)
        .await
        .expect("notes");
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0].generated_at, bar);
    let runs = pg
        .store
        .reflection_runs(NoteScope::Deployment(id), 10)
        .await
        .expect("runs");
    assert_eq!(runs.len(), 2);
    assert!(matches!(runs[0].outcome, RunOutcome::Succeeded { .. }));

    // The next tick reads the note back from the store: not due, and its prompt leaves out a
    // note held for review.
    bar += chrono::Duration::hours(1);
    let r = runner(
        &pg,
        &hl,
        bar + chrono::Duration::seconds(2),
        "after",
        1,
        Some(working.resolver()),
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    assert_eq!(working.calls(), 2, "not due right after a note");
    let snap = pg.store.list_snapshots(id, 1).await.expect("snapshots");
    assert_eq!(snap[0].tick_at, bar);
    // Every bullet of the gate's lessons was held for review, so the next prompt does not show
    // them.
    assert_eq!(notes[0].status, types::NoteStatus::PendingReview);
    assert!(
        !snap[0]
            .system_prompt
            .contains("Reversals on the opposite cross")
    );
}

/// Two runners never reflect on one deployment at once (#16 item 7): while another runner holds
/// the deployment's reflection claim, a runner whose tick finds the reflection due calls no
/// model and writes nothing; once the claim is released, the next due reflection runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflection_another_runner_holds_is_not_run_twice() {
    use db::LeaseStore;
    let pg = postgres().await;
    let hl = hyperliquid_mock().await;
    let first = t("2026-11-02T12:00:00Z");
    let id = deploy(&pg, first).await;
    // Another runner is reflecting on the deployment (its claim lasts two days).
    assert!(
        pg.store
            .claim_reflection(
                id,
                "other-runner",
                first,
                first + chrono::Duration::hours(48)
            )
            .await
            .expect("claim")
    );
    let gate = Gate::new(true, false);
    let notes = || async {
        pg.store
            .note_history(NoteScope::Deployment(id), 10)
            .await
            .expect("notes")
    };
    let mut bar = first;
    loop {
        let at = bar + chrono::Duration::seconds(2);
        let r = runner(&pg, &hl, at, "here", 1, Some(gate.resolver())).await;
        r.clone().run(std::future::pending()).await.expect("run");
        if r.metrics().reflections("claimed_elsewhere") > 0 {
            break;
        }
        assert!(bar < first + chrono::Duration::hours(36), "never due");
        bar += chrono::Duration::hours(1);
    }
    assert_eq!(
        gate.calls(),
        0,
        "no model call while another runner reflects"
    );
    assert!(notes().await.is_empty());

    // The other runner finished (released its claim): the next due reflection runs here.
    pg.store
        .release_reflection(id, "other-runner")
        .await
        .expect("release");
    bar += chrono::Duration::hours(1);
    let r = runner(
        &pg,
        &hl,
        bar + chrono::Duration::seconds(2),
        "here",
        1,
        Some(gate.resolver()),
    )
    .await;
    r.clone().run(std::future::pending()).await.expect("run");
    // The reflection and the check call (see the test above): every bullet held.
    assert_eq!(gate.calls(), 2);
    assert_eq!(r.metrics().reflections("flagged"), 1, "ungrounded lessons");
    assert_eq!(notes().await.len(), 1);
    // The claim was released after the reflection: any runner may claim the next one.
    assert!(
        pg.store
            .claim_reflection(id, "third-runner", bar, bar + chrono::Duration::hours(1))
            .await
            .expect("claim")
    );
}
