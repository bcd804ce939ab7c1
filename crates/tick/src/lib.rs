//! THE per-tick function: what one tick of a deployment does, shared byte for byte by
//! `sim-worker` (a backtest) and `live-runner` (paper or an exchange).
//!
//! [`run_tick`] takes the deployment ([`TickDeployment`]), the tick's data sources (a
//! [`tools::ToolContext`] whose `now` is the tick time), the model, a [`Broker`], the state the
//! caller carries between ticks ([`TickState`]: engine risk state, ledger, last decision, notes)
//! and a store, and in this order:
//!
//! 1. reads the broker-authoritative portfolio and lets the engine's [`RiskState`](execution_engine::RiskState) observe its
//!    equity;
//! 2. assembles the user message and composes the system prompt — LESSONS from the latest
//!    injectable (not flagged) note generated at or before the tick time
//!    ([`reflection::visible_note_at`]), the memory sections from the ledger as of the tick;
//! 3. runs the model loop ([`agent_runtime::run_agent_tick`]);
//! 4. asks the engine for a verdict ([`execution_engine::validate`]) and, when executed, sends
//!    the order to the broker at the mark — the close of the symbol's latest closed bar (the
//!    broker applies slippage and fees). A broker refusal turns the verdict into a rejection
//!    stating the broker's reason;
//! 5. materializes the ledger in two steps written as one: before the context is assembled, the
//!    fills the broker made on its own since the last tick (liquidations), its positions and the
//!    bars closed since the last tick (MFE/MAE) — so the memory sections are current; after the
//!    broker, this tick's fills with their proposal and regime tags and the positions after;
//! 6. persists the decision snapshot, fills, ledger rows and fill links — and, with
//!    [`run_tick_carrying`], the caller's own state after the tick (a live runner's paper broker
//!    and risk state) — in ONE `record_tick` transaction;
//! 7. checks the reflection cadence ([`reflection::reflection_due`], cheap and pure) and reports
//!    a due reflection in [`TickOutcome::reflection`] ([`ReflectionCheck::Due`]) without running
//!    it: the model call of a reflection is off the tick path;
//! 8. returns a [`TickOutcome`] (verdict, proposal, usage, cost, the new last decision, ...).
//!
//! A due reflection runs the same way for both callers: the backtest right after the tick, in
//! order (so the next tick sees its note, deterministically), storing the note behind its ticks
//! ([`reflect_due`]: a backtest owns a fresh deployment, so it skips the idempotence reads); the
//! live runner with [`run_due_reflection`], on a bounded worker of its own, so a slow reflection
//! never delays a tick. Both run [`reflection::reflect`] and store what [`store_reflection`]
//! stores: a note is stored with `insert_note` (it
//! becomes the active note and supersedes the previous one; a note the linter flagged is stored
//! as pending review and never injected unless a person accepts it); every run is recorded with
//! `record_reflection_run`; a failure never fails a tick. A reflection of a tick that is already
//! stored (a redo after a restart or a re-run) does nothing: its ids are UUID v5 of the
//! deployment and the tick time. [`load_reflection_state`] reads the notes and runs back, so a
//! reflection that finished off the tick path (or on another process) is seen by the next tick.
//!
//! **Deterministic:** no hash-map iteration reaches an output; ids are UUID v5 in the
//! deployment's namespace ([`snapshot_id`], [`note_id`], [`run_id`]), fill ids come from the
//! broker; so two runs over the same inputs write byte-identical snapshots and ledgers.
//!
//! **What this crate must never do:** read files, read the wall clock (time is `ctx.now`), reach
//! the network itself (the model and the broker are traits the caller hands in), or decide what
//! trades (the execution engine does).
//!
//! What a tick recorded reads back with [`read_ticks`]: a deployment's ticks in a window, each a
//! [`TickEntry`] with the decoded system prompt, user message and typed steps when asked for.
//!
//! A stopped deployment whose positions are to be closed is flattened through the same broker
//! seam: [`flatten_positions`] sends one reduce-only market order per open position, and
//! [`run_flatten`] records what they did as a tick records its orders (no model is called).
//!
//! A backtest (the `backtest` crate) is [`run_tick`] at every bar close with the paper broker,
//! its records going to a [`Recorder`] that writes them in batches
//! ([`run_tick_recording`]); a service with its own data, broker and store calls [`run_tick`]
//! itself, as `examples/embed.rs` does (`cargo run -p tick --example embed`).
//!
//! ```
//! use std::sync::Arc;
//! use execution_engine::{PaperBroker, PaperBrokerConfig};
//! use rust_decimal::Decimal;
//! use tick::{TickDeployment, TickState, run_tick};
//! use tools::{Preloaded, RunMode, ToolContext};
//! use types::Interval;
//!
//! let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
//! let skill = skill_schema::load_skill(format!("{repo}/examples/skills/eurusd-sma-cross.yaml").as_ref())?.skill;
//! let mut bars = market_data::load_bars(format!("{repo}/examples/data/EURUSD.csv").as_ref())?;
//! bars.truncate(120);
//! let model = agent_runtime::builtin_model(&skill.model, &skill).expect("an offline model");
//! let market = Arc::new(Preloaded::new().with_bars("EURUSD", Interval::H1, bars.clone()));
//! tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//!     let store = db::connect("sqlite::memory:").await?;
//!     // A stored deployment (here the test fixtures' user, skill and paper deployment).
//!     let row = db::test_support::seed(&store).await?.deployment;
//!     let deployment = TickDeployment::for_row(&row, Arc::new(skill), Err("no reflection".into()));
//!     let mut broker = PaperBroker::new(PaperBrokerConfig::new(Decimal::from(10_000)))?;
//!     let first = bars[0].close_time(Interval::H1);
//!     let mut state = TickState::new(&deployment, Decimal::from(10_000), first);
//!     let mut orders = 0;
//!     for bar in &bars {
//!         let now = bar.close_time(Interval::H1);
//!         broker.apply_bar("EURUSD", bar, now)?;
//!         let symbols = deployment.skill.context.symbols.clone();
//!         let ctx = ToolContext::new(now, RunMode::Trade, symbols, market.clone(), market.clone());
//!         let out = run_tick(&deployment, &ctx, model.as_ref(), &mut broker, &mut state, &store).await?;
//!         assert!(out.recorded); // one transaction a tick, idempotent
//!         orders += out.fills.len();
//!     }
//!     assert!(orders > 0);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod broker;
mod deployment_arg;
mod flatten;
mod ids;
pub mod lessons_cmd;
pub mod memory_cmd;
mod memory_tools;
mod outcome_memory;
mod reflect;
mod run;
mod state;
mod store_memory;
mod ticks;
pub mod ticks_cmd;

