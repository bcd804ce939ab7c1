//! The Hyperliquid exchange broker: [`tick::Broker`] over the exchange's info and exchange
//! endpoints, for deployments whose broker is `hyperliquid`.
//!
//! The exchange is authoritative:
//! - [`portfolio`](tick::Broker::portfolio) reads `clearinghouseState` (equity, free margin,
//!   positions at the exchange's marks); lifetime realized PnL and fees are the sums over the
//!   fills drained so far (the account state carries neither);
//! - [`drain_fills`](tick::Broker::drain_fills) reads `userFillsByTime` from a watermark
//!   ([`FillCursor`]), paging past the exchange's 2000-fill cap, and returns every fill not
//!   returned before — liquidations and auto-deleveraging included (`liquidation` set) — with
//!   the exchange's ids (the trade id `tid`). The runner commits the cursor with its state in
//!   the tick's own `record_tick` transaction, so it survives a restart and is never ahead of
//!   the stored fills (fills read again are skipped by id by the ledger and the store);
//! - [`execute`](tick::Broker::execute) sends a marketable IOC limit order (Hyperliquid has no
//!   market order: the limit is the mark moved by `max_slippage` against us, rounded to the
//!   asset's tick, the size rounded toward zero to its lot) with the client order id
//!   [`hyperliquid::cloid_for`]`(deployment, tick time)`.
//!
//! **Stops and targets:** after a filled open, add or flip whose order carries a `stop` and/or
//! `target`, the broker cancels the symbol's resting triggers and places reduce-only
//! `positionTpsl` trigger orders (`tpsl` `sl` / `tp`, market once triggered, worst price
//! `max_slippage` beyond the trigger) sized to the resulting position, under the client order ids
//! [`hyperliquid::cloid_for_leg`]`(deployment, tick, 1)` (stop) and `2` (target); an add without
//! a level keeps the resting one's price. They are carried in [`FillCursor::triggers`]. Every
//! [`portfolio`](tick::Broker::portfolio) read cancels the triggers of a position that is gone
//! (closed, stopped out, liquidated) or flipped. A drained fill under a trigger's client order id
//! is a stop / target fill ([`types::Fill::trigger`], no snapshot id): the ledger closes the row
//! as `stop` / `target`. A trigger that cannot be placed is logged as an error and never fails
//! the tick (the entry has filled); a re-run tick adopts the triggers a previous run placed.
//!
//! **Restart safety:** before placing, the broker asks the exchange for that client order id
//! (`orderStatus`). If the exchange knows it, a previous run of this very tick placed it (a
//! crash or a lost answer): it is not placed again; its fills are reported (and they carry this
//! tick's snapshot id). The same lookup follows any placement whose answer is not a clear
//! per-order status (a transport error, a whole-request error), because the order may have
//! landed anyway.
//!
//! **Failures:** an exchange refusal of the order (insufficient margin, minimum value, reduce
//! only, no liquidity, ...) is a [`BrokerRefusal`] with a fitting rule code and the exchange's
//! words: the tick records a rejection. A failure to reach the exchange (transport errors, 5xx
//! after the client's retries, an unreadable answer) is never turned into a rejection: it is
//! [`ExecuteError::Unavailable`], the tick fails before recording anything and the runner
//! retries it; the retry finds the order by its client order id if it landed.
//!
//! **Leverage:** Hyperliquid applies the account's per-asset leverage setting to an order, not
//! a leverage carried by the order. Before an opening (not reduce-only) order the broker makes
//! the setting the order's: **isolated margin** (what the engine and the paper broker model)
//! at the order's leverage rounded down to a whole number (the exchange takes whole numbers;
//! rounding down posts at least the margin the engine checked), at least 1. The setting is
//! read from the last `clearinghouseState` for a coin with an open position, else from
//! `activeAssetData`, and cached for the broker's life (one tick); when it differs (value or
//! margin mode) the broker sends `updateLeverage` first. A leverage above the asset's
//! `maxLeverage` is refused before anything is sent (`R5_LEVERAGE_CAP`); an `updateLeverage`
//! the exchange refuses refuses the order with the exchange's words (the tick records a
//! rejection) — the order is never sent at another leverage. Not reaching the exchange is
//! [`ExecuteError::Unavailable`] as for orders.
//!
//! **API (agent) wallets:** the deployment's `account` is the master account: every read
//! (`clearinghouseState`, `userFillsByTime`, `orderStatus`, `activeAssetData`) names it. The key
//! may be the account's own or an API wallet the account approved: its orders, cancels and
//! `updateLeverage` are signed by the agent key with no `vaultAddress`, and the exchange applies
//! them to the master. [`verify_signer`] checks an agent against the master's `extraAgents`
//! (approved and not expired) when the broker is built and at `live-runner deploy`; an
//! unapproved or expired agent is refused naming both addresses.
//!
//! **The account is the deployment's alone:** every position and fill on it is attributed to
//! the deployment (`deploy` refuses a second active deployment on one account). The private key
//! never reaches the database: the deployment's config names the environment variable holding
//! it.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use execution_engine::{Order, OrderTag};
use hyperliquid::{
    Address, ClientConfig, Cloid, ExchangeClient, Grouping, HlError, InfoClient, Meta, Network,
    OrderInfo, OrderLookup, OrderRef, OrderRequest, OrderState, OrderStatus, Signer, Tpsl,
    TriggerOrderRequest, USER_FILLS_PAGE, cloid_for, cloid_for_leg,
};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use tick::{Broker, BrokerRefusal, BrokerUnavailable, ExecuteError};
use types::{Clock, Fill, FillTrigger, OrderSide, PortfolioSnapshot, Position, RuleCode, Side};
use uuid::Uuid;

