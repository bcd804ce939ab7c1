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
        SkillCommand::Validate { file } => validate(&file),
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
