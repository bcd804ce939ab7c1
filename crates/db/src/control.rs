//! Controls: a person pauses, resumes or stops a deployment (a stop optionally closing its open
//! positions, "flattening" them, through its broker); every change is audited
//! (`deployment_controls`: who, why, when, the status before and after), written in the
//! transaction that changes the status ([`ControlStore`](crate::ControlStore)).
//!
//! The transitions: pause `active → paused`; resume `paused → active`; stop `active | paused →
//! stopped`, and a stop with flatten also on a stopped deployment whose flatten was never
//! requested (positions left open by a stop without it). A stopped deployment is final. Any
//! other request is [`DbError::Transition`](crate::DbError::Transition), naming the status the
//! deployment is in.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::DeploymentStatus;

/// Longest `requested_by` (a user id, or an operator's name), in characters.
pub const MAX_REQUESTED_BY_CHARS: usize = 100;
/// Longest reason given with a control, in characters.
pub const MAX_CONTROL_REASON_CHARS: usize = 500;
/// Longest error text kept from a failed flatten attempt, in characters (longer ones are cut).
pub const MAX_FLATTEN_ERROR_CHARS: usize = 1000;
/// Most audit rows one [`ControlStore::deployment_controls`](crate::ControlStore::deployment_controls)
/// read returns.
pub const MAX_CONTROLS_READ: u32 = 1000;

/// What a control asks of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// `active → paused`: no tick until resumed; state, ledger and schedule are kept.
    Pause,
    /// `paused → active`: ticks again from where it was.
    Resume,
    /// `active | paused → stopped`, for good; optionally flattening its positions.
    Stop,
}

impl ControlAction {
    /// Every action.
    pub const ALL: [ControlAction; 3] = [
        ControlAction::Pause,
        ControlAction::Resume,
        ControlAction::Stop,
    ];

    /// The stored text: `"pause"`, `"resume"` or `"stop"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            ControlAction::Pause => "pause",
            ControlAction::Resume => "resume",
            ControlAction::Stop => "stop",
        }
    }

    /// The action whose [`as_str`](Self::as_str) is `s`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == s)
    }

    /// The status the action leaves a deployment in.
    #[must_use]
    pub const fn to_status(self) -> DeploymentStatus {
        match self {
            ControlAction::Pause => DeploymentStatus::Paused,
            ControlAction::Resume => DeploymentStatus::Active,
            ControlAction::Stop => DeploymentStatus::Stopped,
        }
    }

    /// The statuses the action may start from, in the order the store tries them (a stop of a
    /// stopped deployment is only allowed with a flatten, see the module docs).
    #[must_use]
    pub const fn from_statuses(self) -> &'static [DeploymentStatus] {
        match self {
            ControlAction::Pause => &[DeploymentStatus::Active],
            ControlAction::Resume => &[DeploymentStatus::Paused],
            ControlAction::Stop => &[
                DeploymentStatus::Active,
                DeploymentStatus::Paused,
                DeploymentStatus::Stopped,
            ],
        }
    }
}

/// A person's (or an operator's) request to pause, resume or stop a deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlRequest {
    /// The audit row's id (the caller's choice, e.g. a random UUID; a repeated id is refused).
    pub id: Uuid,
    /// The deployment.
    pub deployment_id: Uuid,
    /// What to do.
    pub action: ControlAction,
    /// For a stop: close every open position through the broker (a runner does it before the
    /// deployment's next tick time; see [`LeaseStore::claim_flattens`](crate::LeaseStore::claim_flattens)).
    /// Refused with any other action.
    pub flatten: bool,
    /// Who asks: the user's id as text, or an operator's name (1..=100 characters). On
    /// PostgreSQL as a user (row-level security) it must be that user's id.
    pub requested_by: String,
    /// Why, when given (1..=500 characters, no control characters).
    pub reason: Option<String>,
    /// When the request takes effect (UTC).
    pub at: DateTime<Utc>,
}

/// One audited change of a deployment's status (`deployment_controls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentControl {
    /// The row's id.
    pub id: Uuid,
    /// The deployment.
    pub deployment_id: Uuid,
    /// What was asked.
    pub action: ControlAction,
    /// Whether the stop asked for the positions to be closed.
    pub flatten: bool,
    /// Who asked (a user id, or an operator's name).
    pub requested_by: String,
    /// Why, when given.
    pub reason: Option<String>,
    /// When (UTC).
    pub requested_at: DateTime<Utc>,
    /// The status before.
    pub from_status: DeploymentStatus,
    /// The status after.
    pub to_status: DeploymentStatus,
}

/// Where a stopped deployment's flatten stands (`deployments.flatten_*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlattenState {
    /// When the stop asked for it.
    pub requested_at: DateTime<Utc>,
    /// Failed attempts so far.
    pub attempts: u32,
    /// When a runner tries again after a failure (`None`: as soon as one is free).
    pub retry_at: Option<DateTime<Utc>>,
    /// The last failure's error, until an attempt succeeds.
    pub last_error: Option<String>,
    /// When a runner closed the positions (`None`: still to do).
    pub done_at: Option<DateTime<Utc>>,
}

/// Whether a control's text holds a control character (refused: a NUL fails on PostgreSQL, and
/// a line break in an audit trail's one-line field hides what follows it).
pub(crate) fn has_control_char(s: &str) -> bool {
    s.chars().any(char::is_control)
}
