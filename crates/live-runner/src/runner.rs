//! The tick loop: lease due deployments, tick each one concurrently, release with the next bar
//! close.
//!
//! One loop iteration claims at most as many deployments as there are free slots (a
//! [`Semaphore`] of `concurrency` permits), so a runner never holds a lease it cannot start.
//! Every claimed deployment ticks in its own task: a slow model delays only its own
//! deployment. While a tick runs, its lease is extended every third of the lease (heartbeat);
//! a runner that dies stops heartbeating, its leases expire and another runner claims them.
//!
//! A tick is executed at most once per (deployment, bar close): the store records a tick and
//! the runner state after it in one transaction, idempotently (`record_tick`), the state only
//! moves forward, and a deployment whose state already holds the due tick is released without
//! running it again.
//!
//! Reflection is off the tick path: a tick only checks the cadence; a due reflection is handed,
//! after the tick released its lease, to a worker of its own (at most
//! [`RunnerConfig::reflection_concurrency`] at once, one per deployment), which calls
//! [`tick::run_due_reflection`]. A slow or failed reflection never delays or fails a tick; a
//! shutdown waits for the reflections in flight; one lost with its process leaves nothing
//! stored, so the cadence finds it due again at the deployment's next tick.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse, builtin_model};
use chrono::{DateTime, Utc};
use db::{DbError, LeaseStore, LedgerStore, RegistryStore, Store, TickStore};
use execution_engine::{BrokerError, PaperBroker, PaperBrokerConfig};
use hyperliquid::{ClientConfig, HlError, InfoClient};
use memory_ledger::{LedgerScope, LedgerState};
use skill_schema::{Format, Skill, parse_skill};
use tick::{
    Broker, BrokerUnavailable, DueReflection, ReflectionCheck, ReflectionReport, TickOutcome,
    TickState,
};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tools::{Preloaded, RunMode, ToolContext};
use types::{Clock, Interval, Verdict};
use uuid::Uuid;

use crate::hl_broker::{FillCursor, HlBrokerError, HyperliquidBroker, HyperliquidConfig};
use crate::metrics::Metrics;
use crate::schedule::{bar_length, last_close_at_or_before};
use crate::state::{CarriedBroker, RunnerState, StateError};

/// A reflection a tick found due, for the reflection worker.
#[derive(Debug)]
pub struct ReflectionJob {
    pub deployment: tick::Deployment,
    pub due: DueReflection,
}

/// Turns a model id (the skill's `model`, or its reflection model) into a model.
pub type ModelResolver =
    Arc<dyn Fn(&str, &Skill) -> Result<Arc<dyn LanguageModel>, ModelError> + Send + Sync>;

/// The production resolver: providers from the process environment, `builtin/…` offline
/// models.
#[must_use]
pub fn default_resolver() -> ModelResolver {
    Arc::new(|id: &str, skill: &Skill| model_providers_resolve(id, skill))
}

fn model_providers_resolve(id: &str, skill: &Skill) -> Result<Arc<dyn LanguageModel>, ModelError> {
    providers::resolve_model(id, &providers::process_env, &|m: &str| {
        builtin_model(m, skill).ok_or_else(|| ModelError::UnknownModel(m.to_owned()))
    })
}

/// Reads an environment variable (the process environment in production; tests inject one).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment.
#[must_use]
pub fn process_env() -> EnvLookup {
    Arc::new(|name: &str| std::env::var(name).ok())
}

/// Most candles asked for in one candleSnapshot request (the exchange serves at most 5000).
const MAX_CANDLES: i64 = 5000;

/// How the runner behaves.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// This process's lease owner name (unique per process).
    pub owner: String,
    /// Most ticks in flight at once.
    pub concurrency: usize,
    /// How long a claimed lease lasts without a heartbeat.
    pub lease_for: chrono::Duration,
    /// How often the loop looks for due deployments when idle.
    pub poll: Duration,
    /// When a failed tick is tried again.
    pub retry_after: chrono::Duration,
    /// Process what is due now, then return.
    pub once: bool,
    /// Most reflections in flight at once (off the tick path; they never hold a tick slot).
    pub reflection_concurrency: usize,
}

impl RunnerConfig {
    /// Defaults for `owner`: 8 ticks and 2 reflections at once, a 4-minute lease (2× a 2-minute
    /// tick budget), 5 s polling, a failed tick retried after 30 s.
    #[must_use]
    pub fn new(owner: impl Into<String>) -> Self {
        RunnerConfig {
            owner: owner.into(),
            concurrency: 8,
            lease_for: chrono::Duration::minutes(4),
            poll: Duration::from_secs(5),
            retry_after: chrono::Duration::seconds(30),
            once: false,
            reflection_concurrency: 2,
        }
    }
}

