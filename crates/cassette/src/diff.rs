//! Why a request missed: the nearest recorded request and the first difference from it.
//!
//! Nearest: the recorded request of the same model with the same tick time (the `## Time`
//! section of its first user message), then the same system prompt, then the most leading
//! messages equal; ties go to the one recorded first. The first difference is looked for in
//! this order: model, system prompt, tools, sampling parameters, then message by message; a text
//! that differs is compared `## ` section by section (the user message is `## ` sections), and
//! the first differing line of the first differing section is quoted around its first differing
//! character.

use serde_json::Value;

/// How much of a differing line is quoted, in characters, around its first difference.
const EXCERPT: usize = 100;

/// The tick time of a canonical request: the first word of the line after `## Time` in its
/// first user message (`2017-04-19T10:00:00Z`).
#[must_use]
pub fn tick_time(request: &Value) -> Option<&str> {
    let first_user = request["messages"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "user")?;
    let content = first_user["content"].as_str()?;
    let mut lines = content.lines();
    lines.find(|l| *l == "## Time")?;
    lines.next()?.split_whitespace().next()
}

/// The index of the recorded request nearest to `wanted` among `recorded` (in recording
/// order), `None` when there is none.
#[must_use]
pub fn nearest<'a>(wanted: &Value, recorded: impl IntoIterator<Item = &'a Value>) -> Option<usize> {
    let time = tick_time(wanted);
    let wanted_messages = wanted["messages"].as_array();
    let score = |r: &Value| {
        let leading = match (r["messages"].as_array(), wanted_messages) {
            (Some(a), Some(b)) => a.iter().zip(b).take_while(|(x, y)| x == y).count(),
            _ => 0,
        };
        (
            r["model"] == wanted["model"],
            time.is_some() && tick_time(r) == time,
            r["system"] == wanted["system"],
            leading,
        )
    };
    let mut best: Option<(usize, _)> = None;
    for (i, r) in recorded.into_iter().enumerate() {
        let s = score(r);
        if best.as_ref().is_none_or(|(_, b)| s > *b) {
            best = Some((i, s));
        }
    }
    best.map(|(i, _)| i)
}

/// The first difference between a `recorded` canonical request and the `wanted` one, as a
/// sentence; `None` when they are equal.
#[must_use]
pub fn first_difference(recorded: &Value, wanted: &Value) -> Option<String> {
    if recorded["model"] != wanted["model"] {
        return Some(format!(
            "the model differs: recorded {}, this request {}",
            recorded["model"], wanted["model"]
        ));
    }
    if let Some(d) = text_difference(
        "the system prompt",
        recorded["system"].as_str().unwrap_or_default(),
        wanted["system"].as_str().unwrap_or_default(),
    ) {
        return Some(d);
    }
    if let Some(d) = tools_difference(&recorded["tools"], &wanted["tools"]) {
        return Some(d);
    }
    if recorded["sampling"] != wanted["sampling"] {
        return Some(format!(
            "the sampling parameters differ: recorded {}, this request {}",
            recorded["sampling"], wanted["sampling"]
        ));
    }
    let empty = Vec::new();
    let a = recorded["messages"].as_array().unwrap_or(&empty);
    let b = wanted["messages"].as_array().unwrap_or(&empty);
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        if x != y {
            return Some(message_difference(i + 1, x, y));
        }
    }
    if a.len() != b.len() {
        return Some(format!(
            "the recorded request has {} messages, this request {} (the first {} are equal)",
            a.len(),
            b.len(),
            a.len().min(b.len())
        ));
    }
    (recorded != wanted).then(|| "the requests differ outside the known fields".to_owned())
}

