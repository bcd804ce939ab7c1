//! `sim-worker reflect` and `sim-worker notes`: reflection on demand and the note history of a
//! deployment, over any store a run or a live deployment wrote.

use std::sync::Arc;

use agent_runtime::{ModelError, builtin_model, rates_for};
use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Args;
use db::{LedgerStore, NoteScope, NoteStore, RegistryStore, Store};
use reflection::{LastNote, ReflectionInput, reflect, resolve_reflection_model};
use skill_schema::{Format, Skill, parse_skill};
use tick::{ReflectionReport, TickDeployment, store_reflection};
use types::Uuid;

use crate::Failure;

/// Where the deployment lives.
#[derive(Debug, Args)]
pub(crate) struct Target {
    /// The store: `sqlite://PATH` or `postgres://…`.
    #[arg(long)]
    db: String,
    /// The deployment id (`summary.json` of a run names it); optional when the store holds only
    /// one, as a run's `sim.db` does.
    #[arg(long)]
    deployment: Option<Uuid>,
}

#[derive(Debug, Args)]
pub(crate) struct ReflectArgs {
    #[command(flatten)]
    target: Target,
    /// The reflection model; default the skill's `context.memory.reflection.model`.
    #[arg(long)]
    model: Option<String>,
    /// The reflection's time (UTC): trades closed after the last note and up to this
    /// instant are considered. Default: now.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    at: Option<DateTime<Utc>>,
}

fn bad(message: impl std::fmt::Display) -> Failure {
    Failure::bad_input(format!("error: {message}"))
}

async fn open(target: &Target) -> Result<(Store, db::Deployment, Skill), Failure> {
    let store = open_store(&target.db).await?;
    let deployment = tick::the_deployment(&store, target.deployment)
        .await
        .map_err(bad)?;
    let version = store
        .get_skill_version(deployment.skill_id, deployment.skill_version)
        .await
        .map_err(bad)?;
    let skill = parse_skill(&version.body.to_string(), Format::Json)
        .map_err(|e| bad(format!("the stored skill version does not validate: {e}")))?
        .skill;
    Ok((store, deployment, skill))
}

/// Runs a reflection now, stores the note (a flagged one as pending review) or the failure, and
/// prints the note.
pub(crate) fn reflect_now(args: ReflectArgs) -> Result<String, Failure> {
    crate::block_on(async move {
        let (store, deployment, skill) = open(&args.target).await?;
        let now = args.at.unwrap_or_else(Utc::now);
        let model_id = args
            .model
            .clone()
            .unwrap_or_else(|| skill.context.memory.reflection.model.clone());
        let builtins = |id: &str| {
            builtin_model(id, &skill).ok_or_else(|| ModelError::UnknownModel(id.to_owned()))
        };
        let reflector = resolve_reflection_model(&model_id, |id| {
            providers::resolve_model(id, &providers::process_env, &builtins)
        })
        .map_err(|e| bad(format!("--model {model_id}: {e}")))?;
        let scope = NoteScope::Deployment(deployment.id);
        let trades = store
            .all_trades(deployment.id)
            .await
            .context("reading the ledger")?;
        let last = store
            .note_history(scope, 1)
            .await
            .context("reading the note history")?
            .into_iter()
            .next()
            .map(|n| LastNote {
                generated_at: n.generated_at,
                window_end: n.content.window_end,
                closed_trades_total: None,
            });
        if let Some(last) = &last
            && now <= last.generated_at
        {
            return Err(bad(format!(
                "--at {now} is not after the latest note ({}); a reflection cannot precede it",
                last.generated_at
            )));
        }
        let outcome = reflect(
            ReflectionInput {
                skill: &skill,
                skill_id: deployment.skill_id,
                deployment_id: Some(deployment.id),
                trades: &trades,
                last: last.as_ref(),
                now,
                rates: rates_for(reflector.id()),
            },
            &reflector,
        )
        .await;
        let tick_deployment = TickDeployment::for_row(&deployment, Arc::new(skill), Ok(reflector));
        match store_reflection(&store, &tick_deployment, &outcome, now).await {
            ReflectionReport::Note { flagged, .. } => {
                let note = outcome.note().context("a stored note has its draft")?;
                let status = if flagged {
                    format!(
                        "pending review — flagged by the linter: {}",
                        note.lint.reasons.join("; ")
                    )
                } else {
                    "active".to_owned()
                };
                Ok(format!(
                    "note {} ({status})\nmodel {}, {} closed trades from {} to {}\n\n{}\n",
                    tick::note_id(deployment.id, now),
                    note.content.model_used,
                    note.content.trades_considered,
                    note.content.window_start.to_rfc3339(),
                    note.content.window_end.to_rfc3339(),
                    note.content.lessons_text
                ))
            }
            ReflectionReport::Failed { reason } => Err(Failure {
                message: format!("reflection failed, the note in force is unchanged: {reason}\n"),
                code: 1,
                stdout: String::new(),
            }),
            ReflectionReport::StoreError { message } => Err(bad(message)),
            ReflectionReport::NotDue | ReflectionReport::AlreadyDone => {
                Err(bad("nothing to reflect on"))
            }
        }
    })
}

