//! What a deployment carries between ticks ([`TickState`]) and how a restarted runner rebuilds
//! it from the store ([`restore_state`], [`restore_state_carried`], [`load_reflection_state`]).

use std::sync::Arc;

use agent_runtime::RenderCache;
use chrono::{DateTime, Utc};
use db::{LedgerStore, NoteStore, RunOutcome, TickStore};
use execution_engine::RiskState;
use memory_ledger::{LedgerChanges, LedgerState};
use outcomes::OutcomeScore;
use reflection::{LastNote, NoteDraft};
use rust_decimal::Decimal;
use tools::{LastDecisionSnapshot, to_last_decision_snapshot};
use types::{TradeRecord, TradeStatus, Verdict};
use uuid::Uuid;

use crate::TickDeployment;
#[cfg(doc)]
use crate::promote_note;

/// What the caller carries from one tick to the next (in memory in a backtest; rebuilt from the
/// store by a live runner after a restart).
#[derive(Debug, Clone)]
pub struct TickState {
    /// Peak equity, the day's starting equity, recent order times.
    pub risk: RiskState,
    /// The materializer's open rows and applied fill ids.
    pub ledger: LedgerState,
    /// The ledger rows a tick can read, in the order they were first written: every open row,
    /// the [`RECENT_CLOSED_KEPT`] latest closed ones (newest entry first, as "Recent trades"
    /// picks them) and every row closed after the last note's window (the next reflection's
    /// window; every closed row until a first note, when the skill reflects). Older closed rows
    /// stay in the store only, so a tick's work does not grow with the deployment's age. Shared
    /// with a due reflection (`Arc`), not copied.
    pub trades: Arc<Vec<TradeRecord>>,
    /// Closed rows pruned from `trades` since this state was built. A state restored from the
    /// store counts from the rows it read: the last note's closed total is expressed against
    /// them, so "closed since the note" — all the cadence needs — stays exact.
    pub closed_pruned: u32,
    /// What the next tick shows under "Last decision".
    pub last_decision: Option<LastDecisionSnapshot>,
    /// The notes a later tick can still inject: the note in force (at most one — the latest
    /// injectable note; older and flagged ones are dropped, the store keeps the history), see
    /// [`visible_note_at`](reflection::visible_note_at).
    pub notes: Vec<NoteDraft>,
    /// The cadence's view of the latest note (flagged or not).
    pub last_note: Option<LastNote>,
    /// When the latest failed reflection ran (the cadence backs off after it).
    pub last_reflection_failure: Option<DateTime<Utc>>,
    /// The previous tick's time (bars closed after it feed MFE/MAE this tick).
    pub last_tick_at: Option<DateTime<Utc>>,
    /// What the previous tick rendered and this one can reuse (bar rows, system prompt). Only
    /// saves work: a fresh cache renders the same bytes.
    pub render: RenderCache,
    /// Scores of earlier outcomes that the next tick records with itself (in its transaction):
    /// the backtest puts here what came due at the tick's time; a live runner scores off the
    /// tick path (`tick::score_due_outcomes`) and leaves this empty.
    pub outcome_scores: Vec<(Uuid, OutcomeScore)>,
    /// The model loop's options for this deployment's ticks: the output-token budget and the
    /// tick's deadline (the live runner sets its tick budget; a backtest has none by default).
    pub run_options: agent_runtime::RunOptions,
    /// A blind run's disguise (`None`: the model reads the real world). Set once, before the
    /// first tick: the model then reads the renamed, rescaled, relative-time world of
    /// [`BlindRun`] while the engine, the ledger and the store keep the real one.
    pub blind: Option<BlindRun>,
    /// The "Recent trades" body as last rendered: (k, as of, text). Cleared when a closed row
    /// changes.
    recent_trades: Option<(u32, DateTime<Utc>, Arc<str>)>,
}

impl TickState {
    /// The state of a deployment that has never ticked: flat ledger, risk tracking from
    /// `equity` at `at`.
    #[must_use]
    pub fn new(deployment: &TickDeployment, equity: Decimal, at: DateTime<Utc>) -> Self {
        TickState {
            risk: RiskState::new(equity, at),
            ledger: LedgerState::new(memory_ledger::LedgerScope {
                deployment_id: deployment.deployment_id,
                skill_id: deployment.skill_id,
                skill_version: deployment.skill_version,
            }),
            trades: Arc::new(Vec::new()),
            closed_pruned: 0,
            last_decision: None,
            notes: Vec::new(),
            last_note: None,
            last_reflection_failure: None,
            last_tick_at: None,
            render: RenderCache::default(),
            outcome_scores: Vec::new(),
            run_options: agent_runtime::RunOptions::default(),
            blind: None,
            recent_trades: None,
        }
    }

