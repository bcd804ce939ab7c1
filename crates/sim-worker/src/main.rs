//! `sim-worker`: the strategy author's command line. Thin: parsing arguments and printing;
//! the work happens in the library crates.

mod ab_cmd;
mod ab_windows;
mod arena_cmd;
mod arena_entrants;
mod arena_html;
mod arena_jobs;
mod arena_report;
mod arena_runs;
mod arena_stats;
mod bootstrap;
mod job_run;
mod job_spec;
mod jobs_cmd;
mod ledger_cmd;
mod lessons_cmd;
mod memory_cmd;
mod notes_cmd;
mod placement;
mod preview_cmd;
mod report;
mod run_cmd;
mod score_cmd;
mod skill_cmd;
mod spend;
mod ticks_cmd;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: a backtest tick is mostly small allocations, ≈11% fewer instructions than
/// glibc's allocator. With its `override` feature (the workspace's) the bundled SQLite's
/// `malloc`/`free` are mimalloc's as well.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Backtest trading-agent skills and inspect exactly what the agent sees.
#[derive(Debug, Parser)]
#[command(name = "sim-worker", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Backtest a skill: one tick per closed bar of its interval through the same tick code a
    /// live deployment runs (model, execution engine, paper broker, ledger, reflection), with
    /// everything recorded in a store; writes summary.json, trades.csv and report.html.
    ///
    /// Exit codes: 0 done; 2 bad input (nothing on stdout); 3 more than 50% of the ticks failed
    /// on the model (provider errors, garbage answers, a deadline; every output is written, the
    /// result printed, and `verdicts.model_error` in summary.json counts them); 4 `--max-cost`
    /// stopped the run (the ticks run are stored, every output written with `stopped` in
    /// summary.json, the result printed); 5 `--cassette-mode replay` met a request the cassette
    /// does not hold (stderr names its fingerprint and the first difference from the nearest
    /// recording; no summary); 74 the result could not be written to stdout.
    Run(Box<run_cmd::RunArgs>),
    /// Show the exact system prompt and user message of one tick with token counts per segment
    /// and section (o200k_base, offline), replaying the backtest up to that tick.
    Preview(Box<preview_cmd::PreviewArgs>),
    /// Two backtests over the same bars and costs, A as given and B with another skill, model or
    /// the memory layer off; prints their summaries side by side and writes OUT/ab.json.
    Ab(Box<ab_cmd::AbArgs>),
    /// Compare many entrants — skills × models, and variants of a skill's fields — over the
    /// same walk-forward windows, beside buy-and-hold, flat cash and the skill's rules: each
    /// metric with a bootstrap interval over the windows (repeated runs nested), the paired
    /// difference from a reference entrant and the probability of beating it, split by the
    /// market regime of each window. Writes OUT/arena.json and OUT/arena.html.
    ///
    /// Exit codes: 0 done; 2 bad input (nothing on stdout); 4 `--max-cost` stopped the arena
    /// (the completed runs are kept, no arena.json); 5 a cassette in replay mode missed a
    /// request.
    Arena(Box<arena_cmd::ArenaArgs>),
    /// Run a reflection on a deployment's closed trades now and store the note (it becomes the
    /// active note; one the avoid-linter flags waits for review instead). Prints the note.
    Reflect(notes_cmd::ReflectArgs),
    /// List a deployment's reflection notes, newest first, with status, window and sample size.
    Notes(notes_cmd::Target),
    /// Accept a reflection note the avoid-linter flagged: it becomes the deployment's active note
    /// from the given time and is injected from then on.
    AcceptNote(notes_cmd::AcceptArgs),
    /// Promote a deployment's reflection note to its skill version: the skill's other
    /// deployments without a note of their own see it from the given time (ADR-0017).
    PromoteNote(notes_cmd::PromoteArgs),
    /// Review the bullets a reflection's lesson defences held back, one by one: list them,
    /// accept one (a new note with it is in force from then on) or reject it.
    #[command(subcommand)]
    Lessons(lessons_cmd::LessonsCommand),
    /// Work with skill files: validate them, export their JSON Schema, render their prompt.
    #[command(subcommand)]
    Skill(skill_cmd::SkillCommand),
    /// Work with the closed-trade ledger: build it from a fills file, or rebuild a deployment's
    /// ledger from its stored fills and compare.
    #[command(subcommand)]
    Ledger(ledger_cmd::LedgerCommand),
    /// Attach a note (and tags) to an outcome or a ledger row of an existing store; prints the
    /// annotation's id.
    Annotate(memory_cmd::AnnotateArgs),
    /// Summarise a symbol's outcomes over a window as they stood at its end: counts, grades,
    /// target and stop hits, the win rate (grade A or B), mean and median pnl % at 1h, 4h and 24h.
    MemoryStats(memory_cmd::StatsArgs),
    /// Score a store's due outcomes from bar files as of a time (default: the last bar's
    /// close), through the live scorer's path; prints how many rows changed, were graded, were
    /// skipped.
    ScoreOutcomes(score_cmd::ScoreArgs),
    /// Serve a store's outcome memory over MCP on stdin/stdout (for Claude Code or any MCP
    /// client): the six recall tools and `annotate`.
    McpServe(memory_cmd::McpServeArgs),
    /// Export a deployment's stored ticks, oldest first, as JSON lines (with `--prompts`: the
    /// system prompt, user message and steps each tick's model saw) or CSV: outcome, rule code,
    /// proposal, verdict, tokens and cost. Bad input exits 2 with nothing on stdout.
    Ticks(Box<ticks_cmd::TicksArgs>),
    /// Queue a backtest as a job on PostgreSQL (`--db`): the run as `run` takes it, its bar
    /// files stored once by content hash; a worker (`sim-worker work`) runs it. Prints the
    /// job's id. Refused past the user's limits (`--max-open-jobs`, `--cost-cap`).
    Submit(Box<jobs_cmd::SubmitArgs>),
    /// Run queued backtest jobs: lease them (`FOR UPDATE SKIP LOCKED`), run each as `run`
    /// does into the database, heartbeat while running, take over a job whose worker died.
    /// SIGTERM gives the running jobs back and exits 0.
    Work(Box<jobs_cmd::WorkArgs>),
    /// Show backtest jobs: status, progress (ticks done / total), cost so far, result.
    Jobs(Box<jobs_cmd::JobsArgs>),
}

