//! `JobStore` and `JobQueue`: backtest jobs and the bar files they run over ([`crate::jobs`]).
//!
//! A submit checks the user's limits and writes its bars and jobs in one transaction; on
//! PostgreSQL it first takes a transaction-scoped advisory lock on the user ([`JobSql`]), so two
//! submits of one user cannot both pass the check on the same count, while other users' submits
//! go on. SQLite's `BEGIN IMMEDIATE` already holds the database's one write lock. The claim
//! locks the chosen rows `FOR UPDATE SKIP LOCKED` on PostgreSQL, as the deployments' claim does
//! (`lease.rs`).

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::types::Json;
use sqlx::{Postgres, Sqlite, Transaction};
use uuid::Uuid;

use super::prompt_lines::params;
use super::{Affected as _, Backend, Dialect, Leases, query};
use crate::codec::{RowExt, check_len, check_limit, decode_err, truncate_chars};
use crate::error::ctx;
use crate::jobs::{is_sha256_hex, sha256_hex};
use crate::traits::{JobQueue, JobStore};
use crate::{
    BarsFormat, DbError, Job, JobFilter, JobLimits, JobProgress, JobResult, JobStatus,
    MAX_BARS_BYTES, MAX_JOB_ERROR_CHARS, MAX_JOB_LABEL_CHARS, MAX_JOB_OWNER_CHARS,
    MAX_JOB_SPEC_BYTES, MAX_JOBS_PER_SUBMIT, MAX_JOBS_READ, NewBars, NewJob, StoredBars, Submitted,
};

/// A database's way to serialize one user's submits.
pub(crate) trait JobSql: Dialect {
    /// The statement that locks user `$1` until the transaction ends; `None` where the write
    /// transaction is already the only one.
    const LOCK_USER: Option<&'static str>;
}

impl JobSql for Postgres {
    const LOCK_USER: Option<&'static str> =
        Some("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 47))");
}

impl JobSql for Sqlite {
    const LOCK_USER: Option<&'static str> = None;
}

/// The columns a job is read with (its report aside).
const JOB_COLUMNS: &str = "id, user_id, batch_id, label, spec, status, cost_limit_usd, attempts, \
     lease_owner, lease_expires_at, heartbeat_at, ticks_done, ticks_total, cost_usd, \
     deployment_id, result, error, created_at, started_at, finished_at, \
     CASE WHEN report_html IS NULL THEN 0 ELSE 1 END AS has_report";

/// The statuses of a job that is not finished.
const OPEN: &str = "status IN ('queued', 'running')";

fn count(c: &str, v: i32) -> Result<u32, DbError> {
    u32::try_from(v).map_err(|e| decode_err(c, e))
}

fn job_from_row<R: RowExt>(r: &R) -> Result<Job, DbError> {
    let status = r.text("status")?;
    Ok(Job {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        batch_id: r.opt_uuid("batch_id")?,
        label: r.opt_text("label")?,
        spec: r.json("spec")?,
        status: JobStatus::parse(&status)
            .ok_or_else(|| decode_err("status", format!("unknown value {status:?}")))?,
        cost_limit_usd: r.dec("cost_limit_usd")?,
        attempts: count("attempts", r.int("attempts")?)?,
        lease_owner: r.opt_text("lease_owner")?,
        lease_expires_at: r.opt_ts("lease_expires_at")?,
        heartbeat_at: r.opt_ts("heartbeat_at")?,
        progress: JobProgress {
            ticks_done: count("ticks_done", r.int("ticks_done")?)?,
            ticks_total: r
                .opt_int("ticks_total")?
                .map(|t| count("ticks_total", t))
                .transpose()?,
            cost_usd: r.dec("cost_usd")?,
        },
        deployment_id: r.opt_uuid("deployment_id")?,
        result: r.opt_json("result")?,
        error: r.opt_text("error")?,
        has_report: r.int("has_report")? != 0,
        created_at: r.ts("created_at")?,
        started_at: r.opt_ts("started_at")?,
        finished_at: r.opt_ts("finished_at")?,
    })
}

fn invalid(detail: impl Into<String>) -> DbError {
    DbError::Invalid {
        what: "backtest jobs",
        detail: detail.into(),
    }
}

