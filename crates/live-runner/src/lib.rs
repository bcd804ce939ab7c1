//! The live runner: ticks many deployments on PostgreSQL with Hyperliquid market data and the
//! paper broker, restart-safe, scaled out over any number of processes.
//!
//! What it owns:
//! - the operator commands ([`admin`]: migrate, deploy, list);
//! - the tick loop ([`runner`]): leasing due deployments in the database
//!   (`claim_due_deployments`, `FOR UPDATE SKIP LOCKED`-style), a bounded number of ticks in
//!   flight, each in its own task with a lease heartbeat, release with the next bar close;
//! - the runner state between ticks ([`state`], table `live_runner_state`): paper broker, risk
//!   state, last decision, reflection drafts — the ledger itself is rebuilt from the store;
//! - bar-close scheduling ([`schedule`]) and the `/healthz` + `/metrics` endpoint ([`metrics`]).
//!
//! What it must never do: decide what trades (the engine in `tick::run_tick` does), run a tick
//! twice for the same bar close (leases + idempotent `record_tick` + forward-only state), keep
//! state only in memory (a restart resumes from PostgreSQL), or call the network from a model
//! or broker it did not get from its configuration.

pub mod admin;
pub mod hl_broker;
pub mod metrics;
pub mod runner;
pub mod schedule;
pub mod state;
