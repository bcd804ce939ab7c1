//! `sim-worker ticks`: what the model saw at each stored tick of a run (or of any store), as JSON
//! lines or CSV, to stdout or a file. The checks, the reads and the formats are
//! `tick::ticks_cmd`'s, shared with `live-runner ticks`.

use std::io::{BufWriter, ErrorKind};
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use clap::Args;
use tick::ticks_cmd::{self, TicksCommandError, TicksFormat, TicksRequest};
use types::Uuid;

use crate::Failure;

/// `sim-worker ticks`.
#[derive(Debug, Args)]
pub(crate) struct TicksArgs {
    /// The store: `sqlite://PATH` (a run's `sim.db`) or `postgres://…` (it must exist).
    #[arg(long)]
    db: String,
    /// The deployment (`summary.json` of a run names it); optional when the store holds only
    /// one, as a run's `sim.db` does.
    #[arg(long)]
    deployment: Option<Uuid>,
    /// First tick time (UTC), included.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    from: Option<DateTime<Utc>>,
    /// Last tick time (UTC), included.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    to: Option<DateTime<Utc>>,
    /// `jsonl` (one JSON object a tick) or `csv` (a header, then one row a tick; no prompts).
    #[arg(long, value_name = "FORMAT", default_value = "jsonl", value_parser = ticks_cmd::parse_format)]
    format: TicksFormat,
    /// With each tick's system prompt, user message and steps (tool calls with their arguments
    /// and results); JSON lines only.
    #[arg(long)]
    prompts: bool,
    /// At most N ticks, the first of the window.
    #[arg(long, value_name = "N")]
    limit: Option<u32>,
    /// Write to FILE instead of stdout (and print how many ticks were written).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

fn bad(message: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {message}"))
}

/// Exits 1: the store failed while the ticks were being written.
fn failed(message: impl std::fmt::Display) -> Failure {
    Failure {
        message: format!("error: {message}\n"),
        code: 1,
        stdout: String::new(),
    }
}

/// Exports the ticks: bad input (flags, an unknown or missing deployment) exits 2 before
/// anything is written; a reader closing stdout early ends the export without an error.
pub(crate) fn run(args: TicksArgs) -> Result<String, Failure> {
    let request = TicksRequest {
        deployment: args.deployment,
        from: args.from,
        to: args.to,
        format: args.format,
        prompts: args.prompts,
        limit: args.limit,
    };
    request.check().map_err(bad)?;
    crate::block_on(async move {
        let store = crate::notes_cmd::open_store(&args.db).await?;
        let d = ticks_cmd::resolve_deployment(&store, &request)
            .await
            .map_err(|e| match e {
                TicksCommandError::Input(m) => bad(m),
                other => failed(other),
            })?;
        let Some(path) = args.out else {
            let out = BufWriter::new(std::io::stdout().lock());
            return match ticks_cmd::write_ticks(&store, d.id, &request, out).await {
                Ok(_) => Ok(String::new()),
                Err(TicksCommandError::Output(e)) if e.kind() == ErrorKind::BrokenPipe => {
                    Ok(String::new())
                }
                Err(TicksCommandError::Output(e)) => Err(Failure {
                    message: format!("error: writing the ticks to stdout: {e}\n"),
                    code: crate::EXIT_OUTPUT_FAILED,
                    stdout: String::new(),
                }),
                Err(e) => Err(failed(e)),
            };
        };
        let file = std::fs::File::create(&path)
            .map_err(|e| bad(format!("--out {}: {e}", path.display())))?;
        match ticks_cmd::write_ticks(&store, d.id, &request, BufWriter::new(file)).await {
            Ok(n) => Ok(format!(
                "{n} ticks of deployment {} written to {}\n",
                d.id,
                path.display()
            )),
            Err(e) => {
                // No partial export is left behind.
                let _ = std::fs::remove_file(&path);
                Err(match e {
                    TicksCommandError::Output(e) => Failure {
                        message: format!("error: --out {}: {e}\n", path.display()),
                        code: crate::EXIT_OUTPUT_FAILED,
                        stdout: String::new(),
                    },
                    other => failed(other),
                })
            }
        }
    })
}
