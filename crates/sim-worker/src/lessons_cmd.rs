//! `sim-worker lessons …`: review the bullets a reflection's lesson defences held back, one by
//! one, in any store a run or a live deployment wrote (`tick::lessons_cmd` does the work, as for
//! `live-runner lessons`).

use chrono::{DateTime, Utc};
use clap::{Args, Subcommand};
use db::HeldDecision;
use tick::lessons_cmd;
use types::Uuid;

use crate::Failure;

#[derive(Debug, Subcommand)]
pub(crate) enum LessonsCommand {
    /// List a deployment's held bullets, newest note first: short id, status, note, text and
    /// why each was held back.
    Held(HeldArgs),
    /// Accept a held bullet: a new note — the lessons in force for its window with the bullet
    /// appended — is in force from `--at`, never earlier.
    Accept(ReviewArgs),
    /// Reject a held bullet: it never reaches a prompt. Audited like an acceptance.
    Reject(ReviewArgs),
}

#[derive(Debug, Args)]
pub(crate) struct HeldArgs {
    /// The store: `sqlite://PATH` or `postgres://…`.
    #[arg(long)]
    db: String,
    /// The deployment id (`summary.json` of a run names it); optional when the store holds only
    /// one, as a run's `sim.db` does.
    #[arg(long)]
    deployment: Option<Uuid>,
    /// Which bullets: pending, accepted, rejected or all.
    #[arg(long, default_value = "pending")]
    status: String,
}

#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// The held bullet: at least 8 hex digits of its id (`lessons held` prints them).
    id: String,
    /// The store: `sqlite://PATH` or `postgres://…`.
    #[arg(long)]
    db: String,
    /// Who reviews it (1 to 100 characters), kept with the review.
    #[arg(long)]
    by: String,
    /// Why (1 to 500 characters, one line), kept with the review.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// When the review takes effect (UTC). Default: now.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    at: Option<DateTime<Utc>>,
}

fn bad(message: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {message}"))
}

pub(crate) fn run(command: LessonsCommand) -> Result<String, Failure> {
    crate::block_on(async move {
        match command {
            LessonsCommand::Held(args) => {
                let status = lessons_cmd::parse_status(&args.status).map_err(bad)?;
                let store = crate::notes_cmd::open_store(&args.db).await?;
                lessons_cmd::list_held(&store, args.deployment, status)
                    .await
                    .map_err(bad)
            }
            LessonsCommand::Accept(args) => review(args, HeldDecision::Accept).await,
            LessonsCommand::Reject(args) => review(args, HeldDecision::Reject).await,
        }
    })
}

async fn review(args: ReviewArgs, decision: HeldDecision) -> Result<String, Failure> {
    let store = crate::notes_cmd::open_store(&args.db).await?;
    let at = args.at.unwrap_or_else(Utc::now);
    lessons_cmd::review(
        &store,
        &args.id,
        decision,
        &args.by,
        args.reason.as_deref(),
        at,
    )
    .await
    .map_err(bad)
}
