//! The backtest's store adapter: ticks are written in batches, one transaction per
//! [`BATCH_TICKS`] ticks ([`TickStore::record_ticks`]), instead of one per tick, and a batch is
//! written while the next one is being ticked.
//!
//! A backtest owns its deployment (registered fresh, no other writer), so nothing can have
//! recorded its ticks before: a buffered tick is reported [`RecordOutcome::Recorded`] at once and
//! the batch is checked when it is written — a tick the store already held is an error then.
//! A batch goes to the store as [`PlannedTicks`] ([`TickStore::record_ticks`]): its market
//! snapshots computed and its prompt lines planned, by the writer, or by the tick's thread when
//! it would otherwise wait for the store (see `write_pending_behind`).
//!
//! **Overlap.** A full batch becomes the write in flight. On a multi-threaded tokio runtime
//! (`sim-worker`'s) it is a task of its own ([`tokio::spawn`]): a worker thread drives it, with
//! every statement's round trip to the store's driver (sqlx runs SQLite on a thread of its own),
//! while the tick's thread goes on ticking and only looks whether it has finished
//! ([`tokio::task::JoinHandle::is_finished`]: no waker, no wake-up of the tick's thread). On a
//! current-thread runtime, or none, it is a future owned here, polled once by every later tick
//! (when the tick hands its record over, [`tick::Recorder::record`], with the tick's waker), so
//! the store's driver executes one statement while the tick thread computes the next tick.
//!
//! **Queue.** A spawned write may have one batch queued behind it: a batch that fills while
//! the one before is still being written goes to a task that waits for that write, then makes
//! the batch ready and writes it, on the writer's thread — the ticks go on. A batch that fills
//! while one is still queued finds the store's side a whole batch behind: the tick's thread
//! makes it ready itself, then waits for the queue, and so it does with every batch that fills
//! while a write is in flight, until one finds the store idle — from then on they are queued
//! again. So the preparation moves to whichever side has time, with the host's load, and
//! memory stays bounded by three batches (one written, one queued, one buffering). A polled
//! write has no queue: the tick's thread drives it, and waits for it when the next batch is
//! full.
//!
//! A reflection that ran after a tick is stored the same way: the backtest runs it without the
//! store ([`tick::reflect_due`]: it owns a fresh deployment, so there is nothing to
//! be idempotent against) and buffers its note and run (`WriteBehind::defer_reflection`); they
//! go to the store with the batch they fall in, after its ticks, in the order they ran, in the
//! batch's transaction ([`TickStore::record_ticks`]). The tick's thread makes
//! no round trip to the store for it, and a reflection does not cut a batch short: the
//! README's backtest writes 20 batches instead of 72, and SQLite rewrites its indexes' pages
//! (whose snapshot ids are random) about a quarter as often; nor does it commit on its own
//! (two commits a reflection had cost ≈10 % of the run's wall time).
//!
//! A store still being prepared (a new file's schema and the deployment's registration, a task
//! of the caller's: [`RunOptions::store_ready`](crate::RunOptions::store_ready)) is waited for
//! by the first write and by any flush, never by a tick that only buffers: the first batch
//! fills while it runs. Its failure is that write's (or flush's), reported as a batch's is.
//!
//! Before the backtest reads the store (a skill that recalls its outcome memory), it flushes:
//! the write in flight is finished and what is buffered written, so every read sees every write
//! made before it (a buffered reflection's note is the only write that may land after ticks
//! that ran after it, in the same batch; nothing stored refers from a tick to a note). The
//! backtest flushes at the end, and on an error, so the store holds every tick that ran. A write that fails — a tick
//! the store already held, a note it refused (nothing of its batch is written then) — is
//! reported by the tick that finds it finished, or by the flush, and fails the run; what was
//! buffered after it is dropped then, so the store never holds a later tick without an
//! earlier one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;

use db::{DbError, PlannedTicks, RecordOutcome, TickRecord, TickStore};
use tick::{PendingSnapshot, Recorder, ReflectionWrites};

use crate::StoreReady;

/// Ticks per transaction: a few megabytes of snapshots.
pub const BATCH_TICKS: usize = 256;

/// A batch being written: [`WriteBehind::write`] of it, ending with the batch's records.
type Write = Pin<Box<dyn Future<Output = Result<PlannedTicks, DbError>> + Send + 'static>>;

