//! `TickStore`: a tick's snapshot, fills, ledger rows, links and runner state, in one
//! transaction; batches of ticks; snapshot and runner-state reads.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use sqlx::Transaction;
use sqlx::types::Json;
use types::{Fill, TradeRecord};
use uuid::Uuid;

use super::prompt_lines::{self as lines, PromptRefs};
use super::{Affected as _, Backend, Dialect, query};
use crate::DbError;
use crate::codec::{self, RowExt, u64_to_i64};
use crate::error::ctx;
use crate::model::{
    DecisionSnapshot, FillTradeLink, MAX_TICKS_READ, NewNote, OutcomeWrites, RecordOutcome,
    ReflectionRun, StoredRunnerState, StoredTick, TickQuery, TickRecord,
};
use crate::traits::TickStore;

pub(crate) fn validate_tick(tick: &crate::TickRecord) -> Result<(), crate::DbError> {
    let d = tick.snapshot.deployment_id;
    if let Some(error) = &tick.snapshot.error {
        let actual = error.chars().count();
        if actual > types::MAX_STORED_ERROR_CHARS {
            return Err(crate::DbError::Bound {
                field: "snapshot error",
                actual,
                min: 0,
                max: types::MAX_STORED_ERROR_CHARS,
            });
        }
    }
    if let Some(t) = tick.trades.iter().find(|t| t.deployment_id != d) {
        return Err(crate::DbError::Invalid {
            what: "tick record",
            detail: format!(
                "trade {} belongs to deployment {}, not {d}",
                t.id, t.deployment_id
            ),
        });
    }
    crate::imp::outcomes::validate_outcome_writes(tick)
}

/// At most this many rows per multi-row `INSERT` of a batch, or values per `IN (…)` list (at
/// most 28 parameters a row: 1,792 in all, far below both backends' limits). One statement per
/// row cost a round trip to the driver's worker each.
pub(crate) const STATEMENT_CHUNK: usize = 64;

/// Splits `rows` into statement sizes that are powers of two up to [`STATEMENT_CHUNK`]: a
/// handful of statements, each prepared once and cached, serve every batch size.
pub(crate) fn statement_chunks(mut rows: usize) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if rows == 0 {
            return None;
        }
        let size = if rows >= STATEMENT_CHUNK {
            STATEMENT_CHUNK
        } else {
            1 << rows.ilog2()
        };
        rows -= size;
        Some(size)
    })
}

/// `rows` in slices of the sizes [`statement_chunks`] gives, in order: one statement each.
pub(crate) fn statement_slices<T>(rows: &[T]) -> impl Iterator<Item = &[T]> {
    let mut rest = rows;
    statement_chunks(rows.len()).map(move |size| {
        let (chunk, tail) = rest.split_at(size);
        rest = tail;
        chunk
    })
}

/// `INSERT INTO decision_snapshots … VALUES (…), … ON CONFLICT DO NOTHING` for `rows` rows,
/// with `$n` parameters when `numbered`, `?` otherwise, and `RETURNING id` when `returning`.
pub(crate) fn snapshot_insert_sql(
    rows: usize,
    numbered: bool,
    returning: bool,
) -> std::sync::Arc<str> {
    values_sql(
        "INSERT INTO decision_snapshots (id, deployment_id, tick_at, system_prompt_lines, \
         context_lines, steps_lines, proposal, verdict, model, finish_reason, \
         input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, error, \
         model_error)",
        17,
        rows,
        numbered,
        if returning {
            "ON CONFLICT DO NOTHING RETURNING id"
        } else {
            "ON CONFLICT DO NOTHING"
        },
    )
}

/// `{head} VALUES (…), … {tail}` for `rows` rows of `columns` parameters each, `$n` when
/// `numbered`, `?` otherwise: one statement for many rows (a row per statement is a round
/// trip to the driver's worker each).
///
/// The statements of a process are few (a handful of heads, the sizes [`statement_chunks`]
/// gives), each written once and then shared: writing the parameter lists of a 64-row
/// statement again for every batch was ≈3 % of the store's writer.
pub(crate) fn values_sql(
    head: &str,
    columns: usize,
    rows: usize,
    numbered: bool,
    tail: &str,
) -> std::sync::Arc<str> {
    use std::sync::{Arc, LazyLock, Mutex};
    /// Beyond this many texts (never reached by the statements of this crate) a text is
    /// written without being kept.
    const KEPT: usize = 4096;
    static WRITTEN: LazyLock<Mutex<rustc_hash::FxHashMap<String, Arc<str>>>> =
        LazyLock::new(Mutex::default);
    // The head's length makes the key one text per (head, tail) pair.
    let key = format!("{columns} {rows} {numbered} {} {head}{tail}", head.len());
    // A poisoned lock (a panic elsewhere while it was held) only means writing the text.
    if let Ok(written) = WRITTEN.lock()
        && let Some(sql) = written.get(&key)
    {
        return Arc::clone(sql);
    }
    let mut sql = String::with_capacity(head.len() + tail.len() + rows * columns * 5);
    sql.push_str(head);
    sql.push_str(" VALUES ");
    for r in 0..rows {
        sql.push_str(if r == 0 { "(" } else { ", (" });
        sql.push_str(&super::prompt_lines::params(
            r * columns + 1,
            columns,
            numbered,
        ));
        sql.push(')');
    }
    sql.push(' ');
    sql.push_str(tail);
    let sql: Arc<str> = sql.into();
    if let Ok(mut written) = WRITTEN.lock()
        && written.len() < KEPT
    {
        written.insert(key, Arc::clone(&sql));
    }
    sql
}

/// A JSON text several rows may bind ([`decision_json`]).
pub(crate) type SharedJson = std::sync::Arc<serde_json::value::RawValue>;

