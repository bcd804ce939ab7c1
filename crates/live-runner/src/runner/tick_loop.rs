//! The claim loop: lease due deployments while slots are free, tick each in a task of its own
//! with a lease heartbeat, release it with its next tick time, hand due reflections to the
//! reflection worker; with the slots left, lease stopped deployments whose positions are to be
//! closed and flatten each in a task of its own (`flatten`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use db::{DbError, LeaseStore, RegistryStore};
use tick::{ReflectionCheck, TickOutcome};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use types::Verdict;
use uuid::Uuid;

use super::reflections::{ReflectionJob, Reflections};
use super::{Done, RunError, Runner};
use crate::schedule::last_close_at_or_before;

impl Runner {
    /// Runs until `shutdown` resolves (then finishes the ticks and reflections in flight and
    /// returns) or, with `once`, until nothing is due and nothing is in flight.
    ///
    /// With news feeds ([`Runner::with_news`]) the feeds are polled once before the first
    /// claim (a slow feed waits its timeout, no longer) and then, unless `once`, every
    /// `every` on a task of its own, off the tick path; the task stops when `run` returns.
    ///
    /// Dropping the returned future aborts every tick and reflection in flight (their leases
    /// then expire; a lost reflection is found due again at the deployment's next tick).
    ///
    /// # Errors
    /// With `once`, a failed claim; otherwise the loop logs claim failures and retries.
    pub async fn run(self: Arc<Self>, shutdown: impl Future<Output = ()>) -> Result<(), RunError> {
        let slots = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
        let mut tasks: JoinSet<Option<Box<ReflectionJob>>> = JoinSet::new();
        let mut reflections = Reflections::new(self.config.reflection_concurrency);
        let mut stopping = false;
        self.poll_news().await;
        // Aborted when `run` returns, on every path (an early `?` included).
        let _news_poller = if self.config.once {
            None
        } else {
            self.spawn_news_poller()
        };
        tokio::pin!(shutdown);
        loop {
            if !stopping {
                let free = slots.available_permits();
                if free > 0 {
                    let limit = u32::try_from(free.min(1000)).unwrap_or(1000);
                    let now = self.clock.now();
                    match self.claim(now, limit).await {
                        Ok((claimed, flattens)) => {
                            if claimed.is_empty()
                                && flattens.is_empty()
                                && tasks.is_empty()
                                && self.config.once
                            {
                                // A concurrent claimer's locks make a claim come back short;
                                // only stop when nothing claimable is left (and the reflections
                                // in flight are done).
                                if self.store.claimable_count(now).await? > 0 {
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    continue;
                                }
                                if reflections.is_empty() {
                                    break;
                                }
                            }
                            let mut started = self.start_claimed(&claimed).await;
                            for d in claimed {
                                let Ok(permit) = slots.clone().acquire_owned().await else {
                                    break;
                                };
                                let me = self.clone();
                                let start = started.remove(&d.id);
                                tasks.spawn(async move {
                                    let _slot = permit;
                                    me.process(d, start).await
                                });
                            }
                            for d in flattens {
                                let Ok(permit) = slots.clone().acquire_owned().await else {
                                    break;
                                };
                                let me = self.clone();
                                tasks.spawn(async move {
                                    let _slot = permit;
                                    me.process_flatten(d).await;
                                    None
                                });
                            }
                        }
                        Err(e) if self.config.once => return Err(e.into()),
                        Err(e) => tracing::warn!(error = %e, "claiming due deployments failed"),
                    }
                }
            }
            if stopping && tasks.is_empty() && reflections.is_empty() {
                break;
            }
            let idle = !self.config.once || (tasks.is_empty() && reflections.is_empty());
            tokio::select! {
                () = &mut shutdown, if !stopping => {
                    tracing::info!(
                        ticks = tasks.len(),
                        reflections = reflections.len(),
                        "shutting down: finishing the ticks and reflections in flight"
                    );
                    stopping = true;
                }
                Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                    match joined {
                        Ok(Some(job)) if stopping => tracing::info!(
                            deployment = %job.deployment.deployment_id,
                            at = %job.due.at,
                            "shutting down: the due reflection is left to the next tick"
                        ),
                        Ok(Some(job)) => reflections.spawn(&self, *job),
                        Ok(None) => {}
                        Err(e) => tracing::error!(error = %e, "a tick task panicked"),
                    }
                }
                Some(joined) = reflections.set.join_next_with_id(), if !reflections.is_empty() => {
                    reflections.finished(joined);
                }
                () = tokio::time::sleep(self.config.poll), if idle => {}
            }
        }
        self.shutdown_mcp_servers().await;
        Ok(())
    }

    /// Leases up to `limit` due deployments: first the ticks, then, with the slots left, the
    /// flattens of stopped deployments (`LeaseStore::claim_flattens`).
    async fn claim(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        limit: u32,
    ) -> Result<(Vec<db::Deployment>, Vec<db::Deployment>), DbError> {
        let claimed = self
            .store
            .claim_due_deployments(&self.config.owner, now, self.config.lease_for, limit)
            .await?;
        let left = limit.saturating_sub(u32::try_from(claimed.len()).unwrap_or(limit));
        let flattens = if left == 0 {
            Vec::new()
        } else {
            self.store
                .claim_flattens(&self.config.owner, now, self.config.lease_for, left)
                .await?
        };
        Ok((claimed, flattens))
    }

    /// The starts of the deployments claimed together, right after the claim and before their
    /// ticks, in one statement ([`LeaseStore::start_ticks`]): each one's status read again,
    /// the runner state its last tick committed and its attempt at the latest bar close
    /// marked. A deployment missing from the map (its skill unreadable, the statement failed,
    /// the deployment gone) makes these reads and the mark itself, one at a time, in its tick.
    async fn start_claimed(&self, claimed: &[db::Deployment]) -> HashMap<Uuid, db::StartedTick> {
        let mut starts = Vec::with_capacity(claimed.len());
        for d in claimed {
            // A skill that cannot be read fails its tick, which reports why.
            if let Ok(skill) = self.skill(d).await {
                let tick_at =
                    last_close_at_or_before(self.clock.now(), skill.context.bars_interval);
                starts.push(db::TickStart {
                    deployment_id: d.id,
                    tick_at,
                });
            }
        }
        if starts.is_empty() {
            return HashMap::new();
        }
        match self.store.start_ticks(&self.config.owner, &starts).await {
            Ok(started) => started.into_iter().map(|s| (s.deployment_id, s)).collect(),
            Err(e) => {
                tracing::warn!(error = %e, deployments = starts.len(), "starting the claimed ticks together failed; each reads its own");
                HashMap::new()
            }
        }
    }

    /// Whether the claimed deployment `d` is still active. The claim takes active deployments
    /// only, in one statement; the status is read again after it and just before the tick —
    /// with the claimed set's starts (`start`, [`Runner::start_claimed`]) or, without one,
    /// here — so a deployment paused or stopped in between is released untouched (its
    /// schedule kept) and not ticked. A failed read is taken as active: the tick then runs as
    /// claimed.
    async fn still_active(&self, d: &db::Deployment, start: Option<&db::StartedTick>) -> bool {
        if let Some(start) = start {
            return start.status == db::DeploymentStatus::Active;
        }
        match self.store.get_deployment(d.id).await {
            Ok(now) => now.status == db::DeploymentStatus::Active,
            Err(e) => {
                tracing::warn!(deployment = %d.id, error = %e, "reading the status before the tick failed; ticking as claimed");
                true
            }
        }
    }

    /// Ticks one claimed deployment (with a lease heartbeat) and releases it; returns the
    /// reflection the tick found due, for the reflection worker.
    async fn process(
        &self,
        d: db::Deployment,
        start: Option<db::StartedTick>,
    ) -> Option<Box<ReflectionJob>> {
        if !self.still_active(&d, start.as_ref()).await {
            self.metrics.skipped_inactive();
            tracing::info!(deployment = %d.id, "paused or stopped since it was due: not ticked");
            match self
                .store
                .release_deployment(d.id, &self.config.owner, d.next_tick_at)
                .await
            {
                Ok(()) | Err(DbError::NotFound { .. }) => {}
                Err(e) => {
                    tracing::error!(deployment = %d.id, error = %e, "releasing the lease failed")
                }
            }
            return None;
        }
        let started = Instant::now();
        let heartbeat = (self.config.lease_for / 3)
            .to_std()
            .unwrap_or(Duration::from_secs(60))
            .max(Duration::from_millis(100));
        // The lease is extended while the tick runs, up to twice the tick budget (the model
        // loop's own deadline is the budget): then the tick is abandoned — as a crash would
        // leave it, which a retry resumes from — and the lease released for that retry. The
        // abandoned tick is dropped (its open transaction rolled back, its locks freed) before
        // the release, which could otherwise wait on them.
        let result = {
            let tick = self.tick_started(&d, start);
            tokio::pin!(tick);
            let hard_stop = tokio::time::sleep(self.config.tick_budget.saturating_mul(2));
            tokio::pin!(hard_stop);
            loop {
                tokio::select! {
                    r = &mut tick => break r,
                    () = &mut hard_stop => break Err(RunError::Abandoned {
                        after: self.config.tick_budget.saturating_mul(2),
                    }),
                    () = tokio::time::sleep(heartbeat) => {
                        let until = self.clock.now() + self.config.lease_for;
                        match self.store.extend_lease(d.id, &self.config.owner, until).await {
                            Ok(true) => {}
                            Ok(false) => tracing::warn!(deployment = %d.id, "lease lost while ticking"),
                            Err(e) => tracing::warn!(deployment = %d.id, error = %e, "heartbeat failed"),
                        }
                    }
                }
            }
        };
        let now = self.clock.now();
        let mut job = None;
        let (label, next) = match result {
            Ok(Done::Ticked {
                outcome,
                next,
                reflection,
            }) => {
                self.observe(&outcome);
                let kind = outcome.kind();
                if let Some(error) = &outcome.model_error {
                    tracing::warn!(
                        deployment = %d.id,
                        tick_at = %outcome.tick_at,
                        recorded = outcome.recorded,
                        verdict = kind.as_str(),
                        error = %error,
                        "tick: the model failed"
                    );
                } else {
                    tracing::info!(
                        deployment = %d.id,
                        tick_at = %outcome.tick_at,
                        recorded = outcome.recorded,
                        verdict = kind.as_str(),
                        "tick"
                    );
                }
                job = reflection;
                let label = if outcome.recorded {
                    "recorded"
                } else {
                    "already_recorded"
                };
                (label, next)
            }
            Ok(Done::AlreadyDone { next }) => ("skipped_done", next),
            Err(e) => {
                tracing::error!(deployment = %d.id, error = %e, "tick failed; will retry");
                ("failed", now + self.config.retry_after)
            }
        };
        self.metrics.tick(label, started.elapsed());
        match self
            .store
            .release_deployment(d.id, &self.config.owner, Some(next))
            .await
        {
            Ok(()) => {}
            Err(DbError::NotFound { .. }) => {
                self.metrics.lease_lost();
                tracing::warn!(deployment = %d.id, "the lease was taken over before release");
            }
            Err(e) => tracing::error!(deployment = %d.id, error = %e, "releasing the lease failed"),
        }
        job
    }

    fn observe(&self, outcome: &TickOutcome) {
        self.metrics.outcome(outcome.kind().as_str());
        if let Verdict::Rejected { rule, .. } = &outcome.verdict {
            self.metrics.rejection(rule.as_str());
        }
        // A due reflection is counted by the worker when it ends.
        if let ReflectionCheck::Invalid { reason } = &outcome.reflection {
            tracing::warn!(reason, "the skill's reflection settings are invalid");
            self.metrics.reflection("failed");
        }
    }
}
