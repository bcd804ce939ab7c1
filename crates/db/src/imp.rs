//! The store implementations, written once and expanded for each backend.
//!
//! The SQL is the common subset of PostgreSQL and SQLite (numbered `$n` parameters, `ON CONFLICT`,
//! `RETURNING`, `NULLS LAST`); the only differences are how values are bound (the `$enc` module:
//! [`crate::codec::lite`] binds uuid/decimal/time as TEXT, [`crate::codec::pg`] natively) and the
//! users table's name, and the row-locking clause of the lease claim (`FOR UPDATE SKIP LOCKED` on
//! PostgreSQL; nothing on SQLite, which has one writer at a time). Rows are decoded by the shared `*_from_row` functions through
//! [`crate::codec::RowExt`]. Write transactions open with `$begin`: `BEGIN IMMEDIATE` on SQLite
//! (take the write lock up front, so a read-then-write transaction waits for a concurrent writer
//! instead of failing with `SQLITE_BUSY`), plain `BEGIN` on PostgreSQL. The `Any` driver is not used: it cannot carry decimals, uuids, times or
//! JSON.

/// Builds `WHERE`-clause text for a note scope; the next free parameter number is returned.
pub(crate) fn scope_filter(scope: crate::NoteScope) -> (&'static str, u32) {
    match scope {
        crate::NoteScope::Deployment(_) => ("deployment_id = $1", 2),
        crate::NoteScope::Skill { .. } => (
            "deployment_id IS NULL AND skill_id = $1 AND skill_version = $2",
            3,
        ),
    }
}

/// Is this the "second active note" unique violation a concurrent reflection causes?
pub(crate) fn is_active_note_conflict(err: &crate::DbError) -> bool {
    match err {
        crate::DbError::Constraint {
            kind: crate::ConstraintKind::Unique,
            constraint,
            ..
        } => {
            // PostgreSQL names the partial index; SQLite names its columns.
            constraint.starts_with("reflection_notes_active")
                || (constraint.starts_with("reflection_notes.")
                    && constraint != "reflection_notes.id")
        }
        _ => false,
    }
}

pub(crate) const NOTE_INSERT_ATTEMPTS: u32 = 5;

pub(crate) fn validate_note(note: &crate::NewNote) -> Result<(), crate::DbError> {
    crate::codec::check_len(
        "lessons_text",
        &note.lessons_text,
        1,
        types::MAX_LESSONS_CHARS,
    )?;
    if let Some(lint) = &note.lint {
        crate::codec::check_len("lint reason", &lint.reason, 0, types::MAX_LINT_REASON_CHARS)?;
    }
    if note.window_start > note.window_end {
        return Err(crate::DbError::Invalid {
            what: "reflection window",
            detail: format!(
                "starts {} after it ends {}",
                note.window_start, note.window_end
            ),
        });
    }
    if note.trades_considered < 0 {
        return Err(crate::DbError::Invalid {
            what: "trades_considered",
            detail: format!("{} is negative", note.trades_considered),
        });
    }
    Ok(())
}

pub(crate) fn validate_fact_text(fact: &str, topic: Option<&str>) -> Result<(), crate::DbError> {
    crate::codec::check_len("fact", fact, types::MIN_FACT_CHARS, types::MAX_FACT_CHARS)?;
    if let Some(topic) = topic {
        crate::codec::check_len("fact topic", topic, 1, types::MAX_FACT_TOPIC_CHARS)?;
    }
    Ok(())
}

pub(crate) fn validate_event(e: &types::MarketEvent) -> Result<(), crate::DbError> {
    crate::codec::check_len("market event kind", &e.kind, 1, 64)?;
    crate::codec::check_len("market event title", &e.title, 1, 500)?;
    if e.importance < rust_decimal::Decimal::ZERO || e.importance > rust_decimal::Decimal::ONE {
        return Err(crate::DbError::Invalid {
            what: "market event importance",
            detail: format!("{} is outside 0..=1", e.importance),
        });
    }
    Ok(())
}

pub(crate) fn validate_tick(tick: &crate::TickRecord) -> Result<(), crate::DbError> {
    let d = tick.snapshot.deployment_id;
    if let Some(t) = tick.trades.iter().find(|t| t.deployment_id != d) {
        return Err(crate::DbError::Invalid {
            what: "tick record",
            detail: format!(
                "trade {} belongs to deployment {}, not {d}",
                t.id, t.deployment_id
            ),
        });
    }
    Ok(())
}

/// At most this many snapshot rows per `INSERT` statement of a batch (15 parameters each: 960
/// in all, far below both backends' limits). One statement per row cost a round trip to the
/// driver's worker each.
pub(crate) const SNAPSHOT_CHUNK: usize = 64;

/// Splits `rows` into statement sizes that are powers of two up to [`SNAPSHOT_CHUNK`]: a
/// handful of statements, each prepared once and cached, serve every batch size.
pub(crate) fn snapshot_chunks(mut rows: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if rows == 0 {
            return None;
        }
        let size = if rows >= SNAPSHOT_CHUNK {
            SNAPSHOT_CHUNK
        } else {
            1 << rows.ilog2()
        };
        rows -= size;
        Some(size)
    })
}

/// `INSERT INTO decision_snapshots … VALUES (…), … ON CONFLICT DO NOTHING` for `rows` rows,
/// with `$n` parameters when `numbered`, `?` otherwise, and `RETURNING id` when `returning`.
pub(crate) fn snapshot_insert_sql(rows: usize, numbered: bool, returning: bool) -> String {
    use std::fmt::Write as _;
    const COLUMNS: usize = 15;
    let mut sql = String::from(
        "INSERT INTO decision_snapshots (id, deployment_id, tick_at, system_prompt, context, \
         steps, proposal, verdict, model, finish_reason, input_tokens, output_tokens, \
         cache_read_tokens, cache_write_tokens, cost_usd) VALUES ",
    );
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        for c in 1..=COLUMNS {
            if numbered {
                let _ = write!(sql, "${}", r * COLUMNS + c);
            } else {
                sql.push('?');
            }
            sql.push_str(if c == COLUMNS { ")" } else { ", " });
        }
    }
    sql.push_str(if returning {
        " ON CONFLICT DO NOTHING RETURNING id"
    } else {
        " ON CONFLICT DO NOTHING"
    });
    sql
}

/// A tick's ledger rows, the closing ones first: a flip closes one row and opens another on
/// the same symbol, and a symbol has at most one open row.
pub(crate) fn closing_first(
    trades: &[types::TradeRecord],
) -> impl Iterator<Item = &types::TradeRecord> {
    let closed = |t: &&types::TradeRecord| t.status == types::TradeStatus::Closed;
    trades
        .iter()
        .filter(closed)
        .chain(trades.iter().filter(move |t| !closed(t)))
}

/// Every tick of a batch is valid on its own, and no two ticks share a snapshot id or a
/// deployment + time (the batch's rows are told apart by them).
pub(crate) fn validate_batch(ticks: &[crate::TickRecord]) -> Result<(), crate::DbError> {
    let mut ids = std::collections::HashSet::with_capacity(ticks.len());
    let mut times = std::collections::HashSet::with_capacity(ticks.len());
    for tick in ticks {
        validate_tick(tick)?;
        let s = &tick.snapshot;
        if !ids.insert(s.id) || !times.insert((s.deployment_id, s.tick_at)) {
            return Err(crate::DbError::Invalid {
                what: "tick batch",
                detail: format!(
                    "two ticks of the batch share snapshot {} or deployment {} at {}",
                    s.id, s.deployment_id, s.tick_at
                ),
            });
        }
    }
    Ok(())
}

