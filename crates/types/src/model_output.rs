//! Bounds on what a model's output may make a tick execute and store (issue #20 items 5 and 6).
//!
//! A model is an outside party: a 20 MB completion or 2,000 tool calls in one response must not
//! run 2,000 tools or make a 160 MB database. The model loop (`agent-runtime`) cuts at these
//! bounds and says so in the step it records; the tick (`tick`) bounds the stored error text.

/// Tool calls executed per model response. The calls after these are not executed: the step
/// records how many were refused, and the conversation keeps only the executed ones.
pub const MAX_TOOL_CALLS_PER_RESPONSE: usize = 8;

/// Characters of a step's completion text kept (in the record and in the conversation sent back
/// to the model); the rest is cut and the step says how many characters were.
pub const MAX_STEP_TEXT_CHARS: usize = 8_000;

/// Characters of a tool call's raw arguments kept in the record (a rejected 10,000-character
/// argument is stored cut, with a count of what was cut).
pub const MAX_STORED_ARGUMENT_CHARS: usize = 2_000;

/// Bytes of a tool result kept in the record (the model still reads the whole result).
pub const MAX_STORED_RESULT_BYTES: usize = 16_384;

/// Bytes of a snapshot's steps (their JSON) at most: once the steps recorded so far reach this,
/// later texts, arguments and results are dropped from the record (the step says so).
pub const MAX_STORED_STEPS_BYTES: usize = 262_144;

/// Characters of a tick's error text (why the model loop failed) stored with its snapshot.
pub const MAX_STORED_ERROR_CHARS: usize = 2_000;

/// The first `max` characters of `text` and how many characters were cut (0 when none).
#[must_use]
pub fn cut_chars(text: &str, max: usize) -> (&str, usize) {
    // No more bytes than `max`: no more characters either, nothing to count.
    if text.len() <= max {
        return (text, 0);
    }
    match text.char_indices().nth(max) {
        None => (text, 0),
        Some((end, _)) => (&text[..end], text[end..].chars().count()),
    }
}

#[cfg(test)]
mod tests {
    use super::cut_chars;

    #[test]
    fn cut_chars_counts_characters_not_bytes() {
        assert_eq!(cut_chars("héllo", 10), ("héllo", 0));
        assert_eq!(cut_chars("héllo", 2), ("hé", 3));
        assert_eq!(cut_chars("", 0), ("", 0));
        assert_eq!(cut_chars("ab", 0), ("", 2));
    }
}