/// The default worst price of an order, as a fraction of the mark (1 %).
pub const DEFAULT_MAX_SLIPPAGE: Decimal = Decimal::from_parts(1, 0, 0, false, 2);

/// How far before the watermark every fill read starts again, so a fill the exchange indexed
/// late is still seen (the ones already returned are recognised by id).
pub const FILL_OVERLAP: Duration = Duration::seconds(60);

/// Pages of `userFillsByTime` read at most per drain (2000 fills each).
const MAX_FILL_PAGES: usize = 50;

fn default_max_slippage() -> Decimal {
    DEFAULT_MAX_SLIPPAGE
}

/// A Hyperliquid deployment's broker config, stored under `config.hyperliquid` of the
/// deployment. Holds no secret: the key is read from the environment variable `key_env` when
/// the deployment ticks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HyperliquidConfig {
    /// The trading account (`0x` + 40 hex digits).
    pub account: Address,
    /// Mainnet or testnet: explicit, never inferred from a URL (it is part of what is signed).
    pub network: Network,
    /// The name of the environment variable holding the account's private key.
    pub key_env: String,
    /// The API base URL for this account's reads and orders; the network's public API when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The worst price an order accepts, as a fraction of the mark: a buy's limit is
    /// `mark × (1 + max_slippage)`, a sell's `mark × (1 − max_slippage)`.
    #[serde(default = "default_max_slippage")]
    pub max_slippage: Decimal,
}

impl HyperliquidConfig {
    /// Every problem with the config, each naming the flag it comes from; empty when valid.
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if !is_env_name(&self.key_env) {
            out.push(format!(
                "--hl-key-env: {:?} is not an environment variable name (letters, digits and \
                 underscores, not starting with a digit)",
                self.key_env
            ));
        }
        if let Some(url) = &self.base_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            out.push(format!(
                "--hl-url: {url:?} must start with http:// or https://"
            ));
        }
        if self.max_slippage <= Decimal::ZERO || self.max_slippage > Decimal::new(5, 1) {
            out.push(format!(
                "--hl-max-slippage: must be above 0 and at most 0.5 (a fraction of the mark), \
                 got {}",
                self.max_slippage
            ));
        }
        out
    }

    /// The API base URL: `base_url`, else the network's public API.
    #[must_use]
    pub fn api_url(&self) -> &str {
        self.base_url
            .as_deref()
            .unwrap_or_else(|| self.network.api_url())
    }
}

fn is_env_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why a Hyperliquid deployment's broker cannot be built. Never contains the key.
#[derive(Debug, thiserror::Error)]
pub enum HlBrokerError {
    /// The environment variable the config names is unset or blank.
    #[error(
        "the environment variable {var} holding the private key of Hyperliquid account \
         {account} is not set"
    )]
    MissingKey {
        /// The variable's name (`key_env`).
        var: String,
        /// The deployment's account.
        account: Address,
    },
    /// The variable does not hold a valid secp256k1 private key in hex.
    #[error("the environment variable {var} does not hold a usable private key: {source}")]
    InvalidKey {
        /// The variable's name.
        var: String,
        /// Why the key was refused (never the key itself).
        #[source]
        source: HlError,
    },
    /// The key signs for another address than the deployment's account, and that address is
    /// not among the account's approved API wallets (`extraAgents`).
    #[error(
        "the key in {var} signs for {signer}, which is neither the deployment's account \
         {account} nor an API wallet {account} approved"
    )]
    NotAnAgent {
        /// The variable's name.
        var: String,
        /// The address the key signs for.
        signer: Address,
        /// The deployment's (master) account.
        account: Address,
    },
    /// The key is an API wallet of the account whose approval has expired.
    #[error(
        "the key in {var} signs for {signer}, an API wallet of {account} whose approval \
         expired at {valid_until}"
    )]
    AgentExpired {
        /// The variable's name.
        var: String,
        /// The agent's address.
        signer: Address,
        /// The deployment's (master) account.
        account: Address,
        /// When the approval ended (UTC).
        valid_until: DateTime<Utc>,
    },
    /// The account's approved API wallets could not be read to check an agent key.
    #[error("reading the API wallets (extraAgents) of {account} to check {signer}: {source}")]
    AgentCheck {
        /// The deployment's (master) account.
        account: Address,
        /// The address the key signs for.
        signer: Address,
        /// The client's error (boxed: the variant would make every result large).
        #[source]
        source: Box<HlError>,
    },
    /// The HTTP client for the exchange could not be built.
    #[error("Hyperliquid client for {url}: {source}")]
    Client {
        /// The API base URL.
        url: String,
        /// The client's error.
        #[source]
        source: HlError,
    },
}