/// The `proposal` and `verdict` JSON texts of `snapshots`, in order: a row whose proposal (or
/// verdict) is the same record as the row before's, decimals at the same scale, shares that
/// row's text instead of being serialised again (a rule-based model repeats both on most
/// ticks: serialising them was ≈4k instructions a row).
///
/// # Errors
/// [`crate::DbError::Invalid`] when one cannot be serialised.
pub(crate) fn decision_json(
    snapshots: &[&crate::DecisionSnapshot],
) -> Result<Vec<(Option<SharedJson>, SharedJson)>, crate::DbError> {
    fn text<T: serde::Serialize>(
        what: &'static str,
        value: &T,
    ) -> Result<SharedJson, crate::DbError> {
        serde_json::value::to_raw_value(value)
            .map(SharedJson::from)
            .map_err(|e| crate::DbError::Invalid {
                what,
                detail: format!("serialising: {e}"),
            })
    }
    use std::sync::Arc;
    let mut out: Vec<(Option<SharedJson>, SharedJson)> = Vec::with_capacity(snapshots.len());
    for (i, s) in snapshots.iter().enumerate() {
        let before = i.checked_sub(1).map(|b| (snapshots[b], &out[b]));
        let proposal = match (&s.proposal, before) {
            (None, _) => None,
            (Some(p), Some((b, (Some(json), _))))
                if b.proposal.as_ref().is_some_and(|q| p.same_text(q)) =>
            {
                Some(Arc::clone(json))
            }
            (Some(p), _) => Some(text("snapshot proposal", p)?),
        };
        let verdict = match before {
            Some((b, (_, json))) if b.verdict == s.verdict => Arc::clone(json),
            _ => text("snapshot verdict", &s.verdict)?,
        };
        out.push((proposal, verdict));
    }
    Ok(out)
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

/// `items` with one entry per key, in the order each key came first, each the key's last value.
fn last_per_key<K: std::hash::Hash + Eq + Copy, V>(
    items: impl IntoIterator<Item = (K, V)>,
) -> Vec<(K, V)> {
    let mut at: std::collections::HashMap<K, usize> = std::collections::HashMap::new();
    let mut out: Vec<(K, V)> = Vec::new();
    for (key, value) in items {
        match at.get(&key) {
            Some(&i) => out[i].1 = value,
            None => {
                at.insert(key, out.len());
                out.push((key, value));
            }
        }
    }
    out
}

/// The prompt line plans of a batch's snapshots: for each deployment, in the order it first
/// appears, the indexes of its snapshots and the [`LinePlan`](super::prompt_lines::LinePlan) of
/// their texts (system prompt, user message and steps of each, in order).
#[derive(Debug, Clone)]
pub(crate) struct SnapshotPlans(Vec<(uuid::Uuid, Vec<usize>, super::prompt_lines::LinePlan)>);

impl SnapshotPlans {
    /// Plans `snapshots`' lines (CPU only: no store is involved).
    pub(crate) fn new(snapshots: &[&crate::DecisionSnapshot]) -> Self {
        let mut deployments: Vec<(uuid::Uuid, Vec<usize>)> = Vec::new();
        for (i, s) in snapshots.iter().enumerate() {
            match deployments.iter_mut().find(|(d, _)| *d == s.deployment_id) {
                Some((_, mine)) => mine.push(i),
                None => deployments.push((s.deployment_id, vec![i])),
            }
        }
        Self(
            deployments
                .into_iter()
                .map(|(d, mine)| {
                    let texts = snapshot_texts(snapshots, &mine);
                    let plan = super::prompt_lines::LinePlan::new(
                        &texts,
                        super::prompt_lines::SNAPSHOT_STREAMS,
                    );
                    (d, mine, plan)
                })
                .collect(),
        )
    }

    /// Each deployment, its snapshots' indexes and their plan.
    pub(crate) fn iter(
        &self,
    ) -> impl Iterator<Item = &(uuid::Uuid, Vec<usize>, super::prompt_lines::LinePlan)> {
        self.0.iter()
    }
}

/// The texts a [`SnapshotPlans`] plans for the snapshots `mine` of `snapshots`.
pub(crate) fn snapshot_texts<'a>(
    snapshots: &[&'a crate::DecisionSnapshot],
    mine: &[usize],
) -> Vec<&'a str> {
    let mut texts = Vec::with_capacity(mine.len() * super::prompt_lines::SNAPSHOT_STREAMS);
    for &i in mine {
        let s = snapshots[i];
        texts.extend([
            s.system_prompt.as_str(),
            s.context.as_str(),
            s.steps.as_str(),
        ]);
    }
    texts
}

/// A batch of ticks whose prompt lines are planned ahead: which lines repeat within the batch
/// and which are new to it, the store's most expensive step before it writes
/// ([`TickStore::record_ticks`](crate::TickStore::record_ticks)). Planning is CPU work
/// without the store, so it can run on any thread — a backtest does it on the tick's thread
/// while the batch before is still being written. It owns its ticks, so the plan always
/// matches their texts.
#[derive(Debug, Clone)]
pub struct PlannedTicks {
    ticks: Vec<crate::TickRecord>,
    plans: SnapshotPlans,
}

impl PlannedTicks {
    /// Plans the prompt lines of `ticks`' snapshots.
    #[must_use]
    pub fn new(ticks: Vec<crate::TickRecord>) -> Self {
        let plans = {
            let snapshots: Vec<&crate::DecisionSnapshot> =
                ticks.iter().map(|t| &t.snapshot).collect();
            SnapshotPlans::new(&snapshots)
        };
        Self { ticks, plans }
    }

    /// The ticks, in order.
    #[must_use]
    pub fn ticks(&self) -> &[crate::TickRecord] {
        &self.ticks
    }

    /// The ticks' plans.
    pub(crate) const fn plans(&self) -> &SnapshotPlans {
        &self.plans
    }

    /// The ticks, without their plan.
    #[must_use]
    pub fn into_ticks(self) -> Vec<crate::TickRecord> {
        self.ticks
    }
}

/// The fill links of recorded ticks, one per fill (deployment, broker id): the last one given.
pub(crate) fn batch_links<'a>(
    ticks: impl IntoIterator<Item = &'a crate::TickRecord>,
) -> Vec<(uuid::Uuid, &'a crate::FillTradeLink)> {
    let keyed = ticks.into_iter().flat_map(|tick| {
        let d = tick.snapshot.deployment_id;
        tick.links
            .iter()
            .map(move |link| ((d, link.broker_fill_id.as_str()), link))
    });
    last_per_key(keyed)
        .into_iter()
        .map(|((d, _), link)| (d, link))
        .collect()
}

/// The scores of recorded ticks' outcome writes, one per outcome in the order first scored,
/// each the last one given (a score is the outcome's whole score at its time).
pub(crate) fn last_scores<'a>(
    writes: impl IntoIterator<Item = &'a crate::OutcomeWrites>,
) -> Vec<(uuid::Uuid, &'a outcomes::OutcomeScore)> {
    last_per_key(
        writes
            .into_iter()
            .flat_map(|w| w.scores.iter().map(|(id, score)| (*id, score))),
    )
}

/// Inserts the snapshots, in statements of the sizes `statement_chunks` gives; a row
/// whose id or deployment + time is already stored is skipped (a replay). Returns the
/// ids of the rows inserted.
///
/// The statements have no `RETURNING`: on SQLite each returned row is a hop between
/// threads (sqlx's worker sends it to the caller), ≈13 % of a backtest's wall time.
/// The row count tells a lone snapshot apart; several are inserted under a savepoint,
/// and only when one of them was already stored does it roll back and insert them
/// again with `RETURNING` to learn which ones are new.
async fn insert_snapshots<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    cache: &lines::LineCache,
    update: &mut lines::CacheUpdate,
    snapshots: &[&DecisionSnapshot],
    plans: Option<&SnapshotPlans>,
) -> Result<HashSet<Uuid>, DbError> {
    use sqlx::Acquire as _;
    // The lines first: a snapshot row never lists a line its transaction has not
    // stored.
    let planned_here;
    let plans = match plans {
        Some(plans) => plans,
        None => {
            planned_here = SnapshotPlans::new(snapshots);
            &planned_here
        }
    };
    let refs = store_prompt_lines(tx, cache, update, snapshots, plans).await?;
    let all = || snapshots.iter().map(|s| s.id).collect::<HashSet<_>>();
    if let [_] = snapshots {
        let (count, _) = insert_snapshot_rows::<D>(&mut **tx, snapshots, &refs, false).await?;
        return Ok(if count == 1 { all() } else { HashSet::new() });
    }
    let mut savepoint = tx
        .begin()
        .await
        .map_err(ctx("inserting decision snapshots"))?;
    let (count, _) = insert_snapshot_rows::<D>(&mut *savepoint, snapshots, &refs, false).await?;
    if count == snapshots.len() as u64 {
        savepoint
            .commit()
            .await
            .map_err(ctx("inserting decision snapshots"))?;
        return Ok(all());
    }
    savepoint
        .rollback()
        .await
        .map_err(ctx("inserting decision snapshots"))?;
    let (_, inserted) = insert_snapshot_rows::<D>(&mut **tx, snapshots, &refs, true).await?;
    Ok(inserted)
}