/// The ledger rows a batch of ticks writes, reduced to the last version of each row: an open
/// row whose excursions move on every tick is written once per batch, not once per tick. Rows
/// are written in the order of their last versions (closing rows first within a tick), which
/// keeps "one open row per symbol" true at every step whenever writing every version in tick
/// order would. A row written again after a tick of the batch closed it is refused, as the
/// store refuses it across batches (closed rows are immutable).
#[derive(Default)]
pub(crate) struct BatchTrades<'a> {
    /// Row id → (order of its last version, the version, the time of its tick).
    last: std::collections::HashMap<
        uuid::Uuid,
        (usize, &'a types::TradeRecord, chrono::DateTime<chrono::Utc>),
    >,
    next: usize,
}

impl<'a> BatchTrades<'a> {
    /// Adds one recorded tick's rows, after the earlier ticks' rows.
    pub(crate) fn add(&mut self, tick: &'a crate::TickRecord) -> Result<(), crate::DbError> {
        for t in closing_first(&tick.trades) {
            if let Some((_, earlier, _)) = self.last.get(&t.id)
                && earlier.status == types::TradeStatus::Closed
            {
                return Err(crate::DbError::Invalid {
                    what: "trade_history row",
                    detail: format!(
                        "{} is closed (closed rows are immutable) or belongs to another deployment",
                        t.id
                    ),
                });
            }
            self.last
                .insert(t.id, (self.next, t, tick.snapshot.tick_at));
            self.next += 1;
        }
        Ok(())
    }

    /// The rows to write, in order, each with the time of the tick that closed it (closed
    /// rows only).
    pub(crate) fn last_versions(
        self,
    ) -> Vec<(
        &'a types::TradeRecord,
        Option<chrono::DateTime<chrono::Utc>>,
    )> {
        let mut rows: Vec<_> = self.last.into_values().collect();
        rows.sort_by_key(|(order, _, _)| *order);
        rows.into_iter()
            .map(|(_, t, at)| (t, (t.status == types::TradeStatus::Closed).then_some(at)))
            .collect()
    }
}