/// The signer for `config`'s account, its key read from the environment through `env`: the
/// account's own key or an API wallet's (check the latter with [`verify_signer`]).
///
/// # Errors
/// [`HlBrokerError`] naming the variable when it is unset or blank or holds no valid key.
pub fn signer_from_env(
    config: &HyperliquidConfig,
    env: &dyn types::EnvLookup,
) -> Result<Signer, HlBrokerError> {
    let var = config.key_env.clone();
    let Some(key) = env(&var).filter(|k| !k.trim().is_empty()) else {
        return Err(HlBrokerError::MissingKey {
            var,
            account: config.account,
        });
    };
    Signer::from_hex(&key).map_err(|source| HlBrokerError::InvalidKey { var, source })
}

/// Whose key signs a deployment's orders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignerRole {
    /// The account's own key.
    Account,
    /// An API wallet the account approved, signing for it.
    Agent {
        /// The agent's address.
        address: Address,
        /// The name the account gave it.
        name: String,
        /// When the approval ends.
        valid_until: DateTime<Utc>,
    },
}

/// Checks that `signer` may trade for `config.account` at `now`: it is the account's own key,
/// or an API wallet listed in the account's `extraAgents` whose `validUntil` is after `now`.
///
/// # Errors
/// [`HlBrokerError::NotAnAgent`] / [`HlBrokerError::AgentExpired`] naming both addresses;
/// [`HlBrokerError::AgentCheck`] when `extraAgents` cannot be read.
pub async fn verify_signer(
    config: &HyperliquidConfig,
    signer: Address,
    info: &InfoClient,
    now: DateTime<Utc>,
) -> Result<SignerRole, HlBrokerError> {
    if signer == config.account {
        return Ok(SignerRole::Account);
    }
    let agents =
        info.extra_agents(config.account)
            .await
            .map_err(|source| HlBrokerError::AgentCheck {
                account: config.account,
                signer,
                source: Box::new(source),
            })?;
    match agents.into_iter().find(|a| a.address == signer) {
        None => Err(HlBrokerError::NotAnAgent {
            var: config.key_env.clone(),
            signer,
            account: config.account,
        }),
        Some(a) if a.valid_until <= now => Err(HlBrokerError::AgentExpired {
            var: config.key_env.clone(),
            signer,
            account: config.account,
            valid_until: a.valid_until,
        }),
        Some(a) => Ok(SignerRole::Agent {
            address: a.address,
            name: a.name,
            valid_until: a.valid_until,
        }),
    }
}

/// The whole-number leverage Hyperliquid is set to for an order at `leverage`: rounded down,
/// at least 1.
#[must_use]
pub fn exchange_leverage(leverage: Decimal) -> u32 {
    use rust_decimal::prelude::ToPrimitive;
    if leverage < Decimal::ONE {
        return 1;
    }
    leverage.floor().to_u32().unwrap_or(u32::MAX)
}

/// A fill already returned, remembered while it is inside the re-read overlap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenFill {
    /// The fill's time (UTC, the exchange's millisecond timestamp).
    pub time: DateTime<Utc>,
    /// The fill's id as returned ([`types::Fill::id`]: the exchange's trade id `tid`, else a
    /// stable hash-based id).
    pub id: String,
}

/// A stop-loss or take-profit trigger order resting on the exchange for a position of the
/// deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestingTrigger {
    /// The position's coin.
    pub symbol: String,
    /// The asset id the order was placed on.
    pub asset: u32,
    /// The side of the position it protects.
    pub position_side: Side,
    /// Stop or target.
    pub kind: FillTrigger,
    /// The trigger price asked for (before the exchange's rounding).
    pub trigger_px: Decimal,
    /// Its client order id: `cloid_for_leg(deployment, entry tick, 1)` for the stop, `2` for
    /// the target.
    pub cloid: Cloid,
}

/// Where the next fill read starts, and the account's totals over the fills read so far. Part
/// of the runner state of a Hyperliquid deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FillCursor {
    /// No fill before this instant is the deployment's (its creation).
    pub start: DateTime<Utc>,
    /// The newest fill time returned so far (`start` before the first fill).
    pub since: DateTime<Utc>,
    /// The fills returned with a time within [`FILL_OVERLAP`] before `since` (the next read
    /// covers them again and must not return them twice).
    #[serde(default)]
    pub recent: Vec<SeenFill>,
    /// Sum of the drained fills' `closedPnl` (gross of fees).
    #[serde(default)]
    pub realized_pnl_usd: Decimal,
    /// Sum of the drained fills' fees (rebates negative).
    #[serde(default)]
    pub fees_paid_usd: Decimal,
    /// The stop-loss / take-profit trigger orders resting for the deployment's positions
    /// (absent from the JSON when there are none, so older states read and write unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<RestingTrigger>,
}

