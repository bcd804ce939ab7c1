//! `sim-worker arena`: many entrants — skills × models, and variants of a skill's fields — over
//! the same walk-forward windows, beside the baselines every comparison needs, with bootstrap
//! intervals over the windows and paired differences against a chosen reference.
//!
//! Rows of the table:
//! - every entrant ([`crate::arena_entrants`]), run `--repeats` times per window when its model
//!   (or its reflection model) is not built in, once when it is (a built-in model answers the
//!   same prompt the same way);
//! - `buy-and-hold:SYMBOL` for each symbol of `--bars`, and `buy-and-hold:equal-weight` when
//!   there are several ([`backtest::baseline::buy_and_hold`]);
//! - `flat-cash` ([`backtest::baseline::flat_cash`]);
//! - `rules:SKILL`, the skill's rule baseline, for every skill file of the entrants whose own
//!   `model` is a built-in rule model (`builtin/sma-cross:FAST:SLOW`): the rules the skill's
//!   text describes, run without an LLM — unless an entrant already runs exactly that.
//!
//! Each backtested row's window is a `run` of its own under OUT (`runs/NAME/wNN/rK/` for an
//! entrant, `baselines/rules-SKILL/wNN/r1/` for a rule baseline) with its summary.json,
//! trades.csv, report.html and sim.db — or, with `--db`, a backtest job recorded in that
//! database ([`crate::arena_jobs`]), its summary.json and report.html under OUT. The
//! statistics are [`crate::arena_stats`]'; OUT/arena.json and OUT/arena.html are written last,
//! only when every run completed.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use backtest::{Summary, baseline, tick_times};
use clap::Args;
use rust_decimal::Decimal;
use serde::Serialize;
use serde_json::Value;
use tools::Preloaded;
use types::{RegimeTag, text};

use crate::Failure;
use crate::arena_entrants::{EntrantSpec, parse_flag, read_file, set_path};
use crate::arena_report::{Arena, Settings, render};
use crate::arena_runs::{Curve, Span, run_all, window_name, windows, write_out};
use crate::arena_stats::{Resampling, metric, window_regime};
use crate::run_cmd::{RunArgs, RunOutput};
use crate::spend::Budget;

/// `format` in arena.json: a change to its shape changes it.
pub(crate) const FORMAT: &str = "sim-worker-arena/1";

#[derive(Debug, Args)]
pub(crate) struct ArenaArgs {
    /// What every entrant runs unless it says otherwise — `--skill`, `--model` (default: each
    /// skill's own), the bars, the window of time and the account — as `run` takes them.
    /// `--max-cost` caps the whole arena; `--cassette FILE` records and replays every entrant
    /// whose model is not built in (repeat K > 1 in `FILE-rK.EXT`, so a repeat is never a
    /// replay of another); `--blind` applies to every entrant. `--db URL` runs the arena's
    /// runs as backtest jobs on that database (one per entrant, window and repeat, in one
    /// batch) for `sim-worker work` processes to drain, and waits for them; `--max-cost` is
    /// then shared evenly among the runs whose model is not built in.
    #[command(flatten)]
    pub base: RunArgs,
    /// Who the jobs of `--db` are queued for, and their limits.
    #[command(flatten)]
    pub submit_as: crate::jobs_cmd::SubmitAs,
    /// With `--db`: queue the jobs (or find them queued) and exit without waiting; the same
    /// command without it waits for them and writes arena.json.
    #[arg(long, requires = "db")]
    pub submit_only: bool,
    /// An entrant: `NAME` (`--skill` with `--model`) or `NAME:KEY=VALUE;KEY=VALUE…` with
    /// `skill=FILE`, `model=MODEL` or a skill field by its dotted path
    /// (`risk.maxPositionPct=30`; the value read as YAML). Repeatable. Without any entrant
    /// (here or in `--arena`), the one entrant `skill` runs `--skill` with `--model`.
    #[arg(long = "entrant", value_name = "NAME[:SETTINGS]")]
    pub entrants: Vec<String>,
    /// An arena file (JSON, YAML or TOML): `entrants` (each a `name`, and optionally `skill`,
    /// `model` and `set`, a map of dotted paths to values) and an optional `reference`. Its
    /// entrants come before those of `--entrant`. See docs/backtesting.md.
    #[arg(long, value_name = "FILE")]
    pub arena: Option<PathBuf>,
    /// The row every other is compared with, paired by window: an entrant's name or a
    /// baseline's (`buy-and-hold:SYMBOL`, `flat-cash`, `rules:SKILL`). Default: the arena
    /// file's `reference`, else the first entrant.
    #[arg(long, value_name = "NAME")]
    pub reference: Option<String>,
    /// Consecutive walk-forward windows of equal time span; each row runs each from a fresh
    /// account.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub windows: u32,
    /// Runs per window of an entrant whose model is not built in (its answers vary from run to
    /// run); the intervals resample them inside each window.
    #[arg(long, value_name = "R", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeats: u32,
    /// How the runs go and the intervals are drawn.
    #[command(flatten)]
    pub walk: crate::arena_runs::Walk,
}

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

