//! One deployment's tick: its skill, the runner state the last tick committed, the market data,
//! the model and the broker (paper, or a Hyperliquid account), then `tick::run_tick_carrying`.

use std::sync::Arc;
use std::time::Instant;

use agent_runtime::{LanguageModel, ModelError, ModelRequest, ModelResponse};
use chrono::{DateTime, Utc};
use db::{LeaseStore, TickStore};
use execution_engine::{PaperBroker, PaperBrokerConfig};
use tick::{Broker, ReflectionCheck, TickState};
use tools::{Preloaded, RunMode, ToolContext};

use super::market::{fetch_derivatives, fetch_market, load_events, load_news};
use super::reflections::ReflectionJob;
use super::{Done, RunError, Runner};
use crate::hl_broker::{FillCursor, HyperliquidBroker, HyperliquidConfig};
use crate::metrics::Metrics;
use crate::schedule::{bar_length, last_close_at_or_before};
use crate::state::{CarriedBroker, RunnerState};

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

/// The store as the tick's recorder, writing the tick's alerts with it
/// ([`db::TickStore::record_tick_alerting`]).
struct Alerting<'a> {
    store: &'a db::Store,
    alerts: db::TickAlerts,
}

impl tick::Recorder for Alerting<'_> {
    const DEFER_SNAPSHOTS: bool = false;

    async fn record(
        &self,
        mut record: db::TickRecord,
        pending: Option<tick::PendingSnapshot>,
    ) -> Result<db::RecordOutcome, db::DbError> {
        tick::PendingSnapshot::finish_into(pending, &mut record)?;
        self.store.record_tick_alerting(&record, &self.alerts).await
    }
}

impl Runner {
    /// One tick of `d` at the latest bar close at or before now.
    ///
    /// # Errors
    /// [`RunError`] when the skill, the state, the market data, the model or the tick fails;
    /// nothing of the runner state is written then.
    pub async fn tick_deployment(&self, d: &db::Deployment) -> Result<Done, RunError> {
        self.tick_started(d, None).await
    }

