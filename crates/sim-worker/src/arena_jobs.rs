//! An arena's runs as backtest jobs (`arena --db URL`): one job per entrant, window and repeat,
//! queued in one batch for `sim-worker work` processes to drain, then read back as the runs
//! `arena` would have run itself — each run's summary.json and report.html under OUT, its
//! equity after every tick for the curves — so the statistics, arena.json and arena.html are
//! those of a local arena.
//!
//! The batch's id is derived from the user and the jobs' specs, and each job's id from the
//! batch and its label: the same arena submitted again finds its batch and waits for it
//! instead of queueing it twice (an interrupted `arena` picks up where its workers are).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::time::Duration;

use chrono::{DateTime, Utc};
use db::{Job, JobFilter, JobStatus, JobStore};
use rust_decimal::Decimal;
use serde_json::Value;
use types::{Uuid, text};

use crate::Failure;
use crate::arena_runs::{Curve, Slot};
use crate::job_spec::{RunJob, new_jobs, store_jobs};
use crate::jobs_cmd::SubmitAs;
use crate::run_cmd::RunOutput;

/// How often the batch is read while the workers drain it.
const POLL: Duration = Duration::from_secs(1);

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

fn log(line: &str) {
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// The batch of `user`'s jobs with these labels and specs.
fn batch_id(user: Uuid, jobs: &[db::NewJob]) -> Result<Uuid, Failure> {
    let mut key = format!("arena-batch\n{user}\n");
    for j in jobs {
        let spec = serde_json::to_string(&j.spec).map_err(|e| bad(format!("a job's spec: {e}")))?;
        key.push_str(j.label.as_deref().unwrap_or_default());
        key.push('\n');
        key.push_str(&spec);
        key.push('\n');
    }
    Ok(Uuid::new_v5(&tick::ID_NAMESPACE, key.as_bytes()))
}

/// What became of an arena's runs as jobs.
pub(crate) enum AsJobs {
    /// Queued (or found queued) and not waited for: the batch and how many jobs it has.
    Queued(Uuid, usize),
    /// Every job done, read back in the order of the runs.
    Done(Vec<Slot>),
}

/// Runs `runs` (each a `run`'s arguments with its label) as jobs on the database at `url`:
/// queued as `submit_as`'s user (or found queued already), then, when `wait`, waited for and
/// read back in the order of `runs`, each run's summary.json and report.html written to its
/// `--out`.
///
/// # Errors
/// Bad input for a run a job does not carry, a store that refuses the submit (the user's
/// limits), a job that failed or was cancelled (naming its label and why), a run stopped at
/// its share of `--max-cost`, or files that cannot be written.
pub(crate) fn run_as_jobs(
    url: &str,
    submit_as: &SubmitAs,
    runs: Vec<(crate::run_cmd::RunArgs, String)>,
    wait: bool,
) -> Result<AsJobs, Failure> {
    let limits = submit_as.limits()?;
    let outs: Vec<std::path::PathBuf> = runs.iter().map(|(a, _)| a.out.clone()).collect();
    let runs: Vec<RunJob> = runs
        .into_iter()
        .map(|(args, label)| RunJob {
            args,
            label: Some(label),
            id: None,
        })
        .collect();
    crate::block_on(async move {
        let store = db::connect(url)
            .await
            .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(url))))?;
        let result = async {
            let user = submit_as.user(&store).await?;
            let (mut jobs, bars) = new_jobs(user, None, &runs, Utc::now())?;
            let batch = batch_id(user, &jobs)?;
            for j in &mut jobs {
                j.batch_id = Some(batch);
                j.id = Uuid::new_v5(&batch, j.label.as_deref().unwrap_or_default().as_bytes());
            }
            let filter = JobFilter {
                user_id: Some(user),
                batch_id: Some(batch),
                limit: db::MAX_JOBS_READ,
            };
            let queued = store.jobs(&filter).await.map_err(|e| bad(e.to_string()))?;
            let shown = db::redact_url(url);
            if queued.is_empty() {
                store_jobs(&store, &jobs, &bars, limits).await?;
                log(&format!(
                    "arena: {} jobs queued in batch {batch} on {shown}; `sim-worker work --db \
                     URL` processes run them",
                    jobs.len()
                ));
            } else if queued.len() == jobs.len() {
                log(&format!(
                    "arena: batch {batch} is queued on {shown} already ({} jobs); waiting for it",
                    jobs.len()
                ));
            } else {
                return Err(bad(format!(
                    "batch {batch} on {shown} holds {} jobs, this arena has {}",
                    queued.len(),
                    jobs.len()
                )));
            }
            if !wait {
                return Ok(AsJobs::Queued(batch, jobs.len()));
            }
            let done = wait_for(&store, &filter, jobs.len()).await?;
            let mut slots = Vec::with_capacity(jobs.len());
            for (j, out) in jobs.iter().zip(&outs) {
                let job = done
                    .get(&j.id)
                    .ok_or_else(|| bad(format!("job {} is missing from its batch", j.id)))?;
                let report = store
                    .job_report(j.id)
                    .await
                    .map_err(|e| bad(e.to_string()))?;
                slots.push(Some(Ok(read_back(job, report.as_deref(), out)?)));
            }
            Ok(AsJobs::Done(slots))
        }
        .await;
        let _ = store.close().await;
        result
    })
}