/// What a row of the table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Entrant,
    RuleBaseline,
    BuyAndHold,
    FlatCash,
}

/// A row of the table.
pub(crate) struct Row {
    pub name: String,
    pub kind: Kind,
    /// Its runs' folder under OUT (backtested rows).
    pub dir: Option<String>,
    /// The skill file as given, its model and settings (backtested rows).
    pub skill: Option<String>,
    pub model: Option<String>,
    pub set: BTreeMap<String, Value>,
    /// What a buy-and-hold holds.
    pub symbols: Vec<String>,
    /// The run of a window, but for its window and folder (backtested rows).
    args: Option<RunArgs>,
    pub deterministic: bool,
    pub repeats: usize,
}

impl Row {
    fn baseline(name: String, kind: Kind, symbols: Vec<String>) -> Self {
        Self {
            name,
            kind,
            dir: None,
            skill: None,
            model: None,
            set: BTreeMap::new(),
            symbols,
            args: None,
            deterministic: true,
            repeats: 1,
        }
    }
}

/// The cassette of repeat `k` (0-based): `FILE` for the first, `FILE-rK.EXT` for the others.
fn repeat_cassette(path: &Path, k: usize) -> PathBuf {
    if k == 0 {
        return path.to_owned();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-r{}.{}", k + 1, ext.to_string_lossy()),
        None => format!("{stem}-r{}", k + 1),
    };
    path.with_file_name(name)
}

/// A model whose answers do not vary: every `builtin/` model.
fn built_in(model: &str) -> bool {
    model.starts_with("builtin/")
}

/// The `--bars` specs as `(symbol, path)`.
fn bar_specs(specs: &[String]) -> Result<Vec<(String, String)>, Failure> {
    let mut out: Vec<(String, String)> = Vec::new();
    for spec in specs {
        let (symbol, path) = crate::run_cmd::symbol_path("--bars", spec, None)?;
        if out.iter().any(|(s, _)| *s == symbol) {
            return Err(bad(format!("--bars: {symbol} given twice")));
        }
        out.push((symbol, path.to_owned()));
    }
    Ok(out)
}

/// The entrants' specs: the arena file's, then `--entrant`'s; names unique.
fn entrant_specs(args: &ArenaArgs) -> Result<(Vec<EntrantSpec>, Option<String>), Failure> {
    let (mut specs, file_reference) = match &args.arena {
        Some(path) => read_file(path)?,
        None => (Vec::new(), None),
    };
    for (i, spec) in args.entrants.iter().enumerate() {
        specs.push(parse_flag(spec, i + 1)?);
    }
    if specs.is_empty() {
        specs.push(EntrantSpec {
            name: "skill".to_owned(),
            skill: None,
            model: None,
            set: BTreeMap::new(),
            origin: "--skill".to_owned(),
        });
    }
    for (i, s) in specs.iter().enumerate() {
        if let Some(first) = specs[..i].iter().find(|o| o.name == s.name) {
            return Err(bad(format!(
                "{}: the name {} is taken by {}",
                s.origin, s.name, first.origin
            )));
        }
        if s.name == FLAT_CASH {
            return Err(bad(format!(
                "{}: {FLAT_CASH} is the name of a baseline",
                s.origin
            )));
        }
    }
    Ok((specs, file_reference))
}

