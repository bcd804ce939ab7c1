-- SQLite mirror of postgres/20261130000170_backtest_jobs.sql: the bar files of backtest jobs,
-- stored once by their SHA-256, and the jobs. Workers lease jobs on PostgreSQL; the tables are
-- here so that the store's contract holds on both databases. No RLS on SQLite (an embedded
-- file has one user).
CREATE TABLE backtest_bars (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    sha256     TEXT NOT NULL CONSTRAINT backtest_bars_sha256 CHECK (
                   length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    format     TEXT NOT NULL CONSTRAINT backtest_bars_format CHECK (format IN ('csv', 'json')),
    bytes      BLOB NOT NULL
               CONSTRAINT backtest_bars_size CHECK (length(bytes) BETWEEN 1 AND 67108864),
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, sha256)
) STRICT;

CREATE TABLE backtest_jobs (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    batch_id         TEXT,
    label            TEXT CONSTRAINT backtest_jobs_label_len CHECK (length(label) BETWEEN 1 AND 200),
    spec             TEXT NOT NULL
                     CONSTRAINT backtest_jobs_spec CHECK (
                         json_valid(spec) AND json_type(spec) = 'object' AND length(CAST(spec AS BLOB)) <= 1048576),
    status           TEXT NOT NULL DEFAULT 'queued'
                     CONSTRAINT backtest_jobs_status CHECK (
                         status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    cost_limit_usd   TEXT NOT NULL DEFAULT '0'
                     CONSTRAINT backtest_jobs_cost_limit CHECK (CAST(cost_limit_usd AS REAL) >= 0),
    attempts         INTEGER NOT NULL DEFAULT 0 CONSTRAINT backtest_jobs_attempts CHECK (attempts >= 0),
    lease_owner      TEXT CONSTRAINT backtest_jobs_owner_len CHECK (length(lease_owner) BETWEEN 1 AND 200),
    lease_expires_at TEXT,
    heartbeat_at     TEXT,
    ticks_done       INTEGER NOT NULL DEFAULT 0 CONSTRAINT backtest_jobs_ticks_done CHECK (ticks_done >= 0),
    ticks_total      INTEGER CONSTRAINT backtest_jobs_ticks_total CHECK (ticks_total >= 0),
    cost_usd         TEXT NOT NULL DEFAULT '0' CONSTRAINT backtest_jobs_cost CHECK (CAST(cost_usd AS REAL) >= 0),
    deployment_id    TEXT,
    result           TEXT CONSTRAINT backtest_jobs_result CHECK (
                         json_valid(result) AND json_type(result) = 'object'),
    report_html      TEXT,
    error            TEXT CONSTRAINT backtest_jobs_error_len CHECK (length(error) BETWEEN 1 AND 2000),
    created_at       TEXT NOT NULL,
    started_at       TEXT,
    finished_at      TEXT,
    CONSTRAINT backtest_jobs_lease CHECK ((status = 'running') = (lease_owner IS NOT NULL)),
    CONSTRAINT backtest_jobs_finished CHECK (
        (status IN ('done', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT backtest_jobs_done CHECK (status <> 'done' OR result IS NOT NULL),
    CONSTRAINT backtest_jobs_failed CHECK (status <> 'failed' OR error IS NOT NULL)
) STRICT;
CREATE INDEX backtest_jobs_claim_idx ON backtest_jobs (created_at, id)
    WHERE status IN ('queued', 'running');
CREATE INDEX backtest_jobs_user_idx ON backtest_jobs (user_id, created_at DESC);
CREATE INDEX backtest_jobs_batch_idx ON backtest_jobs (batch_id, created_at)
    WHERE batch_id IS NOT NULL;