/// Bad input (an invalid skill, an unreadable file): exit 2 with every problem on stderr and
/// nothing on stdout — the code `live-runner` exits with for bad input too.
pub(crate) const EXIT_BAD_INPUT: u8 = types::EXIT_BAD_INPUT;

/// `run`: more than [`MODEL_ERROR_MAX_PCT`] % of the ticks failed on the model (provider
/// errors, garbage answers, the tick's deadline). Every output was written and the result is on
/// stdout; stderr says how many ticks failed.
pub(crate) const EXIT_MODEL_FAILED: u8 = 3;

/// `run`: `--max-cost` stopped the run between two ticks. The ticks run are stored, every
/// output is written (summary.json says `stopped`) and the result is on stdout.
pub(crate) const EXIT_COST_CAP: u8 = 4;

/// `run`, `preview`, `ab`: in `--cassette-mode replay`, a model request the cassette does not
/// hold. stderr names its fingerprint and the first difference from the nearest recorded
/// request; nothing was sent and no summary was written.
pub(crate) const EXIT_CASSETTE_MISS: u8 = 5;

/// The share of ticks (in %) that may fail on the model before `run` exits
/// [`EXIT_MODEL_FAILED`]: more than half is a run that measured the provider, not the skill.
pub(crate) const MODEL_ERROR_MAX_PCT: u64 = 50;

/// The command's result could not be written to stdout (a full disk, a device error). A reader
/// that closed the pipe early (`sim-worker … | head`) is not an error: the command did its work.
pub(crate) const EXIT_OUTPUT_FAILED: u8 = 74;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run_cmd::run(*args),
        Command::Preview(args) => preview_cmd::run(*args),
        Command::Ab(args) => ab_cmd::run(*args),
        Command::Arena(args) => arena_cmd::run(*args),
        Command::Reflect(args) => notes_cmd::reflect_now(args),
        Command::Notes(target) => notes_cmd::list(target),
        Command::AcceptNote(args) => notes_cmd::accept(args),
        Command::PromoteNote(args) => notes_cmd::promote(args),
        Command::Lessons(cmd) => lessons_cmd::run(cmd),
        Command::Skill(cmd) => skill_cmd::run(cmd),
        Command::Ledger(cmd) => ledger_cmd::run(cmd),
        Command::Annotate(args) => memory_cmd::annotate(args),
        Command::MemoryStats(args) => memory_cmd::stats(args),
        Command::ScoreOutcomes(args) => score_cmd::score(args),
        Command::McpServe(args) => memory_cmd::mcp_serve(args),
        Command::Ticks(args) => ticks_cmd::run(*args),
        Command::Submit(args) => jobs_cmd::submit(*args),
        Command::Work(args) => jobs_cmd::work(*args),
        Command::Jobs(args) => jobs_cmd::jobs(*args),
    };
    match result {
        Ok(stdout) => match write_stdout(&stdout) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
            Err(e) => {
                // Best effort: stderr may be gone too, and that is no reason to panic.
                let _ = writeln!(
                    std::io::stderr(),
                    "error: writing the result to stdout: {e}"
                );
                ExitCode::from(EXIT_OUTPUT_FAILED)
            }
        },
        Err(failure) => {
            // A failure after the work was done (exit 3) still prints the result.
            if !failure.stdout.is_empty() {
                let _ = write_stdout(&failure.stdout);
            }
            let _ = std::io::stderr().write_all(failure.message.as_bytes());
            ExitCode::from(failure.code)
        }
    }
}

/// Writes `text` to stdout and flushes it (`print!` panics when stdout is closed or full).
fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Runs an async command on the calling thread, with one worker thread beside it: a
/// backtest's store batches are written there while this thread ticks
/// (`backtest::write_behind`), and the runtime's I/O and timers are driven there.
pub(crate) fn block_on<T>(
    fut: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    block_on_placed(None, fut)
}

/// [`block_on`], with the runtime's threads — the worker, blocking threads, and the threads
/// they start, such as sqlx's SQLite thread — pinned to `placement`'s store CPU as they start
/// ([`placement`]).
pub(crate) fn block_on_placed<T>(
    placement: Option<placement::Placement>,
    fut: impl std::future::Future<Output = Result<T, Failure>>,
) -> Result<T, Failure> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(placement) = placement {
        builder.on_thread_start(move || placement.pin_store_thread());
    }
    builder
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| Failure::bad_input(format!("error: cannot start the async runtime: {e}")))?
        .block_on(fut)
}

/// A command's failure: what to print on stderr and the exit code.
#[derive(Debug)]
pub(crate) struct Failure {
    pub message: String,
    pub code: u8,
    /// What to print on stdout before the message (empty for bad input: nothing on stdout).
    pub stdout: String,
}

impl Failure {
    pub(crate) fn bad_input(message: impl Into<String>) -> Self {
        let mut message = message.into();
        if !message.ends_with('\n') {
            message.push('\n');
        }
        Self {
            message,
            code: EXIT_BAD_INPUT,
            stdout: String::new(),
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Self::bad_input(format!("error: {e:#}"))
    }
}