/// What one write stores: ticks, then the reflections that ran after them.
struct Batch {
    ticks: BatchTicks,
    reflections: Vec<ReflectionWrites>,
}

/// A batch's ticks: as buffered, or made ready for the store on the tick's thread.
enum BatchTicks {
    Buffered {
        ticks: Vec<TickRecord>,
        /// The market snapshots of `ticks` still to be computed, with the index of their tick
        /// ([`PendingSnapshot`]): computed by the write, on the writer's thread.
        snapshots: Vec<(usize, PendingSnapshot)>,
    },
    /// Complete, their prompt lines planned ([`WriteBehind::prepare_here`]).
    Prepared(PlannedTicks),
}

/// The ticks buffered for the next batch.
struct Pending {
    ticks: Vec<TickRecord>,
    snapshots: Vec<(usize, PendingSnapshot)>,
    /// The buffered ticks made ready for the store ([`WriteBehind::prepare_here`]): `ticks`
    /// and `snapshots` are empty while it is set.
    prepared: Option<PlannedTicks>,
}

impl Pending {
    /// No tick yet, room for a full batch.
    fn empty() -> Self {
        Self {
            ticks: Vec::with_capacity(BATCH_TICKS),
            snapshots: Vec::new(),
            prepared: None,
        }
    }
}

/// The write in flight: a task of its own, or a future this adapter polls.
enum InFlight {
    Spawned {
        task: tokio::task::JoinHandle<Result<PlannedTicks, DbError>>,
        /// The write `task` waits for before it writes its own batch (see
        /// `WriteBehind::chain`), cancelled with it.
        behind: Option<tokio::task::AbortHandle>,
    },
    Polled(Write),
}