macro_rules! impl_stores {
    ($store:ty, $db:ty, $enc:ident, $users:literal, $begin:literal, $skip_locked:literal) => {
        use std::collections::{BTreeSet, HashSet};

        use chrono::{DateTime, Utc};
        use rust_decimal::Decimal;
        use sqlx::types::Json;
        use types::{
            FactChange, Fill, MarketEvent, ReflectionNote, TradeRecord, TradeStatus, UserFact,
        };
        use uuid::Uuid;

        use crate::codec::{self, $enc, check_len, check_limit, u64_to_i64};
        use crate::error::ctx;
        use crate::imp::{
            closing_first, is_active_note_conflict, scope_filter, snapshot_chunks, snapshot_insert_sql,
            validate_batch, validate_event, validate_fact_text, validate_note, validate_tick,
            BatchTrades, NOTE_INSERT_ATTEMPTS,
        };
        use crate::model::*;
        use crate::traits::*;
        use crate::DbError;

        impl RegistryStore for $store {
            async fn upsert_user(&self, user: &User) -> Result<(), DbError> {
                sqlx::query(concat!(
                    "INSERT INTO ",
                    $users,
                    " (id, email) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET email = excluded.email"
                ))
                .bind($enc::id(user.id))
                .bind(user.email.as_deref())
                .execute(&self.pool)
                .await
                .map_err(ctx("upserting user"))?;
                Ok(())
            }

            async fn create_skill(&self, skill: &Skill) -> Result<(), DbError> {
                check_len("skill name", &skill.name, 1, 200)?;
                sqlx::query("INSERT INTO skills (id, user_id, name, created_at) VALUES ($1, $2, $3, $4)")
                    .bind($enc::id(skill.id))
                    .bind($enc::id(skill.user_id))
                    .bind(&skill.name)
                    .bind($enc::ts(skill.created_at))
                    .execute(&self.pool)
                    .await
                    .map_err(ctx("inserting skill"))?;
                Ok(())
            }

            async fn get_skill(&self, id: Uuid) -> Result<Skill, DbError> {
                let row = sqlx::query("SELECT * FROM skills WHERE id = $1")
                    .bind($enc::id(id))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(ctx("reading skill"))?
                    .ok_or_else(|| DbError::not_found("skill", id))?;
                codec::skill_from_row(&row)
            }

            async fn add_skill_version(&self, v: &SkillVersion) -> Result<(), DbError> {
                if v.version < 1 {
                    return Err(DbError::Invalid {
                        what: "skill version",
                        detail: format!("{} is below 1", v.version),
                    });
                }
                sqlx::query(
                    "INSERT INTO skill_versions (skill_id, version, body, model, created_at) \
                     VALUES ($1, $2, $3, $4, $5)",
                )
                .bind($enc::id(v.skill_id))
                .bind(v.version)
                .bind(Json(&v.body))
                .bind(&v.model)
                .bind($enc::ts(v.created_at))
                .execute(&self.pool)
                .await
                .map_err(ctx("inserting skill version"))?;
                Ok(())
            }

            async fn get_skill_version(&self, skill_id: Uuid, version: i32) -> Result<SkillVersion, DbError> {
                let row = sqlx::query("SELECT * FROM skill_versions WHERE skill_id = $1 AND version = $2")
                    .bind($enc::id(skill_id))
                    .bind(version)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(ctx("reading skill version"))?
                    .ok_or_else(|| DbError::not_found("skill version", format!("{skill_id} v{version}")))?;
                codec::skill_version_from_row(&row)
            }

            async fn latest_skill_version(&self, skill_id: Uuid) -> Result<SkillVersion, DbError> {
                let row = sqlx::query(
                    "SELECT * FROM skill_versions WHERE skill_id = $1 ORDER BY version DESC LIMIT 1",
                )
                .bind($enc::id(skill_id))
                .fetch_optional(&self.pool)
                .await
                .map_err(ctx("reading latest skill version"))?
                .ok_or_else(|| DbError::not_found("skill version of skill", skill_id))?;
                codec::skill_version_from_row(&row)
            }

            async fn create_deployment(&self, d: &Deployment) -> Result<(), DbError> {
                sqlx::query(
                    "INSERT INTO deployments (id, user_id, skill_id, skill_version, broker, status, \
                     initial_equity_usd, equity_usd, config, created_at, next_tick_at, lease_owner, \
                     lease_expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                )
                .bind($enc::id(d.id))
                .bind($enc::id(d.user_id))
                .bind($enc::id(d.skill_id))
                .bind(d.skill_version)
                .bind(d.broker.as_str())
                .bind(d.status.as_str())
                .bind($enc::dec(d.initial_equity_usd))
                .bind($enc::dec(d.equity_usd))
                .bind(Json(&d.config))
                .bind($enc::ts(d.created_at))
                .bind($enc::ots(d.next_tick_at))
                .bind(d.lease_owner.as_deref())
                .bind($enc::ots(d.lease_expires_at))
                .execute(&self.pool)
                .await
                .map_err(ctx("inserting deployment"))?;
                Ok(())
            }

            async fn get_deployment(&self, id: Uuid) -> Result<Deployment, DbError> {
                let row = sqlx::query("SELECT * FROM deployments WHERE id = $1")
                    .bind($enc::id(id))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(ctx("reading deployment"))?
                    .ok_or_else(|| DbError::not_found("deployment", id))?;
                codec::deployment_from_row(&row)
            }

            async fn list_deployments(&self, status: Option<DeploymentStatus>) -> Result<Vec<Deployment>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM deployments WHERE ($1 IS NULL OR status = $1) ORDER BY created_at, id",
                )
                .bind(status.map(DeploymentStatus::as_str))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("listing deployments"))?;
                rows.iter().map(codec::deployment_from_row).collect()
            }

            async fn set_deployment_status(&self, id: Uuid, status: DeploymentStatus) -> Result<(), DbError> {
                let done = sqlx::query("UPDATE deployments SET status = $2 WHERE id = $1")
                    .bind($enc::id(id))
                    .bind(status.as_str())
                    .execute(&self.pool)
                    .await
                    .map_err(ctx("updating deployment status"))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::not_found("deployment", id));
                }
                Ok(())
            }

            async fn set_next_tick_at(&self, id: Uuid, next_tick_at: Option<DateTime<Utc>>) -> Result<(), DbError> {
                let done = sqlx::query("UPDATE deployments SET next_tick_at = $2 WHERE id = $1")
                    .bind($enc::id(id))
                    .bind($enc::ots(next_tick_at))
                    .execute(&self.pool)
                    .await
                    .map_err(ctx("scheduling deployment"))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::not_found("deployment", id));
                }
                Ok(())
            }

            async fn claim_due_deployments(
                &self,
                owner: &str,
                now: DateTime<Utc>,
                lease_for: chrono::Duration,
                limit: u32,
            ) -> Result<Vec<Deployment>, DbError> {
                if lease_for <= chrono::Duration::zero() {
                    return Err(DbError::Invalid {
                        what: "lease duration",
                        detail: format!("{lease_for} is not positive"),
                    });
                }
                let limit = check_limit("claim limit", limit, 1000)?;
                // On PostgreSQL the due rows are locked `FOR UPDATE SKIP LOCKED`: concurrent
                // claimers never wait on each other's rows (so they cannot deadlock) and each
                // row goes to one of them. The choice is a MATERIALIZED CTE so it runs once (a
                // subquery in `IN (...)` may be re-run by the planner and lock more than LIMIT
                // rows). The UPDATE repeats the availability test. SQLite runs the statement
                // alone (one writer at a time).
                let rows = sqlx::query(concat!(
                    "WITH due AS MATERIALIZED (SELECT id FROM deployments WHERE status = 'active' \
                         AND (next_tick_at IS NULL OR next_tick_at <= $2) \
                         AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
                         ORDER BY next_tick_at NULLS FIRST, id LIMIT $4",
                    $skip_locked,
                    ") UPDATE deployments SET lease_owner = $1, lease_expires_at = $3 \
                     WHERE id IN (SELECT id FROM due) \
                     AND status = 'active' AND (lease_expires_at IS NULL OR lease_expires_at <= $2) \
                     RETURNING *",
                ))
                .bind(owner)
                .bind($enc::ts(now))
                .bind($enc::ts(now + lease_for))
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("claiming due deployments"))?;
                let mut claimed = rows.iter().map(codec::deployment_from_row).collect::<Result<Vec<_>, _>>()?;
                claimed.sort_by(|a, b| (a.next_tick_at, a.id).cmp(&(b.next_tick_at, b.id)));
                Ok(claimed)
            }

            async fn release_deployment(
                &self,
                id: Uuid,
                owner: &str,
                next_tick_at: Option<DateTime<Utc>>,
            ) -> Result<(), DbError> {
                let done = sqlx::query(
                    "UPDATE deployments SET lease_owner = NULL, lease_expires_at = NULL, next_tick_at = $3 \
                     WHERE id = $1 AND lease_owner = $2",
                )
                .bind($enc::id(id))
                .bind(owner)
                .bind($enc::ots(next_tick_at))
                .execute(&self.pool)
                .await
                .map_err(ctx("releasing deployment lease"))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::not_found("deployment leased to", format!("{owner}: {id}")));
                }
                Ok(())
            }
        }

        impl $store {
            /// Inserts the snapshots, in statements of the sizes `snapshot_chunks` gives; a row
            /// whose id or deployment + time is already stored is skipped (a replay). Returns the
            /// ids of the rows inserted.
            ///
            /// The statements have no `RETURNING`: on SQLite each returned row is a hop between
            /// threads (sqlx's worker sends it to the caller), ≈13 % of a backtest's wall time.
            /// The row count tells a lone snapshot apart; several are inserted under a savepoint,
            /// and only when one of them was already stored does it roll back and insert them
            /// again with `RETURNING` to learn which ones are new.
            async fn insert_snapshots(
                tx: &mut sqlx::Transaction<'static, $db>,
                snapshots: &[&DecisionSnapshot],
            ) -> Result<HashSet<Uuid>, DbError> {
                use sqlx::Acquire as _;
                let all = || snapshots.iter().map(|s| s.id).collect::<HashSet<_>>();
                if let [_] = snapshots {
                    let (count, _) = Self::insert_snapshot_rows(&mut **tx, snapshots, false).await?;
                    return Ok(if count == 1 { all() } else { HashSet::new() });
                }
                let mut savepoint = tx.begin().await.map_err(ctx("inserting decision snapshots"))?;
                let (count, _) = Self::insert_snapshot_rows(&mut *savepoint, snapshots, false).await?;
                if count == snapshots.len() as u64 {
                    savepoint.commit().await.map_err(ctx("inserting decision snapshots"))?;
                    return Ok(all());
                }
                savepoint.rollback().await.map_err(ctx("inserting decision snapshots"))?;
                let (_, inserted) = Self::insert_snapshot_rows(&mut **tx, snapshots, true).await?;
                Ok(inserted)
            }

            /// The `INSERT`s of [`insert_snapshots`](Self::insert_snapshots): the number of rows
            /// inserted, and with `returning` their ids.
            async fn insert_snapshot_rows(
                conn: &mut <$db as sqlx::Database>::Connection,
                snapshots: &[&DecisionSnapshot],
                returning: bool,
            ) -> Result<(u64, HashSet<Uuid>), DbError> {
                let mut count = 0;
                let mut inserted = HashSet::new();
                let mut rest = snapshots;
                for size in snapshot_chunks(snapshots.len()) {
                    let (chunk, tail) = rest.split_at(size);
                    rest = tail;
                    let sql = snapshot_insert_sql(size, $enc::NUMBERED_PARAMS, returning);
                    let mut query = sqlx::query(&sql);
                    for s in chunk {
                        query = query
                            .bind($enc::id(s.id))
                            .bind($enc::id(s.deployment_id))
                            .bind($enc::ts(s.tick_at))
                            .bind(s.system_prompt.as_str())
                            .bind(s.context.as_str())
                            .bind(Json(&s.steps))
                            .bind(s.proposal.as_ref().map(Json))
                            .bind(Json(&s.verdict))
                            .bind(s.model.as_str())
                            .bind(s.finish_reason.as_deref())
                            .bind(u64_to_i64("input tokens", s.usage.input)?)
                            .bind(u64_to_i64("output tokens", s.usage.output)?)
                            .bind(u64_to_i64("cache read tokens", s.usage.cache_read)?)
                            .bind(u64_to_i64("cache write tokens", s.usage.cache_write)?)
                            .bind($enc::dec(s.cost_usd));
                    }
                    if returning {
                        let rows = query
                            .fetch_all(&mut *conn)
                            .await
                            .map_err(ctx("inserting decision snapshots"))?;
                        for row in &rows {
                            inserted.insert(codec::RowExt::uuid(row, "id")?);
                        }
                        count += rows.len() as u64;
                    } else {
                        count += query
                            .execute(&mut *conn)
                            .await
                            .map_err(ctx("inserting decision snapshots"))?
                            .rows_affected();
                    }
                }
                Ok((count, inserted))
            }

            /// The stored snapshot a replayed tick collided with (same id, or same deployment
            /// and time).
            async fn replayed_snapshot_id(
                tx: &mut sqlx::Transaction<'static, $db>,
                s: &DecisionSnapshot,
            ) -> Result<Uuid, DbError> {
                let row = sqlx::query(
                    "SELECT id FROM decision_snapshots WHERE id = $1 OR (deployment_id = $2 AND tick_at = $3)",
                )
                .bind($enc::id(s.id))
                .bind($enc::id(s.deployment_id))
                .bind($enc::ts(s.tick_at))
                .fetch_one(&mut **tx)
                .await
                .map_err(ctx("reading replayed snapshot"))?;
                codec::RowExt::uuid(&row, "id")
            }

            /// The runner state after the tick of `s`, only forward: a stored state of this or
            /// a later tick wins and the whole tick is refused (its runner lost the deployment).
            async fn write_runner_state(
                tx: &mut sqlx::Transaction<'static, $db>,
                s: &DecisionSnapshot,
                state: &serde_json::Value,
            ) -> Result<(), DbError> {
                let written = sqlx::query(
                    "INSERT INTO live_runner_state (deployment_id, tick_at, state, updated_at) \
                     VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (deployment_id) DO UPDATE \
                     SET tick_at = excluded.tick_at, state = excluded.state, \
                         updated_at = excluded.updated_at \
                     WHERE live_runner_state.tick_at IS NULL \
                        OR live_runner_state.tick_at < excluded.tick_at",
                )
                .bind($enc::id(s.deployment_id))
                .bind($enc::ts(s.tick_at))
                .bind(Json(state))
                .bind($enc::ts(Utc::now()))
                .execute(&mut **tx)
                .await
                .map_err(ctx("writing runner state"))?;
                if written.rows_affected() == 0 {
                    let row = sqlx::query(
                        "SELECT tick_at FROM live_runner_state WHERE deployment_id = $1",
                    )
                    .bind($enc::id(s.deployment_id))
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(ctx("reading newer runner state"))?;
                    let stored_tick_at = codec::RowExt::ts(&row, "tick_at")?;
                    return Err(DbError::StaleState {
                        deployment_id: s.deployment_id,
                        tick_at: s.tick_at,
                        stored_tick_at,
                    });
                }
                Ok(())
            }

            async fn insert_fill(
                tx: &mut sqlx::Transaction<'static, $db>,
                deployment_id: Uuid,
                f: &Fill,
            ) -> Result<(), DbError> {
                sqlx::query(
                    "INSERT INTO fills (deployment_id, broker_fill_id, symbol, side, qty, price, fee_usd, \
                     time, snapshot_id, client_order_id, liquidation) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
                     ON CONFLICT (deployment_id, broker_fill_id) DO NOTHING",
                )
                .bind($enc::id(deployment_id))
                .bind(&f.id)
                .bind(&f.symbol)
                .bind(codec::order_side_str(f.side))
                .bind($enc::dec(f.qty))
                .bind($enc::dec(f.price))
                .bind($enc::dec(f.fee_usd))
                .bind($enc::ts(f.time))
                .bind($enc::oid(f.snapshot_id))
                .bind(f.client_order_id.as_deref())
                .bind(f.liquidation)
                .execute(&mut **tx)
                .await
                .map_err(ctx("inserting fill"))?;
                Ok(())
            }

            /// Inserts or updates one ledger row; a closed row (or another deployment's) is
            /// refused. `closed_at` is the time of the tick that closed it.
            async fn upsert_trade(
                tx: &mut sqlx::Transaction<'static, $db>,
                t: &TradeRecord,
                closed_at: Option<DateTime<Utc>>,
                now: DateTime<Utc>,
            ) -> Result<(), DbError> {
                let done = sqlx::query(
                    "INSERT INTO trade_history (id, deployment_id, skill_id, skill_version, symbol, side, \
                     status, entry_tick_at, entry_price, entry_size_usd, entry_leverage, entry_reason, \
                     entry_snapshot_id, entry_regime_tag, opened_qty, open_qty, exit_tick_at, exit_price, \
                     exit_reason, exit_snapshot_id, close_kind, holding_minutes, realized_pnl_usd, \
                     fees_usd, mfe_usd, mae_usd, exit_size_usd, broker_reconciled, closed_at, \
                     created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
                     $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $30) \
                     ON CONFLICT (id) DO UPDATE SET \
                     status = excluded.status, entry_tick_at = excluded.entry_tick_at, \
                     entry_price = excluded.entry_price, entry_size_usd = excluded.entry_size_usd, \
                     entry_leverage = excluded.entry_leverage, entry_reason = excluded.entry_reason, \
                     entry_snapshot_id = excluded.entry_snapshot_id, \
                     entry_regime_tag = excluded.entry_regime_tag, opened_qty = excluded.opened_qty, \
                     open_qty = excluded.open_qty, exit_tick_at = excluded.exit_tick_at, \
                     exit_price = excluded.exit_price, exit_reason = excluded.exit_reason, \
                     exit_snapshot_id = excluded.exit_snapshot_id, close_kind = excluded.close_kind, \
                     holding_minutes = excluded.holding_minutes, \
                     realized_pnl_usd = excluded.realized_pnl_usd, fees_usd = excluded.fees_usd, \
                     mfe_usd = excluded.mfe_usd, mae_usd = excluded.mae_usd, \
                     exit_size_usd = excluded.exit_size_usd, \
                     broker_reconciled = excluded.broker_reconciled, \
                     closed_at = CASE WHEN excluded.status = 'closed' \
                         THEN COALESCE(trade_history.closed_at, excluded.closed_at) ELSE NULL END, \
                     updated_at = excluded.updated_at \
                     WHERE trade_history.status = 'open' \
                     AND trade_history.deployment_id = excluded.deployment_id",
                )
                .bind($enc::id(t.id))
                .bind($enc::id(t.deployment_id))
                .bind($enc::id(t.skill_id))
                .bind(t.skill_version)
                .bind(&t.symbol)
                .bind(codec::side_str(t.side))
                .bind(t.status.as_str())
                .bind($enc::ts(t.entry_tick_at))
                .bind($enc::dec(t.entry_price))
                .bind($enc::dec(t.entry_size_usd))
                .bind($enc::odec(t.entry_leverage))
                .bind(t.entry_reason.as_deref())
                .bind($enc::oid(t.entry_snapshot_id))
                .bind(t.entry_regime_tag.map(|r| r.as_str()))
                .bind($enc::dec(t.opened_qty))
                .bind($enc::dec(t.open_qty))
                .bind($enc::ots(t.exit_tick_at))
                .bind($enc::odec(t.exit_price))
                .bind(t.exit_reason.as_deref())
                .bind($enc::oid(t.exit_snapshot_id))
                .bind(t.close_kind.map(|k| k.as_str()))
                .bind($enc::odec(t.holding_minutes))
                .bind($enc::dec(t.realized_pnl_usd))
                .bind($enc::dec(t.fees_usd))
                .bind($enc::dec(t.mfe_usd))
                .bind($enc::dec(t.mae_usd))
                .bind($enc::dec(t.exit_size_usd))
                .bind(t.broker_reconciled)
                .bind($enc::ots(closed_at))
                .bind($enc::ts(now))
                .execute(&mut **tx)
                .await
                .map_err(ctx("upserting trade_history row"))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::Invalid {
                        what: "trade_history row",
                        detail: format!(
                            "{} is closed (closed rows are immutable) or belongs to another deployment",
                            t.id
                        ),
                    });
                }
                Ok(())
            }

            async fn link_fill(
                tx: &mut sqlx::Transaction<'static, $db>,
                deployment_id: Uuid,
                link: &FillTradeLink,
            ) -> Result<(), DbError> {
                let done = sqlx::query(
                    "UPDATE fills SET trade_id = $3, flip_trade_id = $4 \
                     WHERE deployment_id = $1 AND broker_fill_id = $2",
                )
                .bind($enc::id(deployment_id))
                .bind(&link.broker_fill_id)
                .bind($enc::id(link.trade_id))
                .bind($enc::oid(link.flip_trade_id))
                .execute(&mut **tx)
                .await
                .map_err(ctx("linking fill to trade"))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::Invalid {
                        what: "fill link",
                        detail: format!(
                            "fill {} of deployment {} is not stored",
                            link.broker_fill_id, deployment_id
                        ),
                    });
                }
                Ok(())
            }

            /// One tick's rows inside the caller's transaction (see `TickStore::record_tick`),
            /// the deployment's equity aside. A replayed tick writes nothing.
            async fn write_tick(
                tx: &mut sqlx::Transaction<'static, $db>,
                tick: &TickRecord,
            ) -> Result<TickOutcome, DbError> {
                let s = &tick.snapshot;
                if Self::insert_snapshots(tx, &[s]).await?.is_empty() {
                    let snapshot_id = Self::replayed_snapshot_id(tx, s).await?;
                    return Ok(TickOutcome::AlreadyRecorded { snapshot_id });
                }
                if let Some(state) = &tick.runner_state {
                    Self::write_runner_state(tx, s, state).await?;
                }
                for f in &tick.fills {
                    Self::insert_fill(tx, s.deployment_id, f).await?;
                }
                // Closing rows first: a flip closes one row and opens another on the same symbol.
                let now = Utc::now();
                for t in closing_first(&tick.trades) {
                    let closed_at = (t.status == TradeStatus::Closed).then_some(s.tick_at);
                    Self::upsert_trade(tx, t, closed_at, now).await?;
                }
                for link in &tick.links {
                    Self::link_fill(tx, s.deployment_id, link).await?;
                }
                Ok(TickOutcome::Recorded { snapshot_id: s.id })
            }

            async fn write_equity(
                tx: &mut sqlx::Transaction<'static, $db>,
                deployment_id: Uuid,
                equity: Decimal,
            ) -> Result<(), DbError> {
                sqlx::query("UPDATE deployments SET equity_usd = $2 WHERE id = $1")
                    .bind($enc::id(deployment_id))
                    .bind($enc::dec(equity))
                    .execute(&mut **tx)
                    .await
                    .map_err(ctx("updating deployment equity"))?;
                Ok(())
            }
        }

        impl TickStore for $store {
            async fn record_tick(&self, tick: &TickRecord) -> Result<TickOutcome, DbError> {
                validate_tick(tick)?;
                let mut tx = self.pool.begin_with($begin).await.map_err(ctx("beginning tick"))?;
                let outcome = Self::write_tick(&mut tx, tick).await?;
                match (outcome, tick.equity_usd) {
                    (TickOutcome::Recorded { .. }, Some(equity)) => {
                        Self::write_equity(&mut tx, tick.snapshot.deployment_id, equity).await?;
                    }
                    (TickOutcome::Recorded { .. }, None) => {}
                    (TickOutcome::AlreadyRecorded { .. }, _) => {
                        tx.rollback().await.map_err(ctx("ending replayed tick"))?;
                        return Ok(outcome);
                    }
                }
                tx.commit().await.map_err(ctx("committing tick"))?;
                Ok(outcome)
            }

            async fn record_ticks(&self, ticks: &[TickRecord]) -> Result<Vec<TickOutcome>, DbError> {
                validate_batch(ticks)?;
                let mut tx = self.pool.begin_with($begin).await.map_err(ctx("beginning ticks"))?;
                let snapshots: Vec<&DecisionSnapshot> = ticks.iter().map(|t| &t.snapshot).collect();
                let inserted = Self::insert_snapshots(&mut tx, &snapshots).await?;
                let mut outcomes = Vec::with_capacity(ticks.len());
                let mut trades = BatchTrades::default();
                // Per deployment, the equity of its last recorded tick that carries one.
                let mut equity: Vec<(Uuid, Decimal)> = Vec::new();
                for tick in ticks {
                    let s = &tick.snapshot;
                    if !inserted.contains(&s.id) {
                        let snapshot_id = Self::replayed_snapshot_id(&mut tx, s).await?;
                        outcomes.push(TickOutcome::AlreadyRecorded { snapshot_id });
                        continue;
                    }
                    if let Some(state) = &tick.runner_state {
                        Self::write_runner_state(&mut tx, s, state).await?;
                    }
                    for f in &tick.fills {
                        Self::insert_fill(&mut tx, s.deployment_id, f).await?;
                    }
                    trades.add(tick)?;
                    if let Some(e) = tick.equity_usd {
                        match equity.iter_mut().find(|(id, _)| *id == s.deployment_id) {
                            Some(slot) => slot.1 = e,
                            None => equity.push((s.deployment_id, e)),
                        }
                    }
                    outcomes.push(TickOutcome::Recorded { snapshot_id: s.id });
                }
                let now = Utc::now();
                for (t, closed_at) in trades.last_versions() {
                    Self::upsert_trade(&mut tx, t, closed_at, now).await?;
                }
                for (tick, outcome) in ticks.iter().zip(&outcomes) {
                    if matches!(outcome, TickOutcome::Recorded { .. }) {
                        for link in &tick.links {
                            Self::link_fill(&mut tx, tick.snapshot.deployment_id, link).await?;
                        }
                    }
                }
                for (d, e) in equity {
                    Self::write_equity(&mut tx, d, e).await?;
                }
                tx.commit().await.map_err(ctx("committing ticks"))?;
                Ok(outcomes)
            }

            async fn get_snapshot(&self, id: Uuid) -> Result<DecisionSnapshot, DbError> {
                let row = sqlx::query("SELECT * FROM decision_snapshots WHERE id = $1")
                    .bind($enc::id(id))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(ctx("reading decision snapshot"))?
                    .ok_or_else(|| DbError::not_found("decision snapshot", id))?;
                codec::snapshot_from_row(&row)
            }

            async fn last_snapshot_before(
                &self,
                deployment_id: Uuid,
                before: DateTime<Utc>,
            ) -> Result<Option<DecisionSnapshot>, DbError> {
                let row = sqlx::query(
                    "SELECT * FROM decision_snapshots WHERE deployment_id = $1 AND tick_at < $2 \
                     ORDER BY tick_at DESC LIMIT 1",
                )
                .bind($enc::id(deployment_id))
                .bind($enc::ts(before))
                .fetch_optional(&self.pool)
                .await
                .map_err(ctx("reading last decision snapshot"))?;
                row.as_ref().map(codec::snapshot_from_row).transpose()
            }

            async fn runner_state(&self, deployment_id: Uuid) -> Result<Option<StoredRunnerState>, DbError> {
                let row = sqlx::query(
                    "SELECT deployment_id, tick_at, state FROM live_runner_state \
                     WHERE deployment_id = $1 AND tick_at IS NOT NULL",
                )
                .bind($enc::id(deployment_id))
                .fetch_optional(&self.pool)
                .await
                .map_err(ctx("reading runner state"))?;
                row.as_ref()
                    .map(|r| {
                        Ok(StoredRunnerState {
                            deployment_id: codec::RowExt::uuid(r, "deployment_id")?,
                            tick_at: codec::RowExt::ts(r, "tick_at")?,
                            state: codec::RowExt::json(r, "state")?,
                        })
                    })
                    .transpose()
            }

            async fn list_snapshots(&self, deployment_id: Uuid, limit: u32) -> Result<Vec<DecisionSnapshot>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM decision_snapshots WHERE deployment_id = $1 ORDER BY tick_at DESC LIMIT $2",
                )
                .bind($enc::id(deployment_id))
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("listing decision snapshots"))?;
                rows.iter().map(codec::snapshot_from_row).collect()
            }
        }

        impl LedgerStore for $store {
            async fn get_trade(&self, id: Uuid) -> Result<TradeRecord, DbError> {
                let row = sqlx::query("SELECT * FROM trade_history WHERE id = $1")
                    .bind($enc::id(id))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(ctx("reading trade"))?
                    .ok_or_else(|| DbError::not_found("trade", id))?;
                codec::trade_from_row(&row)
            }

            async fn open_trades(&self, deployment_id: Uuid) -> Result<Vec<TradeRecord>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM trade_history WHERE deployment_id = $1 AND status = 'open' ORDER BY symbol",
                )
                .bind($enc::id(deployment_id))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("reading open trades"))?;
                rows.iter().map(codec::trade_from_row).collect()
            }

            async fn all_trades(&self, deployment_id: Uuid) -> Result<Vec<TradeRecord>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM trade_history WHERE deployment_id = $1 ORDER BY entry_tick_at, id",
                )
                .bind($enc::id(deployment_id))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("reading trades"))?;
                rows.iter().map(codec::trade_from_row).collect()
            }

            async fn closed_trades(
                &self,
                deployment_id: Uuid,
                as_of: DateTime<Utc>,
                limit: u32,
            ) -> Result<Vec<TradeRecord>, DbError> {
                let limit = check_limit("closed trades limit", limit, types::MAX_MEMORY_K)?;
                let rows = sqlx::query(
                    "SELECT * FROM trade_history WHERE deployment_id = $1 AND status = 'closed' \
                     AND closed_at <= $2 ORDER BY entry_tick_at DESC, id DESC LIMIT $3",
                )
                .bind($enc::id(deployment_id))
                .bind($enc::ts(as_of))
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("reading closed trades"))?;
                rows.iter().map(codec::trade_from_row).collect()
            }

            async fn closed_trades_for_skill(
                &self,
                skill_id: Uuid,
                skill_version: i32,
                as_of: DateTime<Utc>,
                limit: u32,
            ) -> Result<Vec<TradeRecord>, DbError> {
                let limit = check_limit("closed trades limit", limit, types::MAX_MEMORY_K)?;
                let rows = sqlx::query(
                    "SELECT * FROM trade_history WHERE skill_id = $1 AND skill_version = $2 \
                     AND status = 'closed' AND closed_at <= $3 ORDER BY entry_tick_at DESC, id DESC LIMIT $4",
                )
                .bind($enc::id(skill_id))
                .bind(skill_version)
                .bind($enc::ts(as_of))
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("reading closed trades of skill"))?;
                rows.iter().map(codec::trade_from_row).collect()
            }

            async fn count_closed_trades(&self, deployment_id: Uuid, as_of: DateTime<Utc>) -> Result<u64, DbError> {
                let row = sqlx::query(
                    "SELECT COUNT(*) AS n FROM trade_history WHERE deployment_id = $1 AND status = 'closed' \
                     AND closed_at <= $2",
                )
                .bind($enc::id(deployment_id))
                .bind($enc::ts(as_of))
                .fetch_one(&self.pool)
                .await
                .map_err(ctx("counting closed trades"))?;
                let n = codec::RowExt::big(&row, "n")?;
                u64::try_from(n).map_err(|e| DbError::Decode { column: "n".into(), detail: e.to_string() })
            }

            async fn applied_fill_ids(&self, deployment_id: Uuid) -> Result<BTreeSet<String>, DbError> {
                let rows = sqlx::query("SELECT broker_fill_id FROM fills WHERE deployment_id = $1")
                    .bind($enc::id(deployment_id))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(ctx("reading applied fill ids"))?;
                rows.iter().map(|r| codec::RowExt::text(r, "broker_fill_id")).collect()
            }

            async fn list_fills(
                &self,
                deployment_id: Uuid,
                since: Option<DateTime<Utc>>,
            ) -> Result<Vec<StoredFill>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM fills WHERE deployment_id = $1 AND ($2 IS NULL OR time >= $2) \
                     ORDER BY time, broker_fill_id",
                )
                .bind($enc::id(deployment_id))
                .bind($enc::ots(since))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("listing fills"))?;
                rows.iter().map(codec::fill_from_row).collect()
            }
        }

        type Query<'q> = sqlx::query::Query<'q, $db, <$db as sqlx::Database>::Arguments<'q>>;

        impl $store {
            /// Binds a note scope's parameters (`$1`, and `$2` for a skill scope; see
            /// [`scope_filter`]).
            fn bind_scope(q: Query<'_>, scope: NoteScope) -> Query<'_> {
                match scope {
                    NoteScope::Deployment(d) => q.bind($enc::id(d)),
                    NoteScope::Skill { skill_id, skill_version } => {
                        q.bind($enc::id(skill_id)).bind(skill_version)
                    }
                }
            }

            /// One attempt at insert-and-supersede; a concurrent winner makes it fail with the
            /// active-note unique violation, and the caller retries.
            async fn try_insert_note(&self, note: &NewNote) -> Result<ReflectionNote, DbError> {
                let scope = note.scope();
                let (filter, next) = scope_filter(scope);
                let mut tx = self.pool.begin_with($begin).await.map_err(ctx("beginning note insert"))?;
                // A flagged note waits for review and displaces nothing.
                let pending = note.lint.is_some();

                // Write first (takes the write lock on SQLite, the row lock on PostgreSQL).
                let supersede = format!(
                    "UPDATE reflection_notes SET status = 'superseded', superseded_at = ${next} \
                     WHERE {filter} AND status = 'active' AND generated_at <= ${next} RETURNING id"
                );
                let old = if pending {
                    Vec::new()
                } else {
                    Self::bind_scope(sqlx::query(&supersede), scope)
                        .bind($enc::ts(note.generated_at))
                        .fetch_all(&mut *tx)
                        .await
                        .map_err(ctx("superseding active note"))?
                };
                if old.is_empty() && !pending {
                    let newer = format!(
                        "SELECT id FROM reflection_notes WHERE {filter} AND status = 'active' \
                         AND generated_at > ${next}"
                    );
                    let newer = Self::bind_scope(sqlx::query(&newer), scope)
                        .bind($enc::ts(note.generated_at))
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(ctx("checking for a newer note"))?;
                    if let Some(row) = newer {
                        return Err(DbError::Invalid {
                            what: "reflection note",
                            detail: format!(
                                "generated at {} but the active note {} is newer",
                                note.generated_at,
                                codec::RowExt::uuid(&row, "id")?
                            ),
                        });
                    }
                }
                sqlx::query(
                    "INSERT INTO reflection_notes (id, skill_id, skill_version, deployment_id, status, \
                     generated_at, window_start, window_end, trades_considered, lessons_text, model_used, \
                     input_tokens, output_tokens, cost_usd, lint_flagged, lint_reason, created_at) \
                     VALUES ($1, $2, $3, $4, $17, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
                )
                .bind($enc::id(note.id))
                .bind($enc::id(note.skill_id))
                .bind(note.skill_version)
                .bind($enc::oid(note.deployment_id))
                .bind($enc::ts(note.generated_at))
                .bind($enc::ts(note.window_start))
                .bind($enc::ts(note.window_end))
                .bind(note.trades_considered)
                .bind(&note.lessons_text)
                .bind(&note.model_used)
                .bind(note.input_tokens)
                .bind(note.output_tokens)
                .bind($enc::odec(note.cost_usd))
                .bind(note.lint.is_some())
                .bind(note.lint.as_ref().map(|l| l.reason.as_str()))
                .bind($enc::ts(Utc::now()))
                .bind(if pending { "pending_review" } else { "active" })
                .execute(&mut *tx)
                .await
                .map_err(ctx("inserting reflection note"))?;

                for row in &old {
                    sqlx::query("UPDATE reflection_notes SET superseded_by = $1 WHERE id = $2")
                        .bind($enc::id(note.id))
                        .bind($enc::id(codec::RowExt::uuid(row, "id")?))
                        .execute(&mut *tx)
                        .await
                        .map_err(ctx("linking superseded note"))?;
                }
                tx.commit().await.map_err(ctx("committing reflection note"))?;

                Ok(ReflectionNote {
                    id: note.id,
                    skill_id: note.skill_id,
                    skill_version: note.skill_version,
                    deployment_id: note.deployment_id,
                    status: if pending {
                        types::NoteStatus::PendingReview
                    } else {
                        types::NoteStatus::Active
                    },
                    generated_at: note.generated_at,
                    window_start: note.window_start,
                    window_end: note.window_end,
                    trades_considered: note.trades_considered,
                    lessons_text: note.lessons_text.clone(),
                    model_used: note.model_used.clone(),
                    input_tokens: note.input_tokens,
                    output_tokens: note.output_tokens,
                    cost_usd: note.cost_usd,
                    lint: note.lint.clone(),
                    superseded_at: None,
                    superseded_by: None,
                    accepted_at: None,
                })
            }

        }

        impl NoteStore for $store {
            async fn insert_note(&self, note: &NewNote) -> Result<ReflectionNote, DbError> {
                validate_note(note)?;
                for _ in 0..NOTE_INSERT_ATTEMPTS {
                    match self.try_insert_note(note).await {
                        Err(e) if is_active_note_conflict(&e) => continue,
                        other => return other,
                    }
                }
                Err(DbError::Contention {
                    context: "inserting reflection note",
                    attempts: NOTE_INSERT_ATTEMPTS,
                })
            }

            async fn accept_note(&self, id: Uuid, at: DateTime<Utc>) -> Result<ReflectionNote, DbError> {
                let mut tx = self.pool.begin_with($begin).await.map_err(ctx("beginning note accept"))?;
                let row = sqlx::query("SELECT * FROM reflection_notes WHERE id = $1")
                    .bind($enc::id(id))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(ctx("reading note"))?
                    .ok_or_else(|| DbError::not_found("reflection note", id))?;
                let note = codec::note_from_row(&row)?;
                if note.status != types::NoteStatus::PendingReview {
                    return Err(DbError::Invalid {
                        what: "reflection note",
                        detail: format!("{id} is {}, not pending review", note.status.as_str()),
                    });
                }
                let scope = match note.deployment_id {
                    Some(d) => NoteScope::Deployment(d),
                    None => NoteScope::Skill { skill_id: note.skill_id, skill_version: note.skill_version },
                };
                let (filter, next) = scope_filter(scope);
                let supersede = format!(
                    "UPDATE reflection_notes SET status = 'superseded', superseded_at = ${next}, \
                     superseded_by = ${} WHERE {filter} AND status = 'active'",
                    next + 1
                );
                Self::bind_scope(sqlx::query(&supersede), scope)
                    .bind($enc::ts(at))
                    .bind($enc::id(id))
                    .execute(&mut *tx)
                    .await
                    .map_err(ctx("superseding active note"))?;
                sqlx::query("UPDATE reflection_notes SET status = 'active', accepted_at = $1 WHERE id = $2")
                    .bind($enc::ts(at))
                    .bind($enc::id(id))
                    .execute(&mut *tx)
                    .await
                    .map_err(ctx("accepting note"))?;
                tx.commit().await.map_err(ctx("committing note accept"))?;
                Ok(ReflectionNote {
                    status: types::NoteStatus::Active,
                    accepted_at: Some(at),
                    ..note
                })
            }

            async fn active_note(&self, scope: NoteScope, as_of: DateTime<Utc>) -> Result<Option<ReflectionNote>, DbError> {
                let (filter, next) = scope_filter(scope);
                let sql = format!(
                    "SELECT * FROM reflection_notes WHERE {filter} AND status <> 'pending_review' \
                     AND COALESCE(accepted_at, generated_at) <= ${next} \
                     ORDER BY COALESCE(accepted_at, generated_at) DESC, created_at DESC LIMIT 1"
                );
                let row = Self::bind_scope(sqlx::query(&sql), scope)
                    .bind($enc::ts(as_of))
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(ctx("reading note in force"))?;
                row.as_ref().map(codec::note_from_row).transpose()
            }

            async fn note_history(&self, scope: NoteScope, limit: u32) -> Result<Vec<ReflectionNote>, DbError> {
                let (filter, next) = scope_filter(scope);
                let sql = format!(
                    "SELECT * FROM reflection_notes WHERE {filter} \
                     ORDER BY generated_at DESC, created_at DESC LIMIT ${next}"
                );
                let rows = Self::bind_scope(sqlx::query(&sql), scope)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(ctx("reading note history"))?;
                rows.iter().map(codec::note_from_row).collect()
            }

            async fn record_reflection_run(&self, run: &ReflectionRun) -> Result<(), DbError> {
                let (outcome, error, note_id) = match &run.outcome {
                    RunOutcome::Succeeded { note_id } => ("succeeded", None, *note_id),
                    RunOutcome::Failed { error } => (
                        "failed",
                        Some(codec::truncate_chars(error, types::MAX_LESSONS_CHARS)),
                        None,
                    ),
                };
                sqlx::query(
                    "INSERT INTO reflection_runs (id, skill_id, skill_version, deployment_id, started_at, \
                     finished_at, outcome, error, note_id, model, input_tokens, output_tokens, cost_usd) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                )
                .bind($enc::id(run.id))
                .bind($enc::id(run.skill_id))
                .bind(run.skill_version)
                .bind($enc::oid(run.deployment_id))
                .bind($enc::ts(run.started_at))
                .bind($enc::ts(run.finished_at))
                .bind(outcome)
                .bind(error)
                .bind($enc::oid(note_id))
                .bind(&run.model)
                .bind(run.input_tokens)
                .bind(run.output_tokens)
                .bind($enc::odec(run.cost_usd))
                .execute(&self.pool)
                .await
                .map_err(ctx("inserting reflection run"))?;
                Ok(())
            }

            async fn reflection_runs(&self, scope: NoteScope, limit: u32) -> Result<Vec<ReflectionRun>, DbError> {
                let (filter, next) = scope_filter(scope);
                let sql = format!(
                    "SELECT * FROM reflection_runs WHERE {filter} ORDER BY started_at DESC, id LIMIT ${next}"
                );
                let rows = Self::bind_scope(sqlx::query(&sql), scope)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(ctx("reading reflection runs"))?;
                rows.iter().map(codec::run_from_row).collect()
            }
        }

        impl FactStore for $store {
            async fn remember(&self, fact: &NewFact, at: DateTime<Utc>) -> Result<UserFact, DbError> {
                validate_fact_text(&fact.fact, fact.topic.as_deref())?;
                sqlx::query(
                    "INSERT INTO user_facts (id, user_id, skill_id, fact, source, confidence, topic, \
                     created_at, updated_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                )
                .bind($enc::id(fact.id))
                .bind($enc::id(fact.user_id))
                .bind($enc::oid(fact.skill_id))
                .bind(&fact.fact)
                .bind(fact.source.as_str())
                .bind(fact.confidence.as_str())
                .bind(fact.topic.as_deref())
                .bind($enc::ts(at))
                .bind(&fact.actor)
                .execute(&self.pool)
                .await
                .map_err(ctx("inserting user fact"))?;
                Ok(UserFact {
                    id: fact.id,
                    user_id: fact.user_id,
                    skill_id: fact.skill_id,
                    fact: fact.fact.clone(),
                    source: fact.source,
                    confidence: fact.confidence,
                    topic: fact.topic.clone(),
                    last_referenced_at: None,
                    created_at: at,
                    archived_at: None,
                    archived_reason: None,
                })
            }

            async fn edit_fact(&self, user_id: Uuid, fact_id: Uuid, edit: &FactEdit, actor: &str) -> Result<UserFact, DbError> {
                let mut tx = self.pool.begin_with($begin).await.map_err(ctx("beginning fact edit"))?;
                let row = sqlx::query("SELECT * FROM user_facts WHERE id = $1 AND user_id = $2 AND archived_at IS NULL")
                    .bind($enc::id(fact_id))
                    .bind($enc::id(user_id))
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(ctx("reading user fact"))?
                    .ok_or_else(|| DbError::not_found("active fact of user", format!("{fact_id} ({user_id})")))?;
                let mut fact = codec::fact_from_row(&row)?;
                if let Some(text) = &edit.fact {
                    fact.fact = text.clone();
                }
                if let Some(c) = edit.confidence {
                    fact.confidence = c;
                }
                if let Some(topic) = &edit.topic {
                    fact.topic = topic.clone();
                }
                validate_fact_text(&fact.fact, fact.topic.as_deref())?;
                sqlx::query("UPDATE user_facts SET fact = $2, confidence = $3, topic = $4, updated_by = $5 WHERE id = $1")
                    .bind($enc::id(fact_id))
                    .bind(&fact.fact)
                    .bind(fact.confidence.as_str())
                    .bind(fact.topic.as_deref())
                    .bind(actor)
                    .execute(&mut *tx)
                    .await
                    .map_err(ctx("updating user fact"))?;
                tx.commit().await.map_err(ctx("committing fact edit"))?;
                Ok(fact)
            }

            async fn forget(&self, user_id: Uuid, fact_id: Uuid, forget: &Forget) -> Result<(), DbError> {
                let done = sqlx::query(
                    "UPDATE user_facts SET archived_at = COALESCE(archived_at, $3), \
                     archived_reason = COALESCE(archived_reason, $4), \
                     updated_by = CASE WHEN archived_at IS NULL THEN $5 ELSE updated_by END \
                     WHERE id = $1 AND user_id = $2",
                )
                .bind($enc::id(fact_id))
                .bind($enc::id(user_id))
                .bind($enc::ts(forget.at))
                .bind(forget.reason.as_str())
                .bind(&forget.actor)
                .execute(&self.pool)
                .await
                .map_err(ctx("archiving user fact"))?;
                if done.rows_affected() == 0 {
                    return Err(DbError::not_found("fact of user", format!("{fact_id} ({user_id})")));
                }
                Ok(())
            }

            async fn top_facts(
                &self,
                user_id: Uuid,
                skill_id: Option<Uuid>,
                k: u32,
                bump_at: Option<DateTime<Utc>>,
            ) -> Result<Vec<UserFact>, DbError> {
                let k = check_limit("facts K", k, types::MAX_MEMORY_K)?;
                let mut tx = self.pool.begin_with($begin).await.map_err(ctx("beginning fact read"))?;
                let rows = sqlx::query(
                    "SELECT * FROM user_facts WHERE user_id = $1 AND archived_at IS NULL \
                     AND (skill_id IS NULL OR skill_id = $2) \
                     ORDER BY last_referenced_at DESC NULLS LAST, created_at DESC, id LIMIT $3",
                )
                .bind($enc::id(user_id))
                .bind($enc::oid(skill_id))
                .bind(k)
                .fetch_all(&mut *tx)
                .await
                .map_err(ctx("reading top facts"))?;
                let mut facts = rows.iter().map(codec::fact_from_row).collect::<Result<Vec<_>, _>>()?;
                if let Some(at) = bump_at {
                    for f in &mut facts {
                        sqlx::query("UPDATE user_facts SET last_referenced_at = $2 WHERE id = $1")
                            .bind($enc::id(f.id))
                            .bind($enc::ts(at))
                            .execute(&mut *tx)
                            .await
                            .map_err(ctx("bumping fact reference"))?;
                        f.last_referenced_at = Some(at);
                    }
                }
                tx.commit().await.map_err(ctx("committing fact read"))?;
                Ok(facts)
            }

            async fn list_facts(&self, user_id: Uuid, include_archived: bool) -> Result<Vec<UserFact>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM user_facts WHERE user_id = $1 AND ($2 OR archived_at IS NULL) \
                     ORDER BY created_at DESC, id",
                )
                .bind($enc::id(user_id))
                .bind(include_archived)
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("listing user facts"))?;
                rows.iter().map(codec::fact_from_row).collect()
            }

            async fn fact_changes(&self, fact_id: Uuid) -> Result<Vec<FactChange>, DbError> {
                let rows = sqlx::query("SELECT * FROM user_fact_changes WHERE fact_id = $1 ORDER BY id")
                    .bind($enc::id(fact_id))
                    .fetch_all(&self.pool)
                    .await
                    .map_err(ctx("reading fact changes"))?;
                rows.iter().map(codec::fact_change_from_row).collect()
            }
        }

        impl EventStore for $store {
            async fn upsert_event(&self, e: &MarketEvent) -> Result<(), DbError> {
                validate_event(e)?;
                sqlx::query(
                    "INSERT INTO market_events (id, kind, title, symbols, scheduled_at, importance, source) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET \
                     kind = excluded.kind, title = excluded.title, symbols = excluded.symbols, \
                     scheduled_at = excluded.scheduled_at, importance = excluded.importance, \
                     source = excluded.source",
                )
                .bind($enc::id(e.id))
                .bind(&e.kind)
                .bind(&e.title)
                .bind($enc::symbols(&e.symbols))
                .bind($enc::ts(e.scheduled_at))
                .bind($enc::dec(e.importance))
                .bind(&e.source)
                .execute(&self.pool)
                .await
                .map_err(ctx("upserting market event"))?;
                Ok(())
            }

            async fn events_between(
                &self,
                from: DateTime<Utc>,
                to: DateTime<Utc>,
                min_importance: Option<Decimal>,
            ) -> Result<Vec<MarketEvent>, DbError> {
                let rows = sqlx::query(
                    "SELECT * FROM market_events WHERE scheduled_at >= $1 AND scheduled_at <= $2 \
                     ORDER BY scheduled_at, id",
                )
                .bind($enc::ts(from))
                .bind($enc::ts(to))
                .fetch_all(&self.pool)
                .await
                .map_err(ctx("reading market events"))?;
                // Importance is compared in Rust: SQLite stores it as text.
                let events = rows.iter().map(codec::event_from_row).collect::<Result<Vec<_>, _>>()?;
                Ok(events
                    .into_iter()
                    .filter(|e| min_importance.is_none_or(|m| e.importance >= m))
                    .collect())
            }
        }
    };
}

