-- SQLite mirror of postgres/20261123000005_chat_turns.sql: one row per chat-coach turn (model,
-- steps, token usage, cost). No RLS on SQLite (an embedded file has one user).
CREATE TABLE chat_turns (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    at                 TEXT NOT NULL,
    mode               TEXT NOT NULL CONSTRAINT chat_turns_mode CHECK (mode IN ('authoring', 'coach', 'ops')),
    model              TEXT NOT NULL CONSTRAINT chat_turns_model_len CHECK (length(model) BETWEEN 1 AND 200),
    steps              INTEGER NOT NULL CONSTRAINT chat_turns_steps CHECK (steps >= 0),
    input_tokens       INTEGER NOT NULL CONSTRAINT chat_turns_input CHECK (input_tokens >= 0),
    output_tokens      INTEGER NOT NULL CONSTRAINT chat_turns_output CHECK (output_tokens >= 0),
    cache_read_tokens  INTEGER NOT NULL CONSTRAINT chat_turns_cache_read CHECK (cache_read_tokens >= 0),
    cache_write_tokens INTEGER NOT NULL CONSTRAINT chat_turns_cache_write CHECK (cache_write_tokens >= 0),
    cost_usd           TEXT NOT NULL,
    error              TEXT CONSTRAINT chat_turns_error_len CHECK (length(error) <= 2000),
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
) STRICT;
CREATE INDEX chat_turns_user_idx ON chat_turns (user_id, at DESC);