    /// [`Runner::tick_deployment`], with the runner state read and the attempt marked
    /// already by the claimed set's start (`start`, [`db::LeaseStore::start_ticks`]) when it
    /// is of this tick; otherwise both here.
    pub(super) async fn tick_started(
        &self,
        d: &db::Deployment,
        start: Option<db::StartedTick>,
    ) -> Result<Done, RunError> {
        let skill = self.skill(d).await?;
        let interval = skill.context.bars_interval;
        let tick_at = last_close_at_or_before(self.clock.now(), interval);
        let next = tick_at + bar_length(interval);

        // The state the latest recorded tick committed with it, and the attempt this one
        // replaces when the start marked it.
        let (stored, marked) = match start.filter(|s| s.tick_at == tick_at) {
            Some(s) => (s.state, s.marked.then_some(s.previous)),
            None => (self.store.runner_state(d.id).await?, None),
        };
        if stored.as_ref().is_some_and(|s| s.tick_at >= tick_at) {
            return Ok(Done::AlreadyDone { next });
        }
        let saved = stored.as_ref().map(RunnerState::decode).transpose()?;
        let previous = match marked {
            Some(previous) => previous,
            None => {
                self.store
                    .mark_attempt(d.id, &self.config.owner, tick_at)
                    .await?
            }
        };
        if let Some(previous) = previous
            && previous.owner != self.config.owner
            && previous.tick_at == tick_at
        {
            tracing::warn!(deployment = %d.id, previous = %previous.owner, %tick_at, "taking over an unfinished tick");
            self.metrics.lease_takeover();
        }
        let last_tick_at = saved.as_ref().and_then(|s| s.last_tick_at);

        let mut market = fetch_market(
            &self.candles,
            &skill,
            tick_at,
            last_tick_at,
            self.clock.now(),
        )
        .await?;
        market.events = load_events(&self.store, &skill, tick_at).await?;
        // Funding and open interest only for a skill that can read them; a failed fetch leaves
        // the tick without them (logged), never fails it.
        let derivatives = if skill.tools.lists_derivatives_tool() {
            fetch_derivatives(&self.info, &skill, tick_at, self.clock.now())
                .await
                .map(|d| Arc::new(d) as Arc<dyn tools::DerivativesData>)
        } else {
            None
        };
        // With feeds configured, the stored headlines (point in time); without, the News section
        // says headlines are unknown.
        if self.news.is_some() {
            market.news = load_news(&self.store, &skill, tick_at).await?;
        }

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
        // The skill's MCP servers: started at the deployment's first tick, then kept.
        let external = self.mcp_tools(d, &skill).await?;
        let deployment = tick::TickDeployment::for_row(d, skill.clone(), reflector);
        let symbols = deployment.skill.context.symbols.clone();

        match d.broker {
            db::BrokerKind::Paper => {
                let mut broker =
                    paper_broker(d, saved.as_ref(), &market, &symbols, interval, tick_at)?;
                self.run_with(
                    deployment,
                    &model,
                    &mut broker,
                    saved,
                    market,
                    derivatives,
                    external,
                    d.initial_equity_usd,
                    tick_at,
                    next,
                )
                .await
            }
            db::BrokerKind::Hyperliquid => {
                let mut broker = self.hyperliquid_broker(d, saved.as_ref()).await?;
                // A first tick's risk tracking starts from the account's equity (a saved state
                // carries its own).
                let equity = match &saved {
                    Some(_) => rust_decimal::Decimal::ZERO,
                    None => broker.portfolio(tick_at).await?.equity_usd,
                };
                self.run_with(
                    deployment,
                    &model,
                    &mut broker,
                    saved,
                    market,
                    derivatives,
                    external,
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
        deployment: tick::TickDeployment,
        model: &TimedModel,
        broker: &mut B,
        saved: Option<RunnerState>,
        market: Preloaded,
        derivatives: Option<Arc<dyn tools::DerivativesData>>,
        external: Arc<[Arc<dyn tools::Tool>]>,
        equity: rust_decimal::Decimal,
        tick_at: DateTime<Utc>,
        next: DateTime<Utc>,
    ) -> Result<Done, RunError> {
        // The ledger and the reflection notes come from the store (the source of truth), the rest
        // from the state the last tick committed.
        let carried = saved.map(|s| tick::Carried {
            risk: s.risk,
            last_decision: s.last_decision,
            last_tick_at: s.last_tick_at,
        });
        let mut tick_state =
            tick::restore_state_carried(&self.store, &deployment, equity, tick_at, carried).await?;
        // The model loop ends at the tick budget: a hanging model is a model error, not a tick
        // that holds its lease for minutes.
        tick_state.run_options.deadline = Some(self.config.tick_budget);

        let symbols = deployment.skill.context.symbols.clone();
        let market = Arc::new(market);
        // The calendar is the store's events the tick loaded into `market` (`load_events`).
        let mut ctx = ToolContext::new(
            tick_at,
            RunMode::Trade,
            symbols,
            market.clone(),
            market.clone(),
        )
        .with_events(market.clone())
        .with_external(external)
        // The outcome memory (recall tools, `<trading_memory>`): this deployment's rows, read
        // as of the tick.
        .with_trade_memory(Arc::new(tick::StoreMemory::new(
            self.store.clone(),
            db::MemoryScope::Deployment(deployment.deployment_id),
        )));
        if let Some(derivatives) = derivatives {
            ctx = ctx.with_derivatives(derivatives);
        }
        let ctx = if self.news.is_some() {
            ctx.with_news(market)
        } else {
            ctx
        };
        let carry =
            |broker: &B, after: &TickState| serde_json::to_value(RunnerState::after(broker, after));
        // The tick's alerts go to the outbox in its transaction.
        let alerting = Alerting {
            store: &self.store,
            alerts: db::TickAlerts {
                start_lag: self.clock.now() - tick_at,
                lag_threshold: self.config.lag_alert_after,
                model_error_streak: self.config.model_error_streak,
            },
        };
        let outcome = tick::run_tick_recording(
            &deployment,
            &ctx,
            model,
            broker,
            &mut tick_state,
            &alerting,
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

impl Runner {
    /// The Hyperliquid deployment `d`'s broker, its fill watermark the saved state's (the
    /// deployment's creation before its first tick).
    pub(super) async fn hyperliquid_broker(
        &self,
        d: &db::Deployment,
        saved: Option<&RunnerState>,
    ) -> Result<HyperliquidBroker, RunError> {
        let config = hyperliquid_config(d)?;
        let exchange = |source| RunError::Exchange {
            deployment: d.id,
            source,
        };
        let signer = crate::hl_broker::signer_from_env(&config, &*self.env).map_err(exchange)?;
        let cursor = saved
            .and_then(|s| s.hyperliquid.clone())
            .unwrap_or_else(|| FillCursor::starting_at(d.created_at));
        HyperliquidBroker::new(
            d.id,
            &config,
            signer,
            self.clock.clone(),
            cursor,
            &self.exchange_http,
        )
        .await
        .map_err(exchange)
    }
}

/// The paper deployment `d`'s broker as the saved state left it (a new one before its first
/// tick), with every bar of `market` closed since the last tick and at or before `tick_at`
/// applied (liquidations, resting stops and targets, marks).
pub(super) fn paper_broker(
    d: &db::Deployment,
    saved: Option<&RunnerState>,
    market: &Preloaded,
    symbols: &[String],
    interval: types::Interval,
    tick_at: DateTime<Utc>,
) -> Result<PaperBroker, RunError> {
    let mut broker = match saved.map(|s| s.broker.clone()) {
        Some(Some(b)) => b,
        Some(None) => {
            return Err(RunError::BrokerConfig {
                deployment: d.id,
                message: "the saved runner state holds no paper broker".to_owned(),
            });
        }
        None => PaperBroker::new(paper_config(d)?)?,
    };
    let last_tick_at = saved.and_then(|s| s.last_tick_at);
    for symbol in symbols {
        let bars = market.all_bars(symbol, interval);
        let fresh: Vec<_> = match last_tick_at {
            Some(last) => bars
                .iter()
                .filter(|b| b.close_time(interval) > last && b.close_time(interval) <= tick_at)
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
    Ok(broker)
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