pub(crate) use impl_stores;

#[cfg(test)]
mod tests {
    use super::{SNAPSHOT_CHUNK, snapshot_chunks, snapshot_insert_sql};

    #[test]
    fn batches_split_into_cached_power_of_two_statements() {
        let split = |n| snapshot_chunks(n).collect::<Vec<_>>();
        assert_eq!(split(0), Vec::<usize>::new());
        assert_eq!(split(1), vec![1]);
        // 141 = 64 + 64 + 8 + 4 + 1
        assert_eq!(split(141), vec![64, 64, 8, 4, 1]);
        assert_eq!(split(256), vec![64; 4]);
        for n in 0..300 {
            let sizes = split(n);
            assert_eq!(sizes.iter().sum::<usize>(), n);
            assert!(
                sizes
                    .iter()
                    .all(|s| s.is_power_of_two() && *s <= SNAPSHOT_CHUNK)
            );
        }
    }

    #[test]
    fn insert_sql_numbers_parameters_only_when_asked() {
        let numbered = snapshot_insert_sql(2, true, true);
        assert!(numbered.contains("($1, $2, $3,"));
        assert!(numbered.contains("$15), ($16,"));
        assert!(numbered.ends_with("$30) ON CONFLICT DO NOTHING RETURNING id"));
        let anonymous = snapshot_insert_sql(2, false, false);
        assert_eq!(anonymous.matches('?').count(), 30);
        assert!(!anonymous.contains('$'));
        assert!(anonymous.ends_with("?) ON CONFLICT DO NOTHING"));
    }
}