impl FillCursor {
    /// A cursor returning every fill from `start` on.
    #[must_use]
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        FillCursor {
            start,
            since: start,
            recent: Vec::new(),
            realized_pnl_usd: Decimal::ZERO,
            fees_paid_usd: Decimal::ZERO,
            triggers: Vec::new(),
        }
    }

    /// Where the next read starts: [`FILL_OVERLAP`] before `since`, never before `start`.
    #[must_use]
    pub fn read_from(&self) -> DateTime<Utc> {
        (self.since - FILL_OVERLAP).max(self.start)
    }

    /// Whether a fill at `time` with `id` is the deployment's and was not returned before.
    fn is_new(&self, time: DateTime<Utc>, id: &str) -> bool {
        time >= self.read_from() && !self.recent.iter().any(|s| s.id == id)
    }

    fn remember(&mut self, time: DateTime<Utc>, id: String) {
        if time > self.since {
            self.since = time;
        }
        self.recent.push(SeenFill { time, id });
        let floor = self.since - FILL_OVERLAP;
        self.recent.retain(|s| s.time >= floor);
    }
}

/// [`tick::Broker`] on a Hyperliquid account. One per deployment and tick: the runner builds
/// it from the deployment's [`HyperliquidConfig`] and its saved [`FillCursor`], and saves
/// [`HyperliquidBroker::cursor`] after the tick.
pub struct HyperliquidBroker {
    deployment_id: Uuid,
    account: Address,
    info: InfoClient,
    exchange: ExchangeClient,
    max_slippage: Decimal,
    cursor: FillCursor,
    meta: Option<Meta>,
    /// Client order ids of this broker's ticks and the snapshot their fills belong to.
    tags: Vec<(Cloid, Uuid)>,
    /// Every fill drained by this broker, for reporting an order placed by an earlier run.
    drained: Vec<Fill>,
    /// The positions of the last `portfolio` read.
    positions: Vec<Position>,
    /// Every trigger order this broker knew of (resting at construction or placed since, also
    /// after it left the cursor), so a fill of one is recognised when drained.
    known_triggers: Vec<(Cloid, FillTrigger)>,
    /// The account's leverage setting per coin as last read or set (cross?, value): from the
    /// last `clearinghouseState` for open positions, `activeAssetData` otherwise.
    leverage: HashMap<String, (bool, u32)>,
    /// Who signs: the account or an approved agent.
    role: SignerRole,
}

impl std::fmt::Debug for HyperliquidBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperliquidBroker")
            .field("deployment_id", &self.deployment_id)
            .field("account", &self.account)
            .field("exchange", &self.exchange)
            .field("cursor", &self.cursor)
            .finish_non_exhaustive()
    }
}

impl HyperliquidBroker {
    /// A broker for `deployment_id` on `config`'s account, signing with `signer` (see
    /// [`signer_from_env`]), reading fills from `cursor`. `http` sets timeouts and retries; its
    /// base URL is replaced by [`HyperliquidConfig::api_url`]. `clock` gives the order nonces.
    ///
    /// An agent key is checked against the account's `extraAgents` at the clock's now
    /// ([`verify_signer`]).
    ///
    /// # Errors
    /// [`HlBrokerError::Client`] for an unusable base URL; [`HlBrokerError::NotAnAgent`],
    /// [`HlBrokerError::AgentExpired`] or [`HlBrokerError::AgentCheck`] when `signer` is not
    /// the account's key and not (or no longer, or not verifiably) its approved agent.
    pub async fn new(
        deployment_id: Uuid,
        config: &HyperliquidConfig,
        signer: Signer,
        clock: Arc<dyn Clock>,
        cursor: FillCursor,
        http: &ClientConfig,
    ) -> Result<Self, HlBrokerError> {
        let url = config.api_url().to_owned();
        let http = ClientConfig {
            base_url: url.clone(),
            ..http.clone()
        };
        let client_err = |source| HlBrokerError::Client {
            url: url.clone(),
            source,
        };
        let info = InfoClient::new(&http).map_err(client_err)?;
        let role = verify_signer(config, signer.address(), &info, clock.now()).await?;
        let exchange =
            ExchangeClient::new(&http, signer, config.network, clock).map_err(client_err)?;
        let known_triggers = cursor.triggers.iter().map(|t| (t.cloid, t.kind)).collect();
        Ok(HyperliquidBroker {
            deployment_id,
            account: config.account,
            info,
            exchange,
            max_slippage: config.max_slippage,
            cursor,
            meta: None,
            tags: Vec::new(),
            drained: Vec::new(),
            positions: Vec::new(),
            known_triggers,
            leverage: HashMap::new(),
            role,
        })
    }

    /// Whose key signs this broker's orders.
    #[must_use]
    pub fn signer_role(&self) -> &SignerRole {
        &self.role
    }

