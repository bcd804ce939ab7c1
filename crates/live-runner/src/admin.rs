//! The operator commands: `migrate`, `deploy`, `deployments`, `events import`.

use std::path::Path;

use chrono::{DateTime, Utc};
use db::{EventStore, LedgerStore, RegistryStore, Store, TickStore};
use execution_engine::PaperBrokerConfig;
use rust_decimal::Decimal;
use serde_json::json;
use sqlx::Row;
use uuid::Uuid;

use crate::hl_broker::HyperliquidConfig;
use crate::schedule::next_close_after;

/// Why an operator command failed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The store failed or refused a write.
    #[error("store: {0}")]
    Db(#[from] db::DbError),
    /// The skill file could not be read, parsed or validated.
    #[error("skill file {path}: {message}")]
    Skill {
        /// The file, as given.
        path: String,
        /// Every problem the loader found.
        message: String,
    },
    /// The command was refused: a bad request (broker without its config, a skill version that
    /// does not fit, ...) or a statement that failed, stated in full.
    #[error("{0}")]
    Refused(String),
    /// A MCP server of the skill could not be started: the deployment is refused.
    #[error("{0}")]
    Mcp(#[from] mcp::McpError),
    /// The calendar file has bad rows (each named with its line).
    #[error("calendar {0}")]
    Calendar(#[from] market_data::DataError),
}

/// Reads a calendar file ([`market_data::load_events`]: JSON in the `--events` shape, or CSV)
/// and upserts every event into `market_events` in one transaction
/// ([`EventStore::upsert_events`]). Idempotent: an event's id is its own or derived from kind,
/// time and title, so importing a file twice stores each event once. Returns the events stored.
///
/// # Errors
/// [`AdminError::Calendar`] naming the file and the line of every bad row (nothing is stored
/// then), [`AdminError::Db`] when the store refuses (nothing is stored either).
pub async fn import_events<S: EventStore + Sync>(
    store: &S,
    path: &Path,
) -> Result<Vec<types::MarketEvent>, AdminError> {
    let events = market_data::load_events(path)?;
    store.upsert_events(&events).await?;
    Ok(events)
}

/// What `migrate` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrateReport {
    /// `"sqlite"` or `"postgres"`.
    pub backend: &'static str,
    /// Versions and descriptions of the schema migrations now applied.
    pub applied: Vec<(i64, String)>,
    /// The PostgreSQL database did not exist and was created (a SQLite file is created by
    /// opening it).
    pub created: bool,
}

/// Creates the PostgreSQL database `url` names when the server does not have it yet (as opening
/// a SQLite URL creates its file), applies the store's migrations (done by [`db::connect`]; the
/// runner's state table, `live_runner_state`, is one of them) and reports the migrations the
/// database holds.
///
/// # Errors
/// [`AdminError`] when the server cannot be reached, the database cannot be created or a
/// statement fails.
pub async fn migrate(url: &str) -> Result<MigrateReport, AdminError> {
    let created = create_missing_database(url).await?;
    let store = db::connect(url).await?;
    let applied = match &store {
        Store::Postgres(pg) => {
            let rows = sqlx::query(
                "SELECT version, description FROM _sqlx_migrations WHERE success ORDER BY version",
            )
            .fetch_all(pg.pool())
            .await
            .map_err(|e| AdminError::Refused(format!("reading _sqlx_migrations: {e}")))?;
            rows.iter()
                .map(|r| (r.get::<i64, _>(0), r.get::<String, _>(1)))
                .collect()
        }
        Store::Sqlite(_) => db::SQLITE_MIGRATOR
            .iter()
            .map(|m| (m.version, m.description.to_string()))
            .collect(),
    };
    Ok(MigrateReport {
        backend: store.backend_name(),
        applied,
        created,
    })
}

/// Creates the database of a PostgreSQL `url` when the server lacks it; `false` for a database
/// that exists and for any other URL.
async fn create_missing_database(url: &str) -> Result<bool, AdminError> {
    use sqlx::migrate::MigrateDatabase;
    let scheme = url.split(':').next().unwrap_or_default();
    if !matches!(scheme, "postgres" | "postgresql") {
        return Ok(false);
    }
    let shown = db::redact_url(url);
    let exists = sqlx::Postgres::database_exists(url)
        .await
        .map_err(|e| AdminError::Refused(format!("connecting to {shown}: {e}")))?;
    if exists {
        return Ok(false);
    }
    sqlx::Postgres::create_database(url)
        .await
        .map_err(|e| AdminError::Refused(format!("creating the database of {shown}: {e}")))?;
    Ok(true)
}

/// What `deploy` stores.
#[derive(Debug, Clone)]
pub struct DeployRequest {
    /// The user who owns the deployment (created when missing).
    pub owner: Uuid,
    /// Paper or Hyperliquid.
    pub broker: db::BrokerKind,
    /// The paper account's starting equity. Zero for a Hyperliquid deployment: its equity is
    /// the exchange account's.
    pub equity_usd: Decimal,
    /// The deployment id (a new v4 when `None`).
    pub id: Option<Uuid>,
    /// The exchange account of a Hyperliquid deployment (`None` for paper).
    pub hyperliquid: Option<HyperliquidConfig>,
    /// The exchange's maximum leverage per coin (Hyperliquid `meta`), for a paper account
    /// margined as the exchange margins the skill's symbols (see
    /// [`PaperBrokerConfig::for_skill`]); empty: every symbol on the skill's `maxLeverage`.
    /// Paper only.
    pub exchange_max_leverage: std::collections::BTreeMap<String, Decimal>,
}

/// Stores the owner (when missing), the skill, the skill version (the skill's JSON body) and an
/// active deployment scheduled at the next bar close after `now`. The deployment's `config`
/// holds the symbols, the risk caps and the broker's config: `paper` (the paper broker's
/// config) or `hyperliquid` ([`HyperliquidConfig`]: account, network, the NAME of the key's
/// environment variable, optional base URL, max slippage — never a key).
///
/// # Errors
/// [`AdminError::Refused`] for a broker config that does not fit the broker (every problem
/// listed), an exchange account another active deployment trades on, a skill owned by another
/// user or a version stored with a different body; [`AdminError::Mcp`] when one of the skill's
/// MCP servers cannot start (each is started and stopped again before anything is stored);
/// [`AdminError::Db`] from the store.
pub async fn deploy(
    store: &Store,
    skill: &skill_schema::Skill,
    req: &DeployRequest,
    now: DateTime<Utc>,
) -> Result<db::Deployment, AdminError> {
    let broker_config = match (req.broker, &req.hyperliquid) {
        (db::BrokerKind::Paper, None) => {
            // The engine's own bounds, checked here: a deployment every tick of which would
            // fail to build its broker (an equity of 7.9e28) is refused at the door.
            // The skill's paper account, as a backtest of it builds it.
            let config =
                PaperBrokerConfig::for_skill(req.equity_usd, skill, &req.exchange_max_leverage)
                    .and_then(|c| execution_engine::PaperBroker::new(c.clone()).map(|_| c))
                    .map_err(|e| {
                        AdminError::Refused(format!("--equity {}: {e}", req.equity_usd))
                    })?;
            ("paper", json!(config))
        }
        (db::BrokerKind::Paper, Some(_)) => {
            return Err(AdminError::Refused(
                "--hl-account, --hl-network, --hl-key-env, --hl-url and --hl-max-slippage are for \
                 --broker hyperliquid only"
                    .to_owned(),
            ));
        }
        (db::BrokerKind::Hyperliquid, None) => {
            return Err(AdminError::Refused(
                "--broker hyperliquid needs --hl-account, --hl-network and --hl-key-env".to_owned(),
            ));
        }
        (db::BrokerKind::Hyperliquid, Some(hl)) => {
            let mut problems = hl.problems();
            if !req.exchange_max_leverage.is_empty() {
                problems.push(
                    "--meta / --meta-url margin a paper account; a Hyperliquid deployment is \
                     margined by the exchange itself"
                        .to_owned(),
                );
            }
            if !req.equity_usd.is_zero() {
                problems.push(
                    "--equity is the paper account's starting equity; a Hyperliquid \
                     deployment's equity is the exchange account's"
                        .to_owned(),
                );
            }
            if !problems.is_empty() {
                return Err(AdminError::Refused(problems.join("\n")));
            }
            ensure_account_free(store, hl).await?;
            (
                "hyperliquid",
                serde_json::to_value(hl).map_err(|e| {
                    AdminError::Refused(format!("serializing the Hyperliquid config: {e}"))
                })?,
            )
        }
    };
    // The skill's MCP servers must start here, as they will on the runner (same command,
    // arguments and environment), before anything is stored.
    if !skill.tools.mcp_servers.is_empty() {
        mcp::McpServers::start(&skill.tools.mcp_servers)
            .await?
            .shutdown()
            .await;
    }
    ensure_user(store, req.owner).await?;
    // Names are per owner: another user's skill of the same name is another skill.
    let skill_id = skill.skill_id_for(req.owner);
    let version = i32::try_from(skill.version).map_err(|_| {
        AdminError::Refused(format!("skill version {} is too large", skill.version))
    })?;
    let body = serde_json::to_value(skill)
        .map_err(|e| AdminError::Refused(format!("serializing the skill: {e}")))?;
    match store.get_skill(skill_id).await {
        Ok(existing) if existing.user_id != req.owner => {
            return Err(AdminError::Refused(format!(
                "skill {skill_id} belongs to another user"
            )));
        }
        Ok(_) => {}
        Err(db::DbError::NotFound { .. }) => {
            store
                .create_skill(&db::SkillRecord {
                    id: skill_id,
                    user_id: req.owner,
                    name: skill.name.chars().take(200).collect(),
                    created_at: now,
                })
                .await?;
        }
        Err(e) => return Err(e.into()),
    }
    match store.get_skill_version(skill_id, version).await {
        Ok(existing) if existing.body != body => {
            return Err(AdminError::Refused(format!(
                "skill {skill_id} version {version} is already stored with a different body; \
                 bump `version` in the skill file"
            )));
        }
        Ok(_) => {}
        Err(db::DbError::NotFound { .. }) => {
            store
                .add_skill_version(&db::SkillVersion {
                    skill_id,
                    version,
                    body,
                    model: skill.model.clone(),
                    created_at: now,
                })
                .await?;
        }
        Err(e) => return Err(e.into()),
    }
    let mut config = json!({
        "symbols": skill.context.symbols,
        "interval": skill.context.bars_interval.as_str(),
        "risk": skill.risk,
    });
    config[broker_config.0] = broker_config.1;
    let deployment = db::Deployment {
        id: req.id.unwrap_or_else(Uuid::new_v4),
        user_id: req.owner,
        skill_id,
        skill_version: version,
        broker: req.broker,
        status: db::DeploymentStatus::Active,
        initial_equity_usd: req.equity_usd,
        equity_usd: req.equity_usd,
        config,
        created_at: now,
        next_tick_at: Some(next_close_after(now, skill.context.bars_interval)),
        lease_owner: None,
        lease_expires_at: None,
    };
    store.create_deployment(&deployment).await?;
    Ok(deployment)
}

/// Refuses an exchange account (on the same network) that an active deployment already trades
/// on: the broker attributes every fill and position of the account to its deployment.
async fn ensure_account_free(store: &Store, hl: &HyperliquidConfig) -> Result<(), AdminError> {
    for d in store.list_deployments(None).await? {
        if d.broker != db::BrokerKind::Hyperliquid || d.status != db::DeploymentStatus::Active {
            continue;
        }
        let other = d
            .config
            .get("hyperliquid")
            .cloned()
            .and_then(|v| serde_json::from_value::<HyperliquidConfig>(v).ok());
        if let Some(other) = other
            && other.account == hl.account
            && other.network == hl.network
        {
            return Err(AdminError::Refused(format!(
                "--hl-account {} on {} is already traded by active deployment {}; one account \
                 per deployment",
                hl.account, hl.network, d.id
            )));
        }
    }
    Ok(())
}

/// Inserts the user unless it exists (an existing user's email is left as it is).
async fn ensure_user(store: &Store, id: Uuid) -> Result<(), AdminError> {
    let exists = match store {
        Store::Postgres(pg) => sqlx::query("SELECT 1 FROM auth.users WHERE id = $1")
            .bind(id)
            .fetch_optional(pg.pool())
            .await
            .map_err(|e| AdminError::Refused(format!("looking up user {id}: {e}")))?
            .is_some(),
        Store::Sqlite(s) => sqlx::query("SELECT 1 FROM users WHERE id = ?1")
            .bind(id.to_string())
            .fetch_optional(s.pool())
            .await
            .map_err(|e| AdminError::Refused(format!("looking up user {id}: {e}")))?
            .is_some(),
    };
    if !exists {
        store.upsert_user(&db::User { id, email: None }).await?;
    }
    Ok(())
}

/// One line of `deployments`.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentRow {
    /// The deployment's id.
    pub id: Uuid,
    /// The user who owns it.
    pub owner: Uuid,
    /// `{skill name} v{version}` (the skill id instead of the name when it cannot be read).
    pub skill: String,
    /// `active`, `paused` or `stopped`.
    pub status: &'static str,
    /// `paper` or `hyperliquid`.
    pub broker: &'static str,
    /// Time of its latest recorded tick; `None` before the first.
    pub last_tick: Option<DateTime<Utc>>,
    /// Ledger rows still open.
    pub open_positions: usize,
    /// Σ `realized_pnl_usd` of its ledger rows (closed rows and the realized part of open ones),
    /// USD, gross of fees as the ledger records it.
    pub realized_pnl_usd: Decimal,
    /// The exchange account of a Hyperliquid deployment, `account@network`.
    pub account: Option<String>,
}

