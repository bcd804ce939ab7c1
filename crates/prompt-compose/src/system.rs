use std::fmt;

use chrono::{DateTime, Utc};
use minijinja::context;
use serde::{Deserialize, Serialize};
use skill_schema::Skill;

use crate::{ComposeError, render};

/// The header of the LESSONS segment. Its wording is load-bearing: lessons are signal, the
/// strategy and its hard constraints stay authoritative.
pub const LESSONS_HEADER: &str =
    "Lessons from your recent trades on this skill (auto-generated; signal, not strategy):";

/// The active reflection note, as the LESSONS segment shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lessons {
    /// The bullets, at most 2,000 characters (enforced where notes are written).
    pub text: String,
    /// How many closed trades the note was distilled from: the model sees the sample size.
    pub trades_considered: u32,
    /// When the note was generated (UTC).
    pub generated_at: DateTime<Utc>,
    /// Start of the window of closed trades the note covers (UTC), shown to the minute.
    pub window_start: DateTime<Utc>,
    /// End of that window (UTC), shown to the minute.
    pub window_end: DateTime<Utc>,
}

/// The named segments of the trading agent's system prompt, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SegmentName {
    /// Platform-owned framing: the job, caps as ceilings, leverage as a dial, data not
    /// instructions.
    Header,
    /// How much the model may improvise (strict | balanced | adaptive).
    Leash,
    /// The author's strategy, by mode.
    Strategy,
    /// The active reflection note; present only when one exists.
    Lessons,
    /// Platform-owned reminder: the model only proposes, the engine decides.
    Footer,
}

impl SegmentName {
    /// The segment's upper-case name (`HEADER`, `LEASH`, ...), as serialised.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SegmentName::Header => "HEADER",
            SegmentName::Leash => "LEASH",
            SegmentName::Strategy => "STRATEGY",
            SegmentName::Lessons => "LESSONS",
            SegmentName::Footer => "FOOTER",
        }
    }
}

impl fmt::Display for SegmentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One named segment of a system prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Which segment this is.
    pub name: SegmentName,
    /// The rendered, whitespace-normalised text of the segment.
    pub text: String,
}

/// The system prompt as its named segments: HEADER, LEASH, STRATEGY, LESSONS (only when
/// `lessons` is given and not blank), FOOTER.
///
/// # Errors
/// [`ComposeError`] if an embedded template fails to render (a bug in this crate).
pub fn compose_system_prompt_segments(
    skill: &Skill,
    lessons: Option<&Lessons>,
) -> Result<Vec<Segment>, ComposeError> {
    let strategy = &skill.strategy;
    let mut segments = vec![
        Segment {
            name: SegmentName::Header,
            text: render(
                "system/header",
                context! {
                    name => skill.name,
                    version => skill.version,
                    symbols => skill.context.symbols,
                },
            )?,
        },
        Segment {
            name: SegmentName::Leash,
            text: render(
                "system/leash",
                context! { leash => strategy.leash.as_str() },
            )?,
        },
        Segment {
            name: SegmentName::Strategy,
            text: render(
                "system/strategy",
                context! {
                    s => minijinja::Value::from_serialize(strategy),
                    style => strategy.style.map(|s| s.label()),
                },
            )?,
        },
    ];
    if let Some(lessons) = lessons.filter(|l| !l.text.trim().is_empty()) {
        segments.push(Segment {
            name: SegmentName::Lessons,
            text: render(
                "system/lessons",
                context! {
                    text => lessons.text.trim(),
                    trades_considered => lessons.trades_considered,
                    window_start => minute(lessons.window_start),
                    window_end => minute(lessons.window_end),
                },
            )?,
        });
    }
    segments.push(Segment {
        name: SegmentName::Footer,
        text: render("system/footer", context! {})?,
    });
    Ok(segments)
}

/// The system prompt: the segments of [`compose_system_prompt_segments`] joined by blank lines.
///
/// # Errors
/// [`ComposeError`] if an embedded template fails to render (a bug in this crate).
pub fn compose_system_prompt(
    skill: &Skill,
    lessons: Option<&Lessons>,
) -> Result<String, ComposeError> {
    let segments = compose_system_prompt_segments(skill, lessons)?;
    Ok(join(segments.iter().map(|s| s.text.as_str())))
}

/// Segments are separated by one blank line.
pub(crate) fn join<'a>(texts: impl IntoIterator<Item = &'a str>) -> String {
    texts.into_iter().collect::<Vec<_>>().join("\n\n")
}

/// `2026-06-04T10:00Z`: minute precision, UTC, no locale.
pub(crate) fn minute(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%MZ").to_string()
}
