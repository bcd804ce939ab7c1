//! The bounds every lessons text obeys, on every path: bullets only, at most
//! [`MAX_LESSONS_CHARS`] characters.

use types::MAX_LESSONS_CHARS;

/// The ellipsis appended when a single bullet had to be cut inside its text.
pub const ELLIPSIS: char = '…';

/// Lessons text after [`bound_lessons`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// `- ` bullets separated by `\n`, at most [`MAX_LESSONS_CHARS`] characters. Empty when the
    /// reply held no usable line.
    pub text: String,
    /// Whether anything was cut (bullets dropped or a bullet shortened).
    pub cut: bool,
}

/// Strips a leading bullet marker (`-`, `*`, `+`, `•`, `–`, `—`, `1.`, `1)`) and returns the rest,
/// or `None` when the line does not start with one.
pub(crate) fn strip_marker(line: &str) -> Option<&str> {
    for marker in ['-', '*', '+', '•', '–', '—', '·'] {
        if let Some(rest) = line.strip_prefix(marker) {
            // `**bold**` at the start of a line is emphasis, not a bullet.
            if marker == '*' && rest.starts_with('*') {
                return None;
            }
            return Some(rest.trim_start());
        }
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits <= 3 {
        let rest = &line[digits..];
        if let Some(r) = rest.strip_prefix('.').or_else(|| rest.strip_prefix(')'))
            && (r.is_empty() || r.starts_with(char::is_whitespace))
        {
            return Some(r.trim_start());
        }
    }
    None
}

/// One line of a reply → the text of one bullet, or `None` when the line is dropped (blank, a
/// code fence, a markdown heading, or a preamble such as "Here are the lessons:"). Control
/// characters become spaces and runs of whitespace collapse to one space.
pub(crate) fn bullet_text(line: &str) -> Option<String> {
    let cleaned: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = cleaned.trim();
    if trimmed.is_empty() || trimmed.starts_with("```") || trimmed.starts_with('#') {
        return None;
    }
    let body = match strip_marker(trimmed) {
        Some(rest) => rest,
        None if trimmed.ends_with(':') => return None,
        None => trimmed,
    };
    let collapsed = body.split_whitespace().collect::<Vec<_>>().join(" ");
    (!collapsed.is_empty()).then_some(collapsed)
}

/// Normalises a model reply (or any lessons text) into bullets and enforces the length cap.
///
/// - Every kept line becomes one `- ` bullet: existing markers (`*`, `•`, `1.` …) are replaced,
///   unmarked lines are kept as bullets; blank lines, code fences, headings and preamble lines
///   ending in `:` are dropped.
/// - `truncated_by_model` (the reply stopped on the output-token limit): the last bullet is
///   incomplete and is dropped when at least one other bullet remains.
/// - Over [`MAX_LESSONS_CHARS`]: whole bullets are dropped from the end (never cutting inside a
///   bullet) until the rest fits. If even the first bullet alone is too long, it is cut at the
///   last word boundary that leaves room for `…`.
///
/// Cutting is preferred to asking the model again: it is deterministic, costs nothing and cannot
/// fail a second time; the first bullets are the ones the prompt asks to be the most important.
#[must_use]
pub fn bound_lessons(reply: &str, truncated_by_model: bool) -> Bounded {
    let mut bullets: Vec<String> = reply.lines().filter_map(bullet_text).collect();
    let mut cut = false;
    if truncated_by_model && bullets.len() > 1 {
        bullets.pop();
        cut = true;
    }
    let mut text = String::new();
    let mut used = 0usize;
    for (i, bullet) in bullets.iter().enumerate() {
        let line_chars = 2 + bullet.chars().count() + usize::from(i > 0);
        if used + line_chars > MAX_LESSONS_CHARS {
            cut = true;
            if i == 0 {
                text = format!("- {}", cut_at_word(bullet, MAX_LESSONS_CHARS - 2));
            }
            break;
        }
        if i > 0 {
            text.push('\n');
        }
        text.push_str("- ");
        text.push_str(bullet);
        used += line_chars;
    }
    Bounded { text, cut }
}

/// `text` cut to at most `max_chars` characters including a trailing `…`, at the last whitespace
/// that fits (a single word longer than the budget is cut inside, the only case where that
/// happens).
fn cut_at_word(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_owned();
    }
    let budget = max_chars.saturating_sub(1);
    let head: String = text.chars().take(budget).collect();
    // Does the cut fall on a word boundary already (the next character is whitespace)?
    let next_is_space = text.chars().nth(budget).is_some_and(char::is_whitespace);
    let kept = if next_is_space {
        head.trim_end().to_owned()
    } else {
        match head.rfind(char::is_whitespace) {
            Some(pos) => head[..pos].trim_end().to_owned(),
            None => head,
        }
    };
    format!("{kept}{ELLIPSIS}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_normalised_and_chatter_dropped() {
        let reply = "Here are the lessons:\n\n* one\n• two\n1. three\n2) four\nfive\n```\n## Heading\n**Bold** lead\n";
        let b = bound_lessons(reply, false);
        assert_eq!(
            b.text,
            "- one\n- two\n- three\n- four\n- five\n- **Bold** lead"
        );
        assert!(!b.cut);
    }

    #[test]
    fn control_characters_and_whitespace_collapse() {
        let b = bound_lessons("-   a\tb\u{7}  c   ", false);
        assert_eq!(b.text, "- a b c");
    }

    #[test]
    fn model_truncation_drops_the_incomplete_last_bullet() {
        let b = bound_lessons("- complete\n- incompl", true);
        assert_eq!(b.text, "- complete");
        assert!(b.cut);
        // A single bullet is kept: there is nothing better to fall back to.
        let one = bound_lessons("- only one", true);
        assert_eq!(one.text, "- only one");
    }

    #[test]
    fn exactly_at_the_cap_is_kept_whole() {
        // "- " + 1,998 characters = 2,000.
        let body = "x".repeat(MAX_LESSONS_CHARS - 2);
        let b = bound_lessons(&format!("- {body}"), false);
        assert_eq!(b.text.chars().count(), MAX_LESSONS_CHARS);
        assert!(!b.cut);
    }

    #[test]
    fn a_single_word_longer_than_the_cap_is_cut_inside() {
        let b = bound_lessons(&"y".repeat(3000), false);
        assert_eq!(b.text.chars().count(), MAX_LESSONS_CHARS);
        assert!(b.text.ends_with(ELLIPSIS));
    }
}