/// `v` as a stored count (the columns are `integer`).
fn stored_count(what: &'static str, v: u32) -> Result<i32, DbError> {
    i32::try_from(v).map_err(|_| DbError::Invalid {
        what,
        detail: format!("{v} is above {}", i32::MAX),
    })
}

/// A checked submit: its user, its distinct bar files by hash, the hashes its jobs refer to.
struct Checked<'a> {
    user: Uuid,
    files: BTreeMap<&'a str, &'a NewBars>,
    referenced: BTreeSet<String>,
}

/// What a submit's rows must be before any is written: one user, bounded, every hash well
/// formed and every bar file the bytes its hash names.
fn check_submit<'a>(jobs: &[NewJob], bars: &'a [NewBars]) -> Result<Checked<'a>, DbError> {
    let Some(first) = jobs.first() else {
        return Err(invalid("no job to submit"));
    };
    if jobs.len() > MAX_JOBS_PER_SUBMIT {
        return Err(invalid(format!(
            "{} jobs in one submit; at most {MAX_JOBS_PER_SUBMIT}",
            jobs.len()
        )));
    }
    let user = first.user_id;
    let mut referenced = BTreeSet::new();
    for job in jobs {
        if job.user_id != user {
            return Err(invalid(format!(
                "job {} is user {}'s, job {} user {user}'s: one submit is one user's",
                job.id, job.user_id, first.id
            )));
        }
        if let Some(label) = &job.label {
            check_len("job label", label, 1, MAX_JOB_LABEL_CHARS)?;
        }
        if job.cost_limit_usd < Decimal::ZERO {
            return Err(invalid(format!(
                "job {}: cost limit {} is negative",
                job.id, job.cost_limit_usd
            )));
        }
        if job.spec.bars.is_empty() {
            return Err(invalid(format!("job {}: the spec names no bars", job.id)));
        }
        for (symbol, r) in &job.spec.bars {
            if !is_sha256_hex(&r.sha256) {
                return Err(invalid(format!(
                    "job {}: bars of {symbol}: {:?} is not a SHA-256 (64 lower-case hex digits)",
                    job.id, r.sha256
                )));
            }
            referenced.insert(r.sha256.clone());
        }
        let size = serde_json::to_vec(&job.spec)
            .map_err(|e| invalid(format!("job {}: the spec: {e}", job.id)))?
            .len();
        if size > MAX_JOB_SPEC_BYTES {
            return Err(invalid(format!(
                "job {}: the spec is {size} bytes of JSON; at most {MAX_JOB_SPEC_BYTES}",
                job.id
            )));
        }
    }
    let mut files = BTreeMap::new();
    for b in bars {
        if b.bytes.is_empty() || b.bytes.len() > MAX_BARS_BYTES {
            return Err(invalid(format!(
                "bar file {}: {} bytes; a bar file has 1 to {MAX_BARS_BYTES}",
                b.sha256,
                b.bytes.len()
            )));
        }
        if sha256_hex(&b.bytes) != b.sha256 {
            return Err(invalid(format!(
                "bar file {:?}: its bytes do not hash to it",
                b.sha256
            )));
        }
        files.insert(b.sha256.as_str(), b);
    }
    Ok(Checked {
        user,
        files,
        referenced,
    })
}

