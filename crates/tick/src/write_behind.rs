//! The backtest's store adapter: ticks are written in batches, one transaction per
//! [`BATCH_TICKS`] ticks ([`TickStore::record_ticks`]), instead of one per tick.
//!
//! A backtest owns its deployment (registered fresh, no other writer), so nothing can have
//! recorded its ticks before: a buffered tick is reported [`TickOutcome::Recorded`] at once and
//! the batch is checked when it is written — a tick the store already held is an error then.
//! Every other call (notes, reflection runs, snapshot reads) writes the pending ticks first, so
//! the store sees the same writes in the same order as without batching. The caller flushes at
//! the end, and on an error, so the store holds every tick that ran.

use std::sync::Mutex;

use chrono::{DateTime, Utc};
use db::{
    DbError, DecisionSnapshot, NewNote, NoteScope, NoteStore, ReflectionRun, StoredRunnerState,
    TickOutcome, TickRecord, TickStore,
};
use types::ReflectionNote;
use uuid::Uuid;

/// Ticks per transaction: a few megabytes of snapshots.
pub const BATCH_TICKS: usize = 256;

pub(crate) struct WriteBehind<'s, S> {
    store: &'s S,
    pending: Mutex<Vec<TickRecord>>,
}

impl<'s, S> WriteBehind<'s, S>
where
    S: TickStore + NoteStore,
{
    pub(crate) fn new(store: &'s S) -> Self {
        Self {
            store,
            pending: Mutex::new(Vec::with_capacity(BATCH_TICKS)),
        }
    }

    /// The store it writes to (for a write that must not wait for the batch: call
    /// [`WriteBehind::flush`] first).
    pub(crate) const fn inner(&self) -> &'s S {
        self.store
    }

    fn take(&self) -> Vec<TickRecord> {
        // A poisoned lock only means another thread panicked while pushing: the ticks it holds
        // are still whole records.
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        std::mem::take(&mut *pending)
    }

    /// Writes the pending ticks in one transaction.
    ///
    /// # Errors
    /// [`DbError`] from the store (nothing of the batch is written then), or
    /// [`DbError::Invalid`] when the store already held one of the ticks: another writer
    /// shares this backtest's deployment.
    pub(crate) async fn flush(&self) -> Result<(), DbError> {
        let batch = self.take();
        if batch.is_empty() {
            return Ok(());
        }
        let outcomes = self.store.record_ticks(&batch).await?;
        if let Some((tick, _)) = batch
            .iter()
            .zip(&outcomes)
            .find(|(_, o)| matches!(o, TickOutcome::AlreadyRecorded { .. }))
        {
            return Err(DbError::Invalid {
                what: "backtest tick",
                detail: format!(
                    "the store already held the tick at {} of deployment {}: another writer \
                     shares this backtest's deployment (its other ticks were written)",
                    tick.snapshot.tick_at, tick.snapshot.deployment_id
                ),
            });
        }
        Ok(())
    }
}

impl<S> TickStore for WriteBehind<'_, S>
where
    S: TickStore + NoteStore,
{
    async fn record_tick(&self, tick: &TickRecord) -> Result<TickOutcome, DbError> {
        self.record_tick_owned(tick.clone()).await
    }

    async fn record_tick_owned(&self, tick: TickRecord) -> Result<TickOutcome, DbError> {
        let snapshot_id = tick.snapshot.id;
        let full = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.push(tick);
            pending.len() >= BATCH_TICKS
        };
        if full {
            self.flush().await?;
        }
        Ok(TickOutcome::Recorded { snapshot_id })
    }

    async fn record_ticks(&self, ticks: &[TickRecord]) -> Result<Vec<TickOutcome>, DbError> {
        self.flush().await?;
        self.store.record_ticks(ticks).await
    }

    async fn get_snapshot(&self, id: Uuid) -> Result<DecisionSnapshot, DbError> {
        self.flush().await?;
        self.store.get_snapshot(id).await
    }

    async fn last_snapshot_before(
        &self,
        deployment_id: Uuid,
        before: DateTime<Utc>,
    ) -> Result<Option<DecisionSnapshot>, DbError> {
        self.flush().await?;
        self.store.last_snapshot_before(deployment_id, before).await
    }

    async fn runner_state(
        &self,
        deployment_id: Uuid,
    ) -> Result<Option<StoredRunnerState>, DbError> {
        self.flush().await?;
        self.store.runner_state(deployment_id).await
    }

    async fn list_snapshots(
        &self,
        deployment_id: Uuid,
        limit: u32,
    ) -> Result<Vec<DecisionSnapshot>, DbError> {
        self.flush().await?;
        self.store.list_snapshots(deployment_id, limit).await
    }
}

impl<S> NoteStore for WriteBehind<'_, S>
where
    S: TickStore + NoteStore,
{
    async fn insert_note(&self, note: &NewNote) -> Result<ReflectionNote, DbError> {
        self.flush().await?;
        self.store.insert_note(note).await
    }

    async fn get_note(&self, id: Uuid) -> Result<ReflectionNote, DbError> {
        self.flush().await?;
        self.store.get_note(id).await
    }

    async fn accept_note(&self, id: Uuid, at: DateTime<Utc>) -> Result<ReflectionNote, DbError> {
        self.flush().await?;
        self.store.accept_note(id, at).await
    }

    async fn active_note(
        &self,
        scope: NoteScope,
        as_of: DateTime<Utc>,
    ) -> Result<Option<ReflectionNote>, DbError> {
        self.flush().await?;
        self.store.active_note(scope, as_of).await
    }

    async fn note_history(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> Result<Vec<ReflectionNote>, DbError> {
        self.flush().await?;
        self.store.note_history(scope, limit).await
    }

    async fn record_reflection_run(&self, run: &ReflectionRun) -> Result<(), DbError> {
        self.flush().await?;
        self.store.record_reflection_run(run).await
    }

    async fn reflection_runs(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> Result<Vec<ReflectionRun>, DbError> {
        self.flush().await?;
        self.store.reflection_runs(scope, limit).await
    }
}