/// Stores the lines of `snapshots`' prompts and steps that their deployments' scopes do not
/// hold yet (as far as `cache` knows), and returns each snapshot's line lists; the
/// lines go to `update`, for the cache once the transaction committed. `plans` are
/// `snapshots`' ([`SnapshotPlans::new`]).
async fn store_prompt_lines<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    cache: &lines::LineCache,
    update: &mut lines::CacheUpdate,
    snapshots: &[&DecisionSnapshot],
    plans: &SnapshotPlans,
) -> Result<Vec<PromptRefs>, DbError> {
    let mut refs = vec![PromptRefs::default(); snapshots.len()];
    for (d, mine, plan) in plans.iter() {
        let texts = snapshot_texts(snapshots, mine);
        let lists =
            store_lines(tx, cache, update, *d, &texts, plan, lines::SNAPSHOT_STREAMS).await?;
        let mut lists = lists.into_iter();
        for &i in mine {
            let mut next = || lists.next().unwrap_or_default();
            refs[i] = PromptRefs {
                system_prompt: next(),
                context: next(),
                steps: next(),
            };
        }
    }
    Ok(refs)
}

/// Stores the lines of `texts` (all of deployment `deployment_id`, `streams` per
/// snapshot; `plan` is theirs) that `cache` does not know its scope holds, as one
/// block, and returns each text's line list; the lines go to `update`.
pub(crate) async fn store_lines<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    cache: &lines::LineCache,
    update: &mut lines::CacheUpdate,
    deployment_id: Uuid,
    texts: &[&str],
    plan: &lines::LinePlan,
    streams: usize,
) -> Result<Vec<Vec<u8>>, DbError> {
    let distinct = plan.lines(texts);
    // Creates the scope, or locks it (PostgreSQL: writers of a deployment take
    // turns; SQLite's write transaction holds the file already).
    let row = query(
        "INSERT INTO prompt_scopes (deployment_id) VALUES ($1) \
         ON CONFLICT (deployment_id) DO UPDATE SET next_seq = prompt_scopes.next_seq \
         RETURNING id, next_seq",
    )
    .bind(D::id(deployment_id))
    .fetch_one(&mut **tx)
    .await
    .map_err(ctx("opening prompt line scope"))?;
    let scope: i64 = codec::RowExt::big(&row, "id")?;
    let first_new: i64 = codec::RowExt::big(&row, "next_seq")?;
    let mut seqs = cache.lookup(scope, first_new, &distinct);
    let mut new_lines: Vec<&str> = Vec::new();
    let mut next = first_new;
    for (seq, line) in seqs.iter_mut().zip(&distinct) {
        if seq.is_none() {
            *seq = Some(next);
            next += 1;
            new_lines.push(line);
        }
    }
    if !new_lines.is_empty() {
        let body = lines::encode_block(new_lines.iter().copied())?;
        query(
            "INSERT INTO prompt_blocks (scope_id, first_seq, line_count, body) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(scope)
        .bind(first_new)
        .bind(next - first_new)
        .bind(body)
        .execute(&mut **tx)
        .await
        .map_err(ctx("storing prompt lines"))?;
        query("UPDATE prompt_scopes SET next_seq = $2 WHERE id = $1")
            .bind(scope)
            .bind(next)
            .execute(&mut **tx)
            .await
            .map_err(ctx("numbering prompt lines"))?;
    }
    let seqs: Vec<i64> = seqs.into_iter().map(Option::unwrap_or_default).collect();
    update.add(scope, &distinct, &seqs);
    let mut lists: Vec<Vec<u8>> = Vec::with_capacity(plan.texts.len());
    for (t, text) in plan.texts.iter().enumerate() {
        // The same lines as the stream's text of the tick before (a system prompt
        // between reflections): the same list.
        let list = match t.checked_sub(streams) {
            Some(before) if plan.texts[before] == *text => lists[before].clone(),
            _ => lines::encode_refs(text.iter().map(|&i| seqs[i as usize])),
        };
        lists.push(list);
    }
    Ok(lists)
}

/// The lines numbered `seqs` (sorted, distinct) of `deployment_id`'s scope, read as
/// this store's role (row-level security applies to a user's store): which blocks
/// hold them, then those blocks.
async fn read_lines<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    deployment_id: Uuid,
    seqs: &[i64],
) -> Result<HashMap<i64, String>, DbError> {
    let mut out = HashMap::with_capacity(seqs.len());
    let Some(&max) = seqs.last() else {
        return Ok(out);
    };
    let scope = format!(
        "(SELECT id FROM prompt_scopes WHERE deployment_id = {})",
        lines::params(1, 1, D::NUMBERED_PARAMS)
    );
    let rows = query(&format!(
        "SELECT first_seq, line_count FROM prompt_blocks WHERE scope_id = {scope} \
         AND first_seq <= {} ORDER BY first_seq",
        lines::params(2, 1, D::NUMBERED_PARAMS)
    ))
    .bind(D::id(deployment_id))
    .bind(max)
    .fetch_all(store.pool())
    .await
    .map_err(ctx("reading prompt blocks"))?;
    let mut bounds = Vec::with_capacity(rows.len());
    for r in &rows {
        bounds.push((
            codec::RowExt::big(r, "first_seq")?,
            codec::RowExt::big(r, "line_count")?,
        ));
    }
    let needed = lines::blocks_holding(&bounds, seqs, "decision snapshot")?;
    for chunk in statement_slices(needed.as_slice()) {
        let size = chunk.len();
        let sql = format!(
            "SELECT first_seq, line_count, body FROM prompt_blocks WHERE scope_id = {scope} \
             AND first_seq IN ({})",
            lines::params(2, size, D::NUMBERED_PARAMS),
        );
        let mut query = query(&sql).bind(D::id(deployment_id));
        for (first, _) in chunk {
            query = query.bind(*first);
        }
        let rows = query
            .fetch_all(store.pool())
            .await
            .map_err(ctx("reading prompt lines"))?;
        for r in &rows {
            let first = codec::RowExt::big(r, "first_seq")?;
            let count = codec::RowExt::big(r, "line_count")?;
            let body: Vec<u8> = codec::RowExt::opt_blob(r, "body")?.unwrap_or_default();
            let block = lines::decode_block(&body, count)?;
            // Only the wanted lines of the block.
            let from = seqs.partition_point(|&s| s < first);
            for &seq in seqs[from..]
                .iter()
                .take_while(|&&s| s < first.saturating_add(count))
            {
                let k = usize::try_from(seq - first).unwrap_or(usize::MAX);
                if let Some(line) = block.get(k) {
                    out.insert(seq, line.clone());
                }
            }
        }
    }
    Ok(out)
}

