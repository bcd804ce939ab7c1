//! The reflection worker: due reflections run in tasks of their own, off the tick path.

use std::collections::HashMap;
use std::sync::Arc;

use db::LeaseStore as _;
use tick::{DueReflection, ReflectionReport};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use uuid::Uuid;

use super::Runner;

/// A reflection a tick found due, for the reflection worker.
#[derive(Debug)]
pub struct ReflectionJob {
    /// The deployment to reflect on (with its resolved reflector).
    pub deployment: tick::TickDeployment,
    /// What the tick found due, with the ledger as of the tick.
    pub due: DueReflection,
}

/// The reflection worker: due reflections run in tasks of their own, off the tick path, at most
/// `concurrency` at once and one per deployment.
pub(super) struct Reflections {
    pub(super) set: JoinSet<()>,
    slots: Arc<Semaphore>,
    /// The deployment of each task in `set`.
    by_task: HashMap<tokio::task::Id, Uuid>,
}

impl Reflections {
    pub(super) fn new(concurrency: usize) -> Self {
        Reflections {
            set: JoinSet::new(),
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            by_task: HashMap::new(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.set.len()
    }

    /// Starts `job` unless a reflection of its deployment is still running (that one's note, or
    /// its absence, is what the cadence sees at the next tick).
    pub(super) fn spawn(&mut self, runner: &Arc<Runner>, job: ReflectionJob) {
        let d = job.deployment.deployment_id;
        if self.by_task.values().any(|x| *x == d) {
            tracing::info!(
                deployment = %d,
                at = %job.due.at,
                "a reflection of this deployment is still running; not starting another"
            );
            runner.metrics.reflection("skipped_in_flight");
            return;
        }
        let runner = runner.clone();
        let slots = self.slots.clone();
        let handle = self.set.spawn(async move {
            let Ok(_slot) = slots.acquire_owned().await else {
                return;
            };
            runner.reflect(job).await;
        });
        self.by_task.insert(handle.id(), d);
    }

    pub(super) fn finished(
        &mut self,
        joined: Result<(tokio::task::Id, ()), tokio::task::JoinError>,
    ) {
        let id = match joined {
            Ok((id, ())) => id,
            Err(e) => {
                tracing::error!(error = %e, "a reflection task panicked");
                e.id()
            }
        };
        self.by_task.remove(&id);
    }
}

/// How long a runner's claim on a deployment's reflection lasts: longer than any reflection
/// runs (its model call and the judge's), so a live claim means a reflection in flight; a
/// runner that died holding one frees the deployment after it.
pub(super) const REFLECTION_LEASE: chrono::Duration = chrono::Duration::minutes(15);

impl Runner {
    /// Runs one due reflection (on the reflection worker) and counts its outcome. It is claimed
    /// first (`LeaseStore::claim_reflection`): when another runner is reflecting on the
    /// deployment (its next tick ran here and found the same reflection due), this one calls no
    /// model and counts `claimed_elsewhere`.
    async fn reflect(&self, job: ReflectionJob) {
        let d = job.deployment.deployment_id;
        let now = self.clock.now();
        match self
            .store
            .claim_reflection(d, self.owner(), now, now + REFLECTION_LEASE)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                self.metrics.reflection("claimed_elsewhere");
                tracing::info!(
                    deployment = %d, at = %job.due.at,
                    "another runner is reflecting on this deployment; not starting another"
                );
                return;
            }
            Err(e) => {
                self.metrics.reflection("store_error");
                tracing::error!(deployment = %d, error = %e, "claiming the reflection failed");
                return;
            }
        }
        let done = tick::run_due_reflection(&job.deployment, &job.due, &self.store).await;
        if let Err(e) = self.store.release_reflection(d, self.owner()).await {
            // The claim expires on its own (`REFLECTION_LEASE`).
            tracing::warn!(deployment = %d, error = %e, "releasing the reflection's claim failed");
        }
        let label = match &done.report {
            ReflectionReport::Note { flagged: false, .. } => "note",
            ReflectionReport::Note { flagged: true, .. } => "flagged",
            ReflectionReport::Failed { .. } => "failed",
            ReflectionReport::StoreError { .. } => "store_error",
            ReflectionReport::AlreadyDone => "already_done",
            ReflectionReport::NotDue => "not_due",
        };
        self.metrics.reflection(label);
        match &done.report {
            ReflectionReport::Failed { reason } => tracing::warn!(
                deployment = %job.deployment.deployment_id, at = %job.due.at, reason, "reflection failed"
            ),
            ReflectionReport::StoreError { message } => tracing::error!(
                deployment = %job.deployment.deployment_id, at = %job.due.at, message,
                "the store refused the reflection's outcome"
            ),
            _ => tracing::info!(
                deployment = %job.deployment.deployment_id, at = %job.due.at, outcome = label, "reflection"
            ),
        }
    }
}
