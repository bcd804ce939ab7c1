//! The text a request may carry: no NUL and no other control character (Unicode `Cc`: U+0000–
//! U+001F, U+007F–U+009F) in any text field of a JSON body or a form. Multi-line text (a fact, a
//! chat message) may hold line breaks (`\n`, or `\r\n` as a browser's textarea sends them) and
//! tabs; one-line text (a topic, a reason, a token) none of them. A refused field is a 422 naming
//! it — never a 500 from PostgreSQL, which refuses a NUL in `text`.
//!
//! Every JSON body read through [`super::error::ApiJson`] is walked whole ([`check_json`]):
//! each string (and key) anywhere in it is held to the multi-line rule, so no body of any
//! route, present or future, stores a NUL. One-line fields add [`one_line`] (the request types'
//! `validator` rules); the pages' forms check each field with [`check`].

use serde_json::Value;
use validator::ValidationError;

use super::error::ApiError;

/// Whether a field may span lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lines {
    /// One line: no control character at all.
    One,
    /// Line breaks (`\n`, `\r\n`) and tabs allowed; no other control character.
    Many,
}

/// The first control character `text` may not hold, with its position (in characters).
#[must_use]
pub fn refused_char(text: &str, lines: Lines) -> Option<(usize, char)> {
    let mut chars = text.chars().enumerate().peekable();
    while let Some((i, c)) = chars.next() {
        if !c.is_control() {
            continue;
        }
        let allowed = lines == Lines::Many
            && match c {
                '\n' | '\t' => true,
                '\r' => chars.peek().is_some_and(|(_, next)| *next == '\n'),
                _ => false,
            };
        if !allowed {
            return Some((i, c));
        }
    }
    None
}

/// What is wrong with `c` at `at`, for a person.
fn what(at: usize, c: char, lines: Lines) -> String {
    let allowed = match lines {
        Lines::One => "one line of text: no control character, line break or tab",
        Lines::Many => "text: no control character but line breaks and tabs",
    };
    format!(
        "a control character (U+{:04X}) at character {} is not allowed; {allowed}",
        u32::from(c),
        at + 1
    )
}

/// [`what`], naming `field`.
fn message(field: &str, at: usize, c: char, lines: Lines) -> String {
    format!("{field}: {}", what(at, c, lines))
}

/// `text` as field `field` allows it, or the message naming the field (the pages show it).
///
/// # Errors
/// The message, when `text` holds a control character `lines` does not allow.
pub fn check(field: &str, text: &str, lines: Lines) -> Result<(), String> {
    match refused_char(text, lines) {
        None => Ok(()),
        Some((at, c)) => Err(message(field, at, c, lines)),
    }
}

/// A `validator` rule for one-line fields: `#[validate(custom(function = "one_line"))]`.
///
/// # Errors
/// `control_character`, with the message, when `text` holds any control character.
pub fn one_line(text: &str) -> Result<(), ValidationError> {
    match refused_char(text, Lines::One) {
        None => Ok(()),
        // `validation_error` puts the field's name first.
        Some((at, c)) => {
            Err(ValidationError::new("control_character")
                .with_message(what(at, c, Lines::One).into()))
        }
    }
}

/// Every string and key of a JSON body held to the multi-line rule; the first refused one is a
/// 422 naming its path (`fact`, `messages[2].content`).
///
/// # Errors
/// The 422 [`ApiError`].
pub fn check_json(body: &Value) -> Result<(), ApiError> {
    fn walk(v: &Value, path: &str) -> Result<(), ApiError> {
        let refuse = |field: &str, text: &str| match refused_char(text, Lines::Many) {
            None => Ok(()),
            Some((at, c)) => {
                let field = if field.is_empty() { "body" } else { field };
                Err(ApiError::invalid(field, message(field, at, c, Lines::Many)))
            }
        };
        match v {
            Value::String(s) => refuse(path, s),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .try_for_each(|(i, item)| walk(item, &format!("{path}[{i}]"))),
            Value::Object(map) => map.iter().try_for_each(|(k, item)| {
                // A key is refused before its path is built from it.
                refuse(if path.is_empty() { "body" } else { path }, k)?;
                let at = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                walk(item, &at)
            }),
            Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
        }
    }
    walk(body, "")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn control_characters_are_refused_but_line_breaks_where_lines_are_allowed() {
        for ok in [
            "plain",
            "two\nlines",
            "crlf\r\nlines",
            "a\ttab",
            "émoji 🙂",
            "",
        ] {
            assert_eq!(refused_char(ok, Lines::Many), None, "{ok:?}");
        }
        assert_eq!(refused_char("nul\0", Lines::Many), Some((3, '\0')));
        assert_eq!(refused_char("bell\u{7}", Lines::Many), Some((4, '\u{7}')));
        assert_eq!(refused_char("lone\rcr", Lines::Many), Some((4, '\r')));
        assert_eq!(refused_char("del\u{7f}", Lines::Many), Some((3, '\u{7f}')));
        assert_eq!(refused_char("c1\u{85}", Lines::Many), Some((2, '\u{85}')));
        assert_eq!(
            refused_char("esc\u{1b}[0m", Lines::Many),
            Some((3, '\u{1b}'))
        );
        assert_eq!(refused_char("two\nlines", Lines::One), Some((3, '\n')));
        assert_eq!(refused_char("a\ttab", Lines::One), Some((1, '\t')));
        assert_eq!(refused_char("one line", Lines::One), None);

        assert_eq!(
            check("fact", "ab\0c", Lines::Many).unwrap_err(),
            "fact: a control character (U+0000) at character 3 is not allowed; text: no control \
             character but line breaks and tabs"
        );
        let e = one_line("x\ny").unwrap_err();
        assert_eq!(e.code, "control_character");
        assert!(
            e.message
                .unwrap()
                .starts_with("a control character (U+000A) at character 2"),
        );
    }

    #[test]
    fn every_string_of_a_json_body_is_walked_and_named() {
        assert!(check_json(&json!({"fact": "a\nb", "n": 1, "x": null, "l": [true]})).is_ok());
        let e = check_json(&json!({"fact": "I never\u{0} trade"})).unwrap_err();
        assert_eq!(e.status, axum::http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(e.field.as_deref(), Some("fact"));
        assert!(
            e.message.starts_with("fact: a control character (U+0000)"),
            "{}",
            e.message
        );
        let e = check_json(&json!({"messages": [{"role": "user", "content": "ok"},
            {"role": "user", "content": "bad\u{8}"}]}))
        .unwrap_err();
        assert_eq!(e.field.as_deref(), Some("messages[1].content"));
        let e = check_json(&json!({"bad\u{0}key": 1})).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("body"));
        let e = check_json(&json!("\u{0}")).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("body"));
    }
}
