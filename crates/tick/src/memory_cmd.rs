//! The outcome-memory commands both binaries offer (`sim-worker` over SQLite or PostgreSQL,
//! `live-runner` over PostgreSQL): `annotate` (a note on an outcome or a ledger row) and
//! `memory-stats` (a point-in-time summary of a symbol's outcomes), and the scope `mcp-serve`
//! serves ([`memory_scope`]). The binaries parse their flags and open the store; the checks, the
//! reads and the output are here, once.

use chrono::{DateTime, Duration, Utc};
use db::{
    AnnotationTarget, DbError, MAX_ANNOTATION_CHARS, MAX_ANNOTATION_TAGS, MAX_TAG_CHARS,
    MemoryScope, NewAnnotation, OutcomeStore, RegistryStore,
};
use outcomes::{Grade, TradeOutcome};
use rust_decimal::Decimal;
use types::text;
use uuid::Uuid;

/// Most outcomes one window's read returns (`OutcomeStore::symbol_outcomes`' bound).
const MAX_ROWS: u32 = 1000;

/// Most days a `memory-stats` window spans (ten years).
const MAX_DAYS: u32 = 3650;

/// Decimals of the pnl % figures on the text output.
const PNL_TEXT_DP: u32 = 2;

/// A command's refusal or failure, its message naming the flag or the step (the binaries print
/// it as their error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MemoryCommandError(pub String);

fn bad(message: impl std::fmt::Display) -> MemoryCommandError {
    MemoryCommandError(message.to_string())
}

/// What `annotate` stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnnotateRequest {
    /// The outcome or ledger row (`--outcome` / `--trade`).
    pub target: AnnotationTarget,
    /// The note, 1 to 2000 characters (`--text`).
    pub text: String,
    /// Its tags, at most 16, each 1 to 40 characters (`--tag`).
    pub tags: Vec<String>,
}

/// What `memory-stats` summarises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsRequest {
    /// Only this deployment's outcomes; `None`: every deployment of the store.
    pub deployment: Option<Uuid>,
    /// The symbol.
    pub symbol: String,
    /// The window: outcomes whose tick is in [at − days, at), 1 to 3650 (the window
    /// convention of every outcome-memory reader, `outcomes::recall`'s).
    pub days: u32,
    /// The window's end (exclusive); `None`: the instant after the latest outcome's tick of the
    /// symbol (one microsecond, the stores' precision), so the window ends with that outcome.
    pub at: Option<DateTime<Utc>>,
    /// JSON instead of text.
    pub json: bool,
}

impl AnnotateRequest {
    /// Checks the text and tags against the store's bounds, naming the flag (what
    /// [`annotate`] checks first; a binary may call it before opening the store).
    ///
    /// # Errors
    /// [`MemoryCommandError`] naming `--text` or `--tag`.
    pub fn check(&self) -> Result<(), MemoryCommandError> {
        let a = self;
        let chars = a.text.chars().count();
        if chars == 0 || chars > MAX_ANNOTATION_CHARS {
            return Err(bad(format!(
                "--text has {chars} characters; 1 to {MAX_ANNOTATION_CHARS} are allowed"
            )));
        }
        if a.tags.len() > MAX_ANNOTATION_TAGS {
            return Err(bad(format!(
                "--tag given {} times; at most {MAX_ANNOTATION_TAGS} tags are allowed",
                a.tags.len()
            )));
        }
        for t in &a.tags {
            let chars = t.chars().count();
            if chars == 0 || chars > MAX_TAG_CHARS {
                return Err(bad(format!(
                    "--tag {t:?} has {chars} characters; 1 to {MAX_TAG_CHARS} are allowed"
                )));
            }
        }
        Ok(())
    }
}

impl StatsRequest {
    /// Checks the window and the symbol, naming the flag (what [`memory_stats`] checks first).
    ///
    /// # Errors
    /// [`MemoryCommandError`] naming `--days` or `--symbol`.
    pub fn check(&self) -> Result<(), MemoryCommandError> {
        if self.days == 0 || self.days > MAX_DAYS {
            return Err(bad(format!(
                "--days {}: 1 to {MAX_DAYS} days are allowed",
                self.days
            )));
        }
        if self.symbol.trim().is_empty() {
            return Err(bad("--symbol is empty"));
        }
        Ok(())
    }
}