    /// Closed rows of `trades` and those pruned from it since the state was built (the whole
    /// ledger's count for a state built from scratch, as a backtest's).
    #[must_use]
    pub fn closed_trades(&self) -> usize {
        self.trades
            .iter()
            .filter(|t| t.status == TradeStatus::Closed)
            .count()
            + self.closed_pruned as usize
    }

    /// Replaces the ledger rows (a restarted runner reads them from the store): `trades` and
    /// how many closed rows of the ledger are not among them.
    pub fn set_trades(&mut self, trades: Vec<TradeRecord>, closed_pruned: u32) {
        self.trades = Arc::new(trades);
        self.closed_pruned = closed_pruned;
        self.recent_trades = None;
    }

    /// The closed rows a tick no longer needs leave `trades` (see there): a closed row stays
    /// while it is among the [`RECENT_CLOSED_KEPT`] newest entries or exits after the window of
    /// the last note — or, when the skill reflects and has no note yet, always.
    pub(crate) fn prune_closed(&mut self, memory: &skill_schema::SkillMemoryConfig) {
        let reflects =
            memory.enabled && memory.reflection.cadence != skill_schema::ReflectionCadence::Off;
        let window_end = match (&self.last_note, reflects) {
            (Some(last), true) => Some(last.window_end),
            (None, true) => return,
            (_, false) => None,
        };
        let closed = self
            .trades
            .iter()
            .filter(|t| t.status == TradeStatus::Closed)
            .count();
        if closed <= RECENT_CLOSED_KEPT {
            return;
        }
        let mut recent: Vec<&TradeRecord> = self
            .trades
            .iter()
            .filter(|t| t.status == TradeStatus::Closed)
            .collect();
        // "Recent trades"' order: newest entry first, then symbol, then id.
        recent.sort_by(|a, b| {
            b.entry_tick_at
                .cmp(&a.entry_tick_at)
                .then_with(|| a.symbol.cmp(&b.symbol))
                .then_with(|| a.id.cmp(&b.id))
        });
        let kept: std::collections::BTreeSet<Uuid> = recent
            .iter()
            .take(RECENT_CLOSED_KEPT)
            .map(|t| t.id)
            .collect();
        let keep = |t: &TradeRecord| {
            t.status != TradeStatus::Closed
                || kept.contains(&t.id)
                || window_end.is_some_and(|end| t.exit_tick_at.is_some_and(|x| x > end))
        };
        if self.trades.iter().all(keep) {
            return;
        }
        let before = self.trades.len();
        Arc::make_mut(&mut self.trades).retain(keep);
        let dropped = before - self.trades.len();
        self.closed_pruned = self
            .closed_pruned
            .saturating_add(u32::try_from(dropped).unwrap_or(u32::MAX));
    }

    pub(crate) fn upsert_rows(&mut self, changes: &LedgerChanges) {
        if changes.rows.is_empty() {
            return;
        }
        // No copy: the previous tick's memory view has been dropped by now.
        let trades = Arc::make_mut(&mut self.trades);
        for w in &changes.rows {
            if w.row.status == TradeStatus::Closed {
                self.recent_trades = None;
            }
            // From the end: the rows a tick writes are the latest ones.
            if let Some(existing) = trades.iter_mut().rev().find(|t| t.id == w.row.id) {
                *existing = w.row.clone();
            } else {
                trades.push(w.row.clone());
            }
        }
    }

    /// The "Recent trades" body for `k` as of `now`, rendered again only when a closed row
    /// changed (rows closed at or before an earlier `as_of` stay in it as time moves on).
    pub(crate) fn recent_trades_text(&mut self, k: u32, now: DateTime<Utc>) -> Arc<str> {
        match &self.recent_trades {
            Some((memo_k, as_of, text)) if *memo_k == k && *as_of <= now => Arc::clone(text),
            _ => {
                let text: Arc<str> =
                    memory_ledger::render_recent_trades(&self.trades, k as usize, now).into();
                self.recent_trades = Some((k, now, Arc::clone(&text)));
                text
            }
        }
    }
}