/// Snapshots read from `decision_snapshots` rows, their texts put back together
/// from their lines (a row written before line storage holds its texts itself).
async fn snapshots_from_rows<S: Backend<Db = D>, D: Dialect, R: RowExt>(
    store: &S,
    rows: &[R],
) -> Result<Vec<DecisionSnapshot>, DbError> {
    let mut stored = Vec::with_capacity(rows.len());
    for r in rows {
        stored.push(codec::stored_snapshot_from_row(r)?);
    }
    let mut deployments: Vec<Uuid> = Vec::new();
    for (head, texts) in &stored {
        if texts.lists().next().is_some() && !deployments.contains(&head.deployment_id) {
            deployments.push(head.deployment_id);
        }
    }
    let mut found: HashMap<Uuid, HashMap<i64, String>> = HashMap::new();
    for d in deployments {
        let wanted = lines::wanted_seqs(
            stored
                .iter()
                .filter(|(head, _)| head.deployment_id == d)
                .flat_map(|(_, texts)| texts.lists()),
        )?;
        found.insert(d, read_lines(store, d, &wanted).await?);
    }
    let mut out = Vec::with_capacity(stored.len());
    let none = HashMap::new();
    for (head, texts) in stored {
        let lines_of = found.get(&head.deployment_id).unwrap_or(&none);
        let texts = texts.resolve(|blob| lines::assemble(blob, lines_of, "decision snapshot"))?;
        out.push(head.with(texts));
    }
    Ok(out)
}

/// The `INSERT`s of [`insert_snapshots`]: the number of rows inserted, and with `returning`
/// their ids.
async fn insert_snapshot_rows<D: Dialect>(
    conn: &mut D::Connection,
    snapshots: &[&DecisionSnapshot],
    refs: &[PromptRefs],
    returning: bool,
) -> Result<(u64, HashSet<Uuid>), DbError> {
    let mut count = 0;
    let mut inserted = HashSet::new();
    let json = decision_json(snapshots)?;
    for ((chunk, chunk_refs), chunk_json) in statement_slices(snapshots)
        .zip(statement_slices(refs))
        .zip(statement_slices(&json))
    {
        let size = chunk.len();
        let sql = snapshot_insert_sql(size, D::NUMBERED_PARAMS, returning);
        let mut query = query(&sql);
        for ((s, r), (proposal, verdict)) in chunk.iter().zip(chunk_refs).zip(chunk_json) {
            query = query
                .bind(D::id(s.id))
                .bind(D::id(s.deployment_id))
                .bind(D::ts(s.tick_at))
                .bind(r.system_prompt.as_slice())
                .bind(r.context.as_slice())
                .bind(r.steps.as_slice())
                .bind(proposal.as_deref().map(Json))
                .bind(Json(&**verdict))
                .bind(s.model.as_str())
                .bind(s.finish_reason.as_deref())
                .bind(u64_to_i64("input tokens", s.usage.input)?)
                .bind(u64_to_i64("output tokens", s.usage.output)?)
                .bind(u64_to_i64("cache read tokens", s.usage.cache_read)?)
                .bind(u64_to_i64("cache write tokens", s.usage.cache_write)?)
                .bind(D::dec(s.cost_usd))
                .bind(s.error.as_deref())
                .bind(s.model_error);
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
async fn replayed_snapshot_id<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    s: &DecisionSnapshot,
) -> Result<Uuid, DbError> {
    let row = query(
        "SELECT id FROM decision_snapshots WHERE id = $1 OR (deployment_id = $2 AND tick_at = $3)",
    )
    .bind(D::id(s.id))
    .bind(D::id(s.deployment_id))
    .bind(D::ts(s.tick_at))
    .fetch_one(&mut **tx)
    .await
    .map_err(ctx("reading replayed snapshot"))?;
    codec::RowExt::uuid(&row, "id")
}

/// The runner state after the tick of `s`, only forward: a stored state of this or
/// a later tick wins and the whole tick is refused (its runner lost the deployment).
async fn write_runner_state<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    s: &DecisionSnapshot,
    state: &serde_json::Value,
) -> Result<(), DbError> {
    let written = query(
        "INSERT INTO live_runner_state (deployment_id, tick_at, state, updated_at) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (deployment_id) DO UPDATE \
         SET tick_at = excluded.tick_at, state = excluded.state, \
             updated_at = excluded.updated_at \
         WHERE live_runner_state.tick_at IS NULL \
            OR live_runner_state.tick_at < excluded.tick_at",
    )
    .bind(D::id(s.deployment_id))
    .bind(D::ts(s.tick_at))
    .bind(Json(state))
    .bind(D::ts(Utc::now()))
    .execute(&mut **tx)
    .await
    .map_err(ctx("writing runner state"))?;
    if written.rows_affected() == 0 {
        let row = query("SELECT tick_at FROM live_runner_state WHERE deployment_id = $1")
            .bind(D::id(s.deployment_id))
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

/// Inserts fills (a fill stored before is left as it is), in statements of the
/// sizes `statement_chunks` gives.
async fn insert_fills<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    fills: &[(Uuid, &Fill)],
) -> Result<(), DbError> {
    for chunk in statement_slices(fills) {
        let size = chunk.len();
        let sql = values_sql(
            "INSERT INTO fills (deployment_id, broker_fill_id, symbol, side, qty, price, \
             fee_usd, time, snapshot_id, client_order_id, liquidation, trigger_kind)",
            12,
            size,
            D::NUMBERED_PARAMS,
            "ON CONFLICT (deployment_id, broker_fill_id) DO NOTHING",
        );
        let mut query = query(&sql);
        for (deployment_id, f) in chunk {
            query = query
                .bind(D::id(*deployment_id))
                .bind(&f.id)
                .bind(&f.symbol)
                .bind(codec::order_side_str(f.side))
                .bind(D::dec(f.qty))
                .bind(D::dec(f.price))
                .bind(D::dec(f.fee_usd))
                .bind(D::ts(f.time))
                .bind(D::oid(f.snapshot_id))
                .bind(f.client_order_id.as_deref())
                .bind(f.liquidation)
                .bind(f.trigger.map(types::FillTrigger::as_str));
        }
        query
            .execute(&mut **tx)
            .await
            .map_err(ctx("inserting fills"))?;
    }
    Ok(())
}

/// Inserts or updates ledger rows, each with the time of the tick that closed it
/// (closed rows only), in statements of the sizes `statement_chunks` gives. The rows
/// must have distinct ids and come in writing order (`BatchTrades::last_versions`:
/// closing rows first). A row stored closed (closed rows are immutable) or under
/// another deployment is refused, named in the error, and the caller's transaction
/// must then be rolled back.
async fn upsert_trades<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    rows: &[(&TradeRecord, Option<DateTime<Utc>>)],
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    for chunk in statement_slices(rows) {
        let size = chunk.len();
        let sql = values_sql(
            "INSERT INTO trade_history (id, deployment_id, skill_id, skill_version, \
             symbol, side, status, entry_tick_at, entry_price, entry_size_usd, \
             entry_leverage, entry_reason, entry_snapshot_id, entry_regime_tag, \
             opened_qty, open_qty, exit_tick_at, exit_price, exit_reason, \
             exit_snapshot_id, close_kind, holding_minutes, realized_pnl_usd, fees_usd, \
             mfe_usd, mae_usd, exit_size_usd, broker_reconciled, closed_at, created_at, \
             updated_at)",
            31,
            size,
            D::NUMBERED_PARAMS,
            "ON CONFLICT (id) DO UPDATE SET \
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
        );
        let mut query = query(&sql);
        for (t, closed_at) in chunk {
            query = query
                .bind(D::id(t.id))
                .bind(D::id(t.deployment_id))
                .bind(D::id(t.skill_id))
                .bind(t.skill_version)
                .bind(&t.symbol)
                .bind(codec::side_str(t.side))
                .bind(t.status.as_str())
                .bind(D::ts(t.entry_tick_at))
                .bind(D::dec(t.entry_price))
                .bind(D::dec(t.entry_size_usd))
                .bind(D::odec(t.entry_leverage))
                .bind(t.entry_reason.as_deref())
                .bind(D::oid(t.entry_snapshot_id))
                .bind(t.entry_regime_tag.map(|r| r.as_str()))
                .bind(D::dec(t.opened_qty))
                .bind(D::dec(t.open_qty))
                .bind(D::ots(t.exit_tick_at))
                .bind(D::odec(t.exit_price))
                .bind(t.exit_reason.as_deref())
                .bind(D::oid(t.exit_snapshot_id))
                .bind(t.close_kind.map(|k| k.as_str()))
                .bind(D::odec(t.holding_minutes))
                .bind(D::dec(t.realized_pnl_usd))
                .bind(D::dec(t.fees_usd))
                .bind(D::dec(t.mfe_usd))
                .bind(D::dec(t.mae_usd))
                .bind(D::dec(t.exit_size_usd))
                .bind(t.broker_reconciled)
                .bind(D::ots(*closed_at))
                .bind(D::ts(now))
                .bind(D::ts(now));
        }
        let done = query
            .execute(&mut **tx)
            .await
            .map_err(ctx("upserting trade_history rows"))?;
        if done.rows_affected() < size as u64 {
            return Err(refused_trade(tx, chunk, now).await);
        }
    }
    Ok(())
}

/// The error for a chunk of `upsert_trades` that wrote fewer rows than it carried,
/// naming a refused row: the one whose `updated_at` is not the statement's.
async fn refused_trade<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    chunk: &[(&TradeRecord, Option<DateTime<Utc>>)],
    now: DateTime<Utc>,
) -> DbError {
    let sql = format!(
        "SELECT id FROM trade_history WHERE updated_at <> {} AND id IN ({})",
        lines::params(1, 1, D::NUMBERED_PARAMS),
        lines::params(2, chunk.len(), D::NUMBERED_PARAMS)
    );
    let mut query = query(&sql).bind(D::ts(now));
    for (t, _) in chunk {
        query = query.bind(D::id(t.id));
    }
    let which = match query.fetch_optional(&mut **tx).await {
        Ok(Some(row)) => match codec::RowExt::uuid(&row, "id") {
            Ok(id) => id.to_string(),
            Err(e) => return e,
        },
        // Every row reads as written: only a clock that stood still between two
        // writes hides the refused one.
        Ok(None) => {
            let ids: Vec<String> = chunk.iter().map(|(t, _)| t.id.to_string()).collect();
            format!("one of {}", ids.join(", "))
        }
        Err(e) => return ctx("reading the refused trade_history row")(e),
    };
    DbError::Invalid {
        what: "trade_history row",
        detail: format!(
            "{which} is closed (closed rows are immutable) or belongs to another deployment"
        ),
    }
}