impl<S: Backend<Db = D>, D: JobSql> JobStore for S {
    async fn submit_jobs(
        &self,
        jobs: &[NewJob],
        bars: &[NewBars],
        limits: JobLimits,
    ) -> Result<Submitted, DbError> {
        let Checked {
            user,
            files,
            referenced,
        } = check_submit(jobs, bars)?;
        let mut tx = self
            .begin()
            .await
            .map_err(ctx("beginning a submit of backtest jobs"))?;
        if let Some(lock) = D::LOCK_USER {
            query(lock)
                .bind(D::id(user))
                .execute(&mut *tx)
                .await
                .map_err(ctx("locking the user's backtest jobs"))?;
        }
        check_limits(&mut tx, user, jobs, limits).await?;
        let mut stored = 0;
        for b in files.values() {
            let done = query(
                "INSERT INTO backtest_bars (user_id, sha256, format, bytes, created_at) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (user_id, sha256) DO NOTHING",
            )
            .bind(D::id(user))
            .bind(b.sha256.as_str())
            .bind(b.format.as_str())
            .bind(b.bytes.as_slice())
            .bind(D::ts(jobs[0].created_at))
            .execute(&mut *tx)
            .await
            .map_err(ctx("storing a bar file"))?;
            stored += usize::try_from(done.rows_affected()).unwrap_or(0);
        }
        let wanted: Vec<&String> = referenced.iter().collect();
        let sql = format!(
            "SELECT sha256 FROM backtest_bars WHERE user_id = $1 AND sha256 IN ({})",
            params(2, wanted.len(), true)
        );
        let mut q = query(&sql).bind(D::id(user));
        for h in &wanted {
            q = q.bind(h.as_str());
        }
        let have: BTreeSet<String> = q
            .fetch_all(&mut *tx)
            .await
            .map_err(ctx("reading the user's bar files"))?
            .iter()
            .map(|r| r.text("sha256"))
            .collect::<Result<_, _>>()?;
        if let Some(missing) = referenced.iter().find(|h| !have.contains(*h)) {
            let job = jobs
                .iter()
                .find(|j| j.spec.bars.values().any(|b| &b.sha256 == missing))
                .map_or(Uuid::nil(), |j| j.id);
            return Err(invalid(format!(
                "job {job}: bars {missing} are not stored for user {user}; send the file with \
                 the submit"
            )));
        }
        for job in jobs {
            query(
                "INSERT INTO backtest_jobs (id, user_id, batch_id, label, spec, cost_limit_usd, \
                 created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(D::id(job.id))
            .bind(D::id(job.user_id))
            .bind(D::oid(job.batch_id))
            .bind(job.label.as_deref())
            .bind(Json(&job.spec))
            .bind(D::dec(job.cost_limit_usd))
            .bind(D::ts(job.created_at))
            .execute(&mut *tx)
            .await
            .map_err(ctx("queueing a backtest job"))?;
        }
        tx.commit()
            .await
            .map_err(ctx("committing a submit of backtest jobs"))?;
        Ok(Submitted {
            jobs: jobs.len(),
            bars_stored: stored,
        })
    }

    async fn job(&self, id: Uuid) -> Result<Job, DbError> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM backtest_jobs WHERE id = $1");
        let row = query(&sql)
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading a backtest job"))?
            .ok_or_else(|| DbError::not_found("backtest job", id))?;
        job_from_row(&row)
    }

    async fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, DbError> {
        let limit = check_limit("backtest jobs limit", filter.limit, MAX_JOBS_READ)?;
        let sql = format!(
            "SELECT {JOB_COLUMNS} FROM backtest_jobs WHERE ($1 IS NULL OR user_id = $1) \
             AND ($2 IS NULL OR batch_id = $2) ORDER BY created_at DESC, id LIMIT $3"
        );
        let rows = query(&sql)
            .bind(D::oid(filter.user_id))
            .bind(D::oid(filter.batch_id))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("listing backtest jobs"))?;
        rows.iter().map(job_from_row).collect()
    }

    async fn job_report(&self, id: Uuid) -> Result<Option<String>, DbError> {
        let row = query("SELECT report_html FROM backtest_jobs WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading a backtest job's report"))?
            .ok_or_else(|| DbError::not_found("backtest job", id))?;
        row.opt_text("report_html")
    }

    async fn job_bars(&self, user_id: Uuid, sha256: &str) -> Result<StoredBars, DbError> {
        let row = query(
            "SELECT user_id, sha256, format, bytes FROM backtest_bars \
             WHERE user_id = $1 AND sha256 = $2",
        )
        .bind(D::id(user_id))
        .bind(sha256)
        .fetch_optional(self.pool())
        .await
        .map_err(ctx("reading a bar file"))?
        .ok_or_else(|| DbError::not_found("bar file", format!("{sha256} (user {user_id})")))?;
        let format = row.text("format")?;
        Ok(StoredBars {
            user_id: row.uuid("user_id")?,
            sha256: row.text("sha256")?,
            format: BarsFormat::parse(&format)
                .ok_or_else(|| decode_err("format", format!("unknown value {format:?}")))?,
            bytes: row
                .opt_blob("bytes")?
                .ok_or_else(|| decode_err("bytes", "unexpected null"))?,
        })
    }

    async fn cancel_job(&self, user_id: Uuid, id: Uuid, at: DateTime<Utc>) -> Result<Job, DbError> {
        let done = query(&format!(
            "UPDATE backtest_jobs SET status = 'cancelled', finished_at = $3, \
             lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND user_id = $2 AND {OPEN}"
        ))
        .bind(D::id(id))
        .bind(D::id(user_id))
        .bind(D::ts(at))
        .execute(self.pool())
        .await
        .map_err(ctx("cancelling a backtest job"))?;
        let job = self.job(id).await?;
        if job.user_id != user_id {
            return Err(DbError::not_found("backtest job", id));
        }
        if done.rows_affected() == 0 {
            return Err(DbError::Conflict {
                what: "backtest job",
                detail: format!(
                    "{id} is {}: only a queued or running job is cancelled",
                    job.status.as_str()
                ),
            });
        }
        Ok(job)
    }
}