const FLAT_CASH: &str = "flat-cash";

/// An entrant's row: its skill (with its settings applied and checked, written to its folder),
/// model and bars.
fn entrant_row(
    spec: &EntrantSpec,
    base: &ArenaArgs,
    bars: &[(String, String)],
    out: &Path,
) -> Result<(Row, skill_schema::Skill), Failure> {
    let who = format!("entrant {} ({})", spec.name, spec.origin);
    let file = spec
        .skill
        .clone()
        .unwrap_or_else(|| base.base.skill.clone());
    let loaded = crate::skill_cmd::load(&file).map_err(|mut e| {
        e.message = format!("error: {who}: {}", e.message.trim_start_matches("error: "));
        e
    })?;
    let dir = format!("runs/{}", spec.name);
    let (skill_path, skill) = if spec.set.is_empty() {
        (file.clone(), loaded.skill)
    } else {
        let mut doc = serde_json::to_value(&loaded.skill)
            .map_err(|e| bad(format!("{who}: serializing its skill: {e}")))?;
        let mut paths: Vec<(&String, &Value)> = spec.set.iter().collect();
        paths.sort_by_key(|(p, _)| p.len());
        for (path, value) in paths {
            set_path(&mut doc, path, value.clone())
                .map_err(|e| bad(format!("{who}: set {path}: {e}")))?;
        }
        let text = serde_json::to_string_pretty(&doc)
            .map_err(|e| bad(format!("{who}: serializing its skill: {e}")))?;
        let varied = skill_schema::parse_skill(&text, skill_schema::Format::Json).map_err(|e| {
            bad(format!(
                "{who}: {} with its settings is not a valid skill: {e}",
                file.display()
            ))
        })?;
        let folder = out.join(&dir);
        std::fs::create_dir_all(&folder)
            .map_err(|e| bad(format!("{}: cannot create: {e}", folder.display())))?;
        let path = folder.join("skill.json");
        std::fs::write(&path, format!("{text}\n"))
            .map_err(|e| bad(format!("{}: cannot write: {e}", path.display())))?;
        (path, varied.skill)
    };
    let model = spec
        .model
        .clone()
        .or_else(|| base.base.model.clone())
        .unwrap_or_else(|| skill.model.clone());
    let mut row_bars = Vec::new();
    for symbol in &skill.context.symbols {
        let Some((_, path)) = bars.iter().find(|(s, _)| s == symbol) else {
            return Err(bad(format!(
                "{who}: its skill trades {symbol}; give --bars {symbol}=PATH"
            )));
        };
        row_bars.push(format!("{symbol}={path}"));
    }
    let deterministic = built_in(&model) && built_in(&skill.context.memory.reflection.model);
    let args = RunArgs {
        skill: skill_path,
        bars: row_bars,
        model: Some(model.clone()),
        cassette: if deterministic {
            None
        } else {
            base.base.cassette.clone()
        },
        max_cost: None,
        ..base.base.clone()
    };
    let row = Row {
        name: spec.name.clone(),
        kind: Kind::Entrant,
        dir: Some(dir),
        skill: Some(file.display().to_string()),
        model: Some(model),
        set: spec.set.clone(),
        symbols: Vec::new(),
        args: Some(args),
        deterministic,
        repeats: if deterministic {
            1
        } else {
            base.repeats as usize
        },
    };
    Ok((row, skill))
}

