//! `LeaseStore`: which runner holds which deployment (claim, heartbeat, release) and which
//! runner last started which tick.
//!
//! The claim locks the due rows `FOR UPDATE SKIP LOCKED` on PostgreSQL
//! ([`Dialect::SKIP_LOCKED`]; SQLite has one writer at a time). Recording an attempt reads the attempt it replaces: on PostgreSQL
//! in one statement (a CTE reads the row as it was before the upsert), on SQLite — whose CTEs
//! are evaluated lazily, after the upsert — as a read and an upsert in one `BEGIN IMMEDIATE`
//! transaction ([`AttemptSql`]).

use std::future::Future;

use chrono::{DateTime, Utc};
use sqlx::{Postgres, Sqlite};
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, Leases, query};
use crate::codec::{self, RowExt, check_limit};
use crate::error::ctx;
use crate::model::{Deployment, DeploymentStatus, StartedTick, StoredRunnerState, TickStart};
use crate::postgres::Native;
use crate::traits::LeaseStore;
use crate::{DbError, TickAttempt};

/// A database's way to record a tick attempt and return the one it replaces.
pub(crate) trait AttemptSql: Dialect {
    fn mark_attempt<S: Backend<Db = Self>>(
        store: &S,
        deployment_id: Uuid,
        owner: &str,
        tick_at: DateTime<Utc>,
    ) -> impl Future<Output = Result<Option<TickAttempt>, DbError>> + Send;

    /// [`LeaseStore::start_ticks`] on `starts`, checked.
    fn start_ticks<S: Backend<Db = Self>>(
        store: &S,
        owner: &str,
        starts: &[TickStart],
    ) -> impl Future<Output = Result<Vec<StartedTick>, DbError>> + Send;
}

/// A batch of tick starts: at most 1000, each deployment once.
fn check_starts(starts: &[TickStart]) -> Result<(), DbError> {
    if starts.len() > 1000 {
        return Err(DbError::Invalid {
            what: "tick starts",
            detail: format!("{} starts, at most 1000", starts.len()),
        });
    }
    let mut ids: Vec<Uuid> = starts.iter().map(|s| s.deployment_id).collect();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(DbError::Invalid {
            what: "tick starts",
            detail: format!("deployment {} is named twice", w[0]),
        });
    }
    Ok(())
}

/// One start's row: the deployment's status, the stored runner state's `state_tick_at` and
/// `state`, the attempt before the mark (`attempt_owner`, `attempt_tick_at`) and `marked`.
fn started_from_row<R: RowExt>(r: &R, start: &TickStart) -> Result<StartedTick, DbError> {
    let state = match r.opt_ts("state_tick_at")? {
        Some(tick_at) => Some(StoredRunnerState {
            deployment_id: start.deployment_id,
            tick_at,
            state: r.json("state")?,
        }),
        None => None,
    };
    let marked = r.flag("marked")?;
    let previous = if marked {
        attempt(r.opt_text("attempt_owner")?, r.opt_ts("attempt_tick_at")?)
    } else {
        None
    };
    Ok(StartedTick {
        deployment_id: start.deployment_id,
        tick_at: start.tick_at,
        status: codec::enum_col(r, "status", DeploymentStatus::parse)?,
        state,
        marked,
        previous,
    })
}

fn attempt(owner: Option<String>, tick_at: Option<DateTime<Utc>>) -> Option<TickAttempt> {
    owner
        .zip(tick_at)
        .map(|(owner, tick_at)| TickAttempt { owner, tick_at })
}

impl AttemptSql for Postgres {
    async fn mark_attempt<S: Backend<Db = Self>>(
        store: &S,
        deployment_id: Uuid,
        owner: &str,
        tick_at: DateTime<Utc>,
    ) -> Result<Option<TickAttempt>, DbError> {
        // The CTE reads the row as it was before the upsert.
        let row = query(
            "WITH prev AS (SELECT attempt_owner, attempt_tick_at FROM live_runner_state \
                           WHERE deployment_id = $1) \
             INSERT INTO live_runner_state (deployment_id, attempt_owner, attempt_tick_at) \
             VALUES ($1, $2, $3) ON CONFLICT (deployment_id) DO UPDATE \
             SET attempt_owner = EXCLUDED.attempt_owner, attempt_tick_at = EXCLUDED.attempt_tick_at, \
                 updated_at = now() \
             RETURNING (SELECT attempt_owner FROM prev) AS owner, \
                       (SELECT attempt_tick_at FROM prev) AS tick_at",
        )
        .bind(Self::id(deployment_id))
        .bind(owner)
        .bind(Self::ts(tick_at))
        .fetch_one(store.pool())
        .await
        .map_err(ctx("marking tick attempt"))?;
        Ok(attempt(row.opt_text("owner")?, row.opt_ts("tick_at")?))
    }