    /// Makes the account's leverage setting on `order`'s asset the order's (isolated, see the
    /// module docs) before an opening order: `updateLeverage` when the known setting differs.
    async fn set_leverage(
        &mut self,
        order: &Order,
        asset: hyperliquid::AssetInfo,
    ) -> Result<(), ExecuteError> {
        if order.reduce_only {
            return Ok(());
        }
        let wanted = exchange_leverage(order.leverage);
        if wanted > asset.max_leverage {
            return Err(BrokerRefusal {
                rule: RuleCode::LeverageCap,
                message: format!(
                    "leverage {}x on {} is above Hyperliquid's maximum of {}x for it",
                    order.leverage, order.symbol, asset.max_leverage
                ),
            }
            .into());
        }
        let current = match self.leverage.get(&order.symbol) {
            Some(known) => *known,
            None => {
                let data = self
                    .info
                    .active_asset_data(self.account, &order.symbol)
                    .await
                    .map_err(|e| {
                        self.fail(format!(
                            "reading Hyperliquid's activeAssetData of {} on {}: {e}",
                            self.account, order.symbol
                        ))
                    })?;
                let known = (data.leverage.is_cross(), data.leverage.value);
                self.leverage.insert(order.symbol.clone(), known);
                known
            }
        };
        if current == (false, wanted) {
            return Ok(());
        }
        match self
            .exchange
            .update_leverage(asset.index, wanted, false)
            .await
        {
            Ok(()) => {
                tracing::info!(deployment = %self.deployment_id, symbol = %order.symbol, from = current.1, from_cross = current.0, to = wanted, "set the account's leverage (isolated) before the order");
                self.leverage.insert(order.symbol.clone(), (false, wanted));
                Ok(())
            }
            Err(HlError::Rejected(message)) => {
                let rule = refusal(&message).rule;
                Err(BrokerRefusal {
                    rule,
                    message: format!(
                        "Hyperliquid refused to set {}'s leverage to {wanted}x isolated (the \
                         order was not sent): {message}",
                        order.symbol
                    ),
                }
                .into())
            }
            Err(e) => Err(self.fail(format!(
                "setting {}'s leverage to {wanted}x isolated: {e}",
                order.symbol
            ))),
        }
    }

    /// The fill watermark and totals to persist after the tick.
    #[must_use]
    pub fn cursor(&self) -> &FillCursor {
        &self.cursor
    }

    /// The exchange could not be reached while placing an order: the tick fails and is retried.
    fn fail(&self, message: String) -> ExecuteError {
        tracing::error!(deployment = %self.deployment_id, error = %message, "Hyperliquid unreachable while placing an order");
        ExecuteError::Unavailable(BrokerUnavailable(message))
    }

    /// Cancels the resting triggers on `symbol` that `drop` selects and forgets them. A cancel
    /// the exchange refuses (the order already filled or was cancelled with its position) is
    /// logged; the trigger is forgotten either way.
    async fn cancel_triggers(&mut self, symbol: &str, drop: impl Fn(&RestingTrigger) -> bool) {
        let (gone, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut self.cursor.triggers)
            .into_iter()
            .partition(|t| t.symbol == symbol && drop(t));
        self.cursor.triggers = keep;
        for t in gone {
            match self.exchange.cancel_by_cloid(t.asset, t.cloid).await {
                Ok(OrderStatus::Success) => {
                    tracing::info!(deployment = %self.deployment_id, symbol, cloid = %t.cloid, kind = t.kind.as_str(), "cancelled a trigger order");
                }
                Ok(other) => {
                    tracing::warn!(deployment = %self.deployment_id, symbol, cloid = %t.cloid, answer = ?other, "the exchange did not cancel a trigger order (filled or already gone?)");
                }
                Err(e) => {
                    tracing::warn!(deployment = %self.deployment_id, symbol, cloid = %t.cloid, error = %e, "cancelling a trigger order failed");
                }
            }
        }
    }