fn tools_difference(recorded: &Value, wanted: &Value) -> Option<String> {
    if recorded == wanted {
        return None;
    }
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (a, b) = (names(recorded), names(wanted));
    if a != b {
        return Some(format!(
            "the tools differ: recorded [{}], this request [{}]",
            a.join(", "),
            b.join(", ")
        ));
    }
    let empty = Vec::new();
    let pairs = recorded
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .zip(wanted.as_array().unwrap_or(&empty));
    for (x, y) in pairs {
        if x != y {
            let part = if x["description"] == y["description"] {
                "parameters schema"
            } else {
                "description"
            };
            return Some(format!(
                "the tool `{}` differs: its {part}",
                x["name"].as_str().unwrap_or_default()
            ));
        }
    }
    None
}

fn message_difference(n: usize, x: &Value, y: &Value) -> String {
    let role = x["role"].as_str().unwrap_or_default();
    if x["role"] != y["role"] {
        return format!(
            "message {n} is a {role} message in the recording, a {} message in this request",
            y["role"].as_str().unwrap_or_default()
        );
    }
    let label = format!("message {n} ({role})");
    for field in ["content", "text"] {
        if x[field] != y[field] {
            let (a, b) = (
                x[field].as_str().unwrap_or_default(),
                y[field].as_str().unwrap_or_default(),
            );
            if let Some(d) = text_difference(&label, a, b) {
                return d;
            }
        }
    }
    if x["tool_calls"] != y["tool_calls"] {
        return format!("{label}: its tool calls differ");
    }
    format!("{label} differs: recorded {x}, this request {y}")
}

/// A text's `## ` sections: (heading line or "" for the text before the first heading, lines).
fn sections(text: &str) -> Vec<(&str, Vec<&str>)> {
    let mut out: Vec<(&str, Vec<&str>)> = vec![("", Vec::new())];
    for line in text.lines() {
        if line.starts_with("## ") {
            out.push((line, Vec::new()));
        } else if let Some(last) = out.last_mut() {
            last.1.push(line);
        }
    }
    if out.len() > 1 && out[0].1.iter().all(|l| l.trim().is_empty()) {
        out.remove(0);
    }
    out
}

/// Both lines' excerpts around their first differing character: up to [`EXCERPT`] characters
/// each, starting [`EXCERPT`]` / 4` characters before the difference, so a difference far along
/// a long line is in view in both. Also returns the difference's column (1-based, characters).
fn excerpts(recorded: Option<&str>, wanted: Option<&str>) -> (String, String, usize) {
    let (a, b) = (recorded.unwrap_or_default(), wanted.unwrap_or_default());
    let at = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let start = at.saturating_sub(EXCERPT / 4);
    let quote = |line: Option<&str>| match line {
        None => "(nothing)".to_owned(),
        Some(l) => {
            let n = l.chars().count();
            let shown: String = l.chars().skip(start).take(EXCERPT).collect();
            let before = if start > 0 { "…" } else { "" };
            let after = if start + EXCERPT < n { "…" } else { "" };
            format!("`{before}{shown}{after}`")
        }
    };
    (quote(recorded), quote(wanted), at + 1)
}

/// The first difference of two texts, `## ` section by section, then line by line.
fn text_difference(label: &str, recorded: &str, wanted: &str) -> Option<String> {
    if recorded == wanted {
        return None;
    }
    let (a, b) = (sections(recorded), sections(wanted));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x.0 != y.0 {
            return Some(format!(
                "{label}: section {} is {} in the recording, {} in this request",
                i + 1,
                heading(x.0),
                heading(y.0)
            ));
        }
        if x.1 != y.1 {
            let line = x.1.iter().zip(&y.1).take_while(|(p, q)| p == q).count();
            let at = if x.0.is_empty() {
                format!("{label} differs")
            } else {
                format!("{label}: section `{}` differs", x.0)
            };
            let (recorded, wanted, column) =
                excerpts(x.1.get(line).copied(), y.1.get(line).copied());
            return Some(format!(
                "{at} at its line {}, column {column}: recorded {recorded}, this request {wanted}",
                line + 1,
            ));
        }
    }
    if a.len() != b.len() {
        let (more, extra) = if a.len() > b.len() {
            ("the recording", &a[b.len()])
        } else {
            ("this request", &b[a.len()])
        };
        return Some(format!(
            "{label}: {more} has more sections, from {}",
            heading(extra.0)
        ));
    }
    // Equal lines, different text: line endings or a trailing newline.
    Some(format!(
        "{label} differs in whitespace at the ends of its lines"
    ))
}