    async fn start_ticks<S: Backend<Db = Self>>(
        store: &S,
        owner: &str,
        starts: &[TickStart],
    ) -> Result<Vec<StartedTick>, DbError> {
        check_starts(starts)?;
        if starts.is_empty() {
            return Ok(Vec::new());
        }
        // Every CTE sees the rows as they were before the statement: `cur` reads the status,
        // the state and the attempt the upsert then replaces. The marks go in deployment order
        // (one lock order for every runner).
        let rows = query(
            "WITH input AS (SELECT * FROM unnest($2::uuid[], $3::timestamptz[]) \
                            AS t(deployment_id, tick_at)), \
             cur AS (SELECT i.deployment_id, i.tick_at, d.status::text AS status, \
                            s.tick_at AS state_tick_at, s.state, s.attempt_owner, s.attempt_tick_at \
                     FROM input i JOIN deployments d ON d.id = i.deployment_id \
                     LEFT JOIN live_runner_state s ON s.deployment_id = i.deployment_id), \
             marked AS (INSERT INTO live_runner_state (deployment_id, attempt_owner, attempt_tick_at) \
                        SELECT deployment_id, $1, tick_at FROM cur WHERE status = 'active' \
                        AND (state_tick_at IS NULL OR state_tick_at < tick_at) \
                        ORDER BY deployment_id \
                        ON CONFLICT (deployment_id) DO UPDATE \
                        SET attempt_owner = EXCLUDED.attempt_owner, \
                            attempt_tick_at = EXCLUDED.attempt_tick_at, updated_at = now() \
                        RETURNING deployment_id) \
             SELECT cur.*, (m.deployment_id IS NOT NULL) AS marked \
             FROM cur LEFT JOIN marked m ON m.deployment_id = cur.deployment_id",
        )
        .bind(owner)
        .bind(Native(
            starts.iter().map(|s| s.deployment_id).collect::<Vec<_>>(),
        ))
        .bind(Native(starts.iter().map(|s| s.tick_at).collect::<Vec<_>>()))
        .fetch_all(store.pool())
        .await
        .map_err(ctx("starting ticks"))?;
        let mut by_id = std::collections::HashMap::with_capacity(rows.len());
        for r in &rows {
            by_id.insert(r.uuid("deployment_id")?, r);
        }
        starts
            .iter()
            .filter_map(|s| by_id.get(&s.deployment_id).map(|r| started_from_row(*r, s)))
            .collect()
    }
}

impl AttemptSql for Sqlite {
    async fn mark_attempt<S: Backend<Db = Self>>(
        store: &S,
        deployment_id: Uuid,
        owner: &str,
        tick_at: DateTime<Utc>,
    ) -> Result<Option<TickAttempt>, DbError> {
        let mut tx = store.begin().await.map_err(ctx("beginning tick attempt"))?;
        let prev = query(
            "SELECT attempt_owner, attempt_tick_at FROM live_runner_state WHERE deployment_id = $1",
        )
        .bind(Self::id(deployment_id))
        .fetch_optional(&mut *tx)
        .await
        .map_err(ctx("reading tick attempt"))?;
        let prev = match prev {
            Some(row) => attempt(
                row.opt_text("attempt_owner")?,
                row.opt_ts("attempt_tick_at")?,
            ),
            None => None,
        };
        query(
            "INSERT INTO live_runner_state (deployment_id, attempt_owner, attempt_tick_at, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (deployment_id) DO UPDATE \
             SET attempt_owner = excluded.attempt_owner, attempt_tick_at = excluded.attempt_tick_at, \
                 updated_at = excluded.updated_at",
        )
            .bind(Self::id(deployment_id))
            .bind(owner)
            .bind(Self::ts(tick_at))
            .bind(Self::ts(Utc::now()))
            .execute(&mut *tx)
            .await
            .map_err(ctx("marking tick attempt"))?;
        tx.commit().await.map_err(ctx("committing tick attempt"))?;
        Ok(prev)
    }

