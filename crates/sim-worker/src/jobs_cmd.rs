//! The job fleet's commands: `submit` queues a backtest as a job on PostgreSQL, `work` leases
//! jobs and runs them (as many at once as `--concurrency`), `jobs` shows where they stand.
//!
//! A worker claims jobs `FOR UPDATE SKIP LOCKED` ([`db::JobQueue::claim_jobs`]), runs each on a
//! thread of its own ([`crate::job_run::run_job`]) with a heartbeat every third of `--lease`,
//! and takes over a job whose worker died once its lease expired. On SIGTERM (or ctrl-c) it
//! claims nothing more, gives its running jobs back between two ticks (queued again for the
//! next worker) and exits 0.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::Utc;
use clap::Args;
use db::{Job, JobFilter, JobLimits, JobQueue, JobStatus, JobStore, RegistryStore};
use rust_decimal::Decimal;
use types::{Uuid, text};

use crate::Failure;
use crate::job_run::{Claimed, JobEnd, run_job};
use crate::job_spec::{RunJob, default_user, submit_runs};
use crate::run_cmd::RunArgs;

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

/// Who a submit queues jobs for and the limits it is held to (`submit`, `arena --db`).
#[derive(Debug, Clone, Args)]
pub(crate) struct SubmitAs {
    /// Submit as this user: the runs' deployments, ticks and ledgers are theirs (readable under
    /// their row-level security). Default: the user `sim-worker run` records as.
    #[arg(long, value_name = "ID")]
    pub user: Option<Uuid>,
    /// The user's limit of jobs queued or running at once: a submit past it is refused.
    #[arg(long, value_name = "N", default_value_t = JobLimits::default().max_open_jobs)]
    pub max_open_jobs: u32,
    /// The user's cost cap: the `--max-cost` of their queued and running jobs add up to at
    /// most this many USD (a built-in model, or a cassette replaying, costs nothing).
    #[arg(long, value_name = "USD", default_value = "50")]
    pub cost_cap: String,
}

impl SubmitAs {
    /// The limits the flags give.
    ///
    /// # Errors
    /// Bad input naming `--cost-cap` when it is not an amount.
    pub(crate) fn limits(&self) -> Result<JobLimits, Failure> {
        let cap: Decimal = self
            .cost_cap
            .trim()
            .trim_start_matches('$')
            .parse()
            .ok()
            .filter(|d: &Decimal| *d >= Decimal::ZERO)
            .ok_or_else(|| {
                bad(format!(
                    "--cost-cap: {:?} is not an amount of USD",
                    self.cost_cap
                ))
            })?;
        Ok(JobLimits {
            max_open_jobs: self.max_open_jobs,
            max_open_cost_usd: cap,
        })
    }

    /// The user to submit as: `--user`, or the default user (created when missing).
    ///
    /// # Errors
    /// Bad input when the default user cannot be written.
    pub(crate) async fn user(&self, store: &db::Store) -> Result<Uuid, Failure> {
        if let Some(u) = self.user {
            return Ok(u);
        }
        let u = default_user();
        store
            .upsert_user(&db::User { id: u, email: None })
            .await
            .map_err(|e| bad(e.to_string()))?;
        Ok(u)
    }
}

/// `sim-worker submit`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SubmitArgs {
    /// The run, as `sim-worker run` takes it; `--db` is the PostgreSQL database the workers
    /// lease jobs from and record the run into (required).
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub submit_as: SubmitAs,
    /// Put the job in this batch (`jobs --batch` shows a batch's jobs).
    #[arg(long, value_name = "ID")]
    pub batch: Option<Uuid>,
    /// A name for the job (1..=200 characters).
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// The job's id (default: a fresh one). Submitting an id that exists is refused.
    #[arg(long, value_name = "ID")]
    pub id: Option<Uuid>,
}

/// `sim-worker submit`: queues the run; prints the job's id.
pub(crate) fn submit(args: SubmitArgs) -> Result<String, Failure> {
    let url = args.run.db.clone().ok_or_else(|| {
        bad("--db: submit needs the database the workers lease jobs from (postgres://…)")
    })?;
    let limits = args.submit_as.limits()?;
    let run = RunJob {
        args: args.run,
        label: args.label,
        id: args.id,
    };
    let (batch, submit_as) = (args.batch, args.submit_as);
    crate::block_on(async move {
        let store = db::connect(&url)
            .await
            .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(&url))))?;
        let submitted = async {
            let user = submit_as.user(&store).await?;
            submit_runs(&store, user, batch, &[run], limits, Utc::now()).await
        }
        .await;
        let _ = store.close().await;
        Ok(submitted?.iter().map(|id| format!("{id}\n")).collect())
    })
}