fn heading(h: &str) -> String {
    if h.is_empty() {
        "(text before the first heading)".to_owned()
    } else {
        format!("`{h}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req(time: &str, portfolio: &str) -> Value {
        json!({
            "model": "openai/gpt-4o-mini",
            "system": "You trade.\n\nLeash: STRICT.",
            "tools": [{"name": "propose_order", "description": "d", "parameters": {}}],
            "sampling": {"max_output_tokens": 512},
            "messages": [{"role": "user", "content": format!(
                "## Time\n{time}\n\n## Portfolio\nequity {portfolio}\nno positions\n\n## Your turn\nDecide."
            )}],
        })
    }

    #[test]
    fn a_changed_section_is_named_with_its_first_differing_line() {
        let d = first_difference(
            &req("2017-04-19T10:00:00Z", "10000"),
            &req("2017-04-19T10:00:00Z", "9000"),
        );
        assert_eq!(
            d.as_deref(),
            Some(
                "message 1 (user): section `## Portfolio` differs at its line 1, column 8: recorded \
                 `equity 10000`, this request `equity 9000`"
            )
        );
    }

    #[test]
    fn the_system_prompt_and_the_tools_are_compared_before_the_messages() {
        let a = req("t", "1");
        let mut b = req("t", "2");
        b["system"] = json!("You trade.\n\nLeash: BALANCED.");
        assert_eq!(
            first_difference(&a, &b).as_deref(),
            Some(
                "the system prompt differs at its line 3, column 8: recorded `Leash: STRICT.`, \
                 this request `Leash: BALANCED.`"
            )
        );
        let mut c = req("t", "1");
        c["tools"][0]["parameters"] = json!({"type": "object"});
        assert_eq!(
            first_difference(&a, &c).as_deref(),
            Some("the tool `propose_order` differs: its parameters schema")
        );
        assert_eq!(first_difference(&a, &a), None);
    }

    #[test]
    fn a_long_line_is_quoted_around_its_first_differing_character() {
        // `equity ` (7) + 150 `x` + the differing character + 120 `y`: the difference is at
        // character 158; both excerpts start 25 characters before it (132) and show 100.
        let line = |c: char| format!("{}{c}{}", "x".repeat(150), "y".repeat(120));
        let (a, b) = (req("t", &line('1')), req("t", &line('2')));
        let quoted = |c: char| format!("`…{}{c}{}…`", "x".repeat(25), "y".repeat(74));
        let expected = format!(
            "message 1 (user): section `## Portfolio` differs at its line 1, column 158: \
             recorded {}, this request {}",
            quoted('1'),
            quoted('2')
        );
        assert_eq!(first_difference(&a, &b).as_deref(), Some(expected.as_str()));
    }

    #[test]
    fn the_nearest_request_has_the_same_tick_time() {
        let recorded = [
            req("2017-04-19T09:00:00Z", "9000"),
            req(
                "2017-04-19T10:00:00Z (Wednesday). Execution timeframe 1h",
                "10000",
            ),
            req("2017-04-19T11:00:00Z", "9000"),
        ];
        let wanted = req(
            "2017-04-19T10:00:00Z (Wednesday). Execution timeframe 1h",
            "9000",
        );
        assert_eq!(tick_time(&wanted), Some("2017-04-19T10:00:00Z"));
        assert_eq!(nearest(&wanted, &recorded), Some(1));
        assert_eq!(nearest(&wanted, &[]), None);
    }
}