    async fn start_ticks<S: Backend<Db = Self>>(
        store: &S,
        owner: &str,
        starts: &[TickStart],
    ) -> Result<Vec<StartedTick>, DbError> {
        check_starts(starts)?;
        if starts.is_empty() {
            return Ok(Vec::new());
        }
        // One writer at a time: the reads and the marks in one `BEGIN IMMEDIATE` transaction,
        // each read before its own mark.
        let mut tx = store.begin().await.map_err(ctx("beginning tick starts"))?;
        let mut started = Vec::with_capacity(starts.len());
        for start in starts {
            let row = query(
                "SELECT d.status AS status, s.tick_at AS state_tick_at, s.state AS state, \
                        s.attempt_owner AS attempt_owner, s.attempt_tick_at AS attempt_tick_at, \
                        (d.status = 'active' AND (s.tick_at IS NULL OR s.tick_at < $2)) AS marked \
                 FROM deployments d LEFT JOIN live_runner_state s ON s.deployment_id = d.id \
                 WHERE d.id = $1",
            )
            .bind(Self::id(start.deployment_id))
            .bind(Self::ts(start.tick_at))
            .fetch_optional(&mut *tx)
            .await
            .map_err(ctx("reading tick starts"))?;
            let Some(row) = row else { continue };
            let one = started_from_row(&row, start)?;
            if one.marked {
                query(
                    "INSERT INTO live_runner_state (deployment_id, attempt_owner, attempt_tick_at, updated_at) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (deployment_id) DO UPDATE \
                     SET attempt_owner = excluded.attempt_owner, attempt_tick_at = excluded.attempt_tick_at, \
                         updated_at = excluded.updated_at",
                )
                .bind(Self::id(start.deployment_id))
                .bind(owner)
                .bind(Self::ts(start.tick_at))
                .bind(Self::ts(Utc::now()))
                .execute(&mut *tx)
                .await
                .map_err(ctx("marking tick attempts"))?;
            }
            started.push(one);
        }
        tx.commit().await.map_err(ctx("committing tick starts"))?;
        Ok(started)
    }
}

/// A claim's lease duration (positive) and row limit (1 to 1,000), checked; the limit as bound.
pub(crate) fn check_claim(lease_for: chrono::Duration, limit: u32) -> Result<i64, DbError> {
    if lease_for <= chrono::Duration::zero() {
        return Err(DbError::Invalid {
            what: "lease duration",
            detail: format!("{lease_for} is not positive"),
        });
    }
    check_limit("claim limit", limit, 1000)
}

/// Runs a claim's statement `sql` on `store`'s pool — `$1` the owner, `$2` now, `$3` the lease's
/// end, `$4` the limit, after [`check_claim`] — and returns the rows it leased; `what` names
/// the claim in errors. The claims of deployments, flattens, alert deliveries and backtest jobs
/// bind the same four values.
pub(crate) async fn claim_rows<S: Backend>(
    store: &S,
    sql: &str,
    owner: &str,
    now: DateTime<Utc>,
    lease_for: chrono::Duration,
    limit: u32,
    what: &'static str,
) -> Result<Vec<<S::Db as sqlx::Database>::Row>, DbError> {
    let limit = check_claim(lease_for, limit)?;
    query(sql)
        .bind(owner)
        .bind(<S::Db as Dialect>::ts(now))
        .bind(<S::Db as Dialect>::ts(now + lease_for))
        .bind(limit)
        .fetch_all(store.pool())
        .await
        .map_err(ctx(what))
}