/// A blind run (the `blind` crate): the disguise and the skill as the model reads it, built
/// once per run.
#[derive(Debug, Clone, PartialEq)]
pub struct BlindRun {
    /// Neutral names, price factors, day 0.
    pub blind: Arc<blind::Blind>,
    /// The skill as the model reads it ([`blind::Blind::skill`]).
    pub skill: Arc<skill_schema::Skill>,
}

impl BlindRun {
    /// `blind` for `skill`.
    ///
    /// # Errors
    /// [`blind::BlindError`] when the skill reads what blind mode cannot anonymise
    /// ([`blind::Blind::check_skill`]) or its anonymised text does not parse.
    pub fn new(
        blind: blind::Blind,
        skill: &skill_schema::Skill,
    ) -> Result<Self, blind::BlindError> {
        blind::Blind::check_skill(skill)?;
        let shown = blind.skill(skill)?;
        Ok(Self {
            blind: Arc::new(blind),
            skill: Arc::new(shown),
        })
    }

    /// The ledger rows as the model reads them.
    #[must_use]
    pub fn trades(&self, rows: &[TradeRecord]) -> Vec<TradeRecord> {
        rows.iter().map(|r| self.blind.trade_record(r)).collect()
    }
}

/// How far before the last tick a restored ledger knows the applied fill ids (to skip a fill a
/// broker delivers again): a week, far beyond any broker's redelivery (a paper broker never
/// repeats a fill; Hyperliquid's drain restarts at the cursor committed with the previous tick),
/// so a restore reads a week of fill ids, not the deployment's whole history.
pub const APPLIED_FILLS_WINDOW: chrono::Duration = chrono::Duration::days(7);

/// Closed rows [`TickState::trades`] keeps however old: "Recent trades" shows at most
/// [`types::MAX_MEMORY_K`].
pub const RECENT_CLOSED_KEPT: usize = types::MAX_MEMORY_K as usize;