/// The rule baselines of the entrants' skill files: `rules:STEM` for each file whose own model
/// is a built-in rule model, unless an entrant already runs that file unchanged with it.
fn rule_rows(
    specs: &[EntrantSpec],
    rows: &[Row],
    base: &ArenaArgs,
    bars: &[(String, String)],
    out: &Path,
) -> Result<Vec<Row>, Failure> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut result = Vec::new();
    for spec in specs {
        let file = spec
            .skill
            .clone()
            .unwrap_or_else(|| base.base.skill.clone());
        if seen.contains(&file) {
            continue;
        }
        seen.push(file.clone());
        let skill = crate::skill_cmd::load(&file)?.skill;
        if agent_runtime::builtin_model(&skill.model, &skill).is_none() {
            continue;
        }
        let shown = file.display().to_string();
        let already = rows.iter().any(|r| {
            r.kind == Kind::Entrant
                && r.skill.as_deref() == Some(shown.as_str())
                && r.set.is_empty()
                && r.model.as_deref() == Some(skill.model.as_str())
        });
        if already {
            continue;
        }
        let stem = file
            .file_stem()
            .map_or_else(|| "skill".to_owned(), |s| s.to_string_lossy().into_owned());
        let mut name = format!("rules:{stem}");
        let mut k = 2;
        while result.iter().any(|r: &Row| r.name == name) {
            name = format!("rules:{stem}-{k}");
            k += 1;
        }
        let spec = EntrantSpec {
            name: name.clone(),
            skill: Some(file.clone()),
            model: Some(skill.model.clone()),
            set: BTreeMap::new(),
            origin: format!("the rule baseline of {shown}"),
        };
        let (mut row, _) = entrant_row(&spec, base, bars, out)?;
        row.kind = Kind::RuleBaseline;
        row.dir = Some(format!("baselines/{}", name.replace(':', "-")));
        row.name = name;
        result.push(row);
    }
    Ok(result)
}

/// A row's per-window runs and equity: `[window][repeat]`.
#[derive(Default)]
pub(crate) struct Results {
    /// Each run's summary.json.
    pub summaries: Vec<Vec<Value>>,
    /// Each run's equity after every tick.
    pub curves: Vec<Vec<Curve>>,
}