/// The tick claim's statement: `$1` the owner, `$2` now, `$3` the lease's end, `$4` the limit;
/// `skip_locked` is the dialect's [`Dialect::SKIP_LOCKED`].
///
/// On PostgreSQL the due rows are locked `FOR UPDATE SKIP LOCKED`: concurrent claimers never
/// wait on each other's rows (so they cannot deadlock) and each row goes to one of them. The
/// choice is a MATERIALIZED CTE so it runs once (a subquery in `IN (...)` may be re-run by the
/// planner and lock more than LIMIT rows); it reads its rows off `deployments_claim_idx`, whose
/// order is the ORDER BY's, and stops at the limit instead of sorting every due row. The UPDATE
/// repeats the availability test. SQLite runs the statement alone (one writer at a time).
pub(crate) fn claim_due_sql(skip_locked: &str) -> String {
    format!(
        "WITH due AS MATERIALIZED (SELECT id FROM deployments WHERE status = 'active' \
             AND (next_tick_at IS NULL OR next_tick_at <= $2) \
             AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
             ORDER BY next_tick_at NULLS FIRST, id LIMIT $4{skip_locked}\
         ) UPDATE deployments SET lease_owner = $1, lease_expires_at = $3 \
         WHERE id IN (SELECT id FROM due) \
         AND status = 'active' AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
         RETURNING *"
    )
}