use std::sync::Arc;

use reflection::Reflector;
use skill_schema::Skill;
use uuid::Uuid;

#[cfg(feature = "mock")]
pub use broker::MockBroker;
pub use broker::{Broker, BrokerRefusal, BrokerUnavailable, ExecuteError};
pub use deployment_arg::{DeploymentArgError, the_deployment};
pub use flatten::{
    FLATTEN_MODEL, FLATTEN_REASON, FlattenOutcome, FlattenReport, FlattenedPosition,
    flatten_positions, run_flatten,
};
pub use ids::{ID_NAMESPACE, note_id, run_id, snapshot_id};
pub use memory_tools::{ANNOTATE, AnnotateArgs, MEMORY_SERVER_INSTRUCTIONS, memory_tools};
pub use outcome_memory::{
    PendingSnapshot, ScoreError, ScoreReport, score_due_outcomes, snapshot_indicators,
};
pub use reflect::{
    DueReflection, PromoteError, ReflectionCheck, ReflectionDone, ReflectionReport,
    ReflectionWrites, promote_note, promoted_note_id, promoted_note_line, reflect_due,
    run_due_reflection, store_reflection,
};
pub use run::{
    CarryState, OutcomeKind, Recorder, TickError, TickOutcome, run_tick, run_tick_carrying,
    run_tick_recording,
};
pub use state::{
    APPLIED_FILLS_WINDOW, BlindRun, Carried, RECENT_CLOSED_KEPT, RestoreError, TickState,
    load_reflection_state, restore_state, restore_state_carried,
};
pub use store_memory::StoreMemory;
pub use ticks::{ReadTicksError, TickEntry, TickPrompt, read_ticks};

/// The deployment a tick belongs to, as a tick needs it: the ids from its stored row
/// ([`db::Deployment`]) with the skill version parsed and the reflection model resolved.
#[derive(Clone)]
pub struct TickDeployment {
    /// The user who owns the deployment (and its notes and facts).
    pub user_id: Uuid,
    /// The deployment's id: keys its rows and seeds its tick, note and run ids.
    pub deployment_id: Uuid,
    /// The skill it runs.
    pub skill_id: Uuid,
    /// The skill version it runs.
    pub skill_version: i32,
    /// That version's parsed skill document (strategy, context, risk caps, tools, memory).
    pub skill: Arc<Skill>,
    /// Who writes the reflection notes (`context.memory.reflection.model` resolved by the
    /// caller). An `Err` (unknown model, missing key) is recorded as a failed run when a
    /// reflection is due; it never stops a tick.
    pub reflector: Result<Reflector, String>,
}

impl TickDeployment {
    /// The tick's view of the stored deployment `row`, running `skill` (the parsed document
    /// of `row.skill_version`) with `reflector` writing its notes.
    #[must_use]
    pub fn for_row(
        row: &db::Deployment,
        skill: Arc<Skill>,
        reflector: Result<Reflector, String>,
    ) -> Self {
        Self {
            user_id: row.user_id,
            deployment_id: row.id,
            skill_id: row.skill_id,
            skill_version: row.skill_version,
            skill,
            reflector,
        }
    }
}

impl std::fmt::Debug for TickDeployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickDeployment")
            .field("deployment_id", &self.deployment_id)
            .field("skill_id", &self.skill_id)
            .field("skill_version", &self.skill_version)
            .finish_non_exhaustive()
    }
}
