//! A run's model calls and their money: the cassette (`--cassette FILE`, `--cassette-mode`),
//! the spend meter under it, the cost estimate printed after the first paying tick, and the
//! cost guard (`--max-cost USD`).
//!
//! The layers, top to bottom: the tick → [`cassette::Cassette`] (when `--cassette` is given) →
//! [`model::Metered`] → the provider. A replayed response never reaches the meter: what the
//! meter counts is what the provider is paid.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use agent_runtime::LanguageModel;
use cassette::{Cassette, Mode};
use clap::ValueEnum;
use model::{Metered, Rates, Spend, rates_for};
use rust_decimal::Decimal;
use types::text;

use crate::Failure;

/// `--cassette-mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CassetteMode {
    /// Send every request to the provider and record each answer.
    Record,
    /// Answer every request from the cassette; a request it does not hold ends the run
    /// (exit 5) naming its fingerprint and the first difference from the nearest recording.
    /// Nothing is sent; no key is needed.
    Replay,
    /// Replay what the cassette holds, send and record the rest.
    Auto,
}

impl From<CassetteMode> for Mode {
    fn from(m: CassetteMode) -> Self {
        match m {
            CassetteMode::Record => Mode::Record,
            CassetteMode::Replay => Mode::Replay,
            CassetteMode::Auto => Mode::Auto,
        }
    }
}

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

/// Where the cassette is and how it answers, when `--cassette` is given.
#[derive(Debug, Clone)]
pub(crate) struct CassetteSpec {
    pub path: PathBuf,
    pub mode: CassetteMode,
}

/// The model the ticks call, and its cassette when there is one.
pub(crate) type WiredModel = (Arc<dyn LanguageModel>, Option<Arc<Cassette>>);

/// Resolves nothing itself: `resolve` turns a model string into the provider's model (it is
/// not called for a non-builtin model in replay mode: nothing is sent, no key is needed).
/// `flag` names the option the model came from, for errors.
pub(crate) fn wire(
    model_id: &str,
    flag: &str,
    cassette: Option<&CassetteSpec>,
    spend: &Spend,
    resolve: providers::BuiltinResolver<'_>,
) -> Result<WiredModel, Failure> {
    let replay_only = cassette.is_some_and(|c| c.mode == CassetteMode::Replay)
        && !model_id.starts_with("builtin/");
    let base = if replay_only {
        None
    } else {
        let m = resolve(model_id).map_err(|e| bad(format!("{flag} {model_id}: {e}")))?;
        Some(Arc::new(Metered::new(m, spend.clone())) as Arc<dyn LanguageModel>)
    };
    match (cassette, base) {
        (None, Some(m)) => Ok((m, None)),
        (None, None) => Err(bad(format!("{flag} {model_id}: no model"))),
        (Some(spec), base) => {
            let c = crate::block_on(async {
                Cassette::open(&spec.path, spec.mode.into(), model_id, base)
                    .await
                    .map_err(|e| bad(format!("--cassette: {e}")))
            })?;
            let c = Arc::new(c);
            Ok((c.clone() as Arc<dyn LanguageModel>, Some(c)))
        }
    }
}

/// `--max-cost`: a non-negative amount of USD, and only for a model the rate table prices (an
/// unpriced model's spend cannot be measured, so it cannot be capped).
pub(crate) fn parse_max_cost(
    text: Option<&str>,
    model_id: &str,
) -> Result<Option<Decimal>, Failure> {
    let Some(text) = text else {
        return Ok(None);
    };
    let cap = parse_cap(text)?;
    if rates_for(model_id).is_none() {
        return Err(bad(format!(
            "--max-cost: {model_id} is not in the rate table (crates/model/src/cost.rs), so \
             what it spends cannot be measured; leave --max-cost out or use a priced model"
        )));
    }
    Ok(Some(cap))
}

/// `--max-cost`'s amount: USD above 0 (a leading `$` allowed).
pub(crate) fn parse_cap(text: &str) -> Result<Decimal, Failure> {
    let cap: Decimal = text
        .trim()
        .trim_start_matches('$')
        .parse()
        .map_err(|_| bad(format!("--max-cost: {text:?} is not an amount of USD")))?;
    if cap <= Decimal::ZERO {
        return Err(bad(format!("--max-cost: must be above 0 (got {text})")));
    }
    Ok(cap.normalize())
}

/// Why a run stopped before its last tick.
#[derive(Debug, Clone)]
pub(crate) enum Stop {
    /// `--max-cost`: the next tick could have taken the spend past the cap.
    MaxCost {
        cap: Decimal,
        spent: Decimal,
        costliest_tick: Decimal,
    },
    /// A request the cassette does not hold, in replay mode.
    CassetteMiss(String),
}

/// Watches the spend tick by tick: prints the estimate after the first paying tick and decides
/// whether the run goes on.
pub(crate) struct Guard<'a> {
    pub model_id: &'a str,
    pub rates: Option<Rates>,
    pub spend: &'a Spend,
    pub cassettes: &'a [Arc<Cassette>],
    pub cap: Option<Decimal>,
    pub ticks: usize,
    /// A cap shared with other runs (`arena --max-cost`): each tick's cost is added to it and
    /// the run stops when it is reached, as with `cap`.
    pub budget: Option<Arc<Budget>>,
    /// Says nothing on stderr (the arena reports its runs itself).
    pub quiet: bool,
    done: usize,
    last: Decimal,
    costliest: Decimal,
    estimated: bool,
}

impl<'a> Guard<'a> {
    pub(crate) fn new(
        model_id: &'a str,
        rates: Option<Rates>,
        spend: &'a Spend,
        cassettes: &'a [Arc<Cassette>],
        cap: Option<Decimal>,
        ticks: usize,
    ) -> Self {
        Self {
            model_id,
            rates,
            spend,
            cassettes,
            cap,
            ticks,
            budget: None,
            quiet: false,
            done: 0,
            last: Decimal::ZERO,
            costliest: Decimal::ZERO,
            estimated: false,
        }
    }

