//! Backtests as jobs through the real binary on PostgreSQL: two `sim-worker work` processes
//! drain 16 jobs while one of them is killed with SIGKILL mid-job; its job is taken over once
//! its lease expired, and every job's summary, ledger, fills and decisions equal those of the
//! same jobs drained by one worker that nobody killed. SIGTERM gives a running job back. A
//! submit past the user's limits, or of a provider's model without `--max-cost`, is refused.
//! Two `sim-worker run`s of one skill started together against one database both succeed.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use db::test_support::pg::TestDatabase;
use db::{JobStore, LedgerStore, TickStore};
use sqlx::Row;
use types::Uuid;

use crate::common::{repo, sim};

const SKILL: &str = "examples/skills/eurusd-sma-cross.yaml";
const JOBS: u32 = 16;

fn bars() -> String {
    format!("EURUSD={}", repo("examples/data/EURUSD.csv"))
}

/// Job `i` of the batch: its own window of the EURUSD example (≈1,000 ticks), its own id.
fn job_id(i: u32) -> Uuid {
    Uuid::from_u128(0x5eed_0000 + u128::from(i))
}

fn submit(url: &str, i: u32) {
    let from = NaiveDate::from_ymd_opt(2017, 4, 20).unwrap() + chrono::Days::new(u64::from(4 * i));
    let to = from + chrono::Days::new(60);
    let (code, out, err) = sim(&[
        "submit",
        "--db",
        url,
        "--skill",
        &repo(SKILL),
        "--bars",
        &bars(),
        "--from",
        &from.to_string(),
        "--to",
        &to.to_string(),
        "--id",
        &job_id(i).to_string(),
        "--label",
        &format!("window {i}"),
    ]);
    assert_eq!(code, 0, "submit {i}: {err}");
    assert_eq!(
        out.trim(),
        job_id(i).to_string(),
        "submit prints the job's id"
    );
}