pub(crate) struct WriteBehind<S> {
    store: S,
    pending: Mutex<Pending>,
    /// Reflections run after the pending ticks, stored after them.
    reflections: Mutex<Vec<ReflectionWrites>>,
    in_flight: Mutex<Option<InFlight>>,
    /// The runtime to spawn writes on, when it is multi-threaded.
    spawn_on: Option<tokio::runtime::Handle>,
    /// The store's preparation (its schema, the deployment's registration) when the backtest
    /// started before it finished ([`WriteBehind::gated`]): awaited by the first write, and by
    /// any read, before the store is used.
    ready: Mutex<Option<StoreReady>>,
    /// Whether the tick's thread makes full batches ready while a write is in flight (set
    /// when a batch found the queue taken, cleared when one found the store idle), instead of
    /// queueing them for the writer.
    tick_prepares: AtomicBool,
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
    S: TickStore + Clone + Send + Sync + 'static,
{
    /// Writes to a clone of `store` (the handle a write in flight owns). With `ready`, the
    /// store is still being prepared (its schema, the deployment's registration): the ticks
    /// buffer meanwhile, the first write (or read) waits for it, and its failure is that
    /// write's.
    pub(crate) fn gated(store: &S, ready: Option<StoreReady>) -> Self {
        let spawn_on = tokio::runtime::Handle::try_current().ok().filter(|h| {
            matches!(
                h.runtime_flavor(),
                tokio::runtime::RuntimeFlavor::MultiThread
            )
        });
        Self {
            store: store.clone(),
            pending: Mutex::new(Pending::empty()),
            reflections: Mutex::new(Vec::new()),
            in_flight: Mutex::new(None),
            spawn_on,
            ready: Mutex::new(ready),
            tick_prepares: AtomicBool::new(false),
        }
    }

    /// The multi-threaded runtime its writes are spawned on (`None`: they are polled).
    pub(crate) fn spawn_on(&self) -> Option<&tokio::runtime::Handle> {
        self.spawn_on.as_ref()
    }

    /// The store it writes to (for a write that must not wait for the batch: call
    /// [`WriteBehind::flush`] first).
    pub(crate) const fn inner(&self) -> &S {
        &self.store
    }

    /// Writes `batch`: its ticks and then its reflections' notes and runs, in one transaction
    /// ([`TickStore::record_ticks`]: a commit per reflection cost the README
    /// backtest ≈10 % of its wall time). Returns the written records, for the tick's thread
    /// to free: it allocated them (≈1.2M instructions a batch the writer would spend).
    ///
    /// # Errors
    /// [`DbError`] from the store (nothing of the batch is written then), or
    /// [`DbError::Invalid`] when the store already held one of the ticks: another writer
    /// shares this backtest's deployment.
    async fn write(store: S, batch: Batch) -> Result<PlannedTicks, DbError> {
        let ticks = match batch.ticks {
            BatchTicks::Buffered {
                mut ticks,
                snapshots,
            } => {
                complete(&mut ticks, snapshots)?;
                PlannedTicks::new(ticks)
            }
            BatchTicks::Prepared(ticks) => ticks,
        };
        let reflections: Vec<_> = batch
            .reflections
            .into_iter()
            .map(|r| (r.note, r.run))
            .collect();
        let outcomes = store.record_ticks(&ticks, &reflections).await?;
        match ticks
            .ticks()
            .iter()
            .zip(&outcomes)
            .find(|(_, o)| matches!(o, RecordOutcome::AlreadyRecorded { .. }))
        {
            Some((tick, _)) => Err(DbError::Invalid {
                what: "backtest tick",
                detail: format!(
                    "the store already held the tick at {} of deployment {}: another writer \
                     shares this backtest's deployment (its other ticks were written)",
                    tick.snapshot.tick_at, tick.snapshot.deployment_id
                ),
            }),
            None => Ok(ticks),
        }
    }

    /// The buffered ticks and reflections, taken; `None` when there are none.
    fn take_batch(&self) -> Option<Batch> {
        // The next batch's buffer at its full size: grown from empty, it was reallocated
        // (its records copied) eight times a batch.
        let Pending {
            ticks,
            snapshots,
            prepared,
        } = std::mem::replace(
            &mut *self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Pending::empty(),
        );
        let reflections = take(&self.reflections);
        let ticks = match prepared {
            Some(prepared) if !prepared.ticks().is_empty() => BatchTicks::Prepared(prepared),
            _ if !ticks.is_empty() => BatchTicks::Buffered { ticks, snapshots },
            _ if reflections.is_empty() => return None,
            _ => BatchTicks::Buffered {
                ticks: Vec::new(),
                snapshots: Vec::new(),
            },
        };
        Some(Batch { ticks, reflections })
    }

    /// Buffers a reflection's writes, to be stored with the batch being buffered, after its
    /// ticks (see [`WriteBehind::write`]).
    pub(crate) fn defer_reflection(&self, writes: ReflectionWrites) {
        self.reflections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(writes);
    }

    /// Drops the buffered ticks after a batch failed: they must not be written without it.
    fn failed(&self, e: DbError) -> DbError {
        drop(self.take_batch());
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
                Some(InFlight::Spawned { task, .. }) if !task.is_finished() => {
                    return Poll::Ready(Ok(()));
                }
                Some(InFlight::Spawned { task, .. }) => Pin::new(task).poll(cx).map(joined),
                Some(InFlight::Polled(write)) => write.as_mut().poll(cx),
            };
            match polled {
                Poll::Ready(result) => {
                    *slot = None;
                    // The written records are freed here, by the thread that allocated them.
                    Poll::Ready(result.map(drop))
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
            Some(InFlight::Spawned { task, .. }) => joined(task.await).map(drop),
            Some(InFlight::Polled(write)) => write.await.map(drop),
            None => Ok(()),
        };
        result.map_err(|e| self.failed(e))
    }

    /// Finishes the write in flight, then writes the pending ticks in one transaction.
    ///
    /// # Errors
    /// As [`WriteBehind::write`], for the batch in flight or the pending one.
    pub(crate) async fn flush(&self) -> Result<(), DbError> {
        // The last batch is written from here (this thread would only wait for the one in
        // flight): made ready for the store first, beside that write.
        self.prepare_here().map_err(|e| self.failed(e))?;
        self.finish_in_flight().await?;
        if let Some(ready) = take(&self.ready) {
            prepared(ready.await).map_err(|e| self.failed(e))?;
        }
        match self.take_batch() {
            Some(batch) => Self::write(self.store.clone(), batch).await.map(drop),
            None => Ok(()),
        }
    }

    /// Starts writing the buffered ticks and reflections behind the next ticks, as a batch of
    /// their own, when a batch is full: never waited for unless the batch before is still
    /// being written.
    ///
    /// # Errors
    /// As [`WriteBehind::write`], for the batch in flight before.
    async fn write_pending_behind(&self) -> Result<(), DbError> {
        // At most one write in flight and one batch queued behind it (`chain`: the writer
        // makes it ready after the write before). With the queue taken, this thread would only
        // wait: it makes the pending batch ready for the store itself meanwhile — its market
        // snapshots and the plan of its prompt lines — (the same rows either way), and keeps
        // doing so while the store is busy at a batch's end: its side is the slower one.
        if self.writing() {
            if !self.tick_prepares.load(Ordering::Relaxed) {
                if self.chain() {
                    return Ok(());
                }
                // The queue is taken: the store is a whole batch behind.
                self.tick_prepares.store(true, Ordering::Relaxed);
            }
            self.prepare_here().map_err(|e| self.failed(e))?;
        } else {
            // The store caught up with the ticks: it has time to prepare the next batches.
            self.tick_prepares.store(false, Ordering::Relaxed);
        }
        self.finish_in_flight().await?;
        let Some(batch) = self.take_batch() else {
            return Ok(());
        };
        let write = self.start(batch);
        *self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(write);
        // A polled write's first statement goes out now.
        self.poll_in_flight().await
    }

    /// Whether a spawned write is still running (a polled one runs only when this thread
    /// polls it).
    fn writing(&self) -> bool {
        matches!(
            &*self
                .in_flight
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Some(InFlight::Spawned { task, .. }) if !task.is_finished()
        )
    }

    /// Makes the buffered ticks ready for the store, here: computes their market snapshots
    /// into their records and plans their prompt lines ([`PlannedTicks`]).
    ///
    /// # Errors
    /// As [`PendingSnapshot::finish_into`].
    fn prepare_here(&self) -> Result<(), DbError> {
        let mut pending = self
            .pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if pending.ticks.is_empty() {
            return Ok(());
        }
        let mut ticks = std::mem::take(&mut pending.ticks);
        complete(&mut ticks, std::mem::take(&mut pending.snapshots))?;
        pending.prepared = Some(PlannedTicks::new(ticks));
        Ok(())
    }

    /// Buffers `tick` (and its market snapshot still to be computed), and starts writing the
    /// batch behind the next ticks when it is full.
    async fn buffer(
        &self,
        tick: TickRecord,
        snapshot: Option<PendingSnapshot>,
    ) -> Result<RecordOutcome, DbError> {
        let snapshot_id = tick.snapshot.id;
        // The write in flight is looked at once per tick (a polled one moves on by a
        // statement); its failure is this tick's.
        self.poll_in_flight().await?;
        let full = {
            let mut pending = self
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Ticks made ready go back to being buffered: one more joins them (the plan is of
            // the ticks it was made of).
            if let Some(prepared) = pending.prepared.take() {
                pending.ticks = prepared.into_ticks();
            }
            if let Some(snapshot) = snapshot {
                let at = pending.ticks.len();
                pending.snapshots.push((at, snapshot));
            }
            pending.ticks.push(tick);
            pending.ticks.len() >= BATCH_TICKS
        };
        if full {
            self.write_pending_behind().await?;
        }
        Ok(RecordOutcome::Recorded { snapshot_id })
    }

    /// Starts writing `batch` behind the ticks (nothing may be in flight).
    fn start(&self, batch: Batch) -> InFlight {
        let ready = take(&self.ready);
        let write = Self::write(self.store.clone(), batch);
        let write = async move {
            if let Some(ready) = ready {
                prepared(ready.await)?;
            }
            write.await
        };
        match &self.spawn_on {
            Some(runtime) => InFlight::Spawned {
                task: runtime.spawn(write),
                behind: None,
            },
            None => InFlight::Polled(Box::pin(write)),
        }
    }

    /// Queues the buffered batch behind the spawned write in flight, when that write has none
    /// queued behind it yet: a task that waits for it, then makes the batch ready for the store
    /// and writes it, on the writer's thread. Returns whether it did.
    fn chain(&self) -> bool {
        let Some(runtime) = &self.spawn_on else {
            return false;
        };
        let mut slot = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = match slot.take() {
            Some(InFlight::Spawned { task, behind: None }) if !task.is_finished() => task,
            other => {
                *slot = other;
                return false;
            }
        };
        let Some(batch) = self.take_batch() else {
            *slot = Some(InFlight::Spawned {
                task: before,
                behind: None,
            });
            return false;
        };
        let abort = before.abort_handle();
        let store = self.store.clone();
        let write = async move {
            drop(joined(before.await)?);
            Self::write(store, batch).await
        };
        *slot = Some(InFlight::Spawned {
            task: runtime.spawn(write),
            behind: Some(abort),
        });
        true
    }
}

impl<S> Recorder for WriteBehind<S>
where
    S: TickStore + Clone + Send + Sync + 'static,
{
    const DEFER_SNAPSHOTS: bool = true;

    fn record(
        &self,
        record: TickRecord,
        pending: Option<PendingSnapshot>,
    ) -> impl Future<Output = Result<RecordOutcome, DbError>> + Send {
        self.buffer(record, pending)
    }
}

impl<S> Drop for WriteBehind<S> {
    /// A write still in flight when the backtest ends without a flush (it returns an error) is
    /// cancelled, as dropping a polled one cancels it: its transaction rolls back, and nothing
    /// the run started goes on writing after it returned. A store preparation nothing waited
    /// for is aborted too (one already running on the blocking pool runs to its end: its
    /// schema and registration, nothing of the run).
    fn drop(&mut self) {
        let slot = self
            .in_flight
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(InFlight::Spawned { task, behind }) = slot.take() {
            task.abort();
            if let Some(behind) = behind {
                behind.abort();
            }
        }
        let ready = self
            .ready
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(task) = ready.take() {
            task.abort();
        }
    }
}

/// Completes `ticks` with their market snapshots still to be computed (`snapshots`: each with
/// its tick's index), on whichever thread calls it: the writer's, or the tick's while it would
/// otherwise wait for the writer.
///
/// # Errors
/// As [`PendingSnapshot::finish_into`].
fn complete(
    ticks: &mut [TickRecord],
    snapshots: Vec<(usize, PendingSnapshot)>,
) -> Result<(), DbError> {
    for (i, snapshot) in snapshots {
        if let Some(tick) = ticks.get_mut(i) {
            PendingSnapshot::finish_into(Some(snapshot), tick)?;
        }
    }
    Ok(())
}

/// A spawned write's result; a write that panicked panics here, on the tick's thread.
pub(crate) fn joined<T>(
    joined: Result<Result<T, DbError>, tokio::task::JoinError>,
) -> Result<T, DbError> {
    ended(joined, "backtest batch", "the batch's write")
}

/// The store's preparation as it ended ([`WriteBehind::gated`]); one that panicked panics here.
fn prepared(joined: Result<Result<(), DbError>, tokio::task::JoinError>) -> Result<(), DbError> {
    ended(joined, "backtest store", "the store's preparation")
}

/// A task's result: a task that panicked panics here; one cancelled is `what`'s error.
fn ended<T>(
    joined: Result<Result<T, DbError>, tokio::task::JoinError>,
    what: &'static str,
    task: &str,
) -> Result<T, DbError> {
    match joined {
        Ok(result) => result,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(DbError::Invalid {
            what,
            detail: format!("{task} was cancelled before it finished: {e}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use chrono::{DateTime, Utc};
    use db::test_support::{at, sample_snapshot, seed, tick_record};
    use db::{DecisionSnapshot, NewNote, ReflectionRun, Store, StoredRunnerState};
    use tokio::sync::Semaphore;
    use uuid::Uuid;

    use super::*;

    /// A store whose batch writes ([`TickStore::record_ticks`]) each wait for a permit, so
    /// a test decides when a write in flight ends; the first one fails instead of writing when
    /// `fail_first`. Everything else goes to the inner store.
    #[derive(Clone)]
    struct Gated {
        store: Store,
        permits: Arc<Semaphore>,
        /// The first tick time of each batch write that got its permit, in order.
        writes: Arc<Mutex<Vec<DateTime<Utc>>>>,
        started: Arc<AtomicUsize>,
        fail_first: bool,
    }

    /// `impl $trait for Gated`: the listed methods forwarded to the inner store, beside the
    /// ones written out in braces first.
    macro_rules! forward {
        ($trait:ident { $($own:tt)* } $( fn $name:ident(&self $(, $arg:ident : $ty:ty)*) -> $ret:ty; )*) => {
            impl $trait for Gated {
                $($own)*
                $(
                    async fn $name(&self $(, $arg: $ty)*) -> Result<$ret, DbError> {
                        self.store.$name($($arg),*).await
                    }
                )*
            }
        };
    }

    forward!(TickStore {
        async fn record_ticks(
            &self,
            batch: &PlannedTicks,
            reflections: &[(Option<NewNote>, ReflectionRun)],
        ) -> Result<Vec<RecordOutcome>, DbError> {
            let n = self.started.fetch_add(1, Ordering::SeqCst);
            self.permits
                .acquire()
                .await
                .expect("the semaphore stays open")
                .forget();
            if let Some(first) = batch.ticks().first() {
                self.writes
                    .lock()
                    .expect("writes")
                    .push(first.snapshot.tick_at);
            }
            if self.fail_first && n == 0 {
                return Err(DbError::Invalid {
                    what: "test batch",
                    detail: "the first write fails".to_owned(),
                });
            }
            self.store.record_ticks(batch, reflections).await
        }
    }
        fn record_tick(&self, tick: &TickRecord) -> RecordOutcome;
        fn record_tick_alerting(&self, tick: &TickRecord, alerts: &db::TickAlerts) -> RecordOutcome;
        fn get_snapshot(&self, id: Uuid) -> DecisionSnapshot;
        fn last_snapshot_before(&self, deployment_id: Uuid, before: DateTime<Utc>) -> Option<DecisionSnapshot>;
        fn runner_state(&self, deployment_id: Uuid) -> Option<StoredRunnerState>;
        fn list_snapshots(&self, deployment_id: Uuid, limit: u32) -> Vec<DecisionSnapshot>;
        fn ticks(&self, query: &db::TickQuery) -> Vec<db::StoredTick>;
    );

    /// A seeded in-memory store behind a gate with no permit yet, and its deployment.
    async fn gated(fail_first: bool) -> (Gated, Uuid) {
        let store = db::connect("sqlite::memory:").await.expect("store");
        let fx = seed(&store).await.expect("seed");
        let gated = Gated {
            store,
            permits: Arc::new(Semaphore::new(0)),
            writes: Arc::new(Mutex::new(Vec::new())),
            started: Arc::new(AtomicUsize::new(0)),
            fail_first,
        };
        (gated, fx.deployment.id)
    }

    /// The tick `i` minutes after the samples' base time.
    fn tick(deployment_id: Uuid, i: usize) -> TickRecord {
        tick_record(sample_snapshot(
            deployment_id,
            at(i64::try_from(i).expect("minutes")),
        ))
    }

    /// Buffers ticks `from..to`; each must return at once (a tick that waited for a write the
    /// gate holds would never return: the test fails after a few seconds instead of hanging).
    async fn buffer(writer: &WriteBehind<Gated>, deployment_id: Uuid, from: usize, to: usize) {
        for i in from..to {
            tokio::time::timeout(
                Duration::from_secs(5),
                writer.buffer(tick(deployment_id, i), None),
            )
            .await
            .unwrap_or_else(|_| panic!("tick {i} waited for the store"))
            .expect("buffered");
        }
    }

    /// The queued batch never reached the store, and the first write stored nothing.
    async fn only_the_first_write_reached_the_store_and_stored_nothing(store: &Gated, d: Uuid) {
        assert_eq!(
            store.started.load(Ordering::SeqCst),
            1,
            "the queued batch never reached the store"
        );
        let stored = store
            .store
            .list_snapshots(d, 10_000)
            .await
            .expect("snapshots");
        assert!(stored.is_empty(), "{} snapshots stored", stored.len());
    }

    /// Whether the write in flight has a batch queued behind it.
    fn queued(writer: &WriteBehind<Gated>) -> bool {
        matches!(
            &*writer.in_flight.lock().expect("in flight"),
            Some(InFlight::Spawned {
                behind: Some(_),
                ..
            })
        )
    }

    /// A batch that fills while the one before is still being written is queued behind it
    /// (the writer makes it ready and writes it next), and the ticks go on without waiting for
    /// either. A third one that finds the queue taken is made ready by the tick's thread, which
    /// then waits, and so are the next ones, until a batch finds the store idle: from then on
    /// they are queued again. Everything lands in order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_batch_full_while_one_is_written_is_queued_behind_it() {
        let (store, d) = gated(false).await;
        let writer = WriteBehind::gated(&store, None);
        buffer(&writer, d, 0, 2 * BATCH_TICKS).await;
        assert!(writer.writing(), "the first batch waits for its permit");
        assert!(queued(&writer), "the second batch is queued behind it");
        assert!(
            writer.pending.lock().expect("pending").ticks.is_empty(),
            "the queued batch took the buffered ticks"
        );
        assert!(!writer.tick_prepares.load(Ordering::Relaxed));
        // The third batch, the gate still closed: its last tick makes it ready here and waits.
        buffer(&writer, d, 2 * BATCH_TICKS, 3 * BATCH_TICKS - 1).await;
        let last = writer.buffer(tick(d, 3 * BATCH_TICKS - 1), None);
        tokio::pin!(last);
        assert!(
            tokio::time::timeout(Duration::from_millis(100), &mut last)
                .await
                .is_err(),
            "the tick waits for the queue"
        );
        assert!(writer.tick_prepares.load(Ordering::Relaxed));
        assert!(
            writer.pending.lock().expect("pending").prepared.is_some(),
            "the third batch was made ready on the tick's thread"
        );
        store.permits.add_permits(10);
        tokio::time::timeout(Duration::from_secs(30), last)
            .await
            .expect("the tick goes on once the queue is written")
            .expect("buffered");
        tokio::time::timeout(Duration::from_secs(30), writer.flush())
            .await
            .expect("the flush waits for permitted writes only")
            .expect("flush");
        // The store idle at the fourth batch's end: the writer prepares again.
        buffer(&writer, d, 3 * BATCH_TICKS, 4 * BATCH_TICKS + 7).await;
        assert!(!writer.tick_prepares.load(Ordering::Relaxed));
        tokio::time::timeout(Duration::from_secs(30), writer.flush())
            .await
            .expect("the flush waits for permitted writes only")
            .expect("flush");
        let firsts: Vec<_> = (0..5)
            .map(|b| at(i64::try_from(b * BATCH_TICKS).expect("minutes")))
            .collect();
        assert_eq!(
            *store.writes.lock().expect("writes"),
            firsts,
            "batches written in order"
        );
        let mut stored = store
            .store
            .list_snapshots(d, 10_000)
            .await
            .expect("snapshots");
        stored.sort_by_key(|s| s.tick_at);
        let times: Vec<_> = stored.iter().map(|s| s.tick_at).collect();
        let expected: Vec<_> = (0..4 * BATCH_TICKS + 7)
            .map(|i| at(i64::try_from(i).expect("minutes")))
            .collect();
        assert_eq!(times, expected, "every tick stored once");
    }

    /// A batch queued behind a write that fails is never written: the failure is the next
    /// tick's (or the flush's) error, and the store holds no tick after the failed batch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_batch_queued_behind_a_failed_write_is_not_written() {
        let (store, d) = gated(true).await;
        let writer = WriteBehind::gated(&store, None);
        buffer(&writer, d, 0, 2 * BATCH_TICKS).await;
        assert!(queued(&writer));
        store.permits.add_permits(3);
        let err = tokio::time::timeout(Duration::from_secs(30), writer.flush())
            .await
            .expect("the flush waits for permitted writes only")
            .expect_err("the first write failed");
        assert!(err.to_string().contains("the first write fails"), "{err}");
        only_the_first_write_reached_the_store_and_stored_nothing(&store, d).await;
    }

    /// Dropping the adapter (a backtest that returns an error) cancels the write in flight and
    /// the batch queued behind it: nothing is stored after the run returned. (A write being
    /// polled when it is cancelled runs on to its next await — it may take a permit here —,
    /// and its transaction rolls back there.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn dropping_the_adapter_cancels_the_queued_batch_and_the_write_before_it() {
        let (store, d) = gated(false).await;
        let writer = WriteBehind::gated(&store, None);
        buffer(&writer, d, 0, 2 * BATCH_TICKS).await;
        assert!(queued(&writer));
        // The first write reaches the gate (the writer made its batch ready first).
        tokio::time::timeout(Duration::from_secs(30), async {
            while store.started.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the first write reaches the store");
        drop(writer);
        store.permits.add_permits(3);
        // Time for a write that was not cancelled to store its batch.
        tokio::time::sleep(Duration::from_millis(200)).await;
        only_the_first_write_reached_the_store_and_stored_nothing(&store, d).await;
    }
}