/// A lease owner name unique to this process: `hostname:pid:uuid`.
#[must_use]
pub fn process_owner() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    format!("{host}:{}:{}", std::process::id(), Uuid::new_v4())
}

/// Why a runner cannot start or a tick failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("live-runner needs PostgreSQL (leases, runner state); got a {0} store")]
    NotPostgres(&'static str),
    #[error("store: {0}")]
    Db(#[from] DbError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error("skill {skill_id} v{version}: the stored body is not a valid skill: {message}")]
    Skill {
        skill_id: Uuid,
        version: i32,
        message: String,
    },
    #[error("model {model}: {source}")]
    Model {
        model: String,
        #[source]
        source: ModelError,
    },
    #[error("Hyperliquid candles of {symbol} {interval}: {source}")]
    Market {
        symbol: String,
        interval: &'static str,
        #[source]
        source: HlError,
    },
    #[error("deployment {deployment}: broker config: {message}")]
    BrokerConfig { deployment: Uuid, message: String },
    #[error("deployment {deployment}: Hyperliquid broker: {source}")]
    Exchange {
        deployment: Uuid,
        #[source]
        source: HlBrokerError,
    },
    #[error(transparent)]
    BrokerUnavailable(#[from] BrokerUnavailable),
    #[error("paper broker: {0}")]
    Broker(#[from] BrokerError),
    #[error("rebuilding the ledger: {0}")]
    Ledger(#[from] memory_ledger::LedgerError),
    #[error("tick: {0}")]
    Tick(#[from] tick::TickError),
}

/// What happened to one claimed deployment.
#[derive(Debug)]
pub enum Done {
    /// The tick ran (`outcome.recorded` false: the store already held it). A due reflection
    /// comes with what it needs to run on the reflection worker.
    Ticked {
        outcome: Box<TickOutcome>,
        next: DateTime<Utc>,
        reflection: Option<Box<ReflectionJob>>,
    },
    /// The runner state already holds the due tick: nothing ran.
    AlreadyDone { next: DateTime<Utc> },
}

/// Times every model call into [`Metrics`].
struct TimedModel {
    inner: Arc<dyn LanguageModel>,
    metrics: Metrics,
}

#[async_trait::async_trait]
impl LanguageModel for TimedModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    async fn generate(&self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let started = Instant::now();
        let r = self.inner.generate(request).await;
        self.metrics.model_call(started.elapsed());
        r
    }
}

/// The reflection worker: due reflections run in tasks of their own, off the tick path, at most
/// `concurrency` at once and one per deployment.
struct Reflections {
    set: JoinSet<()>,
    slots: Arc<Semaphore>,
    /// The deployment of each task in `set`.
    by_task: HashMap<tokio::task::Id, Uuid>,
}

impl Reflections {
    fn new(concurrency: usize) -> Self {
        Reflections {
            set: JoinSet::new(),
            slots: Arc::new(Semaphore::new(concurrency.max(1))),
            by_task: HashMap::new(),
        }
    }

    fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    fn len(&self) -> usize {
        self.set.len()
    }

    /// Starts `job` unless a reflection of its deployment is still running (that one's note, or
    /// its absence, is what the cadence sees at the next tick).
    fn spawn(&mut self, runner: &Arc<Runner>, job: ReflectionJob) {
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

    fn finished(&mut self, joined: Result<(tokio::task::Id, ()), tokio::task::JoinError>) {
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

/// A runner process's shared parts.
pub struct Runner {
    store: Store,
    info: InfoClient,
    clock: Arc<dyn Clock>,
    resolver: ModelResolver,
    metrics: Metrics,
    config: RunnerConfig,
    env: EnvLookup,
    exchange_http: ClientConfig,
}

impl Runner {
    /// A runner over a PostgreSQL `store` (migrated by [`db::connect`]: the runner-state table
    /// is one of the store's).
    ///
    /// # Errors
    /// [`RunError::NotPostgres`] for a SQLite store.
    pub async fn new(
        store: Store,
        info: InfoClient,
        clock: Arc<dyn Clock>,
        resolver: ModelResolver,
        metrics: Metrics,
        config: RunnerConfig,
    ) -> Result<Self, RunError> {
        if let Store::Sqlite(_) = &store {
            return Err(RunError::NotPostgres(store.backend_name()));
        }
        Ok(Runner {
            store,
            info,
            clock,
            resolver,
            metrics,
            config,
            env: process_env(),
            exchange_http: ClientConfig::new(hyperliquid::MAINNET_URL),
        })
    }

    /// Reads the exchange deployments' private keys through `env` instead of the process
    /// environment.
    #[must_use]
    pub fn with_env(mut self, env: EnvLookup) -> Self {
        self.env = env;
        self
    }

    /// Timeouts and retries of the exchange deployments' Hyperliquid clients (the base URL
    /// comes from each deployment's config).
    #[must_use]
    pub fn with_exchange_http(mut self, http: ClientConfig) -> Self {
        self.exchange_http = http;
        self
    }

    #[must_use]
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    #[must_use]
    pub fn owner(&self) -> &str {
        &self.config.owner
    }

    /// Runs until `shutdown` resolves (then finishes the ticks and reflections in flight and
    /// returns) or, with `once`, until nothing is due and nothing is in flight.
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
        tokio::pin!(shutdown);
        loop {
            if !stopping {
                let free = slots.available_permits();
                if free > 0 {
                    let limit = u32::try_from(free.min(1000)).unwrap_or(1000);
                    let now = self.clock.now();
                    match self
                        .store
                        .claim_due_deployments(
                            &self.config.owner,
                            now,
                            self.config.lease_for,
                            limit,
                        )
                        .await
                    {
                        Ok(claimed) => {
                            if claimed.is_empty() && tasks.is_empty() && self.config.once {
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
                            for d in claimed {
                                let Ok(permit) = slots.clone().acquire_owned().await else {
                                    break;
                                };
                                let me = self.clone();
                                tasks.spawn(async move {
                                    let _slot = permit;
                                    me.process(d).await
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
        Ok(())
    }

    /// Ticks one claimed deployment (with a lease heartbeat) and releases it; returns the
    /// reflection the tick found due, for the reflection worker.
    async fn process(&self, d: db::Deployment) -> Option<Box<ReflectionJob>> {
        let started = Instant::now();
        let heartbeat = (self.config.lease_for / 3)
            .to_std()
            .unwrap_or(Duration::from_secs(60))
            .max(Duration::from_millis(100));
        let tick = self.tick_deployment(&d);
        tokio::pin!(tick);
        let result = loop {
            tokio::select! {
                r = &mut tick => break r,
                () = tokio::time::sleep(heartbeat) => {
                    let until = self.clock.now() + self.config.lease_for;
                    match self.store.extend_lease(d.id, &self.config.owner, until).await {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!(deployment = %d.id, "lease lost while ticking"),
                        Err(e) => tracing::warn!(deployment = %d.id, error = %e, "heartbeat failed"),
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
                tracing::info!(
                    deployment = %d.id,
                    tick_at = %outcome.tick_at,
                    recorded = outcome.recorded,
                    verdict = tick::backtest::verdict_kind(&outcome.verdict),
                    "tick"
                );
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
        if let Verdict::Rejected { rule, .. } = &outcome.verdict {
            self.metrics.rejection(rule.as_str());
        }
        // A due reflection is counted by the worker when it ends.
        if let ReflectionCheck::Invalid { reason } = &outcome.reflection {
            tracing::warn!(reason, "the skill's reflection settings are invalid");
            self.metrics.reflection("failed");
        }
    }

    /// Runs one due reflection (on the reflection worker) and counts its outcome.
    async fn reflect(&self, job: ReflectionJob) {
        let done = tick::run_due_reflection(&job.deployment, &job.due, &self.store).await;
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

    /// One tick of `d` at the latest bar close at or before now.
    ///
    /// # Errors
    /// [`RunError`] when the skill, the state, the market data, the model or the tick fails;
    /// nothing of the runner state is written then.
    pub async fn tick_deployment(&self, d: &db::Deployment) -> Result<Done, RunError> {
        let version = self
            .store
            .get_skill_version(d.skill_id, d.skill_version)
            .await?;
        let skill = parse_skill(&version.body.to_string(), Format::Json)
            .map_err(|e| RunError::Skill {
                skill_id: d.skill_id,
                version: d.skill_version,
                message: e.to_string(),
            })?
            .skill;
        let interval = skill.context.bars_interval;
        let tick_at = last_close_at_or_before(self.clock.now(), interval);
        let next = tick_at + bar_length(interval);

        // The state the latest recorded tick committed with it.
        let stored = self.store.runner_state(d.id).await?;
        if stored.as_ref().is_some_and(|s| s.tick_at >= tick_at) {
            return Ok(Done::AlreadyDone { next });
        }
        let saved = stored.as_ref().map(RunnerState::decode).transpose()?;
        if let Some(previous) =
            self.store.mark_attempt(d.id, &self.config.owner, tick_at).await?
            && previous.owner != self.config.owner
            && previous.tick_at == tick_at
        {
            tracing::warn!(deployment = %d.id, previous = %previous.owner, %tick_at, "taking over an unfinished tick");
            self.metrics.lease_takeover();
        }
        let last_tick_at = saved.as_ref().and_then(|s| s.last_tick_at);

        let market = fetch_market(&self.info, &skill, tick_at, last_tick_at).await?;

        let model_id = skill.model.clone();
        let model = (self.resolver)(&model_id, &skill).map_err(|source| RunError::Model {
            model: model_id.clone(),
            source,
        })?;
        let model = TimedModel {
            inner: model,
            metrics: self.metrics.clone(),
        };
        let reflector =
            reflection::resolve_reflection_model(&skill.context.memory.reflection.model, |id| {
                (self.resolver)(id, &skill)
            })
            .map_err(|e| e.to_string());
        let deployment = tick::Deployment {
            user_id: d.user_id,
            deployment_id: d.id,
            skill_id: d.skill_id,
            skill_version: d.skill_version,
            skill: Arc::new(skill),
            reflector,
        };
        let symbols = deployment.skill.context.symbols.clone();

        match d.broker {
            db::BrokerKind::Paper => {
                // The paper broker sees every bar closed since its last tick (liquidations,
                // marks).
                let mut broker = match saved.as_ref().map(|s| s.broker.clone()) {
                    Some(Some(b)) => b,
                    Some(None) => {
                        return Err(RunError::BrokerConfig {
                            deployment: d.id,
                            message: "the saved runner state holds no paper broker".to_owned(),
                        });
                    }
                    None => PaperBroker::new(paper_config(d)?)?,
                };
                for symbol in &symbols {
                    let bars = market.all_bars(symbol, interval);
                    let fresh: Vec<_> = match last_tick_at {
                        Some(last) => bars
                            .iter()
                            .filter(|b| {
                                b.close_time(interval) > last && b.close_time(interval) <= tick_at
                            })
                            .collect(),
                        None => bars
                            .iter()
                            .rfind(|b| b.close_time(interval) <= tick_at)
                            .into_iter()
                            .collect(),
                    };
                    for bar in fresh {
                        broker.apply_bar(symbol, bar, bar.close_time(interval))?;
                    }
                }
                self.run_with(
                    d,
                    deployment,
                    &model,
                    &mut broker,
                    saved,
                    market,
                    d.initial_equity_usd,
                    tick_at,
                    next,
                )
                .await
            }
            db::BrokerKind::Hyperliquid => {
                let config = hyperliquid_config(d)?;
                let exchange = |source| RunError::Exchange {
                    deployment: d.id,
                    source,
                };
                let signer =
                    crate::hl_broker::signer_from_env(&config, &*self.env).map_err(exchange)?;
                let cursor = saved
                    .as_ref()
                    .and_then(|s| s.hyperliquid.clone())
                    .unwrap_or_else(|| FillCursor::starting_at(d.created_at));
                let mut broker = HyperliquidBroker::new(
                    d.id,
                    &config,
                    signer,
                    self.clock.clone(),
                    cursor,
                    &self.exchange_http,
                )
                .map_err(exchange)?;
                // A first tick's risk tracking starts from the account's equity (a saved state
                // carries its own).
                let equity = match &saved {
                    Some(_) => rust_decimal::Decimal::ZERO,
                    None => broker.portfolio(tick_at).await?.equity_usd,
                };
                self.run_with(
                    d,
                    deployment,
                    &model,
                    &mut broker,
                    saved,
                    market,
                    equity,
                    tick_at,
                    next,
                )
                .await
            }
        }
    }

    /// Runs the tick with `broker` on the state `saved` (a fresh one tracking `equity` when
    /// there is none), the ledger and the reflection notes from the store; the state after the
    /// tick (the broker's part included) is committed with it, in `record_tick`'s transaction.
    #[allow(clippy::too_many_arguments)]
    async fn run_with<B: Broker + CarriedBroker + Sync>(
        &self,
        d: &db::Deployment,
        deployment: tick::Deployment,
        model: &TimedModel,
        broker: &mut B,
        saved: Option<RunnerState>,
        market: Preloaded,
        equity: rust_decimal::Decimal,
        tick_at: DateTime<Utc>,
        next: DateTime<Utc>,
    ) -> Result<Done, RunError> {
        // The ledger and the reflection notes come from the store (the source of truth), the rest
        // from the state the last tick committed.
        let scope = LedgerScope {
            deployment_id: d.id,
            skill_id: d.skill_id,
            skill_version: d.skill_version,
        };
        let open = self.store.open_trades(d.id).await?;
        let applied = self.store.applied_fill_ids(d.id).await?;
        let ledger = LedgerState::rebuild(scope, open, applied)?;
        let trades = self.store.all_trades(d.id).await?;
        let mut tick_state = TickState::new(&deployment, equity, tick_at);
        tick_state.ledger = ledger;
        tick_state.set_trades(trades);
        if let Some(s) = saved {
            tick_state.risk = s.risk;
            tick_state.last_decision = s.last_decision;
            tick_state.last_tick_at = s.last_tick_at;
        }
        tick::load_reflection_state(&self.store, d.id, &mut tick_state, tick_at).await?;

        let symbols = deployment.skill.context.symbols.clone();
        let market = Arc::new(market);
        let ctx = ToolContext::new(tick_at, RunMode::Trade, symbols, market.clone(), market);
        let carry =
            |broker: &B, after: &TickState| serde_json::to_value(RunnerState::after(broker, after));
        let outcome = tick::run_tick_carrying(
            &deployment,
            &ctx,
            model,
            broker,
            &mut tick_state,
            &self.store,
            Some(&carry),
        )
        .await?;
        let reflection = match &outcome.reflection {
            ReflectionCheck::Due(due) => Some(Box::new(ReflectionJob {
                deployment,
                due: due.clone(),
            })),
            ReflectionCheck::NotDue | ReflectionCheck::Invalid { .. } => None,
        };
        Ok(Done::Ticked {
            outcome: Box::new(outcome),
            next,
            reflection,
        })
    }
}

/// A Hyperliquid deployment's broker config: `config.hyperliquid`.
fn hyperliquid_config(d: &db::Deployment) -> Result<HyperliquidConfig, RunError> {
    let broker_config = |message: String| RunError::BrokerConfig {
        deployment: d.id,
        message,
    };
    let v = d.config.get("hyperliquid").ok_or_else(|| {
        broker_config("`config.hyperliquid` is missing (account, network, key_env)".to_owned())
    })?;
    let config: HyperliquidConfig = serde_json::from_value(v.clone())
        .map_err(|e| broker_config(format!("`config.hyperliquid`: {e}")))?;
    let problems = config.problems();
    if !problems.is_empty() {
        return Err(broker_config(format!(
            "`config.hyperliquid`: {}",
            problems.join("; ")
        )));
    }
    Ok(config)
}

/// The paper broker's config: `config.paper` when the deployment has one, else the defaults
/// over the initial equity.
fn paper_config(d: &db::Deployment) -> Result<PaperBrokerConfig, RunError> {
    match d.config.get("paper") {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| RunError::BrokerConfig {
            deployment: d.id,
            message: e.to_string(),
        }),
        None => Ok(PaperBrokerConfig::new(d.initial_equity_usd)),
    }
}

/// The closed bars a tick at `tick_at` needs: the skill's lookback (and every bar since the
/// last tick, for MFE/MAE and the paper broker) at its interval, the lookback at each higher
/// timeframe. Bars closing after `tick_at` (the forming one) are dropped.
async fn fetch_market(
    info: &InfoClient,
    skill: &Skill,
    tick_at: DateTime<Utc>,
    last_tick_at: Option<DateTime<Utc>>,
) -> Result<Preloaded, RunError> {
    let interval = skill.context.bars_interval;
    let lookback = i64::from(skill.context.bars_lookback.max(1));
    let since = last_tick_at
        .map(|l| (tick_at - l).num_minutes() / interval.minutes().max(1))
        .unwrap_or(0)
        .max(0);
    let mut market = Preloaded::new();
    let mut wanted: Vec<(Interval, i64)> = vec![(interval, lookback.max(since))];
    for h in skill.context.effective_higher_timeframes() {
        wanted.push((h, lookback));
    }
    for symbol in &skill.context.symbols {
        for (iv, n) in &wanted {
            let n = (n + 2).min(MAX_CANDLES);
            let start = tick_at - bar_length(*iv) * i32::try_from(n).unwrap_or(i32::MAX);
            let bars = info
                .candle_snapshot(symbol, *iv, start, tick_at)
                .await
                .map_err(|source| RunError::Market {
                    symbol: symbol.clone(),
                    interval: iv.as_str(),
                    source,
                })?;
            let closed = bars
                .into_iter()
                .filter(|b| b.close_time(*iv) <= tick_at)
                .collect();
            market.insert_bars(symbol, *iv, closed);
        }
    }
    Ok(market)
}