/// Why a [`TickState`] could not be restored from a store.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The store could not be read.
    #[error("reading the store: {0}")]
    Store(#[from] db::DbError),
    /// The stored open rows are inconsistent (the ledger cannot be rebuilt from them).
    #[error("the stored ledger: {0}")]
    Ledger(#[from] memory_ledger::LedgerError),
}

/// Rebuilds the state a deployment carries between ticks from what its store recorded, for a
/// runner that restarts (or a tick run on another process): the ledger (open rows and applied
/// fill ids, [`LedgerState::rebuild`]), the ledger rows a tick reads ([`TickState::trades`]:
/// bounded, whatever the deployment's age), the last decision (the latest snapshot before `at`)
/// and the reflection side ([`load_reflection_state`]).
///
/// The engine's [`RiskState`] is not in the store's tables: it starts from `equity` at `at` (the
/// peak is the current equity, the order-rate window is refilled from the executed snapshots of
/// the last hour). A runner that must keep its drawdown peak across restarts commits `state.risk`
/// (serializable) with each tick ([`run_tick_carrying`](crate::run_tick_carrying)).
///
/// # Errors
/// [`RestoreError`] when the store cannot be read or its open rows are inconsistent.
pub async fn restore_state<S>(
    store: &S,
    deployment: &TickDeployment,
    equity: Decimal,
    at: DateTime<Utc>,
) -> Result<TickState, RestoreError>
where
    S: TickStore + LedgerStore + NoteStore,
{
    restore_state_carried(store, deployment, equity, at, None).await
}

/// The parts of a [`TickState`] the store's tables do not hold, which a runner commits with each
/// tick ([`run_tick_carrying`](crate::run_tick_carrying)): the engine's risk state, the last decision, the last tick's time.
#[derive(Debug, Clone)]
pub struct Carried {
    /// The engine's risk state (drawdown peak, day start equity, recent order times).
    pub risk: RiskState,
    /// What the next tick shows under "Last decision"; `None` before the first tick.
    pub last_decision: Option<LastDecisionSnapshot>,
    /// The last tick's time; `None` before the first tick.
    pub last_tick_at: Option<DateTime<Utc>>,
}

/// [`restore_state`] for a runner that committed [`Carried`] with its last tick: with
/// `Some(carried)` the risk state, last decision and last tick time are `carried`'s (and the
/// snapshots are not read); with `None`, exactly [`restore_state`].
///
/// # Errors
/// As [`restore_state`].
pub async fn restore_state_carried<S>(
    store: &S,
    deployment: &TickDeployment,
    equity: Decimal,
    at: DateTime<Utc>,
    carried: Option<Carried>,
) -> Result<TickState, RestoreError>
where
    S: TickStore + LedgerStore + NoteStore,
{
    let d = deployment.deployment_id;
    let scope = memory_ledger::LedgerScope {
        deployment_id: d,
        skill_id: deployment.skill_id,
        skill_version: deployment.skill_version,
    };
    // The fills a broker can deliver again are recent (a paper broker never repeats one; an
    // exchange's drain starts at its cursor, committed with the previous tick): the ids of the
    // last `APPLIED_FILLS_WINDOW` before the last tick are what the ledger must skip.
    let since = carried
        .as_ref()
        .and_then(|c| c.last_tick_at)
        .unwrap_or(at)
        .min(at)
        - APPLIED_FILLS_WINDOW;
    let ledger = LedgerState::rebuild(
        scope,
        store.open_trades(d).await?,
        store.applied_fill_ids_since(d, since).await?,
    )?;
    let mut state = TickState::new(deployment, equity, at);
    state.ledger = ledger;
    load_reflection_side(store, deployment, &mut state, at, false).await?;
    load_trades(store, deployment, &mut state, at).await?;
    if let Some(carried) = carried {
        state.risk = carried.risk;
        state.last_decision = carried.last_decision;
        state.last_tick_at = carried.last_tick_at;
        return Ok(state);
    }
    // The newest snapshots; the last decision is the latest at or before `at`.
    let recent = store.list_snapshots(d, 64).await?;
    if let Some(snap) = recent
        .iter()
        .filter(|s| s.tick_at <= at)
        .max_by_key(|s| s.tick_at)
    {
        state.last_decision = Some(to_last_decision_snapshot(
            snap.proposal.as_ref(),
            &snap.verdict,
            snap.tick_at,
        ));
        state.last_tick_at = Some(snap.tick_at);
    }
    let mut executed: Vec<DateTime<Utc>> = recent
        .iter()
        .filter(|s| matches!(s.verdict, Verdict::Executed { .. }))
        .map(|s| s.tick_at)
        .filter(|t| *t <= at && *t > at - chrono::Duration::hours(1))
        .collect();
    executed.sort_unstable();
    for t in executed {
        state.risk.record_order(t);
    }
    Ok(state)
}

/// Reads the ledger rows a tick needs ([`TickState::trades`]) as of `at`, after the reflection
/// side (the last note bounds the window): the open rows, the [`RECENT_CLOSED_KEPT`] newest
/// closed entries and the rows closed since the last note's window — every row only when the
/// skill reflects and has no note yet —, and how many closed rows are left in the store. A
/// deployment with 100,000 closed trades reads about as much as one with 100.
async fn load_trades<S>(
    store: &S,
    deployment: &TickDeployment,
    state: &mut TickState,
    at: DateTime<Utc>,
) -> Result<(), db::DbError>
where
    S: LedgerStore + Sync,
{
    let d = deployment.deployment_id;
    let memory = &deployment.skill.context.memory;
    let reflects =
        memory.enabled && memory.reflection.cadence != skill_schema::ReflectionCadence::Off;
    let mut rows = match (reflects, state.last_note) {
        (true, None) => store.all_trades(d).await?,
        (_, last) => {
            let mut rows = store.open_trades(d).await?;
            rows.extend(store.closed_trades(d, at, types::MAX_MEMORY_K).await?);
            if let (true, Some(last)) = (reflects, last) {
                rows.extend(
                    store
                        .closed_trades_exited_after(d, last.window_end, at)
                        .await?,
                );
            }
            rows
        }
    };
    // Oldest entry first, each row once (as `all_trades` reads them).
    rows.sort_by(|a, b| a.entry_tick_at.cmp(&b.entry_tick_at).then(a.id.cmp(&b.id)));
    rows.dedup_by_key(|r| r.id);
    let closed_here = rows
        .iter()
        .filter(|r| r.status == TradeStatus::Closed)
        .count() as u64;
    // The cadence's second count, "closed since the note", is the note's total against these
    // rows: the closes after the note (one indexed range) are all among them (they exit after
    // its window), so the note's total is what of `rows` was closed by then. No count over the
    // whole ledger.
    if let Some(last) = state.last_note.as_mut() {
        let since = store.count_closed_between(d, last.generated_at, at).await?;
        last.closed_trades_total =
            Some(u32::try_from(closed_here.saturating_sub(since)).unwrap_or(u32::MAX));
    }
    state.set_trades(rows, 0);
    Ok(())
}

/// Reads the reflection side of a deployment's [`TickState`] from the store, as of `at`:
/// - `notes`: the note in force at `at` (`NoteStore::active_note`: never a note pending review;
///   an accepted one from its acceptance) — the deployment's own, or, when it has none in force,
///   the skill-scoped note of its skill version a person promoted ([`promote_note`]; ADR-0017:
///   the deployment's note first);
/// - `last_note`: the latest note generated at or before `at`, flagged or not, with the number
///   of ledger rows closed at or before its time (`LedgerStore::count_closed_trades`);
/// - `last_reflection_failure`: the latest run, when it failed.
///
/// A live runner calls it before every tick: reflections run off the tick path (and may finish
/// on another process), so the store, not the carried state, is their source of truth — and an
/// unfinished one (the runner died) leaves nothing, so the cadence finds it due again.
///
/// # Errors
/// [`db::DbError`] when the store cannot be read.
pub async fn load_reflection_state<S>(
    store: &S,
    deployment: &TickDeployment,
    state: &mut TickState,
    at: DateTime<Utc>,
) -> Result<(), db::DbError>
where
    S: LedgerStore + NoteStore + Sync,
{
    load_reflection_side(store, deployment, state, at, true).await
}

/// [`load_reflection_state`]; without `count_total`, the last note's closed total is left for
/// `load_trades` to set against the rows it reads (no count over the whole ledger).
async fn load_reflection_side<S>(
    store: &S,
    deployment: &TickDeployment,
    state: &mut TickState,
    at: DateTime<Utc>,
    count_total: bool,
) -> Result<(), db::DbError>
where
    S: LedgerStore + NoteStore + Sync,
{
    let deployment_id = deployment.deployment_id;
    let scope = db::NoteScope::Deployment(deployment_id);
    let mut in_force = store.active_note(scope, at).await?;
    if in_force.is_none() {
        let skill = db::NoteScope::Skill {
            skill_id: deployment.skill_id,
            skill_version: deployment.skill_version,
        };
        in_force = store.active_note(skill, at).await?;
    }
    state.notes = in_force.map(|n| draft_of(&n)).into_iter().collect();
    // The newest note is the one a live tick needs; a restore at an earlier time reads further.
    let mut latest = store.note_history(scope, 1).await?;
    if latest.first().is_some_and(|n| n.generated_at > at) {
        latest = store.note_history(scope, 10_000).await?;
    }
    state.last_note = match latest.iter().find(|n| n.generated_at <= at) {
        Some(n) => {
            let closed = if count_total {
                let n = store
                    .count_closed_trades(deployment_id, n.generated_at)
                    .await?;
                Some(u32::try_from(n).unwrap_or(u32::MAX))
            } else {
                None
            };
            Some(LastNote {
                generated_at: n.generated_at,
                window_end: n.content.window_end,
                closed_trades_total: closed,
            })
        }
        None => None,
    };
    state.last_reflection_failure = store
        .reflection_runs(scope, 1)
        .await?
        .into_iter()
        .find(|r| matches!(r.outcome, RunOutcome::Failed { .. }) && r.started_at <= at)
        .map(|r| r.started_at);
    Ok(())
}

/// A stored note as the draft the tick injects.
pub(crate) fn draft_of(n: &types::ReflectionNote) -> NoteDraft {
    NoteDraft {
        skill_id: n.skill_id,
        skill_version: u32::try_from(n.skill_version).unwrap_or(0),
        deployment_id: n.deployment_id,
        generated_at: n.generated_at,
        content: n.content.clone(),
        cut: false,
        lint: reflection::LintResult {
            // A flagged note a person accepted is in force; one pending review is not.
            flagged: n.status == types::NoteStatus::PendingReview,
            reasons: n.lint.iter().map(|l| l.reason.clone()).collect(),
        },
    }
}