    /// After a filled entry that carries a stop and/or target: cancels the symbol's resting
    /// triggers and places reduce-only `positionTpsl` triggers for the resulting position — the
    /// levels the order carries, else the ones resting for the same side (an add without a level
    /// keeps it). Failures are logged, never fail the tick: the entry has filled.
    async fn protect(&mut self, order: &Order, filled: &Fill, at: DateTime<Utc>) {
        if order.reduce_only || (order.stop.is_none() && order.target.is_none()) {
            return;
        }
        let side = match order.side {
            OrderSide::Buy => Side::Long,
            OrderSide::Sell => Side::Short,
        };
        let before = self.positions.iter().find(|p| p.symbol == order.symbol);
        let qty = match before {
            Some(p) if p.side == side => p.qty + filled.qty,
            Some(p) => filled.qty - p.qty,
            None => filled.qty,
        };
        if qty <= Decimal::ZERO {
            return;
        }
        let kept = |kind: FillTrigger| {
            self.cursor
                .triggers
                .iter()
                .find(|t| t.symbol == order.symbol && t.position_side == side && t.kind == kind)
                .map(|t| t.trigger_px)
        };
        let stop = order.stop.or_else(|| kept(FillTrigger::Stop));
        let target = order.target.or_else(|| kept(FillTrigger::Target));
        self.cancel_triggers(&order.symbol, |_| true).await;
        let asset = match self.asset(&order.symbol).await {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(deployment = %self.deployment_id, symbol = %order.symbol, error = %e, "no asset info: the position's stop/target were NOT placed");
                return;
            }
        };
        let close_side = match side {
            Side::Long => OrderSide::Sell,
            Side::Short => OrderSide::Buy,
        };
        let mut wanted = Vec::new();
        for (kind, px, tpsl, leg) in [
            (FillTrigger::Stop, stop, Tpsl::Sl, 1),
            (FillTrigger::Target, target, Tpsl::Tp, 2),
        ] {
            if let Some(px) = px {
                let cloid = cloid_for_leg(self.deployment_id, at, leg);
                wanted.push((
                    RestingTrigger {
                        symbol: order.symbol.clone(),
                        asset: asset.index,
                        position_side: side,
                        kind,
                        trigger_px: px,
                        cloid,
                    },
                    TriggerOrderRequest {
                        asset,
                        side: close_side,
                        size: qty,
                        trigger_px: px,
                        tpsl,
                        max_slippage: self.max_slippage,
                        cloid: Some(cloid),
                    },
                ));
            }
        }
        // A re-run of this tick (after a crash) finds the triggers a previous run placed under
        // the same client order ids: adopt them instead of placing them again.
        let mut to_place = Vec::new();
        for (resting, request) in wanted {
            match self.lookup(resting.cloid).await {
                Ok(OrderLookup::Found(known)) if known.state() == OrderState::Open => {
                    tracing::warn!(deployment = %self.deployment_id, cloid = %resting.cloid, "this tick's trigger order was already placed; not placing it again");
                    self.known_triggers.push((resting.cloid, resting.kind));
                    self.cursor.triggers.push(resting);
                }
                _ => to_place.push((resting, request)),
            }
        }
        let wanted = to_place;
        if wanted.is_empty() {
            return;
        }
        let requests: Vec<TriggerOrderRequest> = wanted.iter().map(|(_, r)| r.clone()).collect();
        match self
            .exchange
            .place_trigger_orders(&requests, Grouping::PositionTpsl)
            .await
        {
            Ok(statuses) => {
                for ((resting, _), status) in wanted.into_iter().zip(statuses) {
                    match status {
                        OrderStatus::Resting { .. }
                        | OrderStatus::WaitingForTrigger
                        | OrderStatus::Success => {
                            self.known_triggers.push((resting.cloid, resting.kind));
                            self.cursor.triggers.push(resting);
                        }
                        other => {
                            tracing::error!(deployment = %self.deployment_id, symbol = %order.symbol, kind = resting.kind.as_str(), answer = ?other, "Hyperliquid refused a trigger order: the position is NOT protected by it");
                        }
                    }
                }
            }
            Err(e) => {
                tracing::error!(deployment = %self.deployment_id, symbol = %order.symbol, error = %e, "placing the stop/target trigger orders failed: the position is NOT protected by them");
            }
        }
    }

    fn tag(&mut self, cloid: Cloid, snapshot: Uuid) {
        if !self.tags.iter().any(|(c, _)| *c == cloid) {
            self.tags.push((cloid, snapshot));
        }
    }

    fn trigger_of(&self, client_order_id: Option<&str>) -> Option<FillTrigger> {
        let cloid = Cloid::from_str(client_order_id?).ok()?;
        self.known_triggers
            .iter()
            .find(|(c, _)| *c == cloid)
            .map(|(_, k)| *k)
    }

    fn snapshot_of(&self, client_order_id: Option<&str>) -> Option<Uuid> {
        let cloid = Cloid::from_str(client_order_id?).ok()?;
        self.tags.iter().find(|(c, _)| *c == cloid).map(|(_, s)| *s)
    }

    /// The asset id and lot of `coin`, from `meta` (read once per broker).
    async fn asset(&mut self, coin: &str) -> Result<hyperliquid::AssetInfo, HlError> {
        if let Some(meta) = &self.meta {
            return meta.require_asset(coin);
        }
        let meta = self.info.meta().await?;
        let asset = meta.require_asset(coin);
        self.meta = Some(meta);
        asset
    }

    async fn lookup(&self, cloid: Cloid) -> Result<OrderLookup, HlError> {
        self.info
            .order_status(self.account, OrderRef::Cloid(cloid))
            .await
    }

    /// The answer for an order the exchange already holds under this tick's client order id.
    fn known_order(
        &self,
        order: &Order,
        known: &OrderInfo,
        cloid: Cloid,
        at: DateTime<Utc>,
        tag: &OrderTag,
    ) -> Result<Fill, BrokerRefusal> {
        let side = known.side.order_side();
        if known.coin != order.symbol || side != order.side {
            return Err(BrokerRefusal {
                rule: RuleCode::InvalidOrder,
                message: format!(
                    "this tick's order {cloid} is already at Hyperliquid as {} {} {} ({}); this \
                     run's {} {} {} is not placed as well",
                    side_word(side),
                    known.orig_sz,
                    known.coin,
                    known.status,
                    side_word(order.side),
                    order.qty,
                    order.symbol
                ),
            });
        }
        let cloid_text = cloid.to_string();
        let fills: Vec<&Fill> = self
            .drained
            .iter()
            .filter(|f| f.client_order_id.as_deref() == Some(cloid_text.as_str()))
            .collect();
        let (qty, price, fee) = if fills.is_empty() {
            (known.filled_sz(), known.limit_px, Decimal::ZERO)
        } else {
            let qty: Decimal = fills.iter().map(|f| f.qty).sum();
            let notional: Decimal = fills.iter().map(|f| f.qty * f.price).sum();
            let fee: Decimal = fills.iter().map(|f| f.fee_usd).sum();
            (qty, (notional / qty).normalize(), fee)
        };
        if qty.is_zero() || known.state() == OrderState::Open {
            return Err(BrokerRefusal {
                rule: RuleCode::InvalidOrder,
                message: format!(
                    "this tick's order {cloid} is already at Hyperliquid with status {} and \
                     {qty} filled; it is not placed again",
                    known.status
                ),
            });
        }
        tracing::warn!(deployment = %self.deployment_id, %cloid, status = %known.status, "this tick's order was already placed; not placing it again");
        Ok(summary_fill(
            known.oid,
            order,
            qty,
            price,
            fee,
            at,
            tag.snapshot_id,
            cloid,
        ))
    }

    async fn place(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: &OrderTag,
    ) -> Result<Fill, ExecuteError> {
        let cloid = cloid_for(self.deployment_id, at);
        if let Some(snapshot) = tag.snapshot_id {
            self.tag(cloid, snapshot);
        }
        match self.lookup(cloid).await {
            Ok(OrderLookup::Found(known)) => {
                return Ok(self.known_order(order, &known, cloid, at, tag)?);
            }
            Ok(OrderLookup::Unknown) => {}
            Err(e) => {
                return Err(self.fail(format!(
                    "looking up this tick's order {cloid} before placing it: {e}"
                )));
            }
        }
        let asset = match self.asset(&order.symbol).await {
            Ok(a) => a,
            Err(HlError::UnknownAsset(coin)) => {
                return Err(BrokerRefusal {
                    rule: RuleCode::UnknownSymbol,
                    message: format!("{coin} is not a Hyperliquid perp"),
                }
                .into());
            }
            Err(e) => return Err(self.fail(format!("reading Hyperliquid's meta: {e}"))),
        };
        let request = OrderRequest::ioc_with_slippage(
            asset,
            order.side,
            order.qty,
            price,
            self.max_slippage,
            order.reduce_only,
            Some(cloid),
        )
        .and_then(|r| r.to_wire().map(|_| r))
        .map_err(|e| BrokerRefusal {
            rule: RuleCode::InvalidOrder,
            message: format!("the order cannot be put on Hyperliquid's wire: {e}"),
        })?;

        self.set_leverage(order, asset).await?;
        let placed = self.exchange.place_order(&request).await;
        match placed {
            Ok(OrderStatus::Filled {
                oid,
                total_sz,
                avg_px,
                ..
            }) => Ok(summary_fill(
                oid,
                order,
                total_sz,
                avg_px,
                Decimal::ZERO,
                at,
                tag.snapshot_id,
                cloid,
            )),
            Ok(OrderStatus::Error(message)) => Err(refusal(&message).into()),
            Ok(OrderStatus::Resting { oid, .. }) => {
                // An IOC never rests; if the exchange says it does, take it off the book.
                let cancelled = self.exchange.cancel(asset.index, oid).await;
                Err(BrokerRefusal {
                    rule: RuleCode::InvalidOrder,
                    message: format!(
                        "Hyperliquid left the immediate-or-cancel order {cloid} resting (oid \
                         {oid}); cancel: {cancelled:?}"
                    ),
                }
                .into())
            }
            Ok(other) => Err(BrokerRefusal {
                rule: RuleCode::InvalidOrder,
                message: format!("Hyperliquid answered the order {cloid} with {other:?}"),
            }
            .into()),
            Err(e) => {
                // The order may have landed although the answer says otherwise or never came.
                match self.lookup(cloid).await {
                    Ok(OrderLookup::Found(known)) => {
                        Ok(self.known_order(order, &known, cloid, at, tag)?)
                    }
                    Ok(OrderLookup::Unknown) => match e {
                        HlError::Rejected(message) => Err(refusal(&message).into()),
                        other => Err(self.fail(format!("placing the order {cloid}: {other}"))),
                    },
                    Err(lookup) => Err(self.fail(format!(
                        "placing the order {cloid}: {e}; then looking it up: {lookup}"
                    ))),
                }
            }
        }
    }
}

