//! Pending actions (`pending_actions`): a write the chat coach proposes — pause, resume or stop a
//! deployment, save a new version of a skill — kept until its owner confirms it, discards it, or
//! it expires. The coach never changes a deployment or a skill itself: it stores what it would
//! do ([`NewPendingAction`]) and the owner's confirmation applies it
//! ([`ActionStore::confirm_action`](crate::ActionStore::confirm_action)), in one transaction with
//! the change and its own audit (a control's `deployment_controls` row; the new skill version),
//! as that user (row-level security on PostgreSQL).
//!
//! A row is `pending` until decided; each decision is final (a trigger refuses any change of a
//! decided row on both databases): `confirmed` (with its [`ActionResult`]), `discarded`,
//! `expired` (its expiry passed before a decision; a pending row past its expiry is expired
//! for every read and decision even before [`expire_actions`](crate::ActionStore::expire_actions)
//! marks it), or `failed` (confirmed, but the change was refused by its own rules — a
//! deployment no longer in a status that allows it, a skill not the user's —, with the error).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::{ControlAction, DeploymentStatus};

/// Largest arguments of an action, as compact JSON, in bytes.
pub const MAX_ACTION_ARGUMENTS_BYTES: usize = 64 * 1024;
/// Longest summary of an action, in characters.
pub const MAX_ACTION_SUMMARY_CHARS: usize = 500;
/// Longest error text kept from a failed confirmation, in characters (longer ones are cut).
pub const MAX_ACTION_ERROR_CHARS: usize = 1000;
/// Most actions one read returns.
pub const MAX_ACTIONS_READ: u32 = 1000;

/// What an action does once confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// Pause the deployment (`active → paused`).
    PauseDeployment,
    /// Resume the deployment (`paused → active`).
    ResumeDeployment,
    /// Stop the deployment for good; the arguments' `flatten: true` also closes its positions.
    StopDeployment,
    /// Save the arguments' `skill` (a whole skill document) as the skill's next version.
    SaveSkillVersion,
}

impl ActionKind {
    /// Every kind.
    pub const ALL: [ActionKind; 4] = [
        ActionKind::PauseDeployment,
        ActionKind::ResumeDeployment,
        ActionKind::StopDeployment,
        ActionKind::SaveSkillVersion,
    ];

    /// The stored (snake_case) text.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionKind::PauseDeployment => "pause_deployment",
            ActionKind::ResumeDeployment => "resume_deployment",
            ActionKind::StopDeployment => "stop_deployment",
            ActionKind::SaveSkillVersion => "save_skill_version",
        }
    }

    /// The kind whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The control a deployment action applies; `None` for a skill version.
    #[must_use]
    pub const fn control(self) -> Option<ControlAction> {
        match self {
            ActionKind::PauseDeployment => Some(ControlAction::Pause),
            ActionKind::ResumeDeployment => Some(ControlAction::Resume),
            ActionKind::StopDeployment => Some(ControlAction::Stop),
            ActionKind::SaveSkillVersion => None,
        }
    }
}

/// Where an action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Waiting for its owner until it expires.
    Pending,
    /// Confirmed and applied.
    Confirmed,
    /// Discarded by its owner.
    Discarded,
    /// Not decided before its expiry.
    Expired,
    /// Confirmed, but the change was refused (the error says why); nothing changed.
    Failed,
}

impl ActionStatus {
    /// Every status.
    pub const ALL: [ActionStatus; 5] = [
        ActionStatus::Pending,
        ActionStatus::Confirmed,
        ActionStatus::Discarded,
        ActionStatus::Expired,
        ActionStatus::Failed,
    ];