/// Every deployment with its last tick, open positions and realized PnL (closed rows and the
/// realized part of open ones, gross of fees as the ledger records it), and the exchange account
/// of a Hyperliquid deployment.
///
/// # Errors
/// [`AdminError::Db`] from the store.
pub async fn list(store: &Store) -> Result<Vec<DeploymentRow>, AdminError> {
    let mut rows = Vec::new();
    for d in store.list_deployments(None).await? {
        let skill = store
            .get_skill(d.skill_id)
            .await
            .map(|s| format!("{} v{}", s.name, d.skill_version))
            .unwrap_or_else(|_| format!("{} v{}", d.skill_id, d.skill_version));
        let last_tick = store
            .list_snapshots(d.id, 1)
            .await?
            .first()
            .map(|s| s.tick_at);
        let trades = store.all_trades(d.id).await?;
        let open_positions = trades
            .iter()
            .filter(|t| t.status == types::TradeStatus::Open)
            .count();
        let realized_pnl_usd = trades.iter().map(|t| t.realized_pnl_usd).sum();
        let account = d
            .config
            .get("hyperliquid")
            .cloned()
            .and_then(|v| serde_json::from_value::<HyperliquidConfig>(v).ok())
            .map(|hl| format!("{}@{}", hl.account, hl.network));
        rows.push(DeploymentRow {
            id: d.id,
            owner: d.user_id,
            skill,
            status: d.status.as_str(),
            broker: d.broker.as_str(),
            last_tick,
            open_positions,
            realized_pnl_usd,
            account,
        });
    }
    Ok(rows)
}

