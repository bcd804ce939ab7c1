//! The backtest's store adapter: ticks are written in batches, one transaction per
//! [`BATCH_TICKS`] ticks ([`TickStore::record_ticks`]), instead of one per tick, and a batch is
//! written while the next one is being ticked.
//!
//! A backtest owns its deployment (registered fresh, no other writer), so nothing can have
//! recorded its ticks before: a buffered tick is reported [`TickOutcome::Recorded`] at once and
//! the batch is checked when it is written — a tick the store already held is an error then.
//!
//! **Overlap.** A full batch becomes the write in flight. On a multi-threaded tokio runtime
//! (`sim-worker`'s) it is a task of its own ([`tokio::spawn`]): a worker thread drives it, with
//! every statement's round trip to the store's driver (sqlx runs SQLite on a thread of its own),
//! while the tick's thread goes on ticking and only looks whether it has finished
//! ([`tokio::task::JoinHandle::is_finished`]: no waker, no wake-up of the tick's thread). On a
//! current-thread runtime, or none, it is a future owned here, polled once by every later tick
//! (in [`TickStore::record_tick_owned`], with the tick's waker), so the store's driver executes
//! one statement while the tick thread computes the next tick. The tick never waits for a
//! statement unless the next batch is full before the last one is written (at most one batch in
//! flight, so memory stays bounded by two batches).
//!
//! Every other read or write of ticks (snapshot reads, the runner state) first finishes the
//! write in flight and writes the pending ticks, so it sees every tick that ran. Notes and
//! reflection runs only finish the write in flight: they neither reference nor read ticks (a
//! reflection reads the tick's in-memory state), so the buffered ticks stay buffered and the
//! batches stay full instead of being cut at every reflection — the store ends with the same
//! rows, only a crash can leave a note stored before the ticks just before it. The caller
//! flushes at the end, and on an error, so the store holds every tick that ran. A batch that
//! fails is reported by the tick that finds it finished, or by the flush; the ticks buffered
//! after it are dropped then, so the store never holds a later tick without an earlier one.

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
type Write = Pin<Box<dyn Future<Output = Result<(), DbError>> + Send + 'static>>;

/// The write in flight: a task of its own, or a future this adapter polls.
enum InFlight {
    Spawned(tokio::task::JoinHandle<Result<(), DbError>>),
    Polled(Write),
}

