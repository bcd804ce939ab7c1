//! `ConversationStore`: kept chat conversations and their turns.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use uuid::Uuid;

use super::{Affected as _, Backend, Dialect, query};
use crate::codec::{RowExt, check_len, check_limit, truncate_chars};
use crate::error::ctx;
use crate::traits::ConversationStore;
use crate::{
    Conversation, ConversationTurn, DbError, MAX_CONVERSATION_ANSWER_CHARS,
    MAX_CONVERSATION_MESSAGE_CHARS, MAX_CONVERSATION_TITLE_CHARS, MAX_CONVERSATION_TURN_JSON_BYTES,
    MAX_CONVERSATIONS_READ, NewConversation,
};

/// The mode names the `chat_conversations_mode` check accepts.
const MODES: [&str; 3] = ["authoring", "coach", "ops"];

/// A conversation with its turn count and newest turn's time.
const SELECT_CONVERSATIONS: &str = "SELECT c.id, c.user_id, c.mode, c.deployment_id, c.title, \
     c.created_at, \
     (SELECT count(*) FROM chat_conversation_turns t WHERE t.conversation_id = c.id) AS turns, \
     (SELECT max(t.at) FROM chat_conversation_turns t WHERE t.conversation_id = c.id) \
     AS last_turn_at \
     FROM chat_conversations c";

fn conversation_from_row<R: RowExt>(r: &R) -> Result<Conversation, DbError> {
    Ok(Conversation {
        id: r.uuid("id")?,
        user_id: r.uuid("user_id")?,
        mode: r.text("mode")?,
        deployment_id: r.opt_uuid("deployment_id")?,
        title: r.text("title")?,
        created_at: r.ts("created_at")?,
        last_turn_at: r.opt_ts("last_turn_at")?,
        turns: r.count("turns")?,
    })
}

fn turn_from_row<R: RowExt>(r: &R) -> Result<ConversationTurn, DbError> {
    let seq = r.int("seq")?;
    Ok(ConversationTurn {
        id: r.uuid("id")?,
        conversation_id: r.uuid("conversation_id")?,
        user_id: r.uuid("user_id")?,
        seq: u32::try_from(seq).map_err(|e| DbError::Decode {
            column: "seq".to_owned(),
            detail: e.to_string(),
        })?,
        at: r.ts("at")?,
        user_message: r.text("user_message")?,
        answer: r.text("answer")?,
        messages: r.json("messages")?,
    })
}