    /// Before the first tick: says what is priced how (stderr), for a model that is not
    /// built in.
    pub(crate) fn announce(&self) {
        if self.quiet || self.model_id.starts_with("builtin/") {
            return;
        }
        let text = match self.rates {
            Some(r) => format!(
                "cost: {} at {}/{} per million tokens in/out (cache read {}); the first \
                 tick that calls it gives the estimate{}\n",
                self.model_id,
                text::cost(r.input),
                text::cost(r.output),
                text::cost(r.cache_read),
                self.cap
                    .map(|c| format!(
                        "; --max-cost {} stops the run before it spends more",
                        text::cost(c)
                    ))
                    .unwrap_or_default()
            ),
            None => format!(
                "cost: {} is not in the rate table: what it costs is not measured (cost_usd \
                 stays 0)\n",
                self.model_id
            ),
        };
        let _ = std::io::stderr().write_all(text.as_bytes());
    }

    /// After each tick: whether to stop, and why.
    pub(crate) fn after_tick(&mut self) -> Option<Stop> {
        self.done += 1;
        if let Some(miss) = self.cassettes.iter().find_map(|c| c.first_miss()) {
            return Some(Stop::CassetteMiss(miss));
        }
        let totals = self.spend.totals();
        let tick = totals.usd - self.last;
        self.last = totals.usd;
        self.costliest = self.costliest.max(tick);
        if let Some(budget) = &self.budget {
            budget.add_tick(tick);
            if self.done < self.ticks
                && let Some(stop) = budget.stop()
            {
                return Some(stop);
            }
        }
        if !self.quiet && !self.estimated && tick > Decimal::ZERO {
            self.estimated = true;
            let ticks = Decimal::from(self.ticks);
            let _ = writeln!(
                std::io::stderr(),
                "cost: tick {} cost {} ({} tokens in, {} out so far): ≈ {} for the run's \
                 {} ticks at that rate",
                self.done,
                text::cost(tick),
                totals.usage.input + totals.usage.cache_read + totals.usage.cache_write,
                totals.usage.output,
                text::cost(tick * ticks),
                self.ticks,
            );
        }
        let cap = self.cap?;
        (self.done < self.ticks && totals.usd + self.costliest > cap).then_some(Stop::MaxCost {
            cap,
            spent: totals.usd,
            costliest_tick: self.costliest,
        })
    }

    /// Ticks run so far.
    pub(crate) fn done(&self) -> usize {
        self.done
    }
}

/// `arena --max-cost`: one cap over every run of an arena. The runs add each tick's cost to
/// it; a run stops between two ticks, and no further run starts, once what was spent plus the
/// costliest tick so far for each run that may be in flight would pass the cap.
#[derive(Debug)]
pub(crate) struct Budget {
    cap: Decimal,
    /// Runs in flight at once (`--concurrency`): each may spend a tick before the next check.
    in_flight: Decimal,
    state: Mutex<BudgetState>,
}

#[derive(Debug, Default)]
struct BudgetState {
    spent: Decimal,
    costliest_tick: Decimal,
}

impl Budget {
    pub(crate) fn new(cap: Decimal, in_flight: u32) -> Self {
        Self {
            cap,
            in_flight: Decimal::from(in_flight.max(1)),
            state: Mutex::default(),
        }
    }

    fn add_tick(&self, cost: Decimal) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.spent += cost;
        s.costliest_tick = s.costliest_tick.max(cost);
    }

    /// The cap.
    pub(crate) fn cap(&self) -> Decimal {
        self.cap
    }

    /// What was spent so far.
    pub(crate) fn spent(&self) -> Decimal {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .spent
    }

    /// The stop when the next ticks could pass the cap; `None` while there is room.
    pub(crate) fn stop(&self) -> Option<Stop> {
        let s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        (s.spent + s.costliest_tick * self.in_flight > self.cap).then_some(Stop::MaxCost {
            cap: self.cap,
            spent: s.spent,
            costliest_tick: s.costliest_tick,
        })
    }
}

/// The responses the cassettes replayed and recorded, summed: `(replayed, recorded)`.
pub(crate) fn cassette_counts(cassettes: &[Arc<Cassette>]) -> (u64, u64) {
    cassettes.iter().fold((0, 0), |(r, w), c| {
        let s = c.stats();
        (r + s.replayed, w + s.recorded)
    })
}

/// The lines the run's result gets for its cassettes and spend (empty for a built-in model
/// without a cassette, so the offline run prints what it always printed).
pub(crate) fn result_lines(model_id: &str, spend: &Spend, cassettes: &[Arc<Cassette>]) -> String {
    let mut out = String::new();
    for c in cassettes {
        let s = c.stats();
        out.push_str(&format!(
            "cassette: {} ({}, {}) · {} replayed, {} sent and recorded\n",
            c.path().display(),
            c.id(),
            c.mode().as_str(),
            s.replayed,
            s.recorded,
        ));
    }
    if !model_id.starts_with("builtin/") || !cassettes.is_empty() {
        let t = spend.totals();
        out.push_str(&format!(
            "spent:   {} at the provider ({} calls, {} tokens in, {} out){}\n",
            text::cost(t.usd),
            t.calls,
            t.usage.input + t.usage.cache_read + t.usage.cache_write,
            t.usage.output,
            if t.unpriced_calls > 0 {
                format!(
                    "; {} calls to unpriced models not counted",
                    t.unpriced_calls
                )
            } else {
                String::new()
            }
        ));
    }
    out
}