/// `sim-worker work`.
#[derive(Debug, Clone, Args)]
pub(crate) struct WorkArgs {
    /// The PostgreSQL database to lease jobs from and record their runs into.
    #[arg(long, value_name = "URL")]
    pub db: String,
    /// Jobs run at once, each on a thread of its own (one per core is the most that helps).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// How long a claimed job stays leased without a heartbeat (heartbeats come every third of
    /// it): a worker that dies loses its jobs to another after this long.
    #[arg(long, value_name = "DURATION", default_value = "30s",
          value_parser = types::cli::parse_duration)]
    pub lease: Duration,
    /// Exit once no job is left to claim and this worker's jobs are done.
    #[arg(long)]
    pub once: bool,
    /// Exit once no job is queued or running anywhere (another worker's too: a dead worker's
    /// jobs are waited for and taken over).
    #[arg(long, conflicts_with = "once")]
    pub drain: bool,
    /// The name leases are held under (default: the host's name and the process id).
    #[arg(long, value_name = "NAME")]
    pub owner: Option<String>,
}

/// This host's name, for lease owners.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// What a worker did, for its last line.
#[derive(Debug, Default)]
struct Tally {
    done: u32,
    failed: u32,
    released: u32,
    lost: u32,
}

fn log(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// `sim-worker work`: claims and runs jobs until stopped (or, with `--once` / `--drain`, until
/// there is nothing left to do); prints what it did.
pub(crate) fn work(args: WorkArgs) -> Result<String, Failure> {
    if args.lease < Duration::from_secs(1) {
        return Err(bad(format!(
            "--lease: {} ms is too short to heartbeat in; give 1s or more",
            args.lease.as_millis()
        )));
    }
    let owner = args
        .owner
        .clone()
        .unwrap_or_else(|| format!("sim-worker@{}:{}", host_name(), std::process::id()));
    if owner.trim().is_empty() || owner.chars().count() > db::MAX_JOB_OWNER_CHARS {
        return Err(bad(format!(
            "--owner: 1 to {} characters (got {})",
            db::MAX_JOB_OWNER_CHARS,
            owner.chars().count()
        )));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| bad(format!("cannot start the async runtime: {e}")))?;
    let tally = rt.block_on(work_loop(&args, &owner))?;
    Ok(format!(
        "worker {owner}: {} jobs done, {} failed, {} given back, {} lost to another worker\n",
        tally.done, tally.failed, tally.released, tally.lost
    ))
}

async fn work_loop(args: &WorkArgs, owner: &str) -> Result<Tally, Failure> {
    let stopping = Arc::new(AtomicBool::new(false));
    let signalled = Arc::new(tokio::sync::Notify::new());
    listen_for_stop(Arc::clone(&stopping), Arc::clone(&signalled))?;
    let store = db::connect(&args.db)
        .await
        .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(&args.db))))?;
    let lease = chrono::Duration::from_std(args.lease).map_err(|e| bad(format!("--lease: {e}")))?;
    let poll = (args.lease / 4).min(Duration::from_secs(1));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Uuid, JobEnd)>();
    let mut running = 0_usize;
    let mut tally = Tally::default();
    let record = |tally: &mut Tally, id: Uuid, end: JobEnd| match end {
        JobEnd::Done(line) => {
            tally.done += 1;
            log(&format!("job {id} done: {line}"));
        }
        JobEnd::Failed(why) => {
            tally.failed += 1;
            log(&format!("job {id} failed: {why}"));
        }
        JobEnd::Released => {
            tally.released += 1;
            log(&format!("job {id} given back: queued again"));
        }
        JobEnd::Lost => {
            tally.lost += 1;
            log(&format!(
                "job {id} lost its lease (taken over or cancelled)"
            ));
        }
    };
    loop {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let free = usize::from(args.concurrency).saturating_sub(running);
        let mut claimed = 0;
        if free > 0 {
            let jobs = store
                .claim_jobs(owner, Utc::now(), lease, u32::try_from(free).unwrap_or(1))
                .await
                .map_err(|e| bad(format!("claiming jobs: {e}")))?;
            claimed = jobs.len();
            for job in jobs {
                running += 1;
                log(&format!(
                    "job {} claimed{} (attempt {})",
                    job.id,
                    job.label
                        .as_deref()
                        .map(|l| format!(" ({l})"))
                        .unwrap_or_default(),
                    job.attempts
                ));
                spawn_job(args, owner, job, &stopping, &tx)?;
            }
        }
        if running == 0 && claimed == 0 {
            if args.once {
                break;
            }
            if args.drain
                && store
                    .open_jobs(None)
                    .await
                    .map_err(|e| bad(format!("counting jobs: {e}")))?
                    == 0
            {
                break;
            }
        }
        if claimed > 0 && running < usize::from(args.concurrency) {
            // More may be waiting: claim again at once.
            continue;
        }
        tokio::select! {
            Some((id, end)) = rx.recv() => {
                running -= 1;
                record(&mut tally, id, end);
            }
            () = tokio::time::sleep(poll) => {}
            () = signalled.notified() => {}
        }
    }
    // Stopping: the running jobs are given back at their next tick.
    while running > 0 {
        match rx.recv().await {
            Some((id, end)) => {
                running -= 1;
                record(&mut tally, id, end);
            }
            None => break,
        }
    }
    let _ = store.close().await;
    Ok(tally)
}