/// Links fills to the ledger rows they applied to (distinct fills), in statements of
/// the sizes `statement_chunks` gives; a link to a fill that is not stored is
/// refused, named in the error.
async fn link_fills<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    links: &[(Uuid, &FillTradeLink)],
) -> Result<(), DbError> {
    for chunk in statement_slices(links) {
        let size = chunk.len();
        let sql = format!(
            "UPDATE fills SET trade_id = v.column3, flip_trade_id = v.column4 FROM ({}) AS v \
             WHERE fills.deployment_id = v.column1 AND fills.broker_fill_id = v.column2",
            values_sql("", 4, size, D::NUMBERED_PARAMS, "").trim()
        );
        let mut query = query(&sql);
        for (deployment_id, link) in chunk {
            query = query
                .bind(D::id(*deployment_id))
                .bind(&link.broker_fill_id)
                .bind(D::id(link.trade_id))
                .bind(D::oid(link.flip_trade_id));
        }
        let done = query
            .execute(&mut **tx)
            .await
            .map_err(ctx("linking fills to trades"))?;
        if done.rows_affected() < size as u64 {
            return Err(missing_fill(tx, chunk).await);
        }
    }
    Ok(())
}

/// The error for a chunk of `link_fills` that linked fewer fills than it carried,
/// naming a link whose fill is not stored.
async fn missing_fill<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    chunk: &[(Uuid, &FillTradeLink)],
) -> DbError {
    for (deployment_id, link) in chunk {
        let stored = query("SELECT 1 FROM fills WHERE deployment_id = $1 AND broker_fill_id = $2")
            .bind(D::id(*deployment_id))
            .bind(&link.broker_fill_id)
            .fetch_optional(&mut **tx)
            .await;
        match stored {
            Ok(Some(_)) => {}
            Ok(None) => {
                return DbError::Invalid {
                    what: "fill link",
                    detail: format!(
                        "fill {} of deployment {} is not stored",
                        link.broker_fill_id, deployment_id
                    ),
                };
            }
            Err(e) => return ctx("reading a linked fill")(e),
        }
    }
    DbError::Invalid {
        what: "fill link",
        detail: "a fill was linked twice in one batch".to_owned(),
    }
}

