//! The runner's per-deployment state between ticks, in PostgreSQL (`live_runner_state`).
//!
//! What a restart needs that the store's tables do not hold: the paper broker (cash, positions,
//! liquidation prices, marks) of a paper deployment, the fill watermark of a Hyperliquid one
//! ([`crate::hl_broker::FillCursor`]; the exchange holds the account itself), the engine's risk
//! state (peak equity, the day's start, recent
//! order times), the last decision, the reflection notes' drafts and cadence. The ledger is NOT
//! copied here: it is rebuilt from `trade_history` and `fills` on every tick
//! ([`memory_ledger::LedgerState::rebuild`]), so the store stays the one source of truth for it.
//!
//! One row per deployment: `tick_at` (the tick this state is the result of), `state` (JSON of
//! [`RunnerState`]), and `attempt_owner` / `attempt_tick_at` (which runner last started which
//! tick, to count lease takeovers). The row is written after `record_tick` committed, and only
//! forward (`tick_at` never goes back), so a slow runner that lost its lease cannot overwrite a
//! newer state. RLS is enabled with no policy: only the runner's role (owner / service role)
//! reads it, never an end user.

use chrono::{DateTime, Utc};
use execution_engine::{PaperBroker, RiskState};
use reflection::{LastNote, NoteDraft};
use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};
use tools::LastDecisionSnapshot;
use uuid::Uuid;

use crate::hl_broker::FillCursor;

/// Errors reading or writing the runner state.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("live_runner_state: {what}: {source}")]
    Sql {
        what: &'static str,
        #[source]
        source: sqlx::Error,
    },
    #[error(
        "live_runner_state of deployment {deployment}: the stored JSON does not parse: {source}"
    )]
    Decode {
        deployment: Uuid,
        #[source]
        source: serde_json::Error,
    },
}

fn sql(what: &'static str) -> impl FnOnce(sqlx::Error) -> StateError {
    move |source| StateError::Sql { what, source }
}

/// Everything carried from one tick to the next besides the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunnerState {
    /// The paper broker of a paper deployment (`None` for an exchange deployment).
    #[serde(default)]
    pub broker: Option<PaperBroker>,
    /// Where a Hyperliquid deployment's next fill read starts, with its realized PnL and fee
    /// totals (`None` for a paper deployment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyperliquid: Option<FillCursor>,
    pub risk: RiskState,
    pub last_decision: Option<LastDecisionSnapshot>,
    pub notes: Vec<NoteDraft>,
    pub last_note: Option<LastNote>,
    pub last_reflection_failure: Option<DateTime<Utc>>,
    pub last_tick_at: Option<DateTime<Utc>>,
}

/// The stored row.
#[derive(Debug, Clone)]
pub struct StoredState {
    /// The tick the state is the result of (`None`: never completed a tick).
    pub tick_at: Option<DateTime<Utc>>,
    pub state: Option<RunnerState>,
    pub attempt_owner: Option<String>,
    pub attempt_tick_at: Option<DateTime<Utc>>,
}

/// The DDL, idempotent. Run by `live-runner migrate` and at the start of `run`.
pub const SCHEMA_SQL: &str = "CREATE TABLE IF NOT EXISTS live_runner_state (\
    deployment_id uuid PRIMARY KEY REFERENCES deployments(id) ON DELETE CASCADE, \
    tick_at timestamptz, \
    state jsonb, \
    attempt_owner text, \
    attempt_tick_at timestamptz, \
    updated_at timestamptz NOT NULL DEFAULT now())";

/// Creates the table (under an advisory lock: many runners may start at once).
///
/// # Errors
/// [`StateError::Sql`] when the statements fail.
pub async fn ensure_schema(pool: &PgPool) -> Result<(), StateError> {
    // Already there (the usual case when a runner starts next to running ones): no DDL, so no
    // lock on a table other runners are writing.
    let ready: Option<bool> = sqlx::query_scalar(
        "SELECT relrowsecurity FROM pg_class WHERE oid = to_regclass('live_runner_state')",
    )
    .fetch_optional(pool)
    .await
    .map_err(sql("look up the table"))?;
    if ready == Some(true) {
        return Ok(());
    }
    let mut tx = pool.begin().await.map_err(sql("begin"))?;
    // An arbitrary constant key: "live-runner state schema".
    sqlx::query("SELECT pg_advisory_xact_lock(7346021195)")
        .execute(&mut *tx)
        .await
        .map_err(sql("advisory lock"))?;
    sqlx::query(SCHEMA_SQL)
        .execute(&mut *tx)
        .await
        .map_err(sql("create table"))?;
    sqlx::query("ALTER TABLE live_runner_state ENABLE ROW LEVEL SECURITY")
        .execute(&mut *tx)
        .await
        .map_err(sql("enable row level security"))?;
    tx.commit().await.map_err(sql("commit"))?;
    Ok(())
}

