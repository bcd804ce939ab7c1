-- Alerts (#45): a user's channels and the outbox the ticks write to (see the PostgreSQL
-- migration of the same name for what each table holds). The runner that delivers them needs
-- PostgreSQL; the tables are here so that a SQLite store records the same ticks.
CREATE TABLE alert_channels (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL CONSTRAINT alert_channels_name_len CHECK (length(name) BETWEEN 1 AND 100),
    kind       TEXT NOT NULL
               CONSTRAINT alert_channels_kind CHECK (kind IN ('webhook', 'slack', 'discord', 'telegram')),
    url        TEXT CONSTRAINT alert_channels_url CHECK (
                   length(url) BETWEEN 8 AND 2000 AND (url LIKE 'https://%' OR url LIKE 'http://%')),
    secret     TEXT CONSTRAINT alert_channels_secret_len CHECK (length(secret) BETWEEN 1 AND 500),
    chat_id    TEXT CONSTRAINT alert_channels_chat_id_len CHECK (length(chat_id) BETWEEN 1 AND 100),
    hint       TEXT NOT NULL CONSTRAINT alert_channels_hint_len CHECK (length(hint) BETWEEN 1 AND 200),
    events     TEXT NOT NULL CONSTRAINT alert_channels_events_len CHECK (length(events) BETWEEN 1 AND 500),
    created_at TEXT NOT NULL,
    CONSTRAINT alert_channels_target CHECK (
        (kind = 'webhook' AND url IS NOT NULL AND secret IS NOT NULL AND chat_id IS NULL)
        OR (kind IN ('slack', 'discord') AND url IS NOT NULL AND secret IS NULL AND chat_id IS NULL)
        OR (kind = 'telegram' AND url IS NULL AND secret IS NOT NULL AND chat_id IS NOT NULL))
);
CREATE INDEX alert_channels_user_idx ON alert_channels (user_id);

CREATE TABLE alert_events (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    deployment_id TEXT REFERENCES deployments (id) ON DELETE CASCADE,
    kind          TEXT NOT NULL CONSTRAINT alert_events_kind CHECK (kind IN (
                      'order_executed', 'position_closed', 'rejection', 'model_error',
                      'model_error_streak', 'halt', 'lesson_held', 'runner_lagging', 'test')),
    occurred_at   TEXT NOT NULL,
    text          TEXT NOT NULL CONSTRAINT alert_events_text_len CHECK (length(text) BETWEEN 1 AND 2000),
    data          TEXT NOT NULL DEFAULT '{}',
    created_at    TEXT NOT NULL
);
CREATE INDEX alert_events_user_idx ON alert_events (user_id, occurred_at DESC);

CREATE TABLE alert_deliveries (
    id               TEXT PRIMARY KEY,
    event_id         TEXT NOT NULL REFERENCES alert_events (id) ON DELETE CASCADE,
    channel_id       TEXT NOT NULL REFERENCES alert_channels (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status           TEXT NOT NULL DEFAULT 'pending'
                     CONSTRAINT alert_deliveries_status CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0 CONSTRAINT alert_deliveries_attempts_nonneg CHECK (attempts >= 0),
    next_attempt_at  TEXT NOT NULL,
    lease_owner      TEXT,
    lease_expires_at TEXT,
    last_error       TEXT CONSTRAINT alert_deliveries_error_len CHECK (length(last_error) BETWEEN 1 AND 1000),
    delivered_at     TEXT,
    created_at       TEXT NOT NULL,
    CONSTRAINT alert_deliveries_once UNIQUE (event_id, channel_id),
    CONSTRAINT alert_deliveries_delivered_at CHECK ((status = 'delivered') = (delivered_at IS NOT NULL))
);
CREATE INDEX alert_deliveries_due_idx ON alert_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX alert_deliveries_user_idx ON alert_deliveries (user_id, created_at DESC);
