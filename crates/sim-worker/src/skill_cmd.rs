use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Subcommand;
use prompt_compose::{Lessons, compose_system_prompt};
use skill_schema::{LoadError, load_skill, skill_json_schema};
use std::io::Write as _;

use crate::Failure;

#[derive(Debug, Subcommand)]
pub(crate) enum SkillCommand {
    /// Check a skill file (.json, .yaml/.yml or .toml). Prints a one-line summary and exits 0,
    /// or lists every problem with its path (e.g. `context.memory.recentTradesK: must be at most
    /// 30 (got 31)`) on stderr and exits 2.
    Validate {
        /// The skill file.
        file: PathBuf,
        /// Also estimate a tick's input tokens against the token budget
        /// (`context.tokenBudget`, default 8000): bars of one symbol, `SYMBOL=PATH` (repeat per
        /// symbol). The backtest is replayed offline up to the tick, as `preview` does, and a
        /// tick above the budget is warned about on stderr.
        #[arg(long = "bars", value_name = "SYMBOL=PATH")]
        bars: Vec<String>,
        /// With --bars: the tick to estimate (default: the last).
        #[arg(long, value_name = "TIME", requires = "bars", value_parser = types::cli::parse_time)]
        at: Option<types::DateTime<types::Utc>>,
        /// With --bars: the offline model the replay runs (`builtin/…`, e.g.
        /// `builtin/sma-cross:10:20` or `builtin/replay:…`; default the skill's when it is one).
        /// Validate never calls a paid model.
        #[arg(long, requires = "bars")]
        model: Option<String>,
    },
    /// Print the JSON Schema of skill files on stdout, for editors and CI checks.
    Schema,
    /// Print the exact system prompt the agent receives for this skill: HEADER, LEASH,
    /// STRATEGY, LESSONS (only with --lessons) and FOOTER.
    Prompt {
        /// The skill file.
        file: PathBuf,
        /// A reflection note as JSON ({"text", "trades_considered", "generated_at",
        /// "window_start", "window_end"}) to render as the LESSONS segment.
        #[arg(long, value_name = "FILE")]
        lessons: Option<PathBuf>,
    },
}

/// Runs a `skill` subcommand and returns what goes to stdout.
pub(crate) fn run(cmd: SkillCommand) -> Result<String, Failure> {
    match cmd {
        SkillCommand::Validate {
            file,
            bars,
            at,
            model,
        } => {
            let mut out = validate(&file)?;
            if !bars.is_empty() {
                out.push_str(&estimate_tokens(file, bars, at, model)?);
            }
            Ok(out)
        }
        SkillCommand::Schema => {
            let schema = serde_json::to_string_pretty(&skill_json_schema())
                .context("serializing the schema")?;
            Ok(format!("{schema}\n"))
        }
        SkillCommand::Prompt { file, lessons } => prompt(&file, lessons.as_deref()),
    }
}

pub(crate) fn load(file: &Path) -> Result<skill_schema::LoadedSkill, Failure> {
    load_skill(file).map_err(|e| match e {
        LoadError::Invalid { report } => {
            let n = report.errors.len();
            Failure::bad_input(format!(
                "{}: {n} problem{}\n{report}",
                file.display(),
                if n == 1 { "" } else { "s" }
            ))
        }
        other => Failure::bad_input(format!("error: {other}")),
    })
}

fn warnings_to_stderr(file: &Path, warnings: &[skill_schema::Problem]) {
    for w in warnings {
        let _ = writeln!(std::io::stderr(), "{}: warning: {w}", file.display());
    }
}

fn validate(file: &Path) -> Result<String, Failure> {
    let loaded = load(file)?;
    warnings_to_stderr(file, &loaded.warnings);
    let s = &loaded.skill;
    Ok(format!(
        "ok: {} — \"{}\" v{} ({} mode, {} leash) trades {} on {} bars with {}\n",
        file.display(),
        s.name,
        s.version,
        s.strategy.mode.as_str(),
        s.strategy.leash.as_str(),
        s.context.symbols.join(", "),
        s.context.bars_interval,
        s.model,
    ))
}

/// `validate --bars`: the input tokens of one tick, replayed offline, against the budget.
fn estimate_tokens(
    file: PathBuf,
    bars: Vec<String>,
    at: Option<types::DateTime<types::Utc>>,
    model: Option<String>,
) -> Result<String, Failure> {
    let skill = load(&file)?.skill;
    let model = model.unwrap_or_else(|| skill.model.clone());
    if !model.starts_with("builtin/") {
        return Err(Failure::bad_input(format!(
            "error: --bars replays the skill offline up to the tick, and its model {model} is \
             not offline: give --model builtin/sma-cross:FAST:SLOW (or builtin/replay:…); validate \
             never calls a paid model"
        )));
    }
    let preview = |at: types::DateTime<types::Utc>| crate::preview_cmd::PreviewArgs {
        skill: file.clone(),
        bars: bars.clone(),
        at,
        model: Some(model.clone()),
        from: None,
        equity: crate::run_cmd::DEFAULT_EQUITY.to_owned(),
        fee_bps: crate::run_cmd::DEFAULT_FEE_BPS.to_owned(),
        slippage_bps: crate::run_cmd::DEFAULT_SLIPPAGE_BPS.to_owned(),
        news: None,
        events: None,
        funding: Vec::new(),
        meta: None,
        cassette: None,
        cassette_mode: crate::spend::CassetteMode::Auto,
        blind: false,
    };
    let at = match at {
        Some(at) => at,
        // The last tick the bars allow, as `run` would end.
        None => {
            crate::run_cmd::prepare(&crate::run_cmd::RunArgs::for_bars(
                file.clone(),
                bars.clone(),
                model.clone(),
            ))?
            .report_tick
        }
    };
    let tick = crate::preview_cmd::preview_tick(preview(at))?;
    if let Some(warning) = tick.budget_warning() {
        eprintln!("{}: {warning}", file.display());
    }
    Ok(format!(
        "tokens: the tick at {} takes {} input tokens (o200k) with {model}; budget {} ({}%)\n",
        tick.at,
        tick.input_tokens,
        tick.budget(),
        tick.percent_of_budget()
    ))
}

fn prompt(file: &Path, lessons: Option<&Path>) -> Result<String, Failure> {
    let loaded = load(file)?;
    warnings_to_stderr(file, &loaded.warnings);
    let lessons = lessons.map(read_lessons).transpose()?;
    let text = compose_system_prompt(&loaded.skill, lessons.as_ref())
        .context("composing the system prompt")?;
    Ok(format!("{text}\n"))
}

fn read_lessons(path: &Path) -> Result<Lessons, Failure> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read lessons file {}", path.display()))?;
    let lessons: Lessons = serde_json::from_str(&text).map_err(|e| {
        Failure::bad_input(format!(
            "{}: not a reflection note: {e} (expected JSON with text, trades_considered, generated_at, window_start, window_end)",
            path.display()
        ))
    })?;
    if lessons.text.chars().count() > types::MAX_LESSONS_CHARS {
        return Err(Failure::bad_input(format!(
            "{}: text: must be at most {} characters (got {})",
            path.display(),
            types::MAX_LESSONS_CHARS,
            lessons.text.chars().count()
        )));
    }
    Ok(lessons)
}
