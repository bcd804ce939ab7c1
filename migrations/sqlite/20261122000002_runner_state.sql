-- SQLite mirror of postgres/20261122000004_runner_state.sql: the state a runner carries between
-- ticks of a deployment (opaque JSON), written by record_tick in the tick's own transaction and
-- only forward (tick_at never goes back).
CREATE TABLE live_runner_state (
    deployment_id   TEXT PRIMARY KEY REFERENCES deployments (id) ON DELETE CASCADE,
    tick_at         TEXT,
    state           TEXT CONSTRAINT live_runner_state_json CHECK (state IS NULL OR json_valid(state)),
    attempt_owner   TEXT,
    attempt_tick_at TEXT,
    updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    CONSTRAINT live_runner_state_complete CHECK ((tick_at IS NULL) = (state IS NULL))
) STRICT;