fn side_word(side: types::OrderSide) -> &'static str {
    match side {
        types::OrderSide::Buy => "buy",
        types::OrderSide::Sell => "sell",
    }
}

/// The exchange's refusal of an order as a rejection with a fitting rule code.
fn refusal(message: &str) -> BrokerRefusal {
    let lower = message.to_ascii_lowercase();
    let rule = if lower.contains("margin") {
        RuleCode::InsufficientMargin
    } else if lower.contains("minimum value") {
        RuleCode::OrderTooSmall
    } else {
        RuleCode::InvalidOrder
    };
    BrokerRefusal {
        rule,
        message: format!("Hyperliquid refused the order: {message}"),
    }
}

/// What `execute` returns for a filled order: a summary (`id` `hl-order:{oid}`). The exchange's
/// own fills, with their ids, exact prices and fees, come from `drain_fills`.
#[allow(clippy::too_many_arguments)]
fn summary_fill(
    oid: u64,
    order: &Order,
    qty: Decimal,
    price: Decimal,
    fee_usd: Decimal,
    at: DateTime<Utc>,
    snapshot_id: Option<Uuid>,
    cloid: Cloid,
) -> Fill {
    Fill {
        id: format!("hl-order:{oid}"),
        symbol: order.symbol.clone(),
        side: order.side,
        qty,
        price,
        fee_usd,
        time: at,
        snapshot_id,
        client_order_id: Some(cloid.to_string()),
        liquidation: false,
        trigger: None,
    }
}