/// Refuses `jobs` when the user's open jobs with them would pass `limits`.
async fn check_limits<D: JobSql>(
    tx: &mut Transaction<'static, D>,
    user: Uuid,
    jobs: &[NewJob],
    limits: JobLimits,
) -> Result<(), DbError> {
    let rows = query(&format!(
        "SELECT cost_limit_usd FROM backtest_jobs WHERE user_id = $1 AND {OPEN}"
    ))
    .bind(D::id(user))
    .fetch_all(&mut **tx)
    .await
    .map_err(ctx("counting the user's open backtest jobs"))?;
    let open = rows.len();
    let mut open_cost = Decimal::ZERO;
    for r in &rows {
        open_cost += r.dec("cost_limit_usd")?;
    }
    let max_jobs = usize::try_from(limits.max_open_jobs).unwrap_or(usize::MAX);
    if open + jobs.len() > max_jobs {
        return Err(DbError::Limit {
            what: "backtest jobs",
            detail: format!(
                "user {user} has {open} jobs queued or running and submits {} more; at most {} \
                 may be queued or running at once (wait for some to finish, or cancel some)",
                jobs.len(),
                limits.max_open_jobs
            ),
        });
    }
    let new_cost: Decimal = jobs.iter().map(|j| j.cost_limit_usd).sum();
    if open_cost + new_cost > limits.max_open_cost_usd {
        return Err(DbError::Limit {
            what: "backtest jobs",
            detail: format!(
                "user {user}'s queued and running jobs may spend up to ${} and these up to ${}; \
                 together at most ${} (the cost cap)",
                open_cost.normalize(),
                new_cost.normalize(),
                limits.max_open_cost_usd.normalize()
            ),
        });
    }
    Ok(())
}

