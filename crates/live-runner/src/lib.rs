//! The live runner: ticks many deployments on PostgreSQL with Hyperliquid market data, on the
//! paper broker or a Hyperliquid account, restart-safe, scaled out over any number of processes.
//!
//! What it owns:
//! - the operator commands ([`admin`]: migrate, deploy, list) and the controls ([`controls`]:
//!   pause, resume, stop with an optional flatten, each audited);
//! - the tick loop ([`runner`]): leasing due deployments in the database
//!   (`claim_due_deployments`, `FOR UPDATE SKIP LOCKED`-style), a bounded number of ticks in
//!   flight, each in its own task with a lease heartbeat, release with the next bar close; due
//!   reflections on a bounded worker of their own, off the tick path; a paused or stopped
//!   deployment never ticked, a stop's flatten leased and retried like a tick;
//! - the Hyperliquid exchange broker ([`hl_broker`]): the exchange's account and fills are
//!   authoritative, one IOC order per tick under a deterministic client order id, looked up
//!   before placing so a re-run tick never places a second one;
//! - the runner state between ticks ([`state`], table `live_runner_state`, committed by
//!   `record_tick` with each tick): paper broker or fill watermark, risk state, last decision —
//!   the ledger and the reflection notes are read back from the store;
//! - bar-close scheduling ([`schedule`]) and the `/healthz` + `/metrics` endpoint ([`metrics`]);
//! - the chat coach's HTTP server ([`serve`]: JWT auth, every request's queries as its user
//!   under row-level security, the JSON API, the pages' mount point) and its terminal client
//!   ([`terminal`]), and where their turns' market data comes from ([`chat_market`]:
//!   Hyperliquid candles, cached, or a directory of bar files).
//!
//! What it must never do: decide what trades (the engine in `tick::run_tick` does), run a tick
//! twice for the same bar close (leases + idempotent `record_tick` + state committed with the
//! tick, forward only), place two orders for one tick, keep state only in memory (a restart
//! resumes from PostgreSQL), store or log a private key, or call the network from a model or
//! broker it did not get from its configuration.
//!
//! An operator deploys a skill (here into an in-memory SQLite store; the runner itself,
//! [`runner::Runner`], needs PostgreSQL) and the deployment is first due at the next bar close:
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use live_runner::admin::{DeployRequest, deploy, list, load_skill_file};
//! use live_runner::schedule::next_close_after;
//! use rust_decimal::Decimal;
//! use types::Uuid;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skills/eurusd-sma-cross.yaml");
//! let skill = load_skill_file(path.as_ref())?;
//! let store = db::connect("sqlite::memory:").await?;
//! let now = Utc.with_ymd_and_hms(2026, 6, 4, 10, 17, 0).unwrap();
//! let request = DeployRequest {
//!     owner: Uuid::from_u128(1),
//!     broker: db::BrokerKind::Paper,
//!     equity_usd: Decimal::from(10_000),
//!     id: None,
//!     hyperliquid: None,
//!     exchange_max_leverage: Default::default(),
//! };
//! let deployment = deploy(&store, &skill, &request, now).await?;
//! let due = next_close_after(now, skill.context.bars_interval);
//! assert_eq!(due, Utc.with_ymd_and_hms(2026, 6, 4, 11, 0, 0).unwrap());
//! assert_eq!(deployment.next_tick_at, Some(due));
//! assert_eq!(list(&store).await?[0].broker, "paper");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```

pub mod admin;
pub mod alerts;
pub mod chat_market;
pub mod controls;
pub mod hl_broker;
pub mod metrics;
pub mod outcomes;
pub mod runner;
pub mod schedule;
pub mod serve;
pub mod state;
pub mod terminal;
#[cfg(feature = "test-support")]
pub mod test_support;