/// One tick's rows inside the caller's transaction (see `TickStore::record_tick`),
/// the deployment's equity aside. A replayed tick writes nothing.
async fn write_tick<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    cache: &lines::LineCache,
    update: &mut lines::CacheUpdate,
    tick: &TickRecord,
) -> Result<RecordOutcome, DbError> {
    let s = &tick.snapshot;
    if insert_snapshots(tx, cache, update, &[s], None)
        .await?
        .is_empty()
    {
        let snapshot_id = replayed_snapshot_id(tx, s).await?;
        return Ok(RecordOutcome::AlreadyRecorded { snapshot_id });
    }
    if let Some(state) = &tick.runner_state {
        write_runner_state(tx, s, state).await?;
    }
    let fills: Vec<(Uuid, &Fill)> = tick.fills.iter().map(|f| (s.deployment_id, f)).collect();
    insert_fills(tx, &fills).await?;
    // Closing rows first: a flip closes one row and opens another on the same symbol.
    let now = Utc::now();
    let mut trades = BatchTrades::default();
    trades.add(tick)?;
    upsert_trades(tx, &trades.last_versions(), now).await?;
    link_fills(tx, &batch_links([tick])).await?;
    // A tick's scores are of earlier ticks' outcomes: written after its own rows.
    crate::imp::outcomes::insert_outcome_rows(tx, &[&tick.outcomes], &mut HashMap::new()).await?;
    crate::imp::outcomes::write_scores(tx, &last_scores([&tick.outcomes])).await?;
    Ok(RecordOutcome::Recorded { snapshot_id: s.id })
}

/// [`TickStore::record_ticks`]'s writes in `tx`; the caller commits, then remembers
/// `update`'s lines.
async fn record_ticks_in<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    cache: &lines::LineCache,
    update: &mut lines::CacheUpdate,
    ticks: &[TickRecord],
    plans: &SnapshotPlans,
) -> Result<Vec<RecordOutcome>, DbError> {
    let snapshots: Vec<&DecisionSnapshot> = ticks.iter().map(|t| &t.snapshot).collect();
    let inserted = insert_snapshots(tx, cache, update, &snapshots, Some(plans)).await?;
    let mut outcomes = Vec::with_capacity(ticks.len());
    let mut trades = BatchTrades::default();
    let mut fills: Vec<(Uuid, &Fill)> = Vec::new();
    // Per deployment, the equity of its last recorded tick that carries one.
    let mut equity: Vec<(Uuid, Decimal)> = Vec::new();
    for tick in ticks {
        let s = &tick.snapshot;
        if !inserted.contains(&s.id) {
            let snapshot_id = replayed_snapshot_id(tx, s).await?;
            outcomes.push(RecordOutcome::AlreadyRecorded { snapshot_id });
            continue;
        }
        if let Some(state) = &tick.runner_state {
            write_runner_state(tx, s, state).await?;
        }
        fills.extend(tick.fills.iter().map(|f| (s.deployment_id, f)));
        trades.add(tick)?;
        if let Some(e) = tick.equity_usd {
            match equity.iter_mut().find(|(id, _)| *id == s.deployment_id) {
                Some(slot) => slot.1 = e,
                None => equity.push((s.deployment_id, e)),
            }
        }
        outcomes.push(RecordOutcome::Recorded { snapshot_id: s.id });
    }
    // Every fill of the batch in a few statements, before the rows they link to.
    insert_fills(tx, &fills).await?;
    upsert_trades(tx, &trades.last_versions(), Utc::now()).await?;
    let recorded: Vec<&TickRecord> = ticks
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| matches!(o, RecordOutcome::Recorded { .. }))
        .map(|(t, _)| t)
        .collect();
    link_fills(tx, &batch_links(recorded.iter().copied())).await?;
    // The outcome memory: only the last score of each outcome in the batch counts
    // (each is the outcome's whole score at its time). An outcome of the batch is
    // inserted with it; the others are updated after every insert (a score may be
    // of an outcome of an earlier tick).
    let writes: Vec<&OutcomeWrites> = recorded.iter().map(|t| &t.outcomes).collect();
    let scores = last_scores(writes.iter().copied());
    let mut last: HashMap<Uuid, &outcomes::OutcomeScore> = scores.iter().copied().collect();
    crate::imp::outcomes::insert_outcome_rows(tx, &writes, &mut last).await?;
    let updates: Vec<_> = scores
        .into_iter()
        .filter(|(id, _)| last.contains_key(id))
        .collect();
    crate::imp::outcomes::write_scores(tx, &updates).await?;
    for (d, e) in equity {
        write_equity(tx, d, e).await?;
    }
    Ok(outcomes)
}

async fn write_equity<D: Dialect>(
    tx: &mut Transaction<'static, D>,
    deployment_id: Uuid,
    equity: Decimal,
) -> Result<(), DbError> {
    query("UPDATE deployments SET equity_usd = $2 WHERE id = $1")
        .bind(D::id(deployment_id))
        .bind(D::dec(equity))
        .execute(&mut **tx)
        .await
        .map_err(ctx("updating deployment equity"))?;
    Ok(())
}

/// [`TickStore::record_tick`], and with `alerts` the tick's alerts, in one transaction.
async fn record_tick_with<S: Backend<Db = D>, D: Dialect>(
    store: &S,
    tick: &TickRecord,
    alerts: Option<&crate::TickAlerts>,
) -> Result<RecordOutcome, DbError> {
    validate_tick(tick)?;
    let mut tx = store.begin().await.map_err(ctx("beginning tick"))?;
    let mut update = lines::CacheUpdate::default();
    let outcome = write_tick(&mut tx, store.lines(), &mut update, tick).await?;
    match (outcome, tick.equity_usd) {
        (RecordOutcome::Recorded { .. }, Some(equity)) => {
            write_equity(&mut tx, tick.snapshot.deployment_id, equity).await?;
        }
        (RecordOutcome::Recorded { .. }, None) => {}
        (RecordOutcome::AlreadyRecorded { .. }, _) => {
            tx.rollback().await.map_err(ctx("ending replayed tick"))?;
            return Ok(outcome);
        }
    }
    if let Some(alerts) = alerts {
        crate::imp::alerts::write_tick_alerts(&mut tx, tick, alerts).await?;
    }
    tx.commit().await.map_err(ctx("committing tick"))?;
    store.lines().remember(update);
    Ok(outcome)
}

impl<S: Backend<Db = D>, D: Dialect> TickStore for S {
    async fn record_tick(&self, tick: &TickRecord) -> Result<RecordOutcome, DbError> {
        record_tick_with(self, tick, None).await
    }

