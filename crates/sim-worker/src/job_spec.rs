//! A backtest as a job: `run`'s arguments turned into a [`db::JobSpec`] with the bar files
//! by content hash ([`spec_of`]), queued with [`new_jobs`] and [`store_jobs`] — the one way to
//! submit runs (`sim-worker submit`, and an arena fanning its runs out as one job each) — and
//! turned back into `run`'s arguments over files a worker writes ([`Materialized`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use db::{BarsFormat, CassetteRef, JobLimits, JobSpec, JobStore, NewBars, NewJob};
use rust_decimal::Decimal;
use types::Uuid;

use crate::Failure;
use crate::run_cmd::{DEFAULT_EQUITY, DEFAULT_FEE_BPS, DEFAULT_SLIPPAGE_BPS, RunArgs};
use crate::spend::CassetteMode;

fn bad(message: impl Into<String>) -> Failure {
    Failure::bad_input(format!("error: {}", message.into()))
}

/// The user `sim-worker run` records its runs as, and `submit` submits as without `--user`.
pub(crate) fn default_user() -> Uuid {
    Uuid::new_v5(&tick::ID_NAMESPACE, b"sim-worker user")
}

/// One run to queue: `run`'s arguments, a label for people, and its job id (a fresh one when
/// `None`; a derived one makes submitting the same run twice a conflict).
#[derive(Debug, Clone)]
pub(crate) struct RunJob {
    /// The run, as `sim-worker run` takes it (its `--db`, `--out` and `--pin-threads` are not
    /// the job's: the worker's database is the store, and nothing is written to files).
    pub args: RunArgs,
    /// A name for the job (1..=200 characters).
    pub label: Option<String>,
    /// The job's id.
    pub id: Option<Uuid>,
}

/// The flags of `run` a job does not carry (yet): each is refused, naming it.
fn refuse_unsupported(args: &RunArgs) -> Result<(), Failure> {
    let given = [
        ("--news", args.news.is_some()),
        ("--events", args.events.is_some()),
        ("--funding", !args.funding.is_empty()),
        ("--meta", args.meta.is_some()),
        ("--report-tick", args.report_tick.is_some()),
        ("--pin-threads", args.pin_threads),
    ];
    match given.iter().find(|(_, on)| *on) {
        Some((flag, _)) => Err(bad(format!(
            "{flag}: not carried by a job (a job runs the skill over its bars, model and \
             paper account); run it with `sim-worker run`"
        ))),
        None => Ok(()),
    }
}

fn decimal(
    flag: &str,
    text: &str,
    default: &str,
    min: Decimal,
) -> Result<Option<Decimal>, Failure> {
    if text.trim() == default {
        return Ok(None);
    }
    let d: Decimal = text
        .trim()
        .parse()
        .map_err(|_| bad(format!("{flag}: {text:?} is not a number")))?;
    if d < min {
        return Err(bad(format!("{flag}: must be at least {min} (got {text})")));
    }
    Ok(Some(d.normalize()))
}

/// The bar files a submit reads, each once (an arena's runs share them).
#[derive(Default)]
pub(crate) struct BarFiles {
    by_path: BTreeMap<PathBuf, NewBars>,
}

impl BarFiles {
    /// The file at `path`, read and checked as `run` reads bars (its errors name the file and
    /// line), hashed.
    fn read(&mut self, spec: &str, path: &Path) -> Result<&NewBars, Failure> {
        if !self.by_path.contains_key(path) {
            let name = path.to_string_lossy();
            let format = BarsFormat::of_file_name(&name).ok_or_else(|| {
                bad(format!(
                    "--bars {spec:?}: {name}: a bar file is .csv (backtesting.py layout) or \
                     .json (Hyperliquid candles)"
                ))
            })?;
            market_data::load_bars(path).map_err(|e| bad(e.to_string()))?;
            let bytes = std::fs::read(path)
                .map_err(|e| bad(format!("{}: cannot read: {e}", path.display())))?;
            self.by_path
                .insert(path.to_owned(), NewBars::of(format, bytes));
        }
        Ok(&self.by_path[path])
    }

    /// Every file read, for the submit.
    pub(crate) fn into_bars(self) -> Vec<NewBars> {
        self.by_path.into_values().collect()
    }
}