impl<S: Backend<Db = D>, D: Dialect> ConversationStore for S {
    async fn start_conversation(&self, c: &NewConversation) -> Result<(), DbError> {
        if !MODES.contains(&c.mode.as_str()) {
            return Err(DbError::Invalid {
                what: "conversation mode",
                detail: format!("{:?} is not one of authoring, coach, ops", c.mode),
            });
        }
        check_len(
            "conversation title",
            &c.title,
            1,
            MAX_CONVERSATION_TITLE_CHARS,
        )?;
        query(
            "INSERT INTO chat_conversations (id, user_id, mode, deployment_id, title, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(D::id(c.id))
        .bind(D::id(c.user_id))
        .bind(&c.mode)
        .bind(D::oid(c.deployment_id))
        .bind(&c.title)
        .bind(D::ts(c.at))
        .execute(self.pool())
        .await
        .map_err(ctx("starting a conversation"))?;
        Ok(())
    }

    async fn conversation(&self, user_id: Uuid, id: Uuid) -> Result<Conversation, DbError> {
        let sql = format!("{SELECT_CONVERSATIONS} WHERE c.id = $1 AND c.user_id = $2");
        let row = query(&sql)
            .bind(D::id(id))
            .bind(D::id(user_id))
            .fetch_optional(self.pool())
            .await
            .map_err(ctx("reading a conversation"))?
            .ok_or_else(|| DbError::not_found("conversation", id))?;
        conversation_from_row(&row)
    }

    async fn conversations(&self, user_id: Uuid, limit: u32) -> Result<Vec<Conversation>, DbError> {
        let limit = check_limit("conversations limit", limit, MAX_CONVERSATIONS_READ)?;
        let sql = format!(
            "SELECT * FROM ({SELECT_CONVERSATIONS} WHERE c.user_id = $1) x \
             ORDER BY coalesce(x.last_turn_at, x.created_at) DESC, x.id LIMIT $2"
        );
        let rows = query(&sql)
            .bind(D::id(user_id))
            .bind(limit)
            .fetch_all(self.pool())
            .await
            .map_err(ctx("listing conversations"))?;
        rows.iter().map(conversation_from_row).collect()
    }

    async fn add_conversation_turn(&self, t: &ConversationTurn) -> Result<u32, DbError> {
        check_len(
            "conversation message",
            &t.user_message,
            1,
            MAX_CONVERSATION_MESSAGE_CHARS,
        )?;
        if !t.messages.is_array() {
            return Err(DbError::Invalid {
                what: "conversation turn messages",
                detail: "not a JSON array".to_owned(),
            });
        }
        let bytes = t.messages.to_string().len();
        if bytes > MAX_CONVERSATION_TURN_JSON_BYTES {
            return Err(DbError::Invalid {
                what: "conversation turn messages",
                detail: format!(
                    "{bytes} bytes of JSON; at most {MAX_CONVERSATION_TURN_JSON_BYTES}"
                ),
            });
        }
        let answer = truncate_chars(&t.answer, MAX_CONVERSATION_ANSWER_CHARS);
        let row = query(
            "INSERT INTO chat_conversation_turns \
             (id, conversation_id, user_id, seq, at, user_message, answer, messages) \
             SELECT $1, $2, $3, coalesce(max(seq) + 1, 0), $4, $5, $6, $7 \
             FROM chat_conversation_turns WHERE conversation_id = $2 \
             RETURNING seq",
        )
        .bind(D::id(t.id))
        .bind(D::id(t.conversation_id))
        .bind(D::id(t.user_id))
        .bind(D::ts(t.at))
        .bind(&t.user_message)
        .bind(answer)
        .bind(Json(&t.messages))
        .fetch_one(self.pool())
        .await
        .map_err(ctx("adding a conversation turn"))?;
        let seq = row.int("seq")?;
        u32::try_from(seq).map_err(|e| DbError::Decode {
            column: "seq".to_owned(),
            detail: e.to_string(),
        })
    }

    async fn conversation_turns(
        &self,
        user_id: Uuid,
        id: Uuid,
        limit: u32,
    ) -> Result<Vec<ConversationTurn>, DbError> {
        let limit = check_limit("conversation turns limit", limit, MAX_CONVERSATIONS_READ)?;
        let rows = query(
            "SELECT * FROM (SELECT * FROM chat_conversation_turns \
             WHERE conversation_id = $1 AND user_id = $2 ORDER BY seq DESC LIMIT $3) x \
             ORDER BY x.seq",
        )
        .bind(D::id(id))
        .bind(D::id(user_id))
        .bind(limit)
        .fetch_all(self.pool())
        .await
        .map_err(ctx("reading a conversation's turns"))?;
        rows.iter().map(turn_from_row).collect()
    }

    async fn delete_conversation(&self, user_id: Uuid, id: Uuid) -> Result<bool, DbError> {
        let done = query("DELETE FROM chat_conversations WHERE id = $1 AND user_id = $2")
            .bind(D::id(id))
            .bind(D::id(user_id))
            .execute(self.pool())
            .await
            .map_err(ctx("deleting a conversation"))?;
        Ok(done.rows_affected() > 0)
    }

    async fn purge_conversations(&self, idle_before: DateTime<Utc>) -> Result<u64, DbError> {
        let done = query(
            "DELETE FROM chat_conversations WHERE coalesce(\
             (SELECT max(t.at) FROM chat_conversation_turns t \
             WHERE t.conversation_id = chat_conversations.id), created_at) < $1",
        )
        .bind(D::ts(idle_before))
        .execute(self.pool())
        .await
        .map_err(ctx("purging idle conversations"))?;
        Ok(done.rows_affected())
    }
}