pub(crate) fn run(args: ArenaArgs) -> Result<String, Failure> {
    let base = &args.base;
    if base.report_tick.is_some() {
        return Err(bad(
            "--report-tick names one tick of one run; in an arena every window is a run",
        ));
    }
    let out = base.out.clone();
    let bars = bar_specs(&base.bars)?;
    let (specs, file_reference) = entrant_specs(&args)?;
    std::fs::create_dir_all(&out)
        .map_err(|e| bad(format!("{}: cannot create: {e}", out.display())))?;
    for name in ["arena.json", "arena.html"] {
        let p = out.join(name);
        if p.exists() {
            std::fs::remove_file(&p)
                .map_err(|e| bad(format!("{}: cannot replace: {e}", p.display())))?;
        }
    }

    let mut rows = Vec::new();
    for spec in &specs {
        rows.push(entrant_row(spec, &args, &bars, &out)?.0);
    }
    let rules = rule_rows(&specs, &rows, &args, &bars, &out)?;
    rows.extend(rules);
    let symbols: Vec<String> = bars.iter().map(|(s, _)| s.clone()).collect();
    for s in &symbols {
        rows.push(Row::baseline(
            format!("buy-and-hold:{s}"),
            Kind::BuyAndHold,
            vec![s.clone()],
        ));
    }
    if symbols.len() > 1 {
        rows.push(Row::baseline(
            "buy-and-hold:equal-weight".to_owned(),
            Kind::BuyAndHold,
            symbols.clone(),
        ));
    }
    rows.push(Row::baseline(
        FLAT_CASH.to_owned(),
        Kind::FlatCash,
        Vec::new(),
    ));

    let reference = args
        .reference
        .clone()
        .or(file_reference)
        .unwrap_or_else(|| specs[0].name.clone());
    let Some(reference_row) = rows.iter().position(|r| r.name == reference) else {
        let flag = if args.reference.is_some() {
            "--reference"
        } else {
            "the arena file's reference"
        };
        return Err(bad(format!(
            "{flag} {reference}: not a row of this arena (entrants: {}; baselines: {})",
            names(&rows, |r| r.kind == Kind::Entrant),
            names(&rows, |r| r.kind != Kind::Entrant),
        )));
    };

    // --max-cost caps the whole arena, and only models the rate table prices can be capped.
    let budget = match &base.max_cost {
        None => None,
        Some(text) => {
            let mut cap = None;
            for row in rows.iter().filter(|r| !r.deterministic) {
                let model = row.model.as_deref().unwrap_or_default();
                cap = crate::spend::parse_max_cost(Some(text), model).map_err(|mut e| {
                    e.message = format!(
                        "error: entrant {}: {}",
                        row.name,
                        e.message.trim_start_matches("error: ")
                    );
                    e
                })?;
            }
            let cap = match cap {
                Some(cap) => cap,
                None => crate::spend::parse_cap(text)?,
            };
            Some(Arc::new(Budget::new(cap, args.walk.concurrency)))
        }
    };

    // Every backtested row checked before any runs: its skill, bars, model and flags.
    let mut first: Option<crate::run_cmd::Prepared> = None;
    for row in &rows {
        let Some(a) = &row.args else { continue };
        let p = crate::run_cmd::prepare(a).map_err(|mut e| {
            e.message = format!(
                "error: entrant {}: {}",
                row.name,
                e.message.trim_start_matches("error: ")
            );
            e
        })?;
        let interval = p.input.deployment.skill.context.bars_interval;
        if let Some(f) = &first {
            let want = f.input.deployment.skill.context.bars_interval;
            if interval != want {
                return Err(bad(format!(
                    "entrant {}: its skill trades {interval} bars, the first entrant's {want}; \
                     an arena compares on one bar grid",
                    row.name
                )));
            }
        } else {
            first = Some(p);
        }
    }
    let Some(first) = first else {
        return Err(bad("no entrant to run"));
    };
    let interval = first.input.deployment.skill.context.bars_interval;
    let broker = first.input.broker.clone();
    let initial = broker.initial_equity_usd;

    // The arena's bars: every symbol of --bars, for the baselines, the tick grid and the
    // regimes.
    let mut market = Preloaded::new();
    for (symbol, path) in &bars {
        let series = market_data::load_bars(Path::new(path)).map_err(|e| bad(e.to_string()))?;
        market.insert_bars(symbol, interval, series);
    }
    let times = tick_times(&market, &symbols, interval, base.from, base.to);
    let (Some(&first_tick), Some(&last_tick)) = (times.first(), times.last()) else {
        return Err(bad(format!(
            "no {interval} bar closes between --from and --to"
        )));
    };
    // A window without a bar close (a weekend of a market that closes) is left out; the others
    // span their first to their last tick.
    let all_spans = windows(first_tick, last_tick, interval, args.windows);
    let spans: Vec<Span> = all_spans
        .iter()
        .filter_map(|&(from, to)| {
            let t = tick_times(&market, &symbols, interval, Some(from), Some(to));
            Some((*t.first()?, *t.last()?))
        })
        .collect();
    let empty_windows = all_spans.len() - spans.len();

    // The runs: row by row, window by window, repeat by repeat.
    let mut jobs = Vec::new();
    let mut job_of = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let (Some(a), Some(dir)) = (&row.args, &row.dir) else {
            continue;
        };
        for (w, &(from, to)) in spans.iter().enumerate() {
            for k in 0..row.repeats {
                jobs.push(RunArgs {
                    from: Some(from),
                    to: Some(to),
                    out: out
                        .join(dir)
                        .join(window_name(w))
                        .join(format!("r{}", k + 1)),
                    cassette: a.cassette.as_deref().map(|c| repeat_cassette(c, k)),
                    // Runs side by side would all pin to the same two CPUs.
                    pin_threads: a.pin_threads && args.walk.concurrency == 1,
                    quiet: true,
                    budget: budget.clone(),
                    ..a.clone()
                });
                job_of.push((r, w, k));
            }
        }
    }
    let total = jobs.len();
    let finished = AtomicUsize::new(0);
    let progress = |j: usize, r: &Result<RunOutput, Failure>| {
        let n = finished.fetch_add(1, Ordering::Relaxed) + 1;
        let (row, w, k) = job_of[j];
        let what = match r {
            Ok(o) => (metric("net_return_usd").read)(&o.summary).map_or_else(
                || "done".to_owned(),
                |d| format!("net {}", text::signed_money(d)),
            ),
            Err(_) => "failed".to_owned(),
        };
        let line = format!(
            "arena: run {n}/{total} · {} {} r{} · {what}\n",
            rows[row].name,
            window_name(w),
            k + 1
        );
        let _ = std::io::stderr().write_all(line.as_bytes());
    };
    let slots = match &base.db {
        Some(url) => {
            let share = budget.as_ref().map(|b| {
                let priced = job_of.iter().filter(|(r, _, _)| !rows[*r].deterministic);
                (b.cap() / Decimal::from(priced.count().max(1)))
                    .round_dp_with_strategy(6, rust_decimal::RoundingStrategy::ToZero)
            });
            let runs = jobs
                .into_iter()
                .zip(&job_of)
                .map(|(mut a, &(r, w, k))| {
                    if !rows[r].deterministic {
                        a.max_cost = share.map(|s| s.normalize().to_string());
                    }
                    let label = format!("arena {} {} r{}", rows[r].name, window_name(w), k + 1);
                    (a, label)
                })
                .collect();
            match crate::arena_jobs::run_as_jobs(url, &args.submit_as, runs, !args.submit_only)? {
                crate::arena_jobs::AsJobs::Done(slots) => slots,
                crate::arena_jobs::AsJobs::Queued(batch, count) => {
                    return Ok(format!(
                        "queued:  {count} jobs in batch {batch}; `sim-worker work --db URL` runs \
                         them, and this command without --submit-only waits for them and writes \
                         arena.json\n"
                    ));
                }
            }
        }
        None => run_all(jobs, args.walk.concurrency, budget.as_deref(), &progress),
    };

    let mut results: Vec<Results> = rows
        .iter()
        .map(|_| Results {
            summaries: vec![Vec::new(); spans.len()],
            curves: vec![Vec::new(); spans.len()],
        })
        .collect();
    let (mut spent, mut replayed, mut recorded) = (Decimal::ZERO, 0, 0);
    let mut stopped = false;
    let mut done_runs = 0;
    for (j, slot) in slots.into_iter().enumerate() {
        let (r, w, k) = job_of[j];
        match slot {
            Some(Ok(o)) => {
                spent += o.spent.usd;
                replayed += o.replayed;
                recorded += o.recorded;
                done_runs += 1;
                results[r].summaries[w].push(o.summary);
                results[r].curves[w].push(o.equity);
            }
            Some(Err(e)) if e.code == crate::EXIT_COST_CAP => stopped = true,
            Some(Err(mut e)) => {
                e.message = format!(
                    "error: entrant {}, window {}, repeat {}: {}",
                    rows[r].name,
                    window_name(w),
                    k + 1,
                    e.message.trim_start_matches("error: ")
                );
                e.stdout.clear();
                return Err(e);
            }
            None => stopped = stopped || budget.is_some(),
        }
    }
    if stopped || done_runs < total {
        let spent = budget.as_ref().map_or(spent, |b| b.spent());
        let (cap, costliest) = match budget.as_ref().and_then(|b| b.stop()) {
            Some(crate::spend::Stop::MaxCost {
                cap,
                costliest_tick,
                ..
            }) => (cap, costliest_tick),
            _ => (Decimal::ZERO, Decimal::ZERO),
        };
        let resume = if base.cassette.is_some() {
            " Every response paid for is in the cassettes: run the arena again with the same \
             --cassette and a higher --max-cost, and only what is missing is paid for."
        } else {
            " With --cassette, a second attempt would replay what this one paid for."
        };
        return Err(Failure {
            message: format!(
                "stopped: --max-cost {} for the whole arena: {} spent after {done_runs} of \
                 {total} runs; the next ticks could cost {} each (the costliest so far) and \
                 pass the cap. The completed runs are under {}; no arena.json was written: \
                 windows some entrants did not finish would not compare them fairly.{resume}\n",
                text::cost(cap),
                text::cost(spent),
                text::cost(costliest),
                out.display()
            ),
            code: crate::EXIT_COST_CAP,
            stdout: String::new(),
        });
    }

    // The baselines computed from the bars, window by window.
    for (r, row) in rows.iter().enumerate() {
        if row.args.is_some() {
            continue;
        }
        for (w, &(from, to)) in spans.iter().enumerate() {
            let ticks = tick_times(&market, &symbols, interval, Some(from), Some(to));
            let result = match row.kind {
                Kind::BuyAndHold => {
                    baseline::buy_and_hold(&market, &row.symbols, &ticks, interval, &broker)
                }
                _ => baseline::flat_cash(&ticks, interval, initial),
            }
            .map_err(|e| bad(format!("{} in window {}: {e}", row.name, window_name(w))))?;
            let summary = serde_json::to_value(Summary::of(&result))
                .map_err(|e| bad(format!("serializing {}: {e}", row.name)))?;
            results[r].summaries[w].push(summary);
            results[r].curves[w].push(
                result
                    .points
                    .iter()
                    .map(|p| (p.tick_at, p.equity_usd))
                    .collect(),
            );
        }
    }

    // Each window's regime, from the first symbol's bars (every symbol's in arena.json).
    let regimes: Vec<BTreeMap<String, RegimeTag>> = spans
        .iter()
        .map(|&(from, to)| {
            symbols
                .iter()
                .map(|s| {
                    let all = market.all_bars(s, interval);
                    let inside: Vec<types::Bar> = all
                        .iter()
                        .filter(|b| {
                            let t = b.close_time(interval);
                            t >= from && t <= to
                        })
                        .cloned()
                        .collect();
                    (s.clone(), window_regime(&inside))
                })
                .collect()
        })
        .collect();

    let arena = Arena {
        rows: &rows,
        results: &results,
        reference: reference_row,
        settings: Settings {
            empty_windows,
            spans: &spans,
            interval,
            initial,
            fee_bps: broker.taker_fee_bps,
            slippage_bps: broker.slippage_bps,
            blind: base.blind,
            repeats: args.repeats,
            how: Resampling {
                resamples: args.walk.resamples,
                seed: args.walk.seed,
            },
            regimes: &regimes,
            first_symbol: &symbols[0],
        },
    };
    let spent_line = format!(
        "spent:   {} at the provider · cassettes: {replayed} responses replayed, {recorded} \
         sent and recorded\n",
        text::cost(spent)
    );
    let (json, mut text, html) = render(&arena, &spent_line)?;
    let html_path = write_out(&out, "arena.html", html.as_bytes())?;
    let json_path = write_out(&out, "arena.json", json.as_bytes())?;
    let _ = write!(
        text,
        "arena:   {}\nreport:  {}\n",
        json_path.display(),
        html_path.display()
    );
    Ok(text)
}

/// The names of the rows `keep` keeps, joined by commas.
fn names(rows: &[Row], keep: impl Fn(&Row) -> bool) -> String {
    let n: Vec<&str> = rows
        .iter()
        .filter(|r| keep(r))
        .map(|r| r.name.as_str())
        .collect();
    n.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_after_the_first_record_in_cassettes_of_their_own() {
        let p = Path::new("out/llm.cassette");
        assert_eq!(repeat_cassette(p, 0), PathBuf::from("out/llm.cassette"));
        assert_eq!(repeat_cassette(p, 1), PathBuf::from("out/llm-r2.cassette"));
        assert_eq!(
            repeat_cassette(Path::new("tape"), 2),
            PathBuf::from("tape-r3")
        );
    }
}
