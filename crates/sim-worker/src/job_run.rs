//! One claimed job's run ([`run_job`]): the job's files written, the run prepared exactly as
//! `sim-worker run` prepares it ([`crate::run_cmd::prepare`]), its deployment registered for
//! the job's user and recorded into the worker's database by [`backtest::run`], with a
//! heartbeat extending the lease and reporting the progress; then its summary and report
//! stored with the job.
//!
//! The run's ids are derived from the job: its deployment is UUID v5 of the job's id, its
//! skill UUID v5 of the skill's body ([`job_skill_id`]), and the ticks' ids follow from the
//! deployment (`tick`'s ids). A job taken over after its worker died
//! starts over ([`db::JobQueue::begin_job_run`] deletes what the earlier attempt recorded), so
//! its rows are those of an uninterrupted run. Each run opens a store of its own: a store
//! remembers which prompt lines a deployment holds, and an earlier attempt's lines are gone.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use backtest::{Registration, RunOptions, Summary};
use chrono::Utc;
use db::{JobProgress, JobQueue, JobResult, JobStore, Store, TickStore};
use types::Uuid;

use crate::job_spec::Materialized;
use crate::spend::{Guard, Stop};

/// How many times a job is claimed before it is given up: each claim past the first followed
/// a worker that died running it.
pub(crate) const MAX_ATTEMPTS: u32 = 3;

/// How a job's run ended, for the worker's log.
#[derive(Debug)]
pub(crate) enum JobEnd {
    /// Done: the summary's one-line account.
    Done(String),
    /// Failed: why.
    Failed(String),
    /// Given back (the worker is stopping): queued again.
    Released,
    /// The lease was lost (taken over, or the job cancelled): nothing more was written.
    Lost,
}

/// The deployment a job's run records into.
pub(crate) fn job_deployment_id(job: Uuid) -> Uuid {
    Uuid::new_v5(
        &tick::ID_NAMESPACE,
        format!("backtest-job\n{job}").as_bytes(),
    )
}

/// The skill a job's run registers under: the user's skill of that name (or explicit id) and
/// this body. Two jobs of one skill file share it; an arena's variants of a skill, or a draft
/// edited without bumping its `version`, are skills of their own — never a version stored
/// with another body.
pub(crate) fn job_skill_id(skill_id: Uuid, body: &serde_json::Value) -> Uuid {
    Uuid::new_v5(&skill_id, body.to_string().as_bytes())
}

/// What the run and its heartbeat share.
struct Shared {
    progress: Mutex<JobProgress>,
    /// The lease is gone: stop, write nothing.
    lost: AtomicBool,
}

impl Shared {
    fn progress(&self) -> JobProgress {
        *self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A job claimed by a worker, and what its run needs from the worker.
pub(crate) struct Claimed<'a> {
    /// The database the job was claimed from; its run records there.
    pub url: &'a str,
    /// The job.
    pub job: &'a db::Job,
    /// The lease's owner.
    pub owner: &'a str,
    /// How long the lease lasts without a heartbeat.
    pub lease: Duration,
    /// The worker's signal to give the job back between two ticks.
    pub stopping: &'a AtomicBool,
}

/// Runs the claimed job, recording into its database. Runs on a thread of its own: it starts a
/// runtime of its own (one worker thread, which writes the batches and beats the heart while
/// this thread ticks).
pub(crate) fn run_job(c: &Claimed<'_>) -> JobEnd {
    // One runtime for the job's store: its connections belong to the runtime that opened them.
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return JobEnd::Failed(format!("starting the job's runtime: {e}")),
    };
    let store = match rt.block_on(db::open_existing(c.url)) {
        Ok(s) => s,
        Err(e) => return JobEnd::Failed(format!("opening the store: {e}")),
    };
    let end = run_on(&rt, &store, c);
    let (id, owner) = (c.job.id, c.owner);
    let settled = rt.block_on(async {
        let now = Utc::now();
        let r = match &end {
            JobEnd::Failed(why) => store.fail_job(id, owner, now, why).await,
            JobEnd::Released => store.release_job(id, owner).await,
            JobEnd::Done(_) | JobEnd::Lost => Ok(true),
        };
        let _ = store.close().await;
        r
    });
    match settled {
        Ok(true) => end,
        Ok(false) => JobEnd::Lost,
        Err(e) => JobEnd::Failed(format!("recording the job's end: {e}")),
    }
}

