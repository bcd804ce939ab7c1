-- SQLite mirror of postgres/20261129000145_chat_conversations.sql: kept chat conversations and
-- their turns. No RLS on SQLite (an embedded file has one user).
CREATE TABLE chat_conversations (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    mode          TEXT NOT NULL
                  CONSTRAINT chat_conversations_mode CHECK (mode IN ('authoring', 'coach', 'ops')),
    deployment_id TEXT REFERENCES deployments (id) ON DELETE SET NULL,
    title         TEXT NOT NULL
                  CONSTRAINT chat_conversations_title_len CHECK (length(title) BETWEEN 1 AND 120),
    created_at    TEXT NOT NULL,
    CONSTRAINT chat_conversations_id_user UNIQUE (id, user_id)
) STRICT;
CREATE INDEX chat_conversations_user_idx ON chat_conversations (user_id, created_at DESC);

CREATE TABLE chat_conversation_turns (
    id              TEXT PRIMARY KEY,
    conversation_id TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    seq             INTEGER NOT NULL CONSTRAINT chat_conversation_turns_seq CHECK (seq >= 0),
    at              TEXT NOT NULL,
    user_message    TEXT NOT NULL
                    CONSTRAINT chat_conversation_turns_message_len CHECK (length(user_message) BETWEEN 1 AND 8000),
    answer          TEXT NOT NULL
                    CONSTRAINT chat_conversation_turns_answer_len CHECK (length(answer) <= 32000),
    messages        TEXT NOT NULL
                    CONSTRAINT chat_conversation_turns_messages_json CHECK (
                        json_valid(messages) AND json_type(messages) = 'array' AND length(CAST(messages AS BLOB)) <= 262144),
    CONSTRAINT chat_conversation_turns_owner FOREIGN KEY (conversation_id, user_id)
        REFERENCES chat_conversations (id, user_id) ON DELETE CASCADE,
    CONSTRAINT chat_conversation_turns_order UNIQUE (conversation_id, seq)
) STRICT;
CREATE INDEX chat_conversation_turns_at_idx ON chat_conversation_turns (conversation_id, at);