/// Runs `job` on a thread of its own; its end is sent on `tx`.
fn spawn_job(
    args: &WorkArgs,
    owner: &str,
    job: Job,
    stopping: &Arc<AtomicBool>,
    tx: &tokio::sync::mpsc::UnboundedSender<(Uuid, JobEnd)>,
) -> Result<(), Failure> {
    let (url, owner, lease) = (args.db.clone(), owner.to_owned(), args.lease);
    let (stopping, tx) = (Arc::clone(stopping), tx.clone());
    std::thread::Builder::new()
        .name(format!("job-{}", job.id))
        .spawn(move || {
            let end = run_job(&Claimed {
                url: &url,
                job: &job,
                owner: &owner,
                lease,
                stopping: &stopping,
            });
            let _ = tx.send((job.id, end));
        })
        .map(|_| ())
        .map_err(|e| bad(format!("starting a thread for job: {e}")))
}

/// Sets `stopping` (and wakes the loop) on SIGTERM or ctrl-c; the handlers are installed before
/// this returns.
fn listen_for_stop(
    stopping: Arc<AtomicBool>,
    signalled: Arc<tokio::sync::Notify>,
) -> Result<(), Failure> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())
        .map_err(|e| bad(format!("cannot listen for SIGTERM: {e}")))?;
    let mut int = signal(SignalKind::interrupt())
        .map_err(|e| bad(format!("cannot listen for ctrl-c: {e}")))?;
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        log("stopping: no new job; the running ones are given back at their next tick");
        stopping.store(true, Ordering::SeqCst);
        signalled.notify_one();
    });
    Ok(())
}

/// `sim-worker jobs`.
#[derive(Debug, Clone, Args)]
pub(crate) struct JobsArgs {
    /// The database the jobs are queued in.
    #[arg(long, value_name = "URL")]
    pub db: String,
    /// Only this batch's jobs.
    #[arg(long, value_name = "ID")]
    pub batch: Option<Uuid>,
    /// Only this user's jobs.
    #[arg(long, value_name = "ID")]
    pub user: Option<Uuid>,
    /// Most jobs shown, newest first.
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(db::MAX_JOBS_READ)))]
    pub limit: u32,
    /// One JSON object per line instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `sim-worker jobs`: the jobs, newest first (a batch's in the order submitted), with their
/// status, progress, cost and result.
pub(crate) fn jobs(args: JobsArgs) -> Result<String, Failure> {
    crate::block_on(async move {
        let store = db::open_existing(&args.db)
            .await
            .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(&args.db))))?;
        let mut jobs = store
            .jobs(&JobFilter {
                user_id: args.user,
                batch_id: args.batch,
                limit: args.limit,
            })
            .await
            .map_err(|e| bad(e.to_string()))?;
        let _ = store.close().await;
        if args.batch.is_some() {
            jobs.reverse();
        }
        Ok(if args.json {
            jobs.iter().map(|j| format!("{}\n", job_json(j))).collect()
        } else {
            table(&jobs)
        })
    })
}

/// A job's net PnL, from its summary.
fn net_pnl(job: &Job) -> Option<Decimal> {
    job.result.as_ref()?["pnl"]["net_usd"]
        .as_str()?
        .parse()
        .ok()
}

fn job_json(j: &Job) -> serde_json::Value {
    serde_json::json!({
        "id": j.id,
        "batch_id": j.batch_id,
        "label": j.label,
        "status": j.status.as_str(),
        "attempts": j.attempts,
        "lease_owner": j.lease_owner,
        "ticks_done": j.progress.ticks_done,
        "ticks_total": j.progress.ticks_total,
        "cost_usd": j.progress.cost_usd.to_string(),
        "deployment_id": j.deployment_id,
        "result": j.result,
        "error": j.error,
        "created_at": j.created_at,
        "finished_at": j.finished_at,
    })
}

fn table(jobs: &[Job]) -> String {
    if jobs.is_empty() {
        return "no jobs\n".to_owned();
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<36}  {:<9}  {:>17}  {:>8}  {:>3}  result",
        "job", "status", "progress", "cost", "try"
    );
    for j in jobs {
        let progress = match j.progress.ticks_total {
            Some(total) => format!("{}/{total} ticks", j.progress.ticks_done),
            None => "—".to_owned(),
        };
        let result = match j.status {
            JobStatus::Done => net_pnl(j).map_or_else(String::new, |p| {
                format!("net PnL {}", text::signed_money(p))
            }),
            JobStatus::Failed => j.error.clone().unwrap_or_default(),
            JobStatus::Running => j.lease_owner.clone().unwrap_or_default(),
            JobStatus::Queued | JobStatus::Cancelled => String::new(),
        };
        let label = j
            .label
            .as_deref()
            .map(|l| format!("{l}: "))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<36}  {:<9}  {progress:>17}  {:>8}  {:>3}  {label}{}",
            j.id,
            j.status.as_str(),
            text::cost(j.progress.cost_usd),
            j.attempts,
            result.lines().next().unwrap_or_default()
        );
    }
    out
}