/// The table `deployments` prints.
#[must_use]
pub fn render_table(rows: &[DeploymentRow]) -> String {
    let mut out = format!(
        "{:<36}  {:<36}  {:<32}  {:<7}  {:<11}  {:<20}  {:>4}  {:>14}  {}\n",
        "ID", "OWNER", "SKILL", "STATUS", "BROKER", "LAST TICK", "OPEN", "REALIZED", "ACCOUNT"
    );
    for r in rows {
        let last = r
            .last_tick
            .map(|t| t.format("%Y-%m-%d %H:%M:%SZ").to_string())
            .unwrap_or_else(|| "never".to_owned());
        let skill: String = r.skill.chars().take(32).collect();
        out.push_str(&format!(
            "{:<36}  {:<36}  {:<32}  {:<7}  {:<11}  {:<20}  {:>4}  {:>14}  {}\n",
            r.id,
            r.owner,
            skill,
            r.status,
            r.broker,
            last,
            r.open_positions,
            types::text::money(r.realized_pnl_usd),
            r.account.as_deref().unwrap_or("-")
        ));
    }
    out
}

/// Reads and validates a skill file (YAML, JSON or TOML by extension).
///
/// # Errors
/// [`AdminError::Skill`] naming the file and the problem.
pub fn load_skill_file(path: &Path) -> Result<skill_schema::Skill, AdminError> {
    skill_schema::load_skill(path)
        .map(|l| l.skill)
        .map_err(|e| AdminError::Skill {
            path: path.display().to_string(),
            message: e.to_string(),
        })
}