    /// The stored (snake_case) text.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Pending => "pending",
            ActionStatus::Confirmed => "confirmed",
            ActionStatus::Discarded => "discarded",
            ActionStatus::Expired => "expired",
            ActionStatus::Failed => "failed",
        }
    }

    /// The status whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// An action to keep for its owner's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct NewPendingAction {
    /// Its id (the chat turn derives it from the turn and the call).
    pub id: Uuid,
    /// Its owner: the only user who may see, confirm or discard it.
    pub user_id: Uuid,
    /// The kept conversation whose turn prepared it, if any.
    pub conversation_id: Option<Uuid>,
    /// What it does.
    pub kind: ActionKind,
    /// The deployment a pause, resume or stop acts on (none for a skill version).
    pub deployment_id: Option<Uuid>,
    /// The skill a new version is saved for (none for a deployment action).
    pub skill_id: Option<Uuid>,
    /// A JSON object: for a deployment action `{"flatten"?: bool (stop only), "reason"?:
    /// string}`, for a skill version `{"skill": {…the whole skill document…}, "reason"?:
    /// string}`. At most [`MAX_ACTION_ARGUMENTS_BYTES`] of compact JSON.
    pub arguments: serde_json::Value,
    /// What it does, for a person, on one line (1..=[`MAX_ACTION_SUMMARY_CHARS`] characters).
    pub summary: String,
    /// When it was prepared (UTC).
    pub created_at: DateTime<Utc>,
    /// When it expires unless decided (after `created_at`).
    pub expires_at: DateTime<Utc>,
}

/// What a confirmed action did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActionResult {
    /// A deployment's status changed: its audit row in `deployment_controls`.
    Control {
        /// The audit row's id.
        control_id: Uuid,
        /// The status before.
        from_status: DeploymentStatus,
        /// The status after.
        to_status: DeploymentStatus,
    },
    /// A skill version was saved.
    SkillVersion {
        /// The skill.
        skill_id: Uuid,
        /// The version number it was given (the skill's next at confirmation).
        version: i32,
    },
}

/// A kept action (`pending_actions`).
#[derive(Debug, Clone, PartialEq)]
pub struct PendingAction {
    /// Its id.
    pub id: Uuid,
    /// Its owner.
    pub user_id: Uuid,
    /// The kept conversation whose turn prepared it (`None` too once that conversation is
    /// deleted).
    pub conversation_id: Option<Uuid>,
    /// What it does.
    pub kind: ActionKind,
    /// The deployment a deployment action acts on.
    pub deployment_id: Option<Uuid>,
    /// The skill a skill version is saved for.
    pub skill_id: Option<Uuid>,
    /// Its arguments (see [`NewPendingAction::arguments`]).
    pub arguments: serde_json::Value,
    /// What it does, for a person.
    pub summary: String,
    /// When it was prepared.
    pub created_at: DateTime<Utc>,
    /// When it expires unless decided.
    pub expires_at: DateTime<Utc>,
    /// Where it stands as stored (see [`status_at`](Self::status_at) for a pending row past its
    /// expiry).
    pub status: ActionStatus,
    /// When it was decided (for an expired one: its expiry); `None` while pending.
    pub decided_at: Option<DateTime<Utc>>,
    /// Who decided it (the owner's id as text); `None` while pending or once expired.
    pub decided_by: Option<String>,
    /// What the confirmation did; `Some` only once confirmed.
    pub result: Option<ActionResult>,
    /// Why the confirmation failed; `Some` only once failed.
    pub error: Option<String>,
}

impl PendingAction {
    /// Its status at `now`: a pending row whose expiry is at or before `now` is expired, even
    /// before [`ActionStore::expire_actions`](crate::ActionStore::expire_actions) marked it.
    #[must_use]
    pub fn status_at(&self, now: DateTime<Utc>) -> ActionStatus {
        if self.status == ActionStatus::Pending && self.expires_at <= now {
            ActionStatus::Expired
        } else {
            self.status
        }
    }

    /// The flatten a stop asks for (`arguments.flatten`).
    #[must_use]
    pub fn flatten(&self) -> bool {
        self.arguments
            .get("flatten")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false)
    }

    /// The reason given with it (`arguments.reason`), if any.
    #[must_use]
    pub fn reason(&self) -> Option<&str> {
        self.arguments
            .get("reason")
            .and_then(serde_json::Value::as_str)
    }
}