/// Waits until every job of the batch is done; prints the progress as it changes. The jobs by
/// id.
async fn wait_for<S: JobStore>(
    store: &S,
    filter: &JobFilter,
    count: usize,
) -> Result<BTreeMap<Uuid, Job>, Failure> {
    let mut said = String::new();
    loop {
        let jobs = store.jobs(filter).await.map_err(|e| bad(e.to_string()))?;
        if let Some(j) = jobs
            .iter()
            .find(|j| matches!(j.status, JobStatus::Failed | JobStatus::Cancelled))
        {
            return Err(bad(format!(
                "job {} ({}) {}: {}",
                j.id,
                j.label.as_deref().unwrap_or_default(),
                j.status.as_str(),
                j.error.as_deref().unwrap_or("cancelled")
            )));
        }
        let of = |s: JobStatus| jobs.iter().filter(|j| j.status == s).count();
        let (done, running) = (of(JobStatus::Done), of(JobStatus::Running));
        let cost: Decimal = jobs.iter().map(|j| j.progress.cost_usd).sum();
        let line = format!(
            "arena: {done} of {count} jobs done · {running} running · {} spent",
            text::cost(cost)
        );
        if line != said {
            log(&line);
            said = line;
        }
        if done == count {
            return Ok(jobs.into_iter().map(|j| (j.id, j)).collect());
        }
        tokio::time::sleep(POLL).await;
    }
}

/// A done job's run as `arena` reads a run of its own: its summary (without the equity and
/// cassette counts, which it hands back apart) written to `out`/summary.json, its report to
/// `out`/report.html.
fn read_back(job: &Job, report: Option<&str>, out: &std::path::Path) -> Result<RunOutput, Failure> {
    let label = job.label.as_deref().unwrap_or_default();
    let mut summary = job.result.clone().ok_or_else(|| {
        bad(format!(
            "job {} ({label}) is done without a summary",
            job.id
        ))
    })?;
    let obj = summary.as_object_mut().ok_or_else(|| {
        bad(format!(
            "job {} ({label}): its summary is not an object",
            job.id
        ))
    })?;
    let equity = curve(obj.remove("equity").as_ref()).ok_or_else(|| {
        bad(format!(
            "job {} ({label}): no equity curve in its summary",
            job.id
        ))
    })?;
    let cassettes = obj.remove("cassettes").unwrap_or(Value::Null);
    let count = |k: &str| cassettes[k].as_u64().unwrap_or(0);
    if let Some(stopped) = obj.get("stopped") {
        return Err(Failure {
            message: format!(
                "stopped: {label} reached its share of --max-cost ({} spent of {}) after {} of \
                 {} ticks; no arena.json was written: windows some entrants did not finish \
                 would not compare them fairly\n",
                stopped["spent_usd"].as_str().unwrap_or("?"),
                stopped["max_cost_usd"].as_str().unwrap_or("?"),
                stopped["ticks_run"],
                stopped["ticks_planned"],
            ),
            code: crate::EXIT_COST_CAP,
            stdout: String::new(),
        });
    }
    std::fs::create_dir_all(out)
        .map_err(|e| bad(format!("{}: cannot create: {e}", out.display())))?;
    let json = serde_json::to_string_pretty(&summary).map_err(|e| bad(e.to_string()))?;
    crate::arena_runs::write_out(out, "summary.json", format!("{json}\n").as_bytes())?;
    if let Some(html) = report {
        crate::arena_runs::write_out(out, "report.html", html.as_bytes())?;
    }
    Ok(RunOutput {
        text: String::new(),
        summary,
        equity,
        spent: model::SpendTotals {
            usd: job.progress.cost_usd,
            ..model::SpendTotals::default()
        },
        replayed: count("replayed"),
        recorded: count("recorded"),
    })
}

/// `[[time, "usd"], …]` as a curve.
fn curve(v: Option<&Value>) -> Option<Curve> {
    v?.as_array()?
        .iter()
        .map(|p| {
            let t: DateTime<Utc> = p.get(0)?.as_str()?.parse().ok()?;
            let usd: Decimal = p.get(1)?.as_str()?.parse().ok()?;
            Some((t, usd))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_curve_reads_back_as_written_and_a_malformed_one_is_none() {
        let v = serde_json::json!([
            ["2017-04-20T01:00:00Z", "10000.5"],
            ["2017-04-20T02:00:00Z", "9999"]
        ]);
        let c = curve(Some(&v)).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].1, Decimal::new(100_005, 1));
        assert_eq!(c[1].0.to_rfc3339(), "2017-04-20T02:00:00+00:00");
        assert!(curve(Some(&serde_json::json!([["x", "1"]]))).is_none());
        assert!(curve(None).is_none());
    }
}
