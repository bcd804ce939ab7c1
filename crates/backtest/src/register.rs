//! What a backtest's store holds before its first tick, as a live deployment's does: the
//! user, the skill, its version and a paper deployment ([`Registration`], [`register`]).

use chrono::{DateTime, Utc};

use crate::BacktestInput;

/// Records what a live deployment has before its first tick — the user, the skill, the skill
/// version (the skill document as JSON) and a paper deployment — so a backtest's store holds
/// everything a live run's does. Ids come from `input.deployment`; `created_at` is the first
/// tick's time (a backtest writes no wall-clock time). [`Registration::of`], then
/// [`Registration::store`].
///
/// # Errors
/// [`db::DbError`] from the store, e.g. [`db::DbError::Constraint`] when the deployment is
/// already recorded (a store holds one run per deployment id).
pub async fn register<S: db::RegistryStore>(
    store: &S,
    input: &BacktestInput,
    skill_body: serde_json::Value,
    created_at: DateTime<Utc>,
) -> Result<(), db::DbError> {
    Registration::of(input, skill_body, created_at)
        .store(store)
        .await
}

/// The rows [`register`] writes, built without the store and owned: what a store's
/// preparation running as a task ([`RunOptions::store_ready`](crate::RunOptions::store_ready))
/// records.
#[derive(Debug, Clone)]
pub struct Registration {
    /// `None`: the user is stored already ([`Registration::existing_user`]).
    user: Option<db::User>,
    skill: db::SkillRecord,
    version: db::SkillVersion,
    deployment: db::Deployment,
}

impl Registration {
    /// The rows of `input`'s deployment: its skill version holds `skill_body`, everything is
    /// dated `created_at`.
    #[must_use]
    pub fn of(
        input: &BacktestInput,
        skill_body: serde_json::Value,
        created_at: DateTime<Utc>,
    ) -> Self {
        let d = &input.deployment;
        let skill = d.skill.as_ref();
        let equity = input.broker.initial_equity_usd;
        let mut config = serde_json::json!({
            "symbols": skill.context.symbols,
            "taker_fee_bps": input.broker.taker_fee_bps,
            "slippage_bps": input.broker.slippage_bps,
            "maintenance_margin_rate": input.broker.maintenance_margin_rate,
            "from": input.from,
            "to": input.to,
        });
        if !input.broker.exchange_max_leverage.is_empty() {
            config["exchange_max_leverage"] = serde_json::json!(input.broker.exchange_max_leverage);
        }
        Self {
            user: Some(db::User {
                id: d.user_id,
                email: None,
            }),
            skill: db::SkillRecord {
                id: d.skill_id,
                user_id: d.user_id,
                name: skill.name.chars().take(200).collect(),
                created_at,
            },
            version: db::SkillVersion {
                skill_id: d.skill_id,
                version: d.skill_version,
                body: skill_body,
                model: skill.model.clone(),
                created_at,
            },
            deployment: db::Deployment {
                id: d.deployment_id,
                user_id: d.user_id,
                skill_id: d.skill_id,
                skill_version: d.skill_version,
                broker: db::BrokerKind::Paper,
                status: db::DeploymentStatus::Active,
                initial_equity_usd: equity,
                equity_usd: equity,
                config,
                created_at,
                next_tick_at: None,
                lease_owner: None,
                lease_expires_at: None,
            },
        }
    }

    /// The deployment registered with `status` instead of active: a backtest a job runs in a
    /// database live runners share is recorded `stopped`, so no runner ever claims it.
    #[must_use]
    pub fn with_status(mut self, status: db::DeploymentStatus) -> Self {
        self.deployment.status = status;
        self
    }

    /// The user is stored already and keeps their row as it is (a job's user, who submitted
    /// it): no user row is written (an upsert would clear their email).
    #[must_use]
    pub fn existing_user(mut self) -> Self {
        self.user = None;
        self
    }

    /// Writes the rows: the user (upserted, unless [`existing_user`](Self::existing_user)), the
    /// skill and its version unless the store holds
    /// them ([`db::RegistryStore::ensure_skill`], [`db::RegistryStore::ensure_skill_version`]:
    /// backtests of one skill registering at once never collide), then the deployment.
    ///
    /// # Errors
    /// [`db::DbError`] from the store: a deployment with this id already stored, or
    /// [`db::DbError::Conflict`] for a skill version stored with another body.
    pub async fn store<S: db::RegistryStore>(&self, store: &S) -> Result<(), db::DbError> {
        if let Some(user) = &self.user {
            store.upsert_user(user).await?;
        }
        store.ensure_skill(&self.skill).await?;
        store.ensure_skill_version(&self.version).await?;
        store.create_deployment(&self.deployment).await
    }
}
