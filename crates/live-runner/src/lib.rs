//! The live runner: ticks many deployments on PostgreSQL with Hyperliquid market data, on the
//! paper broker or a Hyperliquid account, restart-safe, scaled out over any number of processes.
//!
//! What it owns:
//! - the operator commands ([`admin`]: migrate, deploy, list);
//! - the tick loop ([`runner`]): leasing due deployments in the database
//!   (`claim_due_deployments`, `FOR UPDATE SKIP LOCKED`-style), a bounded number of ticks in
//!   flight, each in its own task with a lease heartbeat, release with the next bar close; due
//!   reflections on a bounded worker of their own, off the tick path;
//! - the Hyperliquid exchange broker ([`hl_broker`]): the exchange's account and fills are
//!   authoritative, one IOC order per tick under a deterministic client order id, looked up
//!   before placing so a re-run tick never places a second one;
//! - the runner state between ticks ([`state`], table `live_runner_state`, committed by
//!   `record_tick` with each tick): paper broker or fill watermark, risk state, last decision —
//!   the ledger and the reflection notes are read back from the store;
//! - bar-close scheduling ([`schedule`]) and the `/healthz` + `/metrics` endpoint ([`metrics`]).
//!
//! What it must never do: decide what trades (the engine in `tick::run_tick` does), run a tick
//! twice for the same bar close (leases + idempotent `record_tick` + state committed with the
//! tick, forward only), place two orders for one tick, keep state only in memory (a restart
//! resumes from PostgreSQL), store or log a private key, or call the network from a model or
//! broker it did not get from its configuration.

pub mod admin;
pub mod hl_broker;
pub mod metrics;
pub mod runner;
pub mod schedule;
pub mod state;