fn run_on(rt: &tokio::runtime::Runtime, store: &Store, c: &Claimed<'_>) -> JobEnd {
    let Claimed {
        url,
        job,
        owner,
        lease,
        stopping,
    } = *c;
    if job.attempts > MAX_ATTEMPTS {
        return JobEnd::Failed(format!(
            "given up after {} attempts: a worker stopped running it each time (its lease \
             expired)",
            job.attempts - 1
        ));
    }
    // The files first (read through the store), then the run prepared from them on this
    // thread, outside the runtime: preparing may start one of its own (a cassette).
    let bars = rt.block_on(async {
        let mut out = BTreeMap::new();
        for (symbol, r) in &job.spec.bars {
            let stored = store
                .job_bars(job.user_id, &r.sha256)
                .await
                .map_err(|e| format!("bars of {symbol}: {e}"))?;
            out.insert(symbol.clone(), stored);
        }
        Ok::<_, String>(out)
    });
    let bars = match bars {
        Ok(b) => b,
        Err(e) => return JobEnd::Failed(e),
    };
    let files = match Materialized::write(&job.spec, &bars) {
        Ok(f) => f,
        Err(e) => return JobEnd::Failed(e),
    };
    let mut p = match crate::run_cmd::prepare(&files.args) {
        Ok(p) => p,
        Err(e) => return JobEnd::Failed(clean(&e.message)),
    };
    // The run is the job's user's, its ids the job's.
    let d = &mut p.input.deployment;
    d.user_id = job.user_id;
    d.skill_id = job_skill_id(d.skill.skill_id_for(job.user_id), &p.skill_body);
    d.deployment_id = job_deployment_id(job.id);
    let deployment_id = d.deployment_id;
    let registration = Registration::of(&p.input, p.skill_body.clone(), p.first_tick)
        .with_status(db::DeploymentStatus::Stopped)
        .existing_user();
    let ticks = u32::try_from(p.ticks).unwrap_or(u32::MAX);
    let shared = Arc::new(Shared {
        progress: Mutex::new(JobProgress {
            ticks_done: 0,
            ticks_total: Some(ticks),
            cost_usd: rust_decimal::Decimal::ZERO,
        }),
        lost: AtomicBool::new(false),
    });
    let result = rt.block_on(async {
        if !store
            .begin_job_run(job.id, owner, deployment_id, ticks)
            .await
            .map_err(|e| crate::Failure::bad_input(e.to_string()))?
        {
            return Ok::<_, crate::Failure>(JobEnd::Lost);
        }
        let heart = tokio::spawn(heartbeat(
            store.clone(),
            job.id,
            owner.to_owned(),
            lease,
            Arc::clone(&shared),
        ));
        let end = simulate(store, url, &mut p, &registration, &shared, stopping).await;
        heart.abort();
        let end = end?;
        if shared.lost.load(Ordering::SeqCst) {
            return Ok(JobEnd::Lost);
        }
        match end {
            Ran::Done(result) => {
                let line = one_line(&result.summary);
                if store
                    .finish_job(job.id, owner, Utc::now(), &result)
                    .await
                    .map_err(|e| crate::Failure::bad_input(e.to_string()))?
                {
                    Ok(JobEnd::Done(line))
                } else {
                    Ok(JobEnd::Lost)
                }
            }
            Ran::Stopped => Ok(JobEnd::Released),
            Ran::Failed(why) => Ok(JobEnd::Failed(why)),
        }
    });
    match result {
        Ok(end) => end,
        Err(e) => JobEnd::Failed(clean(&e.message)),
    }
}

/// A failure's message without the `error: ` the command line prints.
fn clean(message: &str) -> String {
    let m = message.trim();
    m.strip_prefix("error: ").unwrap_or(m).to_owned()
}

/// Beats every third of the lease: the lease extended, the progress recorded. A heartbeat the
/// store refuses (the lease is another worker's, or the job was cancelled) marks the run lost;
/// one that fails (the database unreachable) is tried again at the next beat.
async fn heartbeat(store: Store, job: Uuid, owner: String, lease: Duration, shared: Arc<Shared>) {
    let every = lease / 3;
    let lease = chrono::Duration::from_std(lease).unwrap_or(chrono::Duration::seconds(30));
    loop {
        tokio::time::sleep(every).await;
        let now = Utc::now();
        match store
            .heartbeat_job(job, &owner, now, now + lease, shared.progress())
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                shared.lost.store(true, Ordering::SeqCst);
                return;
            }
            Err(e) => {
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!("job {job}: heartbeat failed (tried again): {e}\n").as_bytes(),
                );
            }
        }
    }
}

/// How the run itself ended.
enum Ran {
    Done(JobResult),
    /// Stopped between two ticks: the worker is stopping, or the lease was lost.
    Stopped,
    Failed(String),
}

/// The backtest of `p` into `store`, as `sim-worker run` runs it: registered, ticked with the
/// cost guard, its last batch stored, then summarised with its report.
async fn simulate(
    store: &Store,
    url: &str,
    p: &mut crate::run_cmd::Prepared,
    registration: &Registration,
    shared: &Shared,
    stopping: &AtomicBool,
) -> Result<Ran, crate::Failure> {
    let servers = crate::run_cmd::start_mcp_servers(&mut p.input).await?;
    let ran = simulate_started(store, url, p, registration, shared, stopping).await;
    servers.shutdown().await;
    ran
}

