//! Backtests as jobs through the real binary on PostgreSQL: an arena of 16 runs queued as jobs
//! and drained by two `sim-worker work` processes while one of them is killed with SIGKILL
//! mid-job; its job is taken over once its lease expired, and the arena's table and arena.json
//! equal those of the same arena run by `arena` itself. SIGTERM gives a running job back. A
//! submit past the user's limits, or of a provider's model without `--max-cost`, is refused.
//! Two `sim-worker run`s of one skill started together against one database both succeed.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use db::JobStore;
use db::test_support::pg::TestDatabase;
use sqlx::Row;
use types::Uuid;

use crate::common::{repo, sim};

const SKILL: &str = "examples/skills/eurusd-sma-cross.yaml";

fn bars() -> String {
    format!("EURUSD={}", repo("examples/data/EURUSD.csv"))
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

/// The README's arena over four windows: three entrants and the skill's rule baseline, 16
/// runs of ≈420 ticks (a job's ticks are stored 256 at a time, so a killed job has some).
fn arena_args(out: &Path) -> Vec<String> {
    let mut args = crate::arena_cli::readme_arena();
    args.extend(["--windows".to_owned(), "4".to_owned(), "--out".to_owned()]);
    args.push(out.display().to_string());
    args
}

/// What `arena` printed, but for the lines naming its output files.
fn table(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| !l.starts_with("arena:") && !l.starts_with("report:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_drain_an_arena_and_a_killed_workers_job_is_taken_over_with_the_same_results() {
    let dir = tempfile::tempdir().unwrap();
    let fleet = TestDatabase::create("sim_worker_jobs_", 2).await;
    let url = fleet.url();
    // The schema first, for the queries below.
    db::connect(&url).await.unwrap().close().await.unwrap();
    // The arena queues its runs as jobs and waits for them.
    let arena_log = dir.path().join("arena.log");
    let mut arena = Command::new(env!("CARGO_BIN_EXE_sim-worker"))
        .args(arena_args(&dir.path().join("fleet")))
        .args(["--db", &url])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&arena_log).unwrap())
        .spawn()
        .unwrap();
    // The workers once the jobs are queued (`--drain` exits when nothing is).
    let started = Instant::now();
    while !std::fs::read_to_string(&arena_log)
        .unwrap_or_default()
        .contains("jobs queued")
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the arena queued nothing: {}",
            std::fs::read_to_string(&arena_log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
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
            started.elapsed() < Duration::from_secs(120),
            "worker A never ran a job; its log:\n{}\nthe arena's:\n{}",
            std::fs::read_to_string(&a_log).unwrap_or_default(),
            std::fs::read_to_string(&arena_log).unwrap_or_default()
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

    let (code, out) = wait(&mut b, Duration::from_secs(300), "worker B", &b_log);
    let b_said = std::fs::read_to_string(&b_log).unwrap();
    assert_eq!(code, 0, "worker B: {out}\n{b_said}");
    assert!(
        b_said.contains(&format!("job {} claimed (arena", killed[0].0))
            && b_said.contains("(attempt 2)"),
        "B took the killed job over:\n{b_said}"
    );
    assert!(out.contains("0 failed"), "{out}");
    let (code, fleet_out) = wait(&mut arena, Duration::from_secs(60), "the arena", &arena_log);
    let arena_said = std::fs::read_to_string(&arena_log).unwrap();
    assert_eq!(code, 0, "{arena_said}");
    assert!(
        arena_said.contains("arena: 16 jobs queued in batch"),
        "{arena_said}"
    );
    assert!(
        arena_said.contains("arena: 16 of 16 jobs done"),
        "{arena_said}"
    );
    let jobs: Vec<(Uuid, i32, String)> =
        sqlx::query("SELECT id, attempts, status FROM backtest_jobs ORDER BY created_at")
            .fetch_all(&fleet.pool)
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get("id"), r.get("attempts"), r.get("status")))
            .collect();
    assert_eq!(jobs.len(), 16, "an entrant, window and repeat a job");
    for (id, attempts, status) in &jobs {
        assert_eq!(status, "done", "job {id}");
        let want = if *id == killed[0].0 { 2 } else { 1 };
        assert_eq!(*attempts, want, "job {id}");
    }

    // The same arena run by `arena` itself, nobody killed: the same table, the same arena.json.
    let local = dir.path().join("local");
    let args = arena_args(&local);
    let (code, local_out, err) = tokio::task::spawn_blocking(move || {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        sim(&refs)
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    assert_eq!(table(&fleet_out), table(&local_out));
    let json = |d: &str| std::fs::read(dir.path().join(d).join("arena.json")).unwrap();
    assert!(
        json("fleet") == json("local"),
        "arena.json of the fleet differs from the local run's"
    );
    // Every run's report, read back from its job.
    for row in ["fast", "slow", "half-size"] {
        for w in 1..=4 {
            let report = dir
                .path()
                .join(format!("fleet/runs/{row}/w0{w}/r1/report.html"));
            let html = std::fs::read_to_string(&report).unwrap();
            assert!(html.contains("<title>Backtest"), "{}", report.display());
        }
    }
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

/// An arena past the user's limits queues nothing; within them, `--submit-only` queues it once
/// and the same command again finds it queued.
#[tokio::test]
async fn an_arena_is_queued_within_the_users_limits_and_only_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = TestDatabase::create("sim_worker_jobs_", 2).await;
    let url = db.url();
    let mut args = arena_args(&dir.path().join("arena"));
    args.extend(["--db".to_owned(), url.clone(), "--submit-only".to_owned()]);
    let run = |extra: &[&str]| {
        let mut all: Vec<&str> = args.iter().map(String::as_str).collect();
        all.extend(extra);
        sim(&all)
    };
    let (code, out, err) = run(&["--max-open-jobs", "10"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.is_empty());
    assert!(
        err.contains("has 0 jobs queued or running and submits 16 more; at most 10"),
        "{err}"
    );
    let store = db::open_existing(&url).await.unwrap();
    let all = db::JobFilter {
        user_id: None,
        batch_id: None,
        limit: 100,
    };
    assert!(store.jobs(&all).await.unwrap().is_empty(), "nothing queued");

    let (code, out, err) = run(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("queued:  16 jobs in batch "), "{out}");
    let (code, again, err) = run(&[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(again, out, "the same batch");
    assert!(
        err.contains("is queued on") && err.contains("already (16 jobs)"),
        "{err}"
    );
    let jobs = store.jobs(&all).await.unwrap();
    assert_eq!(jobs.len(), 16);
    assert!(jobs.iter().all(|j| j.status == db::JobStatus::Queued));
    let mut labels: Vec<&str> = jobs.iter().filter_map(|j| j.label.as_deref()).collect();
    labels.sort_unstable();
    assert_eq!(labels[0], "arena fast w01 r1");
    assert_eq!(labels[15], "arena slow w04 r1");
    store.close().await.unwrap();
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