/// `sim-worker work --db URL --owner OWNER EXTRA…`, its stderr into `log`.
fn worker(url: &str, owner: &str, log: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_sim-worker"))
        .args(["work", "--db", url, "--owner", owner])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Waits for `child` at most `limit`; kills it and fails after that.
fn wait(child: &mut Child, limit: Duration, what: &str, log: &Path) -> (i32, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            if let Some(mut o) = child.stdout.take() {
                std::io::Read::read_to_string(&mut o, &mut out).unwrap();
            }
            return (status.code().unwrap_or(-1), out);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!(
                "{what} still running after {limit:?}; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args(["-s", name, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -s {name}");
}

/// Everything a job's run recorded, to compare: its summary, ledger rows, fills and decisions
/// (the prompts included).
async fn recorded(store: &db::Store, id: Uuid) -> String {
    let job = store.job(id).await.unwrap();
    assert_eq!(job.status, db::JobStatus::Done, "job {id}: {:?}", job.error);
    let d = job.deployment_id.expect("a done job names its deployment");
    let trades = store.all_trades(d).await.unwrap();
    let fills = store.list_fills(d, None).await.unwrap();
    let snapshots = store.list_snapshots(d, u32::MAX).await.unwrap();
    assert!(!snapshots.is_empty() && !trades.is_empty());
    format!(
        "{}\n{trades:?}\n{fills:?}\n{snapshots:?}",
        job.result.expect("a done job's summary")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_drain_the_jobs_and_a_killed_workers_job_is_taken_over_with_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = TestDatabase::create("sim_worker_jobs_", 2).await;
    let url = fleet.url();
    for i in 0..JOBS {
        submit(&url, i);
    }
    let (a_log, b_log) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let lease = ["--drain", "--lease", "2s"];
    let mut a = worker(&url, "worker-a", &a_log, &lease);
    let mut b = worker(&url, "worker-b", &b_log, &lease);

    // Worker A mid-job: its job running, some of its ticks already recorded.
    let started = Instant::now();
    let mid_job = "SELECT j.id FROM backtest_jobs j WHERE j.lease_owner = 'worker-a' \
                   AND j.status = 'running' AND EXISTS (SELECT 1 FROM decision_snapshots s \
                   WHERE s.deployment_id = j.deployment_id)";
    loop {
        let found = sqlx::query(mid_job)
            .fetch_optional(&fleet.pool)
            .await
            .unwrap();
        if found.is_some() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "worker A never ran a job; its log:\n{}",
            std::fs::read_to_string(&a_log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal(&a, "KILL");
    a.wait().unwrap();
    // What A held when it died: its lease, and the ticks it had recorded.
    let killed: Vec<(Uuid, i64)> = sqlx::query(
        "SELECT j.id, (SELECT count(*) FROM decision_snapshots s \
                       WHERE s.deployment_id = j.deployment_id) AS ticks \
         FROM backtest_jobs j WHERE j.lease_owner = 'worker-a' AND j.status = 'running'",
    )
    .fetch_all(&fleet.pool)
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get("id"), r.get("ticks")))
    .collect();
    assert_eq!(killed.len(), 1, "A held one job when it died");
    assert!(killed[0].1 > 0, "the killed job had recorded ticks");

    let (code, out) = wait(&mut b, Duration::from_secs(240), "worker B", &b_log);
    let b_said = std::fs::read_to_string(&b_log).unwrap();
    assert_eq!(code, 0, "worker B: {out}\n{b_said}");
    assert!(
        b_said.contains(&format!("job {} claimed (window", killed[0].0))
            && b_said.contains("(attempt 2)"),
        "B took the killed job over:\n{b_said}"
    );
    let store = db::open_existing(&url).await.unwrap();
    for i in 0..JOBS {
        let job = store.job(job_id(i)).await.unwrap();
        assert_eq!(job.status, db::JobStatus::Done, "{i}: {:?}", job.error);
        let attempts = if job.id == killed[0].0 { 2 } else { 1 };
        assert_eq!(job.attempts, attempts, "job {i}");
        assert_eq!(job.progress.ticks_done, job.progress.ticks_total.unwrap());
        assert!(job.has_report);
    }
    assert!(out.contains("0 failed"), "{out}");

    // The same jobs, drained by one worker nobody killed.
    let reference = TestDatabase::create("sim_worker_jobs_", 2).await;
    let ref_url = reference.url();
    for i in 0..JOBS {
        submit(&ref_url, i);
    }
    let ref_log = dir.path().join("ref.log");
    let mut one = worker(
        &ref_url,
        "reference",
        &ref_log,
        &["--drain", "--concurrency", "2"],
    );
    let (code, _) = wait(
        &mut one,
        Duration::from_secs(240),
        "the reference worker",
        &ref_log,
    );
    assert_eq!(code, 0, "{}", std::fs::read_to_string(&ref_log).unwrap());
    let ref_store = db::open_existing(&ref_url).await.unwrap();
    for i in 0..JOBS {
        let (got, want) = (
            recorded(&store, job_id(i)).await,
            recorded(&ref_store, job_id(i)).await,
        );
        assert!(
            got == want,
            "job {i} recorded other rows than the reference run"
        );
    }
    store.close().await.unwrap();
    ref_store.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_gives_the_running_job_back_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDatabase::create("sim_worker_jobs_", 2).await;
    let url = db.url();
    let (code, id, err) = sim(&[
        "submit",
        "--db",
        &url,
        "--skill",
        &repo(SKILL),
        "--bars",
        &bars(),
    ]);
    assert_eq!(code, 0, "{err}");
    let id: Uuid = id.trim().parse().unwrap();
    let log = dir.path().join("w.log");
    let mut w = worker(&url, "stopping", &log, &["--lease", "3s"]);
    let started = Instant::now();
    loop {
        let ticks: i32 = sqlx::query("SELECT ticks_done FROM backtest_jobs WHERE id = $1")
            .bind(id)
            .fetch_one(&db.pool)
            .await
            .unwrap()
            .get(0);
        if ticks > 0 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the job never ran"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    signal(&w, "TERM");
    let (code, out) = wait(&mut w, Duration::from_secs(30), "the worker", &log);
    assert_eq!(code, 0, "{}", std::fs::read_to_string(&log).unwrap());
    assert!(out.contains("0 jobs done, 0 failed, 1 given back"), "{out}");
    let store = db::open_existing(&url).await.unwrap();
    let job = store.job(id).await.unwrap();
    assert_eq!(job.status, db::JobStatus::Queued);
    assert_eq!(job.lease_owner, None);
    store.close().await.unwrap();
}

#[tokio::test]
async fn a_submit_past_the_users_limits_is_refused() {
    let db = TestDatabase::create("sim_worker_jobs_", 2).await;
    let url = db.url();
    let base = [
        "submit",
        "--db",
        &url,
        "--skill",
        &repo(SKILL),
        "--bars",
        &bars(),
    ];
    let one = [&base[..], &["--max-open-jobs", "1"]].concat();
    let (code, _, err) = sim(&one);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = sim(&one);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(
        err.contains("has 1 jobs queued or running and submits 1 more; at most 1"),
        "{err}"
    );
    // A model that calls a provider states what it may spend.
    let priced = [&base[..], &["--model", "openai/gpt-4o-mini"]].concat();
    let (code, _, err) = sim(&priced);
    assert_eq!(code, 2);
    assert!(
        err.contains("--max-cost: openai/gpt-4o-mini calls a provider"),
        "{err}"
    );
    // Past the cost cap.
    let (code, _, err) = sim(&[&priced[..], &["--max-cost", "3", "--cost-cap", "2"]].concat());
    assert_eq!(code, 2);
    assert!(err.contains("(the cost cap)"), "{err}");
    // A flag a job does not carry.
    let mut news = base.to_vec();
    news.extend(["--news", "x.json"]);
    let (code, _, err) = sim(&news);
    assert_eq!(code, 2);
    assert!(err.contains("--news: not carried by a job"), "{err}");
}

/// Two `sim-worker run`s of one skill (over different ranges) started together against one
/// PostgreSQL database: both register the skill version, neither collides.
#[tokio::test]
async fn two_runs_of_one_skill_started_together_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDatabase::create("sim_worker_jobs_", 2).await;
    let url = db.url();
    // The schema first: the race is the registration's, not the migrations'.
    db::connect(&url).await.unwrap().close().await.unwrap();
    let runs: Vec<Child> = ["2017-05-01", "2017-05-02", "2017-05-03", "2017-05-04"]
        .iter()
        .map(|to| {
            Command::new(env!("CARGO_BIN_EXE_sim-worker"))
                .args([
                    "run",
                    "--skill",
                    &repo(SKILL),
                    "--bars",
                    &bars(),
                    "--to",
                    to,
                ])
                .args(["--db", &url, "--out"])
                .arg(dir.path().join(to))
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let versions: i64 = sqlx::query("SELECT count(*) FROM skill_versions")
        .fetch_one(&db.pool)
        .await
        .unwrap()
        .get(0);
    assert_eq!(versions, 1);
}
