//! The "Last decision" the next tick sees: what the agent proposed and what the engine did.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use types::{OrderAction, ProposedAction, RuleCode, Verdict};

use crate::one_line;

/// What the engine did with the previous tick's proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
    /// The engine executed it (the broker filled the order).
    Executed,
    /// The engine rejected it; [`LastDecisionSnapshot::rule`] says which rule.
    Rejected,
    /// Nothing to do: no proposal, or an explicit `no_op`.
    NoOp,
}

impl VerdictStatus {
    /// The status's text: `"executed"`, `"rejected"` or `"no_op"` (also its serde form).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            VerdictStatus::Executed => "executed",
            VerdictStatus::Rejected => "rejected",
            VerdictStatus::NoOp => "no_op",
        }
    }
}

/// The previous tick, as the next tick's context shows it. The live runner keeps it in its
/// state; the simulator carries it across iterations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastDecisionSnapshot {
    /// The previous tick's time (UTC).
    pub tick_at: DateTime<Utc>,
    /// One-line summary of the proposal (`None` when the agent proposed nothing).
    pub proposal: Option<String>,
    /// What the engine did.
    pub status: VerdictStatus,
    /// The rule that rejected it.
    pub rule: Option<RuleCode>,
    /// The engine's detail, on one line.
    pub detail: String,
}

/// One line describing a proposal: `open_long BTC $2,500.00 at 3x, stop 64000, target 68000,
/// confidence 70: "reason"`.
#[must_use]
pub fn summarize_proposal(p: &ProposedAction) -> String {
    // Written into one buffer: this runs every tick.
    let mut out = String::with_capacity(64 + p.symbol.len() + p.reason.len());
    out.push_str(p.action.as_str());
    out.push(' ');
    out.push_str(&p.symbol);
    if let Some(size) = p.size_usd {
        out.push(' ');
        types::text::push_money(&mut out, size);
    }
    if let Some(lev) = p.leverage {
        let _ = write!(out, " at {}x", lev.normalize());
    }
    if let Some(stop) = p.stop {
        let _ = write!(out, ", stop {}", stop.normalize());
    }
    if let Some(target) = p.target {
        let _ = write!(out, ", target {}", target.normalize());
    }
    if let Some(c) = p.confidence {
        let _ = write!(out, ", confidence {c}");
    }
    if p.action != OrderAction::NoOp || !p.reason.is_empty() {
        out.push_str(": \"");
        out.push_str(&one_line(&p.reason));
        out.push('"');
    }
    out
}

/// Builds the snapshot the next tick shows from this tick's proposal and the engine's verdict.
#[must_use]
pub fn to_last_decision_snapshot(
    proposal: Option<&ProposedAction>,
    verdict: &Verdict,
    tick_at: DateTime<Utc>,
) -> LastDecisionSnapshot {
    let (status, rule, detail) = match verdict {
        Verdict::Executed { detail } => (VerdictStatus::Executed, None, detail),
        Verdict::Rejected { rule, detail } => (VerdictStatus::Rejected, Some(*rule), detail),
        Verdict::NoOp { detail } => (VerdictStatus::NoOp, None, detail),
    };
    LastDecisionSnapshot {
        tick_at,
        proposal: proposal.map(summarize_proposal),
        status,
        rule,
        detail: one_line(detail),
    }
}