/// The job spec of `args` (its bar files read into `files`) and its cost limit.
///
/// # Errors
/// Bad input naming the flag: an invalid skill, a bar file that does not load, a symbol the
/// skill does not trade or one without bars, a flag a job does not carry, a model that calls a
/// provider without `--max-cost`.
pub(crate) fn spec_of(args: &RunArgs, files: &mut BarFiles) -> Result<(JobSpec, Decimal), Failure> {
    refuse_unsupported(args)?;
    let mut skill = crate::skill_cmd::load(&args.skill)?.skill;
    if args.memory_off {
        skill.context.memory.enabled = false;
    }
    let mut bars = BTreeMap::new();
    for spec in &args.bars {
        let (symbol, path) =
            crate::run_cmd::symbol_path("--bars", spec, Some(&skill.context.symbols))?;
        let file = files.read(spec, Path::new(path))?;
        if bars.insert(symbol.clone(), file.reference()).is_some() {
            return Err(bad(format!("--bars: {symbol} given twice")));
        }
    }
    if let Some(missing) = skill
        .context
        .symbols
        .iter()
        .find(|s| !bars.contains_key(*s))
    {
        return Err(bad(format!(
            "no --bars for {missing} (the skill trades {})",
            skill.context.symbols.join(", ")
        )));
    }
    let model_id = args.model.clone().unwrap_or_else(|| skill.model.clone());
    let max_cost = crate::spend::parse_max_cost(args.max_cost.as_deref(), &model_id)?;
    let cassette = match &args.cassette {
        None => None,
        Some(path) => {
            // As the workers will open it: an absolute path (on a volume they share).
            let path = std::path::absolute(path)
                .map_err(|e| bad(format!("--cassette {}: {e}", path.display())))?;
            Some(CassetteRef {
                path: path.to_string_lossy().into_owned(),
                mode: cassette_mode_name(args.cassette_mode).to_owned(),
            })
        }
    };
    let spec = JobSpec {
        skill: serde_json::to_value(&skill).map_err(|e| {
            bad(format!(
                "{}: serializing the skill: {e}",
                args.skill.display()
            ))
        })?,
        bars,
        model: args.model.clone(),
        from: args.from,
        to: args.to,
        equity_usd: decimal("--equity", &args.equity, DEFAULT_EQUITY, Decimal::ONE)?,
        fee_bps: decimal("--fee-bps", &args.fee_bps, DEFAULT_FEE_BPS, Decimal::ZERO)?,
        slippage_bps: decimal(
            "--slippage-bps",
            &args.slippage_bps,
            DEFAULT_SLIPPAGE_BPS,
            Decimal::ZERO,
        )?,
        blind: args.blind,
        max_cost_usd: max_cost,
        cassette,
    };
    let budget = spec
        .cost_budget(&skill.model)
        .map_err(|e| bad(e.replace("max_cost_usd: ", "--max-cost: ")))?;
    Ok((spec, budget))
}

fn cassette_mode_name(mode: CassetteMode) -> &'static str {
    match mode {
        CassetteMode::Record => "record",
        CassetteMode::Replay => "replay",
        CassetteMode::Auto => "auto",
    }
}

fn cassette_mode(name: &str) -> Option<CassetteMode> {
    [
        CassetteMode::Record,
        CassetteMode::Replay,
        CassetteMode::Auto,
    ]
    .into_iter()
    .find(|m| cassette_mode_name(*m) == name)
}

/// `runs` as jobs of `user` in `batch` (`None`: no batch), each bar file read once, with the
/// bar files they run over. A run's job id is its own, or a fresh one; their creation times a
/// microsecond apart from `now`, so workers claim them in the order of `runs`.
///
/// # Errors
/// Bad input from [`spec_of`], naming the run's label or position when there are several.
pub(crate) fn new_jobs(
    user: Uuid,
    batch: Option<Uuid>,
    runs: &[RunJob],
    now: DateTime<Utc>,
) -> Result<(Vec<NewJob>, Vec<NewBars>), Failure> {
    let mut files = BarFiles::default();
    let mut jobs = Vec::with_capacity(runs.len());
    for (i, run) in runs.iter().enumerate() {
        let (spec, cost_limit_usd) = spec_of(&run.args, &mut files).map_err(|mut f| {
            if runs.len() > 1 {
                let which = run
                    .label
                    .clone()
                    .unwrap_or_else(|| format!("run {}", i + 1));
                f.message = format!(
                    "error: {which}: {}",
                    f.message.trim_start_matches("error: ")
                );
            }
            f
        })?;
        let offset = chrono::Duration::microseconds(i64::try_from(i).unwrap_or(i64::MAX));
        jobs.push(NewJob {
            id: run.id.unwrap_or_else(Uuid::new_v4),
            user_id: user,
            batch_id: batch,
            label: run.label.clone(),
            spec,
            cost_limit_usd,
            created_at: now + offset,
        });
    }
    Ok((jobs, files.into_bars()))
}

