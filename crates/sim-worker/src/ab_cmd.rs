//! `sim-worker ab`: two backtests over the same bars and costs — A as given, B with another
//! skill file, another model, or the memory layer switched off — and their summaries side by
//! side. The question it answers first: does the memory (ledger + lessons) help this skill?

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use rust_decimal::Decimal;

use crate::Failure;
use crate::arena_stats::Unit;
use crate::run_cmd::{RunArgs, RunOutput, run_full};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum MemoryArg {
    On,
    Off,
}

#[derive(Debug, Args)]
pub(crate) struct AbArgs {
    /// Variant A: the run as `sim-worker run` takes it (its --out gets `a/` and `b/`).
    #[command(flatten)]
    pub a: RunArgs,
    /// Variant B's skill file (default: A's).
    #[arg(long, value_name = "FILE")]
    pub b_skill: Option<PathBuf>,
    /// Variant B's model (default: A's).
    #[arg(long, value_name = "MODEL")]
    pub b_model: Option<String>,
    /// Variant B's memory layer: `off` runs B with `context.memory.enabled: false` (no recent
    /// trades, no open-positions view, no reflection, no lessons).
    #[arg(long, value_enum, default_value_t = MemoryArg::On)]
    pub b_memory: MemoryArg,
    /// Walk-forward: split the ticks into this many consecutive windows of equal time span, run
    /// A and B on each from a fresh account, and report B − A per metric with a bootstrap
    /// confidence interval over the windows (and OUT/ab.html). 1: one run each, side by side.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub windows: u32,
    /// With --windows: how the windows run and the intervals are drawn.
    #[command(flatten)]
    pub walk: crate::arena_runs::Walk,
}

/// How a compared summary field prints.
#[derive(Clone, Copy)]
enum Kind {
    /// A count, as is.
    Count,
    /// A value in one of the text styles.
    Styled(Unit),
    /// A model cost ([`types::text::cost`]).
    Cost,
}

/// The summary fields compared, with their JSON pointers and how they print.
const ROWS: [(&str, &str, Kind); 12] = [
    ("closed trades", "/trades", Kind::Count),
    ("win rate", "/win_rate_pct", Kind::Styled(Unit::Percent)),
    ("net PnL", "/pnl/net_usd", Kind::Styled(Unit::Dollars)),
    ("gross PnL", "/pnl/gross_usd", Kind::Styled(Unit::Dollars)),
    ("fees", "/pnl/fees_usd", Kind::Styled(Unit::Dollars)),
    (
        "final equity",
        "/final_equity_usd",
        Kind::Styled(Unit::Dollars),
    ),
    (
        "max drawdown",
        "/max_drawdown_pct",
        Kind::Styled(Unit::Percent),
    ),
    ("Sharpe", "/sharpe", Kind::Styled(Unit::Ratio)),
    (
        "time in market",
        "/exposure_time_pct",
        Kind::Styled(Unit::Percent),
    ),
    ("tokens in", "/tokens/input", Kind::Count),
    ("cost", "/cost_usd", Kind::Cost),
    ("notes", "/notes", Kind::Count),
];

/// One cell of the table: the summary's value in its kind's style, `n/a` when absent.
fn cell(v: Option<&serde_json::Value>, kind: Kind) -> String {
    let decimal = match v {
        Some(serde_json::Value::String(s)) => s.parse::<Decimal>().ok(),
        Some(serde_json::Value::Number(n)) => n.to_string().parse::<Decimal>().ok(),
        _ => None,
    };
    match (kind, decimal) {
        (Kind::Styled(unit), Some(d)) => unit.show(d),
        (Kind::Cost, Some(d)) => types::text::cost(d),
        (Kind::Count, _) | (_, None) => match v {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Null) | None => "n/a".to_owned(),
            Some(other) => other.to_string(),
        },
    }
}

pub(crate) fn run(args: AbArgs) -> Result<String, Failure> {
    let AbArgs {
        a,
        b_skill,
        b_model,
        b_memory,
        windows,
        walk,
    } = args;
    if a.db.is_some() {
        return Err(Failure::bad_input(
            "error: ab keeps one SQLite store per variant under --out; --db is not supported",
        ));
    }
    if b_skill.is_none() && b_model.is_none() && b_memory == MemoryArg::On {
        return Err(Failure::bad_input(
            "error: B is the same as A; give --b-skill, --b-model or --b-memory off",
        ));
    }
    let out = a.out.clone();
    let b = RunArgs {
        skill: b_skill.unwrap_or_else(|| a.skill.clone()),
        bars: a.bars.clone(),
        model: b_model.or_else(|| a.model.clone()),
        db: None,
        out: out.join("b"),
        from: a.from,
        to: a.to,
        equity: a.equity.clone(),
        fee_bps: a.fee_bps.clone(),
        slippage_bps: a.slippage_bps.clone(),
        news: a.news.clone(),
        events: a.events.clone(),
        funding: a.funding.clone(),
        meta: a.meta.clone(),
        report_tick: a.report_tick,
        // One cassette serves both variants (a request's fingerprint names its model), and
        // the cost cap applies to each variant's run.
        cassette: a.cassette.clone(),
        cassette_mode: a.cassette_mode,
        max_cost: a.max_cost.clone(),
        // Both variants blind, or neither: a comparison across the disguise compares prompts.
        blind: a.blind,
        pin_threads: a.pin_threads,
        memory_off: b_memory == MemoryArg::Off,
        time_flags: a.time_flags,
        quiet: a.quiet,
        budget: a.budget.clone(),
    };
    let a = RunArgs {
        out: out.join("a"),
        ..a
    };
    // Check both before running either.
    let prepared = crate::run_cmd::prepare(&a)?;
    crate::run_cmd::prepare(&b)?;
    if windows > 1 {
        let plan = crate::ab_windows::Plan {
            windows,
            walk,
            first_tick: prepared.first_tick,
            last_tick: prepared.report_tick,
            interval: prepared.input.deployment.skill.context.bars_interval,
            initial_equity: prepared.input.broker.initial_equity_usd,
        };
        if a.report_tick.is_some() {
            return Err(Failure::bad_input(
                "error: --report-tick names one tick of one run; with --windows every window is a run",
            ));
        }
        return crate::ab_windows::run(&plan, &a, &b, &out);
    }
    let RunOutput {
        text: text_a,
        summary: sa,
        ..
    } = run_full(a)?;
    let RunOutput {
        text: text_b,
        summary: sb,
        ..
    } = run_full(b)?;

    let mut table = String::new();
    let _ = writeln!(table, "{:<18} {:>22} {:>22}", "", "A", "B");
    for (label, ptr, kind) in ROWS {
        let _ = writeln!(
            table,
            "{label:<18} {:>22} {:>22}",
            cell(sa.pointer(ptr), kind),
            cell(sb.pointer(ptr), kind)
        );
    }
    let json = serde_json::json!({ "a": sa, "b": sb });
    let mut body = serde_json::to_string_pretty(&json)
        .map_err(|e| Failure::bad_input(format!("error: serializing ab.json: {e}")))?;
    body.push('\n');
    let path = out.join("ab.json");
    std::fs::write(&path, body)
        .map_err(|e| Failure::bad_input(format!("error: {}: {e}", path.display())))?;
    Ok(format!(
        "A:\n{text_a}\nB:\n{text_b}\n{table}\nab: {}\n",
        path.display()
    ))
}