async fn simulate_started(
    store: &Store,
    url: &str,
    p: &crate::run_cmd::Prepared,
    registration: &Registration,
    shared: &Shared,
    stopping: &AtomicBool,
) -> Result<Ran, crate::Failure> {
    let bad = |e: &dyn std::fmt::Display| crate::Failure::bad_input(e.to_string());
    registration
        .store(store)
        .await
        .map_err(|e| bad(&format!("recording the deployment: {e}")))?;
    let model_id = p.model.id().to_owned();
    let mut guard = Guard::new(
        &model_id,
        model::rates_for(&model_id),
        &p.spend,
        &p.cassettes,
        p.max_cost,
        p.ticks,
    );
    let mut stop = None;
    let mut interrupted = false;
    let on_tick = |_: &tick::TickOutcome, _: &tick::TickState| {
        {
            let mut progress = shared
                .progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            progress.ticks_done += 1;
            progress.cost_usd = p.spend.totals().usd;
        }
        if stopping.load(Ordering::SeqCst) || shared.lost.load(Ordering::SeqCst) {
            interrupted = true;
            return ControlFlow::Break(());
        }
        match guard.after_tick() {
            Some(why) => {
                stop = Some(why);
                ControlFlow::Break(())
            }
            None => ControlFlow::Continue(()),
        }
    };
    let run = backtest::run(
        &p.input,
        p.model.as_ref(),
        store,
        RunOptions::default().on_tick(on_tick),
    )
    .await
    .map_err(|e| bad(&e))?;
    let ticks_run = guard.done();
    for c in &p.cassettes {
        c.close().await;
    }
    let result = run.stored().await.map_err(|e| bad(&e))?;
    if interrupted {
        return Ok(Ran::Stopped);
    }
    if let Some(Stop::CassetteMiss(miss)) = &stop {
        return Ok(Ran::Failed(format!(
            "{miss}\nthe run stopped at tick {ticks_run} of {}; nothing was sent for it (re-record \
             with the cassette in auto or record mode)",
            p.ticks
        )));
    }
    let d = &p.input.deployment;
    let summary = Summary::of(&result);
    let stopped = match &stop {
        Some(Stop::MaxCost { cap, spent, .. }) => Some(serde_json::json!({
            "reason": "max_cost",
            "max_cost_usd": cap.to_string(),
            "spent_usd": spent.to_string(),
            "ticks_run": ticks_run,
            "ticks_planned": p.ticks,
        })),
        _ => None,
    };
    let mut json = crate::run_cmd::summary_json(&summary, p, store.backend_name(), stopped)
        .map_err(|e| bad(&e))?;
    if let Some(obj) = json.as_object_mut() {
        // What an arena run as jobs reads back: the equity after every tick, and how many
        // model responses the cassettes answered and recorded.
        let equity: Vec<serde_json::Value> = result
            .points
            .iter()
            .map(|t| serde_json::json!([t.tick_at, t.equity_usd.to_string()]))
            .collect();
        obj.insert("equity".into(), equity.into());
        let (replayed, recorded) = crate::spend::cassette_counts(&p.cassettes);
        obj.insert(
            "cassettes".into(),
            serde_json::json!({"replayed": replayed, "recorded": recorded}),
        );
    }
    // The report, as `run` writes it: its last tick's prompts read back from the store.
    let charts = crate::report::charts(&result);
    let mut html = crate::report::render_head(&crate::report::ReportInput {
        skill: &d.skill,
        model: &model_id,
        summary: &summary,
        result: &result,
        db_url: &db::redact_url(url),
        deployment_id: d.deployment_id,
        charts: &charts,
    });
    let report_html = match result.points.last() {
        Some(last) => {
            let snapshot = store
                .get_snapshot(tick::snapshot_id(d.deployment_id, last.tick_at))
                .await
                .map_err(|e| bad(&format!("reading the snapshot of {}: {e}", last.tick_at)))?;
            crate::report::push_snapshot(&mut html, &snapshot);
            Some(html)
        }
        None => None,
    };
    let progress = JobProgress {
        ticks_done: summary.ticks,
        ticks_total: Some(u32::try_from(p.ticks).unwrap_or(u32::MAX)),
        cost_usd: p.spend.totals().usd,
    };
    Ok(Ran::Done(JobResult {
        summary: json,
        report_html,
        progress,
    }))
}

/// A finished run in one line: ticks, trades, net PnL, max drawdown.
fn one_line(summary: &serde_json::Value) -> String {
    let dec = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|s| s.parse::<rust_decimal::Decimal>().ok())
            .unwrap_or_default()
    };
    format!(
        "{} ticks · {} trades · net PnL {} · max drawdown {}",
        summary["ticks"],
        summary["trades"],
        types::text::money(dec(&summary["pnl"]["net_usd"])),
        types::text::pct(dec(&summary["max_drawdown_pct"])),
    )
}
