//! The backtest: a deployment's ticks at every bar close over bars held in memory, with the
//! paper broker — [`tick::run_tick`]'s steps, the tick a live runner runs — its store written
//! behind the ticks in batches, and the run's [`Summary`].
//!
//! [`run`] is the one way to run it: a [`BacktestInput`] (the deployment, its bars and data,
//! the range, the paper account), the model, a store holding the deployment's rows
//! ([`register`]), and [`RunOptions`] (a callback after each tick that may end the run; a store
//! still being prepared). It returns when the last tick has run ([`Run`]): the store holds the
//! whole run once [`Run::stored`] returns, or once the caller has finished the run's
//! [`LastWrite`] itself ([`Run::into_parts`]: `sim-worker` computes its report meanwhile).
//!
//! - [`run`] (`run.rs`): the loop — bars applied to the paper broker, the outcome memory's
//!   marks scored, the tick, a due reflection right after it, in order;
//! - [`write_behind`]: a batch of ticks in one transaction, written on another thread while
//!   the next ticks run;
//! - [`replay`]: `builtin/replay`, a model that re-proposes what another run recorded;
//! - [`Summary`] (`summary.rs`), [`Registration`] (`register.rs`);
//! - [`baseline`]: buy-and-hold and flat cash over the same ticks, as results a [`Summary`]
//!   measures like a backtest's.
//!
//! **Deterministic:** ids are UUID v5 of the deployment and tick time, the loop has no clock,
//! no randomness and no map order in its output: two runs over the same inputs store
//! byte-identical snapshots and ledgers, and whether the batches are written by a task or polled
//! changes nothing stored.
//!
//! ```
//! use backtest::{BacktestInput, RunOptions, Summary, register};
//! use tools::Preloaded;
//! use types::Interval;
//!
//! let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
//! let skill = skill_schema::load_skill(format!("{repo}/examples/skills/eurusd-sma-cross.yaml").as_ref())?.skill;
//! let mut bars = market_data::load_bars(format!("{repo}/examples/data/EURUSD.csv").as_ref())?;
//! bars.truncate(120);
//! let created_at = bars[0].time; // no wall clock: registry rows are dated by the data
//! let model = agent_runtime::builtin_model(&skill.model, &skill).expect("an offline model");
//! let body = serde_json::to_value(&skill)?;
//! // Test defaults (feature `test-support`): fixed ids, $10,000 of paper equity, no reflection.
//! let input = BacktestInput::for_test(skill, Preloaded::new().with_bars("EURUSD", Interval::H1, bars));
//! tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//!     let store = db::connect("sqlite::memory:").await?;
//!     register(&store, &input, body, created_at).await?;
//!     let run = backtest::run(&input, model.as_ref(), &store, RunOptions::default()).await?;
//!     let result = run.stored().await?; // the store holds every tick
//!     assert_eq!(result.points.len(), 120); // one tick per closed bar
//!     assert!(Summary::of(&result).fills > 0);
//!     Ok::<(), Box<dyn std::error::Error>>(())
//! })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod baseline;
mod register;
pub mod replay;
mod run;
mod summary;
#[cfg(feature = "test-support")]
mod test_support;
pub mod write_behind;

pub use register::{Registration, register};
pub use run::{
    BacktestError, BacktestInput, BacktestResult, LastWrite, Run, RunOptions, StoreReady,
    TickPoint, blind_run, run, tick_times,
};
pub use summary::{PnlBreakdown, Summary};
