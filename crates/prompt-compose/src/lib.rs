//! The system prompts the models see, as named segments.
//!
//! - [`compose_system_prompt_segments`] / [`compose_system_prompt`]: the trading agent's system
//!   prompt — platform-owned HEADER, LEASH and FOOTER around the author's STRATEGY, plus the
//!   LESSONS segment when an active reflection note exists.
//! - [`compose_chat_system`]: the chat coach's system prompt, ordered user-stable →
//!   session-stable → turn-stable so the longest possible prefix is cacheable.
//!
//! The templates are minijinja files embedded in the crate. This crate does no I/O and has no
//! server dependency: an editor preview renders exactly the text that runs. Output is
//! deterministic: the same inputs give the same bytes.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use prompt_compose::{LESSONS_HEADER, Lessons, compose_system_prompt};
//!
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/skills/eurusd-sma-cross.yaml");
//! let skill = skill_schema::load_skill(path.as_ref())?.skill;
//!
//! // Without an active reflection note there is no LESSONS segment.
//! let plain = compose_system_prompt(&skill, None)?;
//! assert!(!plain.contains(LESSONS_HEADER));
//!
//! let at = Utc.with_ymd_and_hms(2026, 6, 4, 21, 0, 0).unwrap();
//! let lessons = Lessons {
//!     text: "- Shorts against the 4h trend lost 4 of 5 times.".into(),
//!     trades_considered: 12,
//!     generated_at: at,
//!     window_start: at - chrono::Duration::days(7),
//!     window_end: at,
//! };
//! let with_lessons = compose_system_prompt(&skill, Some(&lessons))?;
//! assert!(with_lessons.contains(LESSONS_HEADER));
//! assert!(with_lessons.contains("- Shorts against the 4h trend lost 4 of 5 times."));
//! // Byte-deterministic: the same inputs give the same text.
//! assert_eq!(with_lessons, compose_system_prompt(&skill, Some(&lessons))?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod chat;
mod system;

use std::sync::LazyLock;

use minijinja::Environment;

pub use chat::{
    ChatFact, ChatMode, ChatSegment, ChatSegmentName, ChatSystemInput, Focus, MAX_INJECTED_FACTS,
    Tier, compose_chat_system, compose_chat_system_segments,
};
pub use system::{
    LESSONS_HEADER, Lessons, Segment, SegmentName, compose_system_prompt,
    compose_system_prompt_segments,
};

/// A template failed to render. The templates are embedded and covered by snapshot tests, so
/// this signals a bug in this crate rather than bad input.
#[derive(Debug, thiserror::Error)]
#[error("prompt template {template} failed to render: {source}")]
pub struct ComposeError {
    /// The embedded template's name, e.g. `system/strategy`.
    pub template: &'static str,
    /// The minijinja error.
    #[source]
    pub source: minijinja::Error,
}

const TEMPLATES: [(&str, &str); 11] = [
    (
        "system/header",
        include_str!("../templates/system/header.jinja"),
    ),
    (
        "system/leash",
        include_str!("../templates/system/leash.jinja"),
    ),
    (
        "system/strategy",
        include_str!("../templates/system/strategy.jinja"),
    ),
    (
        "system/lessons",
        include_str!("../templates/system/lessons.jinja"),
    ),
    (
        "system/footer",
        include_str!("../templates/system/footer.jinja"),
    ),
    (
        "chat/persona",
        include_str!("../templates/chat/persona.jinja"),
    ),
    ("chat/tier", include_str!("../templates/chat/tier.jinja")),
    ("chat/facts", include_str!("../templates/chat/facts.jinja")),
    ("chat/mode", include_str!("../templates/chat/mode.jinja")),
    ("chat/focus", include_str!("../templates/chat/focus.jinja")),
    ("chat/trust", include_str!("../templates/chat/trust.jinja")),
];

static ENV: LazyLock<Result<Environment<'static>, minijinja::Error>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    // Prompt text is not HTML.
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (name, source) in TEMPLATES {
        env.add_template(name, source)?;
    }
    Ok(env)
});

/// Renders one embedded template and normalises its whitespace: no trailing spaces, no runs of
/// blank lines, no leading or trailing blank lines.
pub(crate) fn render(
    template: &'static str,
    ctx: minijinja::Value,
) -> Result<String, ComposeError> {
    let err = |source| ComposeError { template, source };
    let env = ENV.as_ref().map_err(|e| {
        err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            e.to_string(),
        ))
    })?;
    let raw = env
        .get_template(template)
        .and_then(|t| t.render(ctx))
        .map_err(err)?;
    Ok(normalise(&raw))
}

fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0usize;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank_run > 0 { "\n\n" } else { "\n" });
        }
        blank_run = 0;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses() {
        assert!(ENV.is_ok(), "{:?}", ENV.as_ref().err());
    }

    #[test]
    fn normalise_collapses_blank_runs_and_trailing_space() {
        assert_eq!(normalise("\n\na  \n\n\n\nb\nc\n\n"), "a\n\nb\nc");
    }
}
