//! Quoted data: external text (reasons) as a string literal that cannot leave its quotes.

/// `text` as a double-quoted string literal: `\` `"` and control characters escaped, so a reason
/// can never break out of its quotes or start a new line of the prompt.
#[must_use]
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_quoted(&mut out, text);
    out
}

/// Appends [`quoted`]`(text)`.
pub fn push_quoted(out: &mut String, text: &str) {
    out.push('"');
    // Fast path: printable ASCII without `"` or `\\` needs no escape. A fold without early
    // exit, which the compiler vectorizes.
    let plain = text.as_bytes().iter().fold(true, |ok, &c| {
        ok & (c >= b' ') & (c != b'"') & (c != b'\\') & (c < 0x7f)
    });
    if plain {
        out.push_str(text);
        out.push('"');
        return;
    }
    // Runs of characters that need no escape are copied as they are.
    let bytes = text.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii() {
            if b >= b' ' && b != b'"' && b != b'\\' && b != 0x7f {
                i += 1;
                continue;
            }
        } else {
            // A multi-byte character: escaped only when it is a control or a line/paragraph
            // separator. `i` is at a char boundary (runs advance by whole characters).
            let ch = text[i..].chars().next().unwrap_or_default();
            if !(ch.is_control() || ch == '\u{2028}' || ch == '\u{2029}') {
                i += ch.len_utf8();
                continue;
            }
        }
        out.push_str(&text[run..i]);
        let ch = text[i..].chars().next().unwrap_or_default();
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
        i += ch.len_utf8();
        run = i;
    }
    out.push_str(&text[run..]);
    out.push('"');
}