/// Queues `jobs` with their `bars` in one submit — all or none, within `limits` — each bar
/// file stored once.
///
/// # Errors
/// The store's refusal as bad input: the user's limits (`error: backtest jobs: …`), an id
/// taken, an unknown user.
pub(crate) async fn store_jobs<S: JobStore>(
    store: &S,
    jobs: &[NewJob],
    bars: &[NewBars],
    limits: JobLimits,
) -> Result<(), Failure> {
    store
        .submit_jobs(jobs, bars, limits)
        .await
        .map(|_| ())
        .map_err(|e| match e {
            db::DbError::Constraint {
                kind: db::ConstraintKind::ForeignKey,
                ..
            } => bad(format!(
                "user {} is not known to this database (submit as a user who has signed in, or \
                 leave --user out)",
                jobs.first().map(|j| j.user_id).unwrap_or_default()
            )),
            e => bad(e.to_string()),
        })
}

/// Queues `runs` as jobs ([`new_jobs`], then [`store_jobs`]); returns their ids in the order
/// of `runs`.
///
/// # Errors
/// As [`new_jobs`] and [`store_jobs`].
pub(crate) async fn submit_runs<S: JobStore>(
    store: &S,
    user: Uuid,
    batch: Option<Uuid>,
    runs: &[RunJob],
    limits: JobLimits,
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>, Failure> {
    let (jobs, bars) = new_jobs(user, batch, runs, now)?;
    store_jobs(store, &jobs, &bars, limits).await?;
    Ok(jobs.iter().map(|j| j.id).collect())
}

/// A job's run as files a worker wrote: the skill document and each symbol's bars in a
/// directory of their own (removed when dropped), and `run`'s arguments over them.
pub(crate) struct Materialized {
    /// The run's arguments.
    pub args: RunArgs,
    _dir: tempfile::TempDir,
}

impl Materialized {
    /// Writes `spec`'s skill and `bars` (each symbol's file, as stored) to a new directory.
    ///
    /// # Errors
    /// A message when the directory or a file cannot be written, or the spec names a symbol
    /// `bars` lacks.
    pub(crate) fn write(
        spec: &JobSpec,
        bars: &BTreeMap<String, db::StoredBars>,
    ) -> Result<Self, String> {
        let dir = tempfile::Builder::new()
            .prefix("sim-worker-job-")
            .tempdir()
            .map_err(|e| format!("creating a directory for the job's files: {e}"))?;
        let skill = dir.path().join("skill.json");
        let text =
            serde_json::to_vec_pretty(&spec.skill).map_err(|e| format!("the spec's skill: {e}"))?;
        std::fs::write(&skill, text).map_err(|e| format!("{}: {e}", skill.display()))?;
        let mut flags = Vec::new();
        for (i, (symbol, r)) in spec.bars.iter().enumerate() {
            let stored = bars
                .get(symbol)
                .ok_or_else(|| format!("no bars of {symbol}"))?;
            // Named by position: a symbol is not necessarily a file name.
            let path = dir.path().join(format!("bars-{i}.{}", r.format.as_str()));
            std::fs::write(&path, &stored.bytes).map_err(|e| format!("{}: {e}", path.display()))?;
            flags.push(format!("{symbol}={}", path.display()));
        }
        let mut args = RunArgs::for_bars(skill, flags, String::new());
        args.model = spec.model.clone();
        args.from = spec.from;
        args.to = spec.to;
        let text = |d: Option<Decimal>, default: &str| {
            d.map_or_else(|| default.to_owned(), |d| d.to_string())
        };
        args.equity = text(spec.equity_usd, DEFAULT_EQUITY);
        args.fee_bps = text(spec.fee_bps, DEFAULT_FEE_BPS);
        args.slippage_bps = text(spec.slippage_bps, DEFAULT_SLIPPAGE_BPS);
        args.blind = spec.blind;
        args.max_cost = spec.max_cost_usd.map(|d| d.to_string());
        if let Some(c) = &spec.cassette {
            args.cassette = Some(PathBuf::from(&c.path));
            args.cassette_mode = cassette_mode(&c.mode)
                .ok_or_else(|| format!("cassette mode {:?}: record, replay or auto", c.mode))?;
        }
        Ok(Self { args, _dir: dir })
    }
}
