//! `sim-worker score-outcomes`: the live scorer's path (`tick::score_due_outcomes`, as
//! `live-runner score-outcomes` runs it) over an existing store, with bars from files instead
//! of an exchange: every unscored outcome whose marks the bars cover is scored as of `--at`.
//! With `--regrade`, no bars: the grade and narrative of every outcome scored in full are
//! computed again from its stored figures (`OutcomeStore::regrade_outcomes`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use chrono::{DateTime, Utc};
use clap::Args;
use db::{OutcomeStore, RegistryStore};
use market_data::{detect_interval, load_bars};
use skill_schema::{Format, parse_skill};
use tools::Preloaded;
use types::{Interval, Uuid};

use crate::Failure;

/// Most outcomes one run scores (`OutcomeStore::unscored_outcomes`' bound); a larger backlog
/// takes more runs, oldest first.
const MAX_PENDING: u32 = 1000;

/// `sim-worker score-outcomes`.
#[derive(Debug, Args)]
pub(crate) struct ScoreArgs {
    /// The store: `sqlite://PATH` or `postgres://…` (it must exist).
    #[arg(long)]
    db: String,
    /// `SYMBOL=FILE`: a symbol's bars (CSV or Hyperliquid candle JSON), one interval per file;
    /// repeatable.
    #[arg(
        long = "bars",
        required_unless_present = "regrade",
        value_name = "SYMBOL=FILE"
    )]
    bars: Vec<String>,
    /// Score as of this time (UTC); default the latest bar close of the files. `--now` is its
    /// old name.
    #[arg(long, value_name = "TIME", alias = "now", value_parser = types::cli::parse_time)]
    at: Option<DateTime<Utc>>,
    /// Instead of scoring: grade every outcome scored in full again from its stored figures
    /// (first hit, 24h PnL, worst price) and rewrite its narrative; prints how many were read
    /// and how many changed.
    #[arg(long, conflicts_with_all = ["bars", "at"])]
    regrade: bool,
}

fn bad(message: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {message}"))
}

/// Loads every `SYMBOL=FILE`; returns the bars and the latest bar close among them.
fn load(specs: &[String]) -> Result<(Preloaded, DateTime<Utc>), Failure> {
    let mut market = Preloaded::new();
    let mut last: Option<DateTime<Utc>> = None;
    let mut seen = BTreeSet::new();
    for spec in specs {
        let Some((symbol, file)) = spec
            .split_once('=')
            .filter(|(s, f)| !s.trim().is_empty() && !f.trim().is_empty())
        else {
            return Err(bad(format!("--bars {spec:?}: expected SYMBOL=FILE")));
        };
        if !seen.insert(symbol.to_owned()) {
            return Err(bad(format!("--bars: {symbol} is given twice")));
        }
        let bars = load_bars(Path::new(file)).map_err(|e| bad(format!("--bars {spec}: {e}")))?;
        let interval: Interval = detect_interval(&bars).ok_or_else(|| {
            bad(format!(
                "--bars {spec}: cannot tell the bar interval (fewer than two bars, or irregular times)"
            ))
        })?;
        if let Some(b) = bars.last() {
            let close = b.close_time(interval);
            last = Some(last.map_or(close, |l| l.max(close)));
        }
        market.insert_bars(symbol, interval, bars);
    }
    let last = last.ok_or_else(|| bad("--bars: the files hold no bar"))?;
    Ok((market, last))
}

/// Scores the store's due outcomes from the bars; prints what changed.
pub(crate) fn score(args: ScoreArgs) -> Result<String, Failure> {
    if args.regrade {
        return regrade(&args.db);
    }
    let (market, last_close) = load(&args.bars)?;
    let now = args.at.unwrap_or(last_close);
    crate::block_on(async move {
        let store = db::open_existing(&args.db)
            .await
            .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(&args.db))))?;
        let pending = store
            .unscored_outcomes(now, MAX_PENDING)
            .await
            .map_err(|e| bad(format!("reading the unscored outcomes: {e}")))?;
        // Each deployment's bar interval, from its stored skill version (as live scores).
        let mut intervals: BTreeMap<Uuid, Interval> = BTreeMap::new();
        for id in pending
            .iter()
            .map(|o| o.deployment_id)
            .collect::<BTreeSet<_>>()
        {
            let d = store
                .get_deployment(id)
                .await
                .map_err(|e| bad(format!("reading deployment {id}: {e}")))?;
            let version = store
                .get_skill_version(d.skill_id, d.skill_version)
                .await
                .map_err(|e| bad(format!("reading the skill of deployment {id}: {e}")))?;
            let skill = parse_skill(&version.body.to_string(), Format::Json)
                .map_err(|e| {
                    bad(format!(
                        "the skill of deployment {id} does not validate: {e}"
                    ))
                })?
                .skill;
            intervals.insert(id, skill.context.bars_interval);
        }
        let report = tick::score_due_outcomes(&store, &market, &intervals, now, MAX_PENDING)
            .await
            .map_err(|e| bad(format!("scoring: {e}")))?;
        let mut out = format!(
            "scored as of {}: {} due, {} rows changed, {} graded, {} skipped\n",
            db::time_text(now),
            report.pending,
            report.updated,
            report.finished,
            report.skipped.len()
        );
        for (id, why) in &report.skipped {
            let _ = writeln!(out, "skipped {id}: {why}");
        }
        if report.pending == MAX_PENDING as usize {
            let _ = writeln!(
                out,
                "at most {MAX_PENDING} outcomes are scored per run: run again for the rest"
            );
        }
        Ok(out)
    })
}

/// `--regrade`: the store's scored outcomes graded again; prints how many were read and changed.
fn regrade(db: &str) -> Result<String, Failure> {
    crate::block_on(async move {
        let store = db::open_existing(db)
            .await
            .map_err(|e| bad(format!("--db {}: {e}", db::redact_url(db))))?;
        let done = store
            .regrade_outcomes()
            .await
            .map_err(|e| bad(format!("regrading: {e}")))?;
        Ok(format!(
            "regraded {} scored outcomes: {} changed\n",
            done.scored, done.changed
        ))
    })
}