/// The stored row of a deployment, if any.
///
/// # Errors
/// [`StateError`] on driver failure or an unreadable state.
pub async fn load(pool: &PgPool, deployment: Uuid) -> Result<Option<StoredState>, StateError> {
    let row = sqlx::query(
        "SELECT tick_at, state, attempt_owner, attempt_tick_at FROM live_runner_state \
         WHERE deployment_id = $1",
    )
    .bind(deployment)
    .fetch_optional(pool)
    .await
    .map_err(sql("load"))?;
    let Some(row) = row else { return Ok(None) };
    let state: Option<serde_json::Value> = row.try_get("state").map_err(sql("state column"))?;
    let state = state
        .map(serde_json::from_value::<RunnerState>)
        .transpose()
        .map_err(|source| StateError::Decode { deployment, source })?;
    Ok(Some(StoredState {
        tick_at: row.try_get("tick_at").map_err(sql("tick_at column"))?,
        state,
        attempt_owner: row
            .try_get("attempt_owner")
            .map_err(sql("attempt_owner column"))?,
        attempt_tick_at: row
            .try_get("attempt_tick_at")
            .map_err(sql("attempt_tick_at column"))?,
    }))
}

/// Records that `owner` starts the tick at `tick_at`.
///
/// # Errors
/// [`StateError::Sql`] on driver failure.
pub async fn mark_attempt(
    pool: &PgPool,
    deployment: Uuid,
    owner: &str,
    tick_at: DateTime<Utc>,
) -> Result<(), StateError> {
    sqlx::query(
        "INSERT INTO live_runner_state (deployment_id, attempt_owner, attempt_tick_at) \
         VALUES ($1, $2, $3) ON CONFLICT (deployment_id) DO UPDATE \
         SET attempt_owner = EXCLUDED.attempt_owner, attempt_tick_at = EXCLUDED.attempt_tick_at, \
             updated_at = now()",
    )
    .bind(deployment)
    .bind(owner)
    .bind(tick_at)
    .execute(pool)
    .await
    .map_err(sql("mark attempt"))?;
    Ok(())
}

/// Stores the state after the tick at `tick_at`, unless a state of this or a later tick is
/// already stored. Returns whether it was written.
///
/// # Errors
/// [`StateError::Sql`] on driver failure.
pub async fn save(
    pool: &PgPool,
    deployment: Uuid,
    tick_at: DateTime<Utc>,
    state: &RunnerState,
) -> Result<bool, StateError> {
    let json =
        serde_json::to_value(state).map_err(|source| StateError::Decode { deployment, source })?;
    let done = sqlx::query(
        "INSERT INTO live_runner_state (deployment_id, tick_at, state) VALUES ($1, $2, $3) \
         ON CONFLICT (deployment_id) DO UPDATE \
         SET tick_at = EXCLUDED.tick_at, state = EXCLUDED.state, updated_at = now() \
         WHERE live_runner_state.tick_at IS NULL OR live_runner_state.tick_at < EXCLUDED.tick_at",
    )
    .bind(deployment)
    .bind(tick_at)
    .bind(json)
    .execute(pool)
    .await
    .map_err(sql("save"))?;
    Ok(done.rows_affected() == 1)
}

/// Extends `owner`'s lease on the deployment to `until` (the heartbeat of a long tick).
/// Returns false when the lease is no longer `owner`'s.
///
/// # Errors
/// [`StateError::Sql`] on driver failure.
pub async fn extend_lease(
    pool: &PgPool,
    deployment: Uuid,
    owner: &str,
    until: DateTime<Utc>,
) -> Result<bool, StateError> {
    let done = sqlx::query(
        "UPDATE deployments SET lease_expires_at = $3 WHERE id = $1 AND lease_owner = $2",
    )
    .bind(deployment)
    .bind(owner)
    .bind(until)
    .execute(pool)
    .await
    .map_err(sql("extend lease"))?;
    Ok(done.rows_affected() == 1)
}

/// How many active deployments are due at `now` and not leased (or leased until at most
/// `now`): what a claim could still get once the concurrent claimers' locks are gone.
///
/// # Errors
/// [`StateError::Sql`] on driver failure.
pub async fn claimable_count(pool: &PgPool, now: DateTime<Utc>) -> Result<i64, StateError> {
    let row = sqlx::query(
        "SELECT count(*) FROM deployments WHERE status = 'active' \
         AND (next_tick_at IS NULL OR next_tick_at <= $1) \
         AND (lease_expires_at IS NULL OR lease_expires_at <= $1)",
    )
    .bind(now)
    .fetch_one(pool)
    .await
    .map_err(sql("count claimable"))?;
    row.try_get::<i64, _>(0).map_err(sql("count column"))
}
