//! Kept chat conversations (`chat_conversations`, `chat_conversation_turns`): what the chat
//! server stores so a client sends only the new message and reads a conversation back.

use chrono::{DateTime, Utc};
use uuid::Uuid;

/// Longest conversation title (its first message, on one line, cut), in characters.
pub const MAX_CONVERSATION_TITLE_CHARS: usize = 120;
/// Longest user message a turn keeps, in characters (the API's bound on a chat message).
pub const MAX_CONVERSATION_MESSAGE_CHARS: usize = 8000;
/// Longest answer a turn keeps, in characters (a longer one is cut, not refused).
pub const MAX_CONVERSATION_ANSWER_CHARS: usize = 32_000;
/// Largest JSON of one turn's messages, in bytes.
pub const MAX_CONVERSATION_TURN_JSON_BYTES: usize = 262_144;
/// Most conversations or turns one read returns.
pub const MAX_CONVERSATIONS_READ: u32 = 1000;

/// A conversation to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewConversation {
    /// Its id.
    pub id: Uuid,
    /// Its owner.
    pub user_id: Uuid,
    /// How the chat was opened: `authoring`, `coach` or `ops`.
    pub mode: String,
    /// The deployment it is about, if any (one of the owner's).
    pub deployment_id: Option<Uuid>,
    /// Its title: the first message on one line, 1..=[`MAX_CONVERSATION_TITLE_CHARS`].
    pub title: String,
    /// When it started (UTC).
    pub at: DateTime<Utc>,
}

/// A kept conversation as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversation {
    /// Its id.
    pub id: Uuid,
    /// Its owner.
    pub user_id: Uuid,
    /// How the chat was opened.
    pub mode: String,
    /// The deployment it is about, if any (`None` too once that deployment is deleted).
    pub deployment_id: Option<Uuid>,
    /// Its title.
    pub title: String,
    /// When it started.
    pub created_at: DateTime<Utc>,
    /// Its newest turn's time; `None` before its first turn was kept.
    pub last_turn_at: Option<DateTime<Utc>>,
    /// How many turns it keeps.
    pub turns: u64,
}

impl Conversation {
    /// When it was last active: its newest turn, else its start (what retention counts from).
    #[must_use]
    pub fn last_active_at(&self) -> DateTime<Utc> {
        self.last_turn_at.unwrap_or(self.created_at)
    }
}

/// One kept turn of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationTurn {
    /// The turn's id (its `chat_turns` row has the same).
    pub id: Uuid,
    /// Its conversation.
    pub conversation_id: Uuid,
    /// The conversation's owner.
    pub user_id: Uuid,
    /// Its place in the conversation, from 0 (given by the store when it is added).
    pub seq: u32,
    /// When it ran (UTC).
    pub at: DateTime<Utc>,
    /// What the user wrote.
    pub user_message: String,
    /// The coach's answer.
    pub answer: String,
    /// What the model loop added after the user's message, as a JSON array of the model's
    /// messages (assistant turns with their tool calls, tool results), bounded by the caller.
    pub messages: serde_json::Value,
}
