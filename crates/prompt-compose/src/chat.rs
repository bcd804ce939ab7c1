use std::fmt;

use chrono::{DateTime, Utc};
use minijinja::context;
use serde::{Deserialize, Serialize};
use types::FactConfidence;
use uuid::Uuid;

use crate::system::{join, minute};
use crate::{ComposeError, render};

/// Most facts injected into one prompt (ADR-0020: top 10 by last reference).
pub const MAX_INJECTED_FACTS: usize = 10;

/// The user's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Paper deployments only.
    Free,
    /// Paper and live deployments.
    Pro,
    /// Acts for several traders: the prompt asks to name deployment and owner.
    Team,
}

/// How the chat was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChatMode {
    /// Writing or refining a skill (thesis, rules, avoid list, caps, memory dial).
    Authoring,
    /// Reviewing the user's results: trades, lessons, patterns, exposure to upcoming events.
    Coach,
    /// Operating deployments: status, halts, rejections by rule code, costs.
    Ops,
}

/// One remembered fact about the user, as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatFact {
    /// Short tag such as `risk`, `symbols`, `session`, `goal`.
    /// `None` when the fact has no topic.
    pub topic: Option<String>,
    /// The fact itself, as the prompt shows it (folded onto one line).
    pub text: String,
    /// Whether the user said it or the agent inferred it.
    pub confidence: FactConfidence,
    /// The fact's short stable handle (`types::FactHandle`), shown as its `fact_id` so the
    /// model can `forget` it in any later conversation.
    pub handle: String,
}

/// What the conversation is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Focus {
    /// `skill` or `deployment`.
    pub kind: String,
    /// The skill's or deployment's display name (folded onto one line in the prompt).
    pub name: String,
    /// The skill's or deployment's id.
    pub id: Uuid,
}

/// Everything the chat system prompt depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatSystemInput {
    /// The user's plan.
    pub tier: Tier,
    /// Already ordered most-recently-referenced first; at most `MAX_INJECTED_FACTS` are shown.
    pub facts: Vec<ChatFact>,
    /// How the chat was opened.
    pub mode: ChatMode,
    /// The skill or deployment being discussed; `None` drops the FOCUS segment.
    pub focus: Option<Focus>,
    /// The turn's time, shown last because it changes every turn.
    pub now: DateTime<Utc>,
}

/// The chat prompt's segments, in cache order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ChatSegmentName {
    /// Stable for every user.
    Persona,
    /// Stable per user.
    Tier,
    /// Stable per user between remember/forget calls; absent when there are no facts.
    Facts,
    /// Stable per session.
    Mode,
    /// Stable per session; absent without a focus.
    Focus,
    /// Changes every turn (carries the time).
    Trust,
}

impl fmt::Display for ChatSegmentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChatSegmentName::Persona => "PERSONA",
            ChatSegmentName::Tier => "TIER",
            ChatSegmentName::Facts => "FACTS",
            ChatSegmentName::Mode => "MODE",
            ChatSegmentName::Focus => "FOCUS",
            ChatSegmentName::Trust => "TRUST",
        })
    }
}

/// One named segment of the chat system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatSegment {
    /// Which segment this is.
    pub name: ChatSegmentName,
    /// The rendered, whitespace-normalised text of the segment.
    pub text: String,
}

/// The chat system prompt as segments ordered user-stable (persona, tier, facts) →
/// session-stable (mode, focus) → turn-stable (trust, with the time), so consecutive turns
/// share the longest cacheable prefix. The "## What I know about you" block is suppressed when
/// there are no facts.
///
/// # Errors
/// [`ComposeError`] if an embedded template fails to render (a bug in this crate).
pub fn compose_chat_system_segments(
    input: &ChatSystemInput,
) -> Result<Vec<ChatSegment>, ComposeError> {
    let seg = |name, text| ChatSegment { name, text };
    let tier = match input.tier {
        Tier::Free => "free",
        Tier::Pro => "pro",
        Tier::Team => "team",
    };
    let mode = match input.mode {
        ChatMode::Authoring => "authoring",
        ChatMode::Coach => "coach",
        ChatMode::Ops => "ops",
    };
    let mut out = vec![
        seg(
            ChatSegmentName::Persona,
            render("chat/persona", context! {})?,
        ),
        seg(
            ChatSegmentName::Tier,
            render("chat/tier", context! { tier })?,
        ),
    ];
    let facts: Vec<minijinja::Value> = input
        .facts
        .iter()
        .filter(|f| !f.text.trim().is_empty())
        .take(MAX_INJECTED_FACTS)
        .map(|f| {
            minijinja::Value::from_serialize(ChatFact {
                topic: f.topic.as_deref().map(one_line),
                text: one_line(&f.text),
                confidence: f.confidence,
                handle: one_line(&f.handle),
            })
        })
        .collect();
    if !facts.is_empty() {
        out.push(seg(
            ChatSegmentName::Facts,
            render("chat/facts", context! { facts })?,
        ));
    }
    out.push(seg(
        ChatSegmentName::Mode,
        render("chat/mode", context! { mode })?,
    ));
    if let Some(focus) = &input.focus {
        let focus = Focus {
            kind: one_line(&focus.kind),
            name: one_line(&focus.name),
            id: focus.id,
        };
        out.push(seg(
            ChatSegmentName::Focus,
            render("chat/focus", context! { focus })?,
        ));
    }
    out.push(seg(
        ChatSegmentName::Trust,
        render("chat/trust", context! { now => minute(input.now) })?,
    ));
    Ok(out)
}

/// The chat system prompt: the segments joined by blank lines.
///
/// # Errors
/// [`ComposeError`] if an embedded template fails to render (a bug in this crate).
pub fn compose_chat_system(input: &ChatSystemInput) -> Result<String, ComposeError> {
    let segments = compose_chat_system_segments(input)?;
    Ok(join(segments.iter().map(|s| s.text.as_str())))
}

/// User-supplied text stays on one line so it cannot forge a heading or a new bullet.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