impl<S: Leases<Db = D>, D: AttemptSql> LeaseStore for S {
    async fn claim_due_deployments(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> Result<Vec<Deployment>, DbError> {
        let sql = claim_due_sql(D::SKIP_LOCKED);
        let rows = claim_rows(
            self,
            &sql,
            owner,
            now,
            lease_for,
            limit,
            "claiming due deployments",
        )
        .await?;
        let mut claimed = rows
            .iter()
            .map(codec::deployment_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        claimed.sort_by_key(|d| (d.next_tick_at, d.id));
        Ok(claimed)
    }

    async fn release_deployment(
        &self,
        id: Uuid,
        owner: &str,
        next_tick_at: Option<DateTime<Utc>>,
    ) -> Result<(), DbError> {
        let done = query(
            "UPDATE deployments SET lease_owner = NULL, lease_expires_at = NULL, next_tick_at = $3 \
             WHERE id = $1 AND lease_owner = $2",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ots(next_tick_at))
        .execute(self.pool())
        .await
        .map_err(ctx("releasing deployment lease"))?;
        if done.rows_affected() == 0 {
            return Err(DbError::not_found(
                "deployment leased to",
                format!("{owner}: {id}"),
            ));
        }
        Ok(())
    }

    async fn extend_lease(
        &self,
        id: Uuid,
        owner: &str,
        until: DateTime<Utc>,
    ) -> Result<bool, DbError> {
        let done = query(
            "UPDATE deployments SET lease_expires_at = $3 WHERE id = $1 AND lease_owner = $2",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ts(until))
        .execute(self.pool())
        .await
        .map_err(ctx("extending deployment lease"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn claim_reflection(
        &self,
        deployment_id: Uuid,
        owner: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, DbError> {
        let claimed = query(
            "INSERT INTO live_runner_state (deployment_id, reflection_owner, reflection_lease_until) \
             VALUES ($1, $2, $3) \
             ON CONFLICT (deployment_id) DO UPDATE SET \
             reflection_owner = excluded.reflection_owner, \
             reflection_lease_until = excluded.reflection_lease_until \
             WHERE live_runner_state.reflection_lease_until IS NULL \
             OR live_runner_state.reflection_lease_until <= $4 \
             OR live_runner_state.reflection_owner = $2 \
             RETURNING deployment_id",
        )
        .bind(D::id(deployment_id))
        .bind(owner)
        .bind(D::ts(until))
        .bind(D::ts(now))
        .fetch_optional(self.pool())
        .await
        .map_err(ctx("claiming the deployment's reflection"))?;
        Ok(claimed.is_some())
    }

    async fn release_reflection(&self, deployment_id: Uuid, owner: &str) -> Result<(), DbError> {
        query(
            "UPDATE live_runner_state SET reflection_owner = NULL, reflection_lease_until = NULL \
             WHERE deployment_id = $1 AND reflection_owner = $2",
        )
        .bind(D::id(deployment_id))
        .bind(owner)
        .execute(self.pool())
        .await
        .map_err(ctx("releasing the deployment's reflection"))?;
        Ok(())
    }

    async fn claimable_count(&self, now: DateTime<Utc>) -> Result<u64, DbError> {
        let row = query(
            "SELECT count(*) AS n FROM deployments WHERE \
             ((status = 'active' AND (next_tick_at IS NULL OR next_tick_at <= $1)) \
              OR (status = 'stopped' AND flatten_requested_at IS NOT NULL AND flattened_at IS NULL \
                  AND (flatten_retry_at IS NULL OR flatten_retry_at <= $1))) \
             AND (lease_expires_at IS NULL OR lease_expires_at <= $1)",
        )
        .bind(D::ts(now))
        .fetch_one(self.pool())
        .await
        .map_err(ctx("counting claimable deployments"))?;
        codec::RowExt::count(&row, "n")
    }

    async fn claim_flattens(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        lease_for: chrono::Duration,
        limit: u32,
    ) -> Result<Vec<Deployment>, DbError> {
        // As the tick claim (see there): the due rows chosen once and locked `SKIP LOCKED` on
        // PostgreSQL, the availability repeated by the UPDATE. A lease held by a tick in
        // flight keeps the flatten waiting for its release.
        let sql = format!(
            "WITH due AS MATERIALIZED (SELECT id FROM deployments WHERE status = 'stopped' \
                 AND flatten_requested_at IS NOT NULL AND flattened_at IS NULL \
                 AND (flatten_retry_at IS NULL OR flatten_retry_at <= $2) \
                 AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
                 ORDER BY flatten_requested_at, id LIMIT $4{}\
             ) UPDATE deployments SET lease_owner = $1, lease_expires_at = $3 \
             WHERE id IN (SELECT id FROM due) \
             AND status = 'stopped' AND flatten_requested_at IS NOT NULL AND flattened_at IS NULL \
             AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
             RETURNING *",
            D::SKIP_LOCKED
        );
        let rows = claim_rows(
            self,
            &sql,
            owner,
            now,
            lease_for,
            limit,
            "claiming due flattens",
        )
        .await?;
        let mut claimed = rows
            .iter()
            .map(|r| {
                Ok((
                    r.opt_ts("flatten_requested_at")?,
                    codec::deployment_from_row(r)?,
                ))
            })
            .collect::<Result<Vec<_>, DbError>>()?;
        claimed.sort_by_key(|(requested, d)| (*requested, d.id));
        Ok(claimed.into_iter().map(|(_, d)| d).collect())
    }

    async fn finish_flatten(
        &self,
        id: Uuid,
        owner: &str,
        at: DateTime<Utc>,
    ) -> Result<(), DbError> {
        let done = query(
            "UPDATE deployments SET flattened_at = $3, flatten_retry_at = NULL, \
             flatten_error = NULL, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_owner = $2 AND flatten_requested_at IS NOT NULL",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(D::ts(at))
        .execute(self.pool())
        .await
        .map_err(ctx("recording the flatten done"))?;
        if done.rows_affected() == 0 {
            return Err(DbError::not_found(
                "deployment leased to",
                format!("{owner}: {id}"),
            ));
        }
        Ok(())
    }

    async fn retry_flatten(
        &self,
        id: Uuid,
        owner: &str,
        error: &str,
        retry_at: DateTime<Utc>,
    ) -> Result<u32, DbError> {
        let error = match codec::truncate_chars(error.trim(), crate::MAX_FLATTEN_ERROR_CHARS) {
            e if e.is_empty() => "(no message)".to_owned(),
            e => e,
        };
        let row = query(
            "UPDATE deployments SET flatten_attempts = flatten_attempts + 1, \
             flatten_error = $3, flatten_retry_at = $4, lease_owner = NULL, lease_expires_at = NULL \
             WHERE id = $1 AND lease_owner = $2 AND flatten_requested_at IS NOT NULL \
             RETURNING flatten_attempts",
        )
        .bind(D::id(id))
        .bind(owner)
        .bind(error)
        .bind(D::ts(retry_at))
        .fetch_optional(self.pool())
        .await
        .map_err(ctx("recording a failed flatten"))?
        .ok_or_else(|| DbError::not_found("deployment leased to", format!("{owner}: {id}")))?;
        let attempts = row.int("flatten_attempts")?;
        u32::try_from(attempts).map_err(|e| DbError::Decode {
            column: "flatten_attempts".to_owned(),
            detail: e.to_string(),
        })
    }

    async fn mark_attempt(
        &self,
        deployment_id: Uuid,
        owner: &str,
        tick_at: DateTime<Utc>,
    ) -> Result<Option<TickAttempt>, DbError> {
        D::mark_attempt(self, deployment_id, owner, tick_at).await
    }

    async fn start_ticks(
        &self,
        owner: &str,
        starts: &[TickStart],
    ) -> Result<Vec<StartedTick>, DbError> {
        D::start_ticks(self, owner, starts).await
    }
}