/// The note history of a deployment, newest first.
pub(crate) fn list(target: Target) -> Result<String, Failure> {
    crate::block_on(async move {
        let (store, deployment, _) = open(&target).await?;
        let notes = store
            .note_history(NoteScope::Deployment(deployment.id), 1000)
            .await
            .context("reading the note history")?;
        if notes.is_empty() {
            return Ok(format!(
                "deployment {}: no reflection notes yet\n",
                deployment.id
            ));
        }
        let mut out = format!(
            "deployment {}: {} notes, newest first\n",
            deployment.id,
            notes.len()
        );
        for n in &notes {
            out.push_str(&format!(
                "\n{} {} generated {} — {} trades, window {} → {}, model {}{}\n",
                n.id,
                n.status.as_str(),
                n.generated_at.to_rfc3339(),
                n.content.trades_considered,
                n.content.window_start.to_rfc3339(),
                n.content.window_end.to_rfc3339(),
                n.content.model_used,
                n.lint
                    .as_ref()
                    .map(|l| format!(", flagged: {}", l.reason))
                    .unwrap_or_default(),
            ));
            for line in n.content.lessons_text.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        Ok(out)
    })
}

/// The existing store at `url` (never created).
pub(crate) async fn open_store(url: &str) -> Result<Store, Failure> {
    db::open_existing(url)
        .await
        .map_err(|e| bad(format!("cannot open {}: {e}", db::redact_url(url))))
}

#[derive(Debug, Args)]
pub(crate) struct AcceptArgs {
    /// The store: `sqlite://PATH` or `postgres://…`.
    #[arg(long)]
    db: String,
    /// The id of a note waiting for review (`sim-worker notes` lists them as `pending_review`).
    #[arg(long)]
    note: Uuid,
    /// Who accepts it (1 to 100 characters), kept with the note. Default: `operator:$USER`.
    #[arg(long)]
    by: Option<String>,
    /// When the acceptance takes effect (UTC); the note is in force from then on, never
    /// earlier. Default: now.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    at: Option<DateTime<Utc>>,
}

/// A person accepts a note the avoid-linter flagged: it becomes the active note from `--at`,
/// audited with who accepted it; its held bullets still waiting are accepted with it.
pub(crate) fn accept(args: AcceptArgs) -> Result<String, Failure> {
    crate::block_on(async move {
        let by = match args.by {
            Some(by) => by,
            None => tick::lessons_cmd::operator_name(types::process_env("USER").as_deref()),
        };
        let store = open_store(&args.db).await?;
        let at = args.at.unwrap_or_else(Utc::now);
        let note = store.accept_note(args.note, &by, at).await.map_err(bad)?;
        Ok(format!(
            "note {} accepted by {}: active from {}, superseding the note in force\n",
            note.id,
            note.accepted_by.as_deref().unwrap_or(&by),
            at.to_rfc3339()
        ))
    })
}

#[derive(Debug, Args)]
pub(crate) struct PromoteArgs {
    /// The store: `sqlite://PATH` or `postgres://…`.
    #[arg(long)]
    db: String,
    /// The id of a deployment's note (active or superseded; one pending review is accepted
    /// first, with `accept-note`).
    #[arg(long)]
    note: Uuid,
    /// When the promotion takes effect (UTC): the skill's other deployments see the note
    /// from then on, never earlier. Default: now.
    #[arg(long, value_name = "TIME", value_parser = types::cli::parse_time)]
    at: Option<DateTime<Utc>>,
}

/// A person promotes a deployment's note to its skill version (ADR-0017): the skill's other
/// deployments without a note of their own see it from `--at`.
pub(crate) fn promote(args: PromoteArgs) -> Result<String, Failure> {
    crate::block_on(async move {
        let store = open_store(&args.db).await?;
        let at = args.at.unwrap_or_else(Utc::now);
        let copy = tick::promote_note(&store, args.note, at)
            .await
            .map_err(|e| bad(format!("--note {}: {e}", args.note)))?;
        Ok(tick::promoted_note_line(args.note, &copy))
    })
}
