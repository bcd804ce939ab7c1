//! [`BacktestInput::for_test`] and its setters (feature `test-support`): the one place the tests,
//! benches and examples of this and other crates build a backtest's input, so a field added to
//! it is given a default here, once.

use std::sync::Arc;

use agent_runtime::{ModelError, builtin_model};
use chrono::{DateTime, Utc};
use execution_engine::PaperBrokerConfig;
use rust_decimal::Decimal;
use skill_schema::Skill;
use tick::TickDeployment;
use tools::{DerivativesData, EventCalendar, NewsSource, Preloaded, Tool};
use uuid::Uuid;

use crate::BacktestInput;

impl BacktestInput {
    /// A backtest of `skill` over `market` with the defaults tests share: user 1, deployment 2,
    /// skill 3 (`Uuid::from_u128`), version 1; no reflection model (a due reflection is
    /// recorded as failed); $10,000 of paper equity at the paper broker's default fees and
    /// slippage; a tick at every bar close of the skill's interval; no news, events,
    /// derivatives or external tools; not blind. The `with_*` setters change one of them.
    #[must_use]
    pub fn for_test(skill: impl Into<Arc<Skill>>, market: impl Into<Arc<Preloaded>>) -> Self {
        Self {
            deployment: TickDeployment {
                user_id: Uuid::from_u128(1),
                deployment_id: Uuid::from_u128(2),
                skill_id: Uuid::from_u128(3),
                skill_version: 1,
                skill: skill.into(),
                reflector: Err("no reflection model in this test".into()),
            },
            market: market.into(),
            news: None,
            events: None,
            derivatives: None,
            from: None,
            to: None,
            broker: PaperBrokerConfig::new(Decimal::from(10_000)),
            external_tools: Arc::new([]),
            blind: None,
        }
    }

    /// The deployment's user, deployment and skill ids.
    #[must_use]
    pub fn with_ids(mut self, user: Uuid, deployment: Uuid, skill: Uuid) -> Self {
        let d = &mut self.deployment;
        (d.user_id, d.deployment_id, d.skill_id) = (user, deployment, skill);
        self
    }

    /// Reflection by the skill's reflection model (`context.memory.reflection.model`), resolved
    /// among the offline built-ins (`builtin/stats-reflection`, the `builtin/…` models); an
    /// unknown one is the reflector's error, recorded when a reflection is due.
    #[must_use]
    pub fn with_offline_reflection(mut self) -> Self {
        let skill = Arc::clone(&self.deployment.skill);
        self.deployment.reflector =
            reflection::resolve_reflection_model(&skill.context.memory.reflection.model, |id| {
                builtin_model(id, &skill).ok_or_else(|| ModelError::UnknownModel(id.to_owned()))
            })
            .map_err(|e| e.to_string());
        self
    }

    /// Only the ticks in `[from, to]`.
    #[must_use]
    pub fn with_range(mut self, from: DateTime<Utc>, to: DateTime<Utc>) -> Self {
        (self.from, self.to) = (Some(from), Some(to));
        self
    }

    /// The paper broker's settings.
    #[must_use]
    pub fn with_broker(mut self, broker: PaperBrokerConfig) -> Self {
        self.broker = broker;
        self
    }

    /// The paper broker's taker fee and slippage, in basis points.
    #[must_use]
    pub fn with_costs(mut self, taker_fee_bps: Decimal, slippage_bps: Decimal) -> Self {
        (self.broker.taker_fee_bps, self.broker.slippage_bps) = (taker_fee_bps, slippage_bps);
        self
    }

    /// Headlines.
    #[must_use]
    pub fn with_news(mut self, news: Arc<dyn NewsSource>) -> Self {
        self.news = Some(news);
        self
    }

    /// Scheduled events.
    #[must_use]
    pub fn with_events(mut self, events: Arc<dyn EventCalendar>) -> Self {
        self.events = Some(events);
        self
    }

    /// Funding and open interest.
    #[must_use]
    pub fn with_derivatives(mut self, derivatives: Arc<dyn DerivativesData>) -> Self {
        self.derivatives = Some(derivatives);
        self
    }

    /// Tools started before the run (an MCP server's), in every tick's context.
    #[must_use]
    pub fn with_external_tools(mut self, tools: Arc<[Arc<dyn Tool>]>) -> Self {
        self.external_tools = tools;
        self
    }

    /// A blind run with this seed.
    #[must_use]
    pub fn with_blind(mut self, seed: u64) -> Self {
        self.blind = Some(seed);
        self
    }
}
