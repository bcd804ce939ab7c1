//! The backtest's store adapter: ticks are written in batches, one transaction per
//! [`BATCH_TICKS`] ticks ([`TickStore::record_ticks`]), instead of one per tick, and a batch is
//! written while the next one is being ticked.
//!
//! A backtest owns its deployment (registered fresh, no other writer), so nothing can have
//! recorded its ticks before: a buffered tick is reported [`TickOutcome::Recorded`] at once and
//! the batch is checked when it is written — a tick the store already held is an error then.
//!
//! **Overlap without a thread of its own.** A full batch becomes the write in flight: a future
//! owned here, polled once by every later tick (in [`TickStore::record_tick_owned`], on the
//! tick's own thread, with the tick's waker). Each poll hands the next statement to the store's
//! driver (sqlx runs SQLite on a worker thread of its own), which executes it while the tick
//! thread goes on ticking; the tick never waits for a statement unless the next batch is full
//! before the last one is written (at most one batch in flight, so memory stays bounded by two
//! batches). Before, every batch was awaited where it filled: each statement was a round trip
//! between the two threads, and the tick thread idled through SQLite's work.
//!
//! Every other call (notes, reflection runs, snapshot reads) first finishes the write in flight
//! and writes the pending ticks, so the store sees the same writes in the same order as without
//! batching. The caller flushes at the end, and on an error, so the store holds every tick that
//! ran. A batch that fails is reported by the tick that polls it, or by the flush; the ticks
//! buffered after it are dropped then, so the store never holds a later tick without an earlier
//! one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::Poll;

use chrono::{DateTime, Utc};
use db::{
    DbError, DecisionSnapshot, NewNote, NoteScope, NoteStore, ReflectionRun, StoredRunnerState,
    TickOutcome, TickRecord, TickStore,
};
use types::ReflectionNote;
use uuid::Uuid;

/// Ticks per transaction: a few megabytes of snapshots.
pub const BATCH_TICKS: usize = 256;

/// A batch being written: [`WriteBehind::write`] of it.
type InFlight<'s> = Pin<Box<dyn Future<Output = Result<(), DbError>> + Send + 's>>;

pub(crate) struct WriteBehind<'s, S> {
    store: &'s S,
    pending: Mutex<Vec<TickRecord>>,
    in_flight: Mutex<Option<InFlight<'s>>>,
}

/// Takes the value out of a lock (a poisoned lock only means another thread panicked while it
/// held it: the records and the future are still whole).
fn take<T: Default>(lock: &Mutex<T>) -> T {
    std::mem::take(
        &mut *lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

impl<'s, S> WriteBehind<'s, S>
where
    S: TickStore + NoteStore + Sync,
{
    pub(crate) fn new(store: &'s S) -> Self {
        Self {
            store,
            pending: Mutex::new(Vec::with_capacity(BATCH_TICKS)),
            in_flight: Mutex::new(None),
        }
    }

    /// The store it writes to (for a write that must not wait for the batch: call
    /// [`WriteBehind::flush`] first).
    pub(crate) const fn inner(&self) -> &'s S {
        self.store
    }

    /// Writes `batch` in one transaction.
    ///
    /// # Errors
    /// [`DbError`] from the store (nothing of the batch is written then), or
    /// [`DbError::Invalid`] when the store already held one of the ticks: another writer
    /// shares this backtest's deployment.
    async fn write(store: &S, batch: Vec<TickRecord>) -> Result<(), DbError> {
        let outcomes = store.record_ticks(&batch).await?;
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

    /// Drops the buffered ticks after a batch failed: they must not be written without it.
    fn failed(&self, e: DbError) -> DbError {
        drop(take(&self.pending));
        e
    }

    /// Polls the write in flight once (it goes on between polls); `Ok` when there is none or it
    /// is still going.
    async fn poll_in_flight(&self) -> Result<(), DbError> {
        let done = std::future::poll_fn(|cx| {
            let mut slot = self
                .in_flight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let Some(write) = slot.as_mut() else {
                return Poll::Ready(Ok(()));
            };
            match write.as_mut().poll(cx) {
                Poll::Ready(result) => {
                    *slot = None;
                    Poll::Ready(result)
                }
                Poll::Pending => Poll::Ready(Ok(())),
            }
        })
        .await;
        done.map_err(|e| self.failed(e))
    }

    /// Waits for the write in flight, if any.
    async fn finish_in_flight(&self) -> Result<(), DbError> {
        let write = take(&self.in_flight);
        match write {
            Some(write) => write.await.map_err(|e| self.failed(e)),
            None => Ok(()),
        }
    }

    /// Finishes the write in flight, then writes the pending ticks in one transaction.
    ///
    /// # Errors
    /// As [`WriteBehind::write`], for the batch in flight or the pending one.
    pub(crate) async fn flush(&self) -> Result<(), DbError> {
        self.finish_in_flight().await?;
        let batch = take(&self.pending);
        if batch.is_empty() {
            return Ok(());
        }
        Self::write(self.store, batch).await
    }
}

impl<S> TickStore for WriteBehind<'_, S>
where
    S: TickStore + NoteStore + Sync,
{
    async fn record_tick(&self, tick: &TickRecord) -> Result<TickOutcome, DbError> {
        self.record_tick_owned(tick.clone()).await
    }

    async fn record_tick_owned(&self, tick: TickRecord) -> Result<TickOutcome, DbError> {
        let snapshot_id = tick.snapshot.id;
        // The batch in flight moves on by one step per tick; its failure is this tick's.
        self.poll_in_flight().await?;
        let full = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.push(tick);
            (pending.len() >= BATCH_TICKS).then(|| std::mem::take(&mut *pending))
        };
        if let Some(batch) = full {
            // At most one batch in flight: the last one must be written before this one starts.
            self.finish_in_flight().await?;
            let store = self.store;
            let write: InFlight<'_> = Box::pin(Self::write(store, batch));
            *self
                .in_flight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(write);
            // Its first statement goes out now.
            self.poll_in_flight().await?;
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
    S: TickStore + NoteStore + Sync,
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
