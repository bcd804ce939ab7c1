//! The held-lesson review commands both binaries offer (`sim-worker lessons …` over a run's
//! store, `live-runner lessons …` over PostgreSQL): list a deployment's held bullets, accept or
//! reject one by its short id. The binaries parse their flags and open the store; the checks,
//! the reads, the review and the output are here, once.

use chrono::{DateTime, Utc};
use db::{
    HeldDecision, HeldReview, HeldStatus, NoteScope, NoteStore, RegistryStore, StoredHeldLesson,
};
use uuid::Uuid;

/// Fewest hex digits a short id has.
pub const MIN_SHORT_ID_HEX: usize = 8;

/// Most held bullets `lessons held` prints.
const MAX_LISTED: u32 = 1000;

/// A command's refusal or failure, its message naming the flag or the step (the binaries print
/// it as their error and exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LessonsCommandError(pub String);

fn bad(message: impl std::fmt::Display) -> LessonsCommandError {
    LessonsCommandError(message.to_string())
}

/// `--status`: `pending`, `accepted`, `rejected`, or `all` (`None`).
///
/// # Errors
/// Any other word, named.
pub fn parse_status(text: &str) -> Result<Option<HeldStatus>, LessonsCommandError> {
    match text {
        "all" => Ok(None),
        other => HeldStatus::parse(other).map(Some).ok_or_else(|| {
            bad(format!(
                "--status: {other:?} is not one of pending, accepted, rejected, all"
            ))
        }),
    }
}

/// The reviewer a command records when no one is named: `operator:<login>` (`operator` when
/// the login name is unknown or not usable), as the controls commands name the operator.
#[must_use]
pub fn operator_name(login: Option<&str>) -> String {
    match login.map(str::trim) {
        Some(name)
            if !name.is_empty()
                && name.chars().count() <= 80
                && !name.chars().any(char::is_control) =>
        {
            format!("operator:{name}")
        }
        _ => "operator".to_owned(),
    }
}

/// The short id of a held bullet: the first [`MIN_SHORT_ID_HEX`] hex digits of its uuid.
#[must_use]
pub fn short_id(id: Uuid) -> String {
    id.simple().to_string()[..MIN_SHORT_ID_HEX].to_owned()
}

/// The held bullets of `deployment`'s notes (without one: of the store's only deployment,
/// [`the_deployment`](crate::the_deployment)) with `status` (all when `None`), newest note
/// first: each with its short id, status, note, text and reasons.
///
/// # Errors
/// An unknown deployment, none given while the store holds several or none, or a store
/// failure.
pub async fn list_held<S: NoteStore + RegistryStore>(
    store: &S,
    deployment: Option<Uuid>,
    status: Option<HeldStatus>,
) -> Result<String, LessonsCommandError> {
    let deployment = crate::the_deployment(store, deployment)
        .await
        .map_err(bad)?;
    let rows = store
        .held_lessons(NoteScope::Deployment(deployment.id), status, MAX_LISTED)
        .await
        .map_err(|e| bad(format!("reading the held lessons: {e}")))?;
    let which = status.map_or("held", HeldStatus::as_str);
    if rows.is_empty() {
        return Ok(format!(
            "deployment {}: no {which} lessons\n",
            deployment.id
        ));
    }
    let mut out = format!(
        "deployment {}: {} {which} lessons, newest note first\n",
        deployment.id,
        rows.len()
    );
    for row in &rows {
        out.push('\n');
        out.push_str(&describe(row));
    }
    Ok(out)
}

/// One held bullet as `lessons held` prints it.
fn describe(row: &StoredHeldLesson) -> String {
    let mut out = format!(
        "{} {} note {} #{}",
        short_id(row.id),
        row.status.as_str(),
        row.note_id,
        row.position + 1
    );
    if let (Some(by), Some(at)) = (&row.reviewed_by, row.reviewed_at) {
        out.push_str(&format!(" by {by} at {}", at.to_rfc3339()));
    }
    if let Some(note) = row.resulting_note_id {
        out.push_str(&format!(" → note {note}"));
    }
    out.push('\n');
    for line in row.text.lines() {
        out.push_str(&format!("  {line}\n"));
    }
    for reason in &row.reasons {
        out.push_str(&format!("  held back: {reason}\n"));
    }
    if let Some(why) = &row.review_reason {
        out.push_str("  review: ");
        types::text::push_quoted(&mut out, why);
        out.push('\n');
    }
    out
}

/// Accepts or rejects the held bullet whose id starts with `id` (at least
/// [`MIN_SHORT_ID_HEX`] hex digits), as `by` at `at`, with the reviewer's `reason` when given
/// (the store method the API and the pages call too,
/// [`NoteStore::review_held_lesson`]); says what changed.
///
/// # Errors
/// A short id too short, unknown or ambiguous; a blank reviewer or reason; the store's refusal
/// (the bullet was reviewed already, a newer reflection replaced its note, the lessons would
/// grow over 2000 characters).
pub async fn review<S: NoteStore>(
    store: &S,
    id: &str,
    decision: HeldDecision,
    by: &str,
    reason: Option<&str>,
    at: DateTime<Utc>,
) -> Result<String, LessonsCommandError> {
    let held = resolve(store, id).await?;
    if by.trim().is_empty() {
        return Err(bad("--by: give the reviewer's name"));
    }
    if reason.is_some_and(|r| r.trim().is_empty()) {
        return Err(bad("--reason: give the reason, or leave the flag out"));
    }
    let review = HeldReview {
        decision,
        by: by.to_owned(),
        reason: reason.map(str::to_owned),
        at,
    };
    let row = store
        .review_held_lesson(held.id, &review)
        .await
        .map_err(|e| bad(format!("{}: {e}", short_id(held.id))))?;
    Ok(match row.resulting_note_id {
        Some(note) => format!(
            "held lesson {} accepted by {}: note {note} is in force from {}\n",
            short_id(row.id),
            row.reviewed_by.as_deref().unwrap_or(by),
            at.to_rfc3339()
        ),
        None => format!(
            "held lesson {} {} by {} at {}\n",
            short_id(row.id),
            row.status.as_str(),
            row.reviewed_by.as_deref().unwrap_or(by),
            at.to_rfc3339()
        ),
    })
}

/// The held bullet a short id names.
async fn resolve<S: NoteStore>(
    store: &S,
    id: &str,
) -> Result<StoredHeldLesson, LessonsCommandError> {
    let hex = id.chars().filter(|c| *c != '-').count();
    if hex < MIN_SHORT_ID_HEX || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return Err(bad(format!(
            "{id:?} is not a held lesson id: give at least {MIN_SHORT_ID_HEX} hex digits of it \
             (`lessons held` lists them)"
        )));
    }
    // The store matches the hyphenated form: put the hyphens where a uuid has them.
    let mut prefix = String::with_capacity(36);
    for (i, c) in id.chars().filter(|c| *c != '-').enumerate() {
        if matches!(i, 8 | 12 | 16 | 20) {
            prefix.push('-');
        }
        prefix.push(c);
    }
    let mut found = store
        .held_lessons_by_prefix(&prefix, 2)
        .await
        .map_err(|e| bad(format!("{id}: {e}")))?;
    match found.len() {
        0 => Err(bad(format!("no held lesson has an id starting with {id}"))),
        1 => Ok(found.remove(0)),
        _ => Err(bad(format!(
            "{id} names more than one held lesson ({} and more): give more of its id",
            found
                .iter()
                .map(|h| h.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