impl<S: Leases<Db = D>, D: JobSql> JobQueue for S {
    async fn claim_jobs(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> Result<Vec<Job>, DbError> {
        check_len("job lease owner", owner, 1, MAX_JOB_OWNER_CHARS)?;
        // As the deployments' claim (`lease.rs`): the rows chosen once in a MATERIALIZED CTE,
        // locked `FOR UPDATE SKIP LOCKED` on PostgreSQL, the availability tested again.
        let available = "(status = 'queued' OR (status = 'running' AND lease_expires_at <= $2))";
        let sql = format!(
            "WITH due AS MATERIALIZED (SELECT id FROM backtest_jobs WHERE {available} \
                 ORDER BY created_at, id LIMIT $4{}\
             ) UPDATE backtest_jobs SET status = 'running', lease_owner = $1, \
             lease_expires_at = $3, heartbeat_at = $2, attempts = attempts + 1, \
             started_at = COALESCE(started_at, $2) \
             WHERE id IN (SELECT id FROM due) AND {available} RETURNING {JOB_COLUMNS}",
            D::SKIP_LOCKED
        );
        let rows = super::lease::claim_rows(
            self,
            &sql,
            owner,
            now,
            lease_for,
            limit,
            "claiming backtest jobs",
        )
        .await?;
        let mut jobs = rows
            .iter()
            .map(job_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        jobs.sort_by_key(|j| (j.created_at, j.id));
        Ok(jobs)
    }

    async fn begin_job_run(
        &self,
        id: Uuid,
        owner: &str,
        deployment_id: Uuid,
        ticks_total: u32,
    ) -> Result<bool, DbError> {
        let total = stored_count("ticks total", ticks_total)?;
        let mut tx = self
            .begin()
            .await
            .map_err(ctx("beginning a backtest job's run"))?;
        // What an earlier attempt recorded goes (cascading to its ticks, ledger, notes), so
        // the run writes what an uninterrupted one writes.
        query(
            "DELETE FROM deployments WHERE id = $3 \
             AND EXISTS (SELECT 1 FROM backtest_jobs j WHERE j.id = $1 AND j.lease_owner = $2 \
                         AND j.status = 'running') \
             AND NOT EXISTS (SELECT 1 FROM backtest_jobs o WHERE o.deployment_id = $3 \
                             AND o.id <> $1)",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::id(deployment_id))
        .execute(&mut *tx)
        .await
        .map_err(ctx("deleting an earlier attempt's run"))?;
        let done = query(
            "UPDATE backtest_jobs SET deployment_id = $3, ticks_done = 0, ticks_total = $4, \
             cost_usd = $5 WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::id(deployment_id))
        .bind(total)
        .bind(D::dec(Decimal::ZERO))
        .execute(&mut *tx)
        .await
        .map_err(ctx("starting a backtest job's run"))?;
        tx.commit()
            .await
            .map_err(ctx("committing a backtest job's start"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn heartbeat_job(
        &self,
        id: Uuid,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        progress: JobProgress,
    ) -> Result<bool, DbError> {
        let done = query(
            "UPDATE backtest_jobs SET lease_expires_at = $4, heartbeat_at = $3, ticks_done = $5, \
             ticks_total = COALESCE($6, ticks_total), cost_usd = $7 \
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ts(now))
        .bind(D::ts(until))
        .bind(stored_count("ticks done", progress.ticks_done)?)
        .bind(
            progress
                .ticks_total
                .map(|t| stored_count("ticks total", t))
                .transpose()?,
        )
        .bind(D::dec(progress.cost_usd))
        .execute(self.pool())
        .await
        .map_err(ctx("a backtest job's heartbeat"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn finish_job(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
        result: &JobResult,
    ) -> Result<bool, DbError> {
        if !result.summary.is_object() {
            return Err(invalid(format!(
                "job {id}: the result's summary is not a JSON object"
            )));
        }
        let p = result.progress;
        let done = query(
            "UPDATE backtest_jobs SET status = 'done', result = $4, report_html = $5, \
             ticks_done = $6, ticks_total = COALESCE($7, ticks_total), cost_usd = $8, \
             finished_at = $3, error = NULL, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ts(at))
        .bind(Json(&result.summary))
        .bind(result.report_html.as_deref())
        .bind(stored_count("ticks done", p.ticks_done)?)
        .bind(
            p.ticks_total
                .map(|t| stored_count("ticks total", t))
                .transpose()?,
        )
        .bind(D::dec(p.cost_usd))
        .execute(self.pool())
        .await
        .map_err(ctx("finishing a backtest job"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn fail_job(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
        error: &str,
    ) -> Result<bool, DbError> {
        let error = match truncate_chars(error.trim(), MAX_JOB_ERROR_CHARS) {
            e if e.is_empty() => "(no message)".to_owned(),
            e => e,
        };
        let done = query(
            "UPDATE backtest_jobs SET status = 'failed', error = $4, finished_at = $3, \
             lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ts(at))
        .bind(error)
        .execute(self.pool())
        .await
        .map_err(ctx("failing a backtest job"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn release_job(&self, id: Uuid, owner: &str) -> Result<bool, DbError> {
        let done = query(
            "UPDATE backtest_jobs SET status = 'queued', lease_owner = NULL, \
             lease_expires_at = NULL, ticks_done = 0 \
             WHERE id = $1 AND lease_owner = $2 AND status = 'running'",
        )
        .bind(D::id(id))
        .bind(owner)
        .execute(self.pool())
        .await
        .map_err(ctx("releasing a backtest job"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn open_jobs(&self, batch_id: Option<Uuid>) -> Result<u64, DbError> {
        let row = query(&format!(
            "SELECT count(*) AS n FROM backtest_jobs WHERE {OPEN} \
             AND ($1 IS NULL OR batch_id = $1)"
        ))
        .bind(D::oid(batch_id))
        .fetch_one(self.pool())
        .await
        .map_err(ctx("counting open backtest jobs"))?;
        row.count("n")
    }
}