impl Broker for HyperliquidBroker {
    async fn portfolio(
        &mut self,
        at: DateTime<Utc>,
    ) -> Result<PortfolioSnapshot, BrokerUnavailable> {
        // This tick's order (if a previous run placed it) belongs to this tick's snapshot.
        self.tag(
            cloid_for(self.deployment_id, at),
            tick::snapshot_id(self.deployment_id, at),
        );
        let unavailable = |e: HlError| {
            BrokerUnavailable(format!(
                "reading Hyperliquid's clearinghouseState of {}: {e}",
                self.account
            ))
        };
        let raw = self
            .info
            .clearinghouse_state(self.account)
            .await
            .map_err(unavailable)?;
        let state = raw.account_state().map_err(unavailable)?;
        // An open position carries the account's leverage setting on its coin.
        for ap in &raw.asset_positions {
            if !ap.position.szi.is_zero() {
                let l = &ap.position.leverage;
                self.leverage
                    .insert(ap.position.coin.clone(), (l.is_cross(), l.value));
            }
        }
        let snapshot = state.to_portfolio_snapshot(
            at,
            self.cursor.realized_pnl_usd,
            self.cursor.fees_paid_usd,
        );
        self.positions.clone_from(&snapshot.positions);
        // A trigger whose position is gone (closed, stopped out, liquidated) or flipped is
        // cancelled: reduce-only orders must not outlive what they protect.
        let stale: Vec<String> = self
            .cursor
            .triggers
            .iter()
            .filter(|t| {
                snapshot
                    .position(&t.symbol)
                    .is_none_or(|p| p.side != t.position_side)
            })
            .map(|t| t.symbol.clone())
            .collect();
        for symbol in stale {
            let positions = self.positions.clone();
            self.cancel_triggers(&symbol, |t| {
                positions
                    .iter()
                    .find(|p| p.symbol == t.symbol)
                    .is_none_or(|p| p.side != t.position_side)
            })
            .await;
        }
        Ok(snapshot)
    }

    /// Sends `order` as one IOC limit through `price` under `cloid_for(deployment, at)` (the
    /// tag's own `client_order_id` is not Hyperliquid's 16-byte form and is not used), unless
    /// the exchange already holds that client order id. See the module docs.
    async fn execute(
        &mut self,
        order: &Order,
        price: Decimal,
        at: DateTime<Utc>,
        tag: OrderTag,
    ) -> Result<Fill, ExecuteError> {
        let fill = self.place(order, price, at, &tag).await?;
        self.protect(order, &fill, at).await;
        Ok(fill)
    }

    async fn drain_fills(&mut self) -> Result<Vec<Fill>, BrokerUnavailable> {
        let mut out = Vec::new();
        let mut start = self.cursor.read_from();
        for _ in 0..MAX_FILL_PAGES {
            let page = self
                .info
                .user_fills_by_time(self.account, start, None)
                .await
                .map_err(|e| {
                    BrokerUnavailable(format!(
                        "reading Hyperliquid's userFillsByTime of {} from {start}: {e}",
                        self.account
                    ))
                })?;
            let full = page.len() >= USER_FILLS_PAGE;
            let newest = page.iter().map(|f| f.time).max();
            for hl in page {
                if !self.cursor.is_new(hl.time, &hl.id) {
                    continue;
                }
                let mut fill = hl.to_fill();
                fill.snapshot_id = self.snapshot_of(fill.client_order_id.as_deref());
                if let Some(kind) = self.trigger_of(fill.client_order_id.as_deref()) {
                    // The exchange executed a resting stop/target: not a decision of a tick.
                    fill.trigger = Some(kind);
                    fill.snapshot_id = None;
                }
                self.cursor.realized_pnl_usd += hl.closed_pnl;
                self.cursor.fees_paid_usd += hl.fee;
                self.cursor.remember(hl.time, hl.id.clone());
                out.push(fill);
            }
            if !full {
                break;
            }
            match newest {
                Some(t) if t > start => start = t,
                _ => {
                    tracing::warn!(deployment = %self.deployment_id, %start, "a full page of fills within one millisecond; reading on at the next tick");
                    break;
                }
            }
        }
        out.sort_by_key(|f| f.time);
        self.drained.extend(out.iter().cloned());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_leverage_rounds_down_to_a_whole_number_of_at_least_one() {
        let lev = |s: &str| exchange_leverage(s.parse().unwrap());
        assert_eq!(lev("1"), 1);
        assert_eq!(lev("2.5"), 2);
        assert_eq!(lev("3.99"), 3);
        assert_eq!(lev("20"), 20);
        // The engine refuses below 1x; were one to arrive, it is set as 1x, never 0.
        assert_eq!(lev("0.5"), 1);
        assert_eq!(lev("-3"), 1);
        assert_eq!(lev("99999999999"), u32::MAX);
    }
}