    async fn record_tick_alerting(
        &self,
        tick: &TickRecord,
        alerts: &crate::TickAlerts,
    ) -> Result<RecordOutcome, DbError> {
        record_tick_with(self, tick, Some(alerts)).await
    }
    async fn record_ticks(
        &self,
        batch: &PlannedTicks,
        reflections: &[(Option<NewNote>, ReflectionRun)],
    ) -> Result<Vec<RecordOutcome>, DbError> {
        let ticks = batch.ticks();
        validate_batch(ticks)?;
        let counts = reflections
            .iter()
            .map(|(note, _)| {
                note.as_ref()
                    .map(crate::imp::notes::validate_note)
                    .transpose()
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut tx = self.begin().await.map_err(ctx("beginning ticks"))?;
        let mut update = lines::CacheUpdate::default();
        let outcomes =
            record_ticks_in(&mut tx, self.lines(), &mut update, ticks, batch.plans()).await?;
        for ((note, run), counts) in reflections.iter().zip(counts) {
            if let (Some(note), Some(counts)) = (note, counts) {
                crate::imp::notes::insert_note_in(&mut tx, note, counts).await?;
            }
            crate::imp::notes::insert_run_in(&mut *tx, run).await?;
        }
        tx.commit().await.map_err(ctx("committing ticks"))?;
        self.lines().remember(update);
        Ok(outcomes)
    }

    async fn get_snapshot(&self, id: Uuid) -> Result<DecisionSnapshot, DbError> {
        let row = query("SELECT * FROM decision_snapshots WHERE id = $1")
            .bind(D::id(id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading decision snapshot"))?
            .ok_or_else(|| DbError::not_found("decision snapshot", id))?;
        let mut one = snapshots_from_rows(self, &[row]).await?;
        one.pop()
            .ok_or_else(|| DbError::not_found("decision snapshot", id))
    }

    async fn last_snapshot_before(
        &self,
        deployment_id: Uuid,
        before: DateTime<Utc>,
    ) -> Result<Option<DecisionSnapshot>, DbError> {
        let row = query(
            "SELECT * FROM decision_snapshots WHERE deployment_id = $1 AND tick_at < $2 \
             ORDER BY tick_at DESC LIMIT 1",
        )
        .bind(D::id(deployment_id))
        .bind(D::ts(before))
        .fetch_optional(self.pool())
        .await
        .map_err(ctx("reading last decision snapshot"))?;
        match row {
            Some(row) => Ok(snapshots_from_rows(self, &[row]).await?.pop()),
            None => Ok(None),
        }
    }

    async fn runner_state(
        &self,
        deployment_id: Uuid,
    ) -> Result<Option<StoredRunnerState>, DbError> {
        let row = query(
            "SELECT deployment_id, tick_at, state FROM live_runner_state \
             WHERE deployment_id = $1 AND tick_at IS NOT NULL",
        )
        .bind(D::id(deployment_id))
        .fetch_optional(self.pool())
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

    async fn list_snapshots(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> Result<Vec<DecisionSnapshot>, DbError> {
        let rows = query(
            "SELECT * FROM decision_snapshots WHERE deployment_id = $1 ORDER BY tick_at DESC LIMIT $2",
        )
        .bind(D::id(deployment_id))
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await
        .map_err(ctx("listing decision snapshots"))?;
        snapshots_from_rows(self, &rows).await
    }

    async fn ticks(&self, q: &TickQuery) -> Result<Vec<StoredTick>, DbError> {
        if q.limit == 0 {
            return Err(DbError::Invalid {
                what: "ticks limit",
                detail: "0: read at least one tick".to_owned(),
            });
        }
        let limit = codec::check_limit("ticks limit", q.limit, MAX_TICKS_READ)?;
        if let (Some(from), Some(to)) = (q.from, q.to)
            && from > to
        {
            return Err(DbError::Invalid {
                what: "ticks window",
                detail: format!("from {from} is after to {to}"),
            });
        }
        // Only the bounds given, each its own numbered parameter after the deployment's.
        let bounds = [(">=", q.from), ("<=", q.to), (">", q.after)];
        let mut sql = "SELECT * FROM decision_snapshots WHERE deployment_id = $1".to_owned();
        let mut n = 1;
        for (op, at) in &bounds {
            if at.is_some() {
                n += 1;
                sql.push_str(&format!(" AND tick_at {op} ${n}"));
            }
        }
        sql.push_str(&format!(" ORDER BY tick_at LIMIT ${}", n + 1));
        let mut query = query(&sql).bind(D::id(q.deployment_id));
        for at in bounds.into_iter().filter_map(|(_, at)| at) {
            query = query.bind(D::ts(at));
        }
        let rows = query
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("reading ticks"))?;
        if q.texts {
            // The texts as every snapshot read puts them back together.
            return Ok(snapshots_from_rows(self, &rows)
                .await?
                .into_iter()
                .map(StoredTick::from)
                .collect());
        }
        rows.iter()
            .map(|r| {
                let (head, texts) = codec::stored_snapshot_from_row(r)?;
                Ok(head.tick_without_texts(texts))
            })
            .collect()
    }
}

/// Snapshots converted per transaction by `convert_legacy_snapshots`.
pub(crate) const CONVERT_BATCH: i64 = 256;

/// The conversion of snapshots written before line storage.
/// Converts the prompts of the snapshots written before line storage (their texts
/// in `system_prompt` / `context`) to line lists, [`CONVERT_BATCH`] per transaction,
/// in tick order per deployment; returns how many it converted. Their steps,
/// proposal and verdict stay in their JSON columns (a few hundred bytes, read as
/// before). Run at connect, after the migrations: a database the previous schema
/// wrote reads the same afterwards, and a conversion cut short leaves every row
/// readable (converted or not) and resumes at the next connect.
pub(crate) async fn convert_legacy_snapshots<S: Backend<Db = D>, D: Dialect>(
    store: &S,
) -> Result<u64, DbError> {
    let mut converted = 0;
    loop {
        let mut tx = store
            .begin()
            .await
            .map_err(ctx("beginning snapshot conversion"))?;
        let rows = query(
            "SELECT id, deployment_id, system_prompt, context FROM decision_snapshots \
             WHERE context_lines IS NULL ORDER BY deployment_id, tick_at LIMIT $1",
        )
        .bind(CONVERT_BATCH)
        .fetch_all(&mut *tx)
        .await
        .map_err(ctx("reading snapshots to convert"))?;
        if rows.is_empty() {
            tx.rollback()
                .await
                .map_err(ctx("ending snapshot conversion"))?;
            return Ok(converted);
        }
        let mut old = Vec::with_capacity(rows.len());
        for r in &rows {
            old.push((
                codec::RowExt::uuid(r, "id")?,
                codec::RowExt::uuid(r, "deployment_id")?,
                codec::RowExt::opt_text(r, "system_prompt")?.unwrap_or_default(),
                codec::RowExt::opt_text(r, "context")?.unwrap_or_default(),
            ));
        }
        let mut deployments: Vec<Uuid> = Vec::new();
        for (_, d, _, _) in &old {
            if !deployments.contains(d) {
                deployments.push(*d);
            }
        }
        let mut update = crate::imp::prompt_lines::CacheUpdate::default();
        for d in deployments {
            let mine: Vec<_> = old.iter().filter(|(_, od, _, _)| *od == d).collect();
            let texts: Vec<&str> = mine
                .iter()
                .flat_map(|(_, _, sp, cx)| [sp.as_str(), cx.as_str()])
                .collect();
            let plan = crate::imp::prompt_lines::LinePlan::new(&texts, 2);
            let lists =
                store_lines(&mut tx, store.lines(), &mut update, d, &texts, &plan, 2).await?;
            for ((id, _, _, _), pair) in mine.iter().zip(lists.chunks(2)) {
                query(
                    "UPDATE decision_snapshots SET system_prompt = NULL, context = NULL, \
                     system_prompt_lines = $2, context_lines = $3 WHERE id = $1",
                )
                .bind(D::id(*id))
                .bind(pair[0].as_slice())
                .bind(pair[1].as_slice())
                .execute(&mut *tx)
                .await
                .map_err(ctx("converting a snapshot to line lists"))?;
                converted += 1;
            }
        }
        tx.commit()
            .await
            .map_err(ctx("committing snapshot conversion"))?;
        store.lines().remember(update);
    }
}

#[cfg(test)]
mod tests {
    use super::{
        STATEMENT_CHUNK, decision_json, snapshot_insert_sql, statement_chunks, statement_slices,
        values_sql,
    };

    fn snapshot(
        proposal: Option<types::ProposedAction>,
        verdict: types::Verdict,
    ) -> crate::DecisionSnapshot {
        crate::DecisionSnapshot {
            id: uuid::Uuid::nil(),
            deployment_id: uuid::Uuid::nil(),
            tick_at: chrono::DateTime::UNIX_EPOCH,
            system_prompt: String::new(),
            context: String::new(),
            steps: types::JsonText::new(&Vec::<u8>::new()).expect("steps"),
            proposal,
            verdict,
            model: "m".to_owned(),
            finish_reason: None,
            usage: types::Usage::default(),
            cost_usd: rust_decimal::Decimal::ZERO,
            error: None,
            model_error: false,
        }
    }

    /// Each row's `proposal` and `verdict` text is exactly its own serialisation; a row that
    /// repeats the row before shares its text, and a decimal written at another scale (`1.50`
    /// against `1.5`: equal by `==`) does not.
    #[test]
    fn decision_json_is_each_rows_own_text_shared_only_when_identical() {
        use std::sync::Arc;
        let long = |size: rust_decimal::Decimal| types::ProposedAction {
            action: types::OrderAction::OpenLong,
            symbol: "EURUSD".to_owned(),
            size_usd: Some(size),
            leverage: None,
            reason: "cross".to_owned(),
            confidence: Some(60),
            stop: None,
            target: None,
        };
        let no_op = types::Verdict::NoOp {
            detail: "no cross".to_owned(),
        };
        let rejected = types::Verdict::Rejected {
            rule: types::RuleCode::PositionCap,
            detail: "60.01% > 60%".to_owned(),
        };
        let rows = [
            snapshot(
                Some(long(rust_decimal::Decimal::new(150, 2))),
                no_op.clone(),
            ),
            snapshot(
                Some(long(rust_decimal::Decimal::new(150, 2))),
                no_op.clone(),
            ),
            snapshot(Some(long(rust_decimal::Decimal::new(15, 1))), no_op.clone()),
            snapshot(None, rejected.clone()),
            snapshot(None, rejected),
            snapshot(Some(long(rust_decimal::Decimal::new(15, 1))), no_op),
        ];
        let refs: Vec<&crate::DecisionSnapshot> = rows.iter().collect();
        let json = decision_json(&refs).expect("json");
        for (s, (proposal, verdict)) in rows.iter().zip(&json) {
            assert_eq!(
                proposal.as_ref().map(|p| p.get().to_owned()),
                s.proposal
                    .as_ref()
                    .map(|p| serde_json::to_string(p).unwrap())
            );
            assert_eq!(verdict.get(), serde_json::to_string(&s.verdict).unwrap());
        }
        let shared = |a: &Option<Arc<serde_json::value::RawValue>>,
                      b: &Option<Arc<serde_json::value::RawValue>>| {
            matches!((a, b), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
        };
        assert!(shared(&json[0].0, &json[1].0), "the same proposal again");
        assert!(!shared(&json[1].0, &json[2].0), "1.5 is not 1.50");
        assert_ne!(
            json[1].0.as_ref().unwrap().get(),
            json[2].0.as_ref().unwrap().get()
        );
        assert!(
            Arc::ptr_eq(&json[0].1, &json[2].1),
            "the same verdict again"
        );
        assert!(!Arc::ptr_eq(&json[2].1, &json[3].1));
        assert!(Arc::ptr_eq(&json[3].1, &json[4].1));
        // Only the row just before is compared: a proposal after a row without one is its own.
        assert!(json[4].0.is_none() && json[5].0.is_some());
    }

    #[test]
    fn batches_split_into_cached_power_of_two_statements() {
        let split = |n| statement_chunks(n).collect::<Vec<_>>();
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
                    .all(|s| s.is_power_of_two() && *s <= STATEMENT_CHUNK)
            );
            // The slices are those sizes, in order, and together every row once.
            let rows: Vec<usize> = (0..n).collect();
            let slices: Vec<&[usize]> = statement_slices(&rows).collect();
            assert_eq!(slices.iter().map(|s| s.len()).collect::<Vec<_>>(), sizes);
            assert_eq!(slices.concat(), rows);
        }
    }

    #[test]
    fn insert_sql_numbers_parameters_only_when_asked() {
        let numbered = snapshot_insert_sql(2, true, true);
        assert!(numbered.contains("($1, $2, $3,"));
        assert!(numbered.contains("$17), ($18,"));
        assert!(numbered.ends_with("$34) ON CONFLICT DO NOTHING RETURNING id"));
        let anonymous = snapshot_insert_sql(2, false, false);
        assert_eq!(anonymous.matches('?').count(), 34);
        assert!(!anonymous.contains('$'));
        assert!(anonymous.ends_with("?) ON CONFLICT DO NOTHING"));
    }

    /// A statement's text is written once and shared; any other head, tail, size or
    /// numbering is its own text.
    #[test]
    fn statement_texts_are_shared_only_for_the_same_statement() {
        let a = values_sql("INSERT INTO t (a, b)", 2, 2, true, "");
        assert_eq!(&*a, "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4) ");
        assert!(std::sync::Arc::ptr_eq(
            &a,
            &values_sql("INSERT INTO t (a, b)", 2, 2, true, "")
        ));
        let others = [
            values_sql("INSERT INTO t (a, b)", 2, 2, false, ""),
            values_sql("INSERT INTO t (a, b)", 2, 1, true, ""),
            values_sql("INSERT INTO u (a, b)", 2, 2, true, ""),
            values_sql("INSERT INTO t (a, b)", 2, 2, true, "RETURNING a"),
            // The same characters split differently between head and tail.
            values_sql("INSERT INTO t (a, b", 2, 2, true, ")"),
        ];
        assert_eq!(&*others[0], "INSERT INTO t (a, b) VALUES (?, ?), (?, ?) ");
        assert_eq!(&*others[1], "INSERT INTO t (a, b) VALUES ($1, $2) ");
        assert_eq!(
            &*others[2],
            "INSERT INTO u (a, b) VALUES ($1, $2), ($3, $4) "
        );
        assert_eq!(
            &*others[3],
            "INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4) RETURNING a"
        );
        assert_eq!(
            &*others[4],
            "INSERT INTO t (a, b VALUES ($1, $2), ($3, $4) )"
        );
    }
}
