//! Kept conversations: what a turn keeps of itself ([`kept_messages`]) and the history a
//! continued conversation gives the model ([`history`]).
//!
//! Bounds: a kept turn's tool results are cut to [`MAX_KEPT_TOOL_RESULT_CHARS`] characters
//! each (then to [`MIN_KEPT_TOOL_RESULT_CHARS`] when the turn's JSON is still over
//! [`db::MAX_CONVERSATION_TURN_JSON_BYTES`], and to the answer alone past that); a continued
//! conversation sends the model its last [`MAX_HISTORY_TURNS`] turns.

use agent_runtime::Message;
use serde_json::Value;

/// Most earlier turns of a conversation the model gets with a new message.
pub const MAX_HISTORY_TURNS: u32 = 20;
/// Most characters a kept tool result holds; the rest is cut with a marker.
pub const MAX_KEPT_TOOL_RESULT_CHARS: usize = 4_000;
/// What a kept tool result is cut to when a turn's JSON is too large at
/// [`MAX_KEPT_TOOL_RESULT_CHARS`].
pub const MIN_KEPT_TOOL_RESULT_CHARS: usize = 500;

/// A conversation's title: its first message on one line, cut to
/// [`db::MAX_CONVERSATION_TITLE_CHARS`] characters (an ellipsis marks a cut).
#[must_use]
pub fn title(first_message: &str) -> String {
    let line = tools::one_line(first_message);
    let (kept, dropped) = types::cut_chars(&line, db::MAX_CONVERSATION_TITLE_CHARS - 1);
    let mut title = kept.trim_end().to_owned();
    if dropped > 0 {
        title.push('…');
    }
    if title.is_empty() {
        "(untitled)".to_owned()
    } else {
        title
    }
}

fn cut(messages: &[Message], max: usize) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match m {
            Message::Tool {
                call_id,
                name,
                content,
            } => {
                let (kept, dropped) = types::cut_chars(content, max);
                let content = if dropped == 0 {
                    content.clone()
                } else {
                    format!("{kept}… [cut: {dropped} more characters]")
                };
                Message::Tool {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    content,
                }
            }
            other => other.clone(),
        })
        .collect()
}

/// What a turn keeps of `added` (the messages its model loop added after the user's message):
/// as a JSON array, each tool result cut to [`MAX_KEPT_TOOL_RESULT_CHARS`] characters; when
/// that is over [`db::MAX_CONVERSATION_TURN_JSON_BYTES`], to [`MIN_KEPT_TOOL_RESULT_CHARS`];
/// past that, the answer alone as the assistant's message.
#[must_use]
pub fn kept_messages(added: &[Message], answer: &str) -> Value {
    for max in [MAX_KEPT_TOOL_RESULT_CHARS, MIN_KEPT_TOOL_RESULT_CHARS] {
        if let Ok(v) = serde_json::to_value(cut(added, max))
            && v.to_string().len() <= db::MAX_CONVERSATION_TURN_JSON_BYTES
        {
            return v;
        }
    }
    let (answer, _) = types::cut_chars(answer, db::MAX_CONVERSATION_ANSWER_CHARS);
    serde_json::to_value([Message::Assistant {
        text: Some(answer.to_owned()),
        tool_calls: Vec::new(),
    }])
    .unwrap_or_else(|_| Value::Array(Vec::new()))
}

/// The conversation the model gets before a new message: each kept turn's user message, then
/// what its model loop added (its assistant turns and tool results as kept). A turn whose kept
/// messages cannot be read back (written by another version) gives its answer instead.
#[must_use]
pub fn history(turns: &[db::ConversationTurn]) -> Vec<Message> {
    let mut out = Vec::new();
    for t in turns {
        out.push(Message::User {
            content: t.user_message.clone(),
        });
        match serde_json::from_value::<Vec<Message>>(t.messages.clone()) {
            Ok(messages) => out.extend(messages),
            Err(_) => out.push(Message::Assistant {
                text: Some(t.answer.clone()),
                tool_calls: Vec::new(),
            }),
        }
    }
    out
}