pub(crate) struct WriteBehind<S> {
    store: S,
    pending: Mutex<Vec<TickRecord>>,
    in_flight: Mutex<Option<InFlight>>,
    /// The runtime to spawn writes on, when it is multi-threaded.
    spawn_on: Option<tokio::runtime::Handle>,
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

impl<S> WriteBehind<S>
where
    S: TickStore + NoteStore + Clone + Send + Sync + 'static,
{
    /// Writes to a clone of `store` (the handle a write in flight owns).
    pub(crate) fn new(store: &S) -> Self {
        let spawn_on = tokio::runtime::Handle::try_current().ok().filter(|h| {
            matches!(
                h.runtime_flavor(),
                tokio::runtime::RuntimeFlavor::MultiThread
            )
        });
        Self {
            store: store.clone(),
            pending: Mutex::new(Vec::with_capacity(BATCH_TICKS)),
            in_flight: Mutex::new(None),
            spawn_on,
        }
    }

    /// The store it writes to (for a write that must not wait for the batch: call
    /// [`WriteBehind::flush`] first).
    pub(crate) const fn inner(&self) -> &S {
        &self.store
    }

    /// Writes `batch` in one transaction.
    ///
    /// # Errors
    /// [`DbError`] from the store (nothing of the batch is written then), or
    /// [`DbError::Invalid`] when the store already held one of the ticks: another writer
    /// shares this backtest's deployment.
    async fn write(store: S, batch: Vec<TickRecord>) -> Result<(), DbError> {
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

    /// Looks at the write in flight once (a polled one moves on by a statement); `Ok` when
    /// there is none or it is still going.
    async fn poll_in_flight(&self) -> Result<(), DbError> {
        let done = std::future::poll_fn(|cx| {
            let mut slot = self
                .in_flight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let polled = match slot.as_mut() {
                None => return Poll::Ready(Ok(())),
                // Not polled until finished: polling would register this tick's waker, and the
                // task would wake the tick's thread when it ends.
                Some(InFlight::Spawned(task)) if !task.is_finished() => {
                    return Poll::Ready(Ok(()));
                }
                Some(InFlight::Spawned(task)) => Pin::new(task).poll(cx).map(joined),
                Some(InFlight::Polled(write)) => write.as_mut().poll(cx),
            };
            match polled {
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
        let result = match write {
            Some(InFlight::Spawned(task)) => joined(task.await),
            Some(InFlight::Polled(write)) => write.await,
            None => Ok(()),
        };
        result.map_err(|e| self.failed(e))
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
        Self::write(self.store.clone(), batch).await
    }

    /// Starts writing the buffered ticks behind the next ones, as a batch of their own. The
    /// backtest calls it when a batch is full and after a reflection: the reflection's writes
    /// have just waited for the batch before, and the next ones are a reflection away, so the
    /// batch is written while the ticks run instead of holding up the next reflection.
    ///
    /// # Errors
    /// As [`WriteBehind::write`], for the batch in flight before.
    pub(crate) async fn write_pending_behind(&self) -> Result<(), DbError> {
        // At most one batch in flight: the last one must be written before this one starts.
        self.finish_in_flight().await?;
        let batch = take(&self.pending);
        if batch.is_empty() {
            return Ok(());
        }
        let write = self.start(batch);
        *self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(write);
        // A polled write's first statement goes out now.
        self.poll_in_flight().await
    }

    /// Starts writing `batch` behind the ticks (nothing may be in flight).
    fn start(&self, batch: Vec<TickRecord>) -> InFlight {
        let write = Self::write(self.store.clone(), batch);
        match &self.spawn_on {
            Some(runtime) => InFlight::Spawned(runtime.spawn(write)),
            None => InFlight::Polled(Box::pin(write)),
        }
    }
}

/// A spawned write's result; a write that panicked panics here, on the tick's thread.
fn joined(joined: Result<Result<(), DbError>, tokio::task::JoinError>) -> Result<(), DbError> {
    match joined {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(DbError::Invalid {
            what: "backtest batch",
            detail: format!("the batch's write was cancelled before it finished: {e}"),
        }),
    }
}

impl<S> TickStore for WriteBehind<S>
where
    S: TickStore + NoteStore + Clone + Send + Sync + 'static,
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
            pending.len() >= BATCH_TICKS
        };
        if full {
            self.write_pending_behind().await?;
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

impl<S> NoteStore for WriteBehind<S>
where
    S: TickStore + NoteStore + Clone + Send + Sync + 'static,
{
    async fn insert_note(&self, note: &NewNote) -> Result<ReflectionNote, DbError> {
        self.finish_in_flight().await?;
        self.store.insert_note(note).await
    }

    async fn get_note(&self, id: Uuid) -> Result<ReflectionNote, DbError> {
        self.finish_in_flight().await?;
        self.store.get_note(id).await
    }

    async fn accept_note(&self, id: Uuid, at: DateTime<Utc>) -> Result<ReflectionNote, DbError> {
        self.finish_in_flight().await?;
        self.store.accept_note(id, at).await
    }

    async fn active_note(
        &self,
        scope: NoteScope,
        as_of: DateTime<Utc>,
    ) -> Result<Option<ReflectionNote>, DbError> {
        self.finish_in_flight().await?;
        self.store.active_note(scope, as_of).await
    }

    async fn note_history(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> Result<Vec<ReflectionNote>, DbError> {
        self.finish_in_flight().await?;
        self.store.note_history(scope, limit).await
    }

    async fn record_reflection_run(&self, run: &ReflectionRun) -> Result<(), DbError> {
        self.finish_in_flight().await?;
        self.store.record_reflection_run(run).await
    }

    async fn reflection_runs(
        &self,
        scope: NoteScope,
        limit: u32,
    ) -> Result<Vec<ReflectionRun>, DbError> {
        self.finish_in_flight().await?;
        self.store.reflection_runs(scope, limit).await
    }
}