/// Stores an annotation written at `now`; returns what `annotate` prints (its id and a newline).
///
/// # Errors
/// [`MemoryCommandError`] naming the flag for a text or tag out of bounds or a target that
/// does not exist, or naming the store's failure.
pub async fn annotate<S: OutcomeStore>(
    store: &S,
    request: AnnotateRequest,
    now: DateTime<Utc>,
) -> Result<String, MemoryCommandError> {
    request.check()?;
    let (flag, id) = match request.target {
        AnnotationTarget::Outcome(id) => ("--outcome", id),
        AnnotationTarget::Trade(id) => ("--trade", id),
    };
    let note = NewAnnotation {
        id: Uuid::new_v4(),
        target: request.target,
        annotation: request.text,
        tags: request.tags,
        created_at: now,
    };
    match store.annotate(&note).await {
        Ok(a) => Ok(format!("{}\n", a.id)),
        Err(DbError::NotFound { entity, .. }) => {
            Err(bad(format!("{flag} {id}: no {entity} has this id")))
        }
        Err(e) => Err(bad(format!("storing the annotation on {flag} {id}: {e}"))),
    }
}

/// Whose memory `mcp-serve` serves: `--deployment` (it must exist), `--user` (they must own a
/// deployment), or, with neither, the store's only deployment (a backtest's store).
///
/// # Errors
/// [`MemoryCommandError`] naming the flag: an unknown deployment, a user without deployments, a
/// store with no deployment, or one with several (their ids listed) and no flag to choose.
pub async fn memory_scope<S: RegistryStore>(
    store: &S,
    deployment: Option<Uuid>,
    user: Option<Uuid>,
) -> Result<MemoryScope, MemoryCommandError> {
    let read = |e: DbError| bad(format!("reading the deployments: {e}"));
    match (deployment, user) {
        (Some(_), Some(_)) => Err(bad("give --deployment or --user, not both")),
        (Some(id), None) => match store.get_deployment(id).await {
            Ok(_) => Ok(MemoryScope::Deployment(id)),
            Err(DbError::NotFound { .. }) => {
                Err(bad(format!("--deployment {id}: no deployment has this id")))
            }
            Err(e) => Err(read(e)),
        },
        (None, Some(user)) => {
            if store.user_deployments(user).await.map_err(read)?.is_empty() {
                Err(bad(format!("--user {user}: this user owns no deployment")))
            } else {
                Ok(MemoryScope::User(user))
            }
        }
        (None, None) => {
            let all = store.list_deployments(None).await.map_err(read)?;
            match all.as_slice() {
                [one] => Ok(MemoryScope::Deployment(one.id)),
                [] => Err(bad("the store holds no deployment")),
                many => Err(bad(format!(
                    "the store holds {} deployments; give --deployment (one of {}) or --user",
                    many.len(),
                    many.iter()
                        .take(10)
                        .map(|d| d.id.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            }
        }
    }
}

/// The point-in-time summary `memory-stats` prints.
#[derive(Debug, Default, PartialEq, Eq)]
struct Stats {
    count: u64,
    scored: u64,
    grades: [u64; 5],
    hit_target: u64,
    hit_stop: u64,
    /// Graded A or B (`outcomes::stats::is_win`'s definition).
    wins: u64,
    /// Average and median pnl % at 1h, 4h and 24h over the scored outcomes with that mark.
    pnl: [Option<(Decimal, Decimal)>; 3],
}

/// The mean and median of `values`, rounded to [`outcomes::PNL_DP`] decimals; `None` when empty.
fn mean_median(mut values: Vec<Decimal>) -> Option<(Decimal, Decimal)> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let n = Decimal::from(values.len());
    let sum: Decimal = values.iter().sum();
    let mid = values.len() / 2;
    let median = if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / Decimal::TWO
    };
    let dp = outcomes::PNL_DP;
    Some(((sum / n).round_dp(dp), median.round_dp(dp)))
}

/// The summary of `rows` (already the window's outcomes) as they stood at `at`.
fn summarise(rows: &[&TradeOutcome], at: DateTime<Utc>) -> Stats {
    let mut s = Stats {
        count: rows.len() as u64,
        ..Stats::default()
    };
    let scored: Vec<_> = rows
        .iter()
        .filter(|o| o.score.scored_at.is_some_and(|t| t <= at))
        .collect();
    s.scored = scored.len() as u64;
    for o in &scored {
        let sc = &o.score;
        if let Some(g) = sc.outcome_grade
            && let Some(i) = GRADES.iter().position(|x| *x == g)
        {
            s.grades[i] += 1;
        }
        s.hit_target += u64::from(sc.hit_target == Some(true));
        s.hit_stop += u64::from(sc.hit_stop == Some(true));
        s.wins += u64::from(matches!(sc.outcome_grade, Some(Grade::A | Grade::B)));
    }
    let marks: [fn(&TradeOutcome) -> Option<Decimal>; 3] = [
        |o| o.score.pnl_percent_1h,
        |o| o.score.pnl_percent_4h,
        |o| o.score.pnl_percent_24h,
    ];
    for (slot, mark) in s.pnl.iter_mut().zip(marks) {
        *slot = mean_median(scored.iter().filter_map(|o| mark(o)).collect());
    }
    s
}

/// The outcomes of `symbol` with a tick in [`from`, `until`), failing rather than
/// summarising a truncated read.
async fn read_window<S: OutcomeStore>(
    store: &S,
    deployment: Option<Uuid>,
    symbol: &str,
    from: DateTime<Utc>,
    until: DateTime<Utc>,
    limit: u32,
) -> Result<Vec<TradeOutcome>, MemoryCommandError> {
    let rows = store
        .symbol_outcomes(deployment, symbol, from, until, limit)
        .await
        .map_err(|e| bad(format!("reading the outcomes of {symbol}: {e}")))?;
    if limit == MAX_ROWS && rows.len() >= MAX_ROWS as usize {
        return Err(bad(format!(
            "--days: the window holds {MAX_ROWS} or more outcomes of {symbol}; memory-stats \
             reads at most {MAX_ROWS}, give fewer days"
        )));
    }
    Ok(rows)
}

/// The earliest and latest times `memory-stats` looks at when it searches for the latest outcome
/// (both render as four-digit years, so SQLite's text times compare in order).
fn all_time() -> (DateTime<Utc>, DateTime<Utc>) {
    let day = |y, m, d| {
        chrono::NaiveDate::from_ymd_opt(y, m, d)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map_or(DateTime::<Utc>::MIN_UTC, |t| t.and_utc())
    };
    (day(1, 1, 1), day(9999, 12, 31))
}

/// The point-in-time summary of a symbol's outcomes over a window (`memory-stats`), as text or
/// JSON: counts, grades, target and stop hits, the win rate (grade A or B), mean and median pnl % at 1h,
/// 4h and 24h.
///
/// # Errors
/// [`MemoryCommandError`] naming the flag for a window outside 1..=3650 days, an empty symbol,
/// an unknown deployment, a symbol without outcomes (and no `at`), a window of more than 1000
/// outcomes, or a store failure.
pub async fn memory_stats<S: OutcomeStore + RegistryStore>(
    store: &S,
    args: &StatsRequest,
) -> Result<String, MemoryCommandError> {
    args.check()?;
    if let Some(id) = args.deployment {
        store.get_deployment(id).await.map_err(|e| match e {
            DbError::NotFound { .. } => {
                bad(format!("--deployment {id}: no deployment has this id"))
            }
            e => bad(format!("reading deployment {id}: {e}")),
        })?;
    }
    let at = match args.at {
        Some(at) => at,
        None => {
            let (first, last) = all_time();
            read_window(store, args.deployment, &args.symbol, first, last, 1)
                .await?
                .first()
                // The window is half-open: its end is just after the latest outcome.
                .map(|o| o.tick_at + Duration::microseconds(1))
                .ok_or_else(|| {
                    bad(format!(
                        "--symbol {}: the store has no outcome of this symbol (give --at \
                         for an empty window)",
                        args.symbol
                    ))
                })?
        }
    };
    let from = outcomes::window_start(at, i64::from(args.days));
    let rows = read_window(store, args.deployment, &args.symbol, from, at, MAX_ROWS).await?;
    let window: Vec<_> = rows.iter().collect();
    let s = summarise(&window, at);
    Ok(if args.json {
        render_json(args, from, at, &s)
    } else {
        render_text(args, from, at, &s)
    })
}

/// The grades, best first (the order of [`Stats::grades`]).
const GRADES: [Grade; 5] = [Grade::A, Grade::B, Grade::C, Grade::D, Grade::F];

const MARK_NAMES: [&str; 3] = ["1h", "4h", "24h"];

fn render_json(args: &StatsRequest, from: DateTime<Utc>, at: DateTime<Utc>, s: &Stats) -> String {
    let grades: serde_json::Map<_, _> = GRADES
        .iter()
        .zip(s.grades)
        .map(|(g, n)| (g.as_str().to_owned(), n.into()))
        .collect();
    let pnl: serde_json::Map<_, _> = MARK_NAMES
        .iter()
        .zip(&s.pnl)
        .map(|(m, v)| {
            let v = v.map_or(serde_json::Value::Null, |(mean, median)| {
                serde_json::json!({"mean": mean.to_string(), "median": median.to_string()})
            });
            ((*m).to_owned(), v)
        })
        .collect();
    let win_rate = (s.scored > 0).then(|| {
        (Decimal::from(s.wins) * Decimal::ONE_HUNDRED / Decimal::from(s.scored))
            .round_dp(2)
            .to_string()
    });
    let v = serde_json::json!({
        "symbol": args.symbol,
        "deployment": args.deployment,
        "from": from,
        "at": at,
        "days": args.days,
        "count": s.count,
        "scored": s.scored,
        "grades": grades,
        "hit_target": s.hit_target,
        "hit_stop": s.hit_stop,
        "wins": s.wins,
        "win_rate_pct": win_rate,
        "pnl_percent": pnl,
    });
    format!("{v:#}\n")
}

fn render_text(args: &StatsRequest, from: DateTime<Utc>, at: DateTime<Utc>, s: &Stats) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} outcomes in [{}, {}) ({} days)",
        args.symbol,
        db::time_text(from),
        db::time_text(at),
        args.days
    );
    let _ = writeln!(
        out,
        "outcomes: {}  scored: {}  unscored: {}",
        s.count,
        s.scored,
        s.count - s.scored
    );
    let grades: Vec<String> = GRADES
        .iter()
        .zip(s.grades)
        .map(|(g, n)| format!("{}={n}", g.as_str()))
        .collect();
    let _ = writeln!(out, "grades: {}", grades.join(" "));
    let _ = writeln!(
        out,
        "hit target: {}  hit stop: {}",
        s.hit_target, s.hit_stop
    );
    let rate = text::percent_of(Decimal::from(s.wins), Decimal::from(s.scored))
        .unwrap_or_else(|| "n/a".to_owned());
    let _ = writeln!(
        out,
        "win rate (grade A or B): {rate} ({} of {})",
        s.wins, s.scored
    );
    for (m, v) in MARK_NAMES.iter().zip(&s.pnl) {
        match v {
            Some((mean, median)) => {
                let mut line = format!("pnl {m}: mean ");
                text::push_signed_fixed(&mut line, *mean, PNL_TEXT_DP);
                line.push_str("%  median ");
                text::push_signed_fixed(&mut line, *median, PNL_TEXT_DP);
                line.push('%');
                let _ = writeln!(out, "{line}");
            }
            None => {
                let _ = writeln!(out, "pnl {m}: n/a");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::mean_median;
    use rust_decimal::Decimal;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn mean_and_median_of_odd_and_even_samples() {
        assert_eq!(mean_median(vec![]), None);
        assert_eq!(
            mean_median(vec![d("3"), d("-1"), d("1")]),
            Some((d("1"), d("1")))
        );
        assert_eq!(
            mean_median(vec![d("4"), d("1"), d("2"), d("-1")]),
            Some((d("1.5"), d("1.5")))
        );
    }
}
