-- SQLite mirror of migrations/postgres (same tables, columns, constraint names and indexes).
-- Dialect mapping: uuid -> TEXT (lowercase hyphenated); numeric -> TEXT (the exact decimal string,
-- never REAL); timestamptz -> TEXT in RFC 3339 UTC with exactly six fractional digits
-- ('2026-06-04T10:00:00.000000Z') so text order is time order; jsonb / text[] -> TEXT (JSON);
-- boolean -> INTEGER 0/1. Tables are STRICT so no value silently changes type.
-- No row-level security, roles or auth schema: an embedded file has one user. `users` stands in
-- for auth.users.

CREATE TABLE users (
    id    TEXT PRIMARY KEY,
    email TEXT
) STRICT;

CREATE TABLE skills (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL CONSTRAINT skills_name_len CHECK (length(name) BETWEEN 1 AND 200),
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
) STRICT;
CREATE INDEX skills_user_idx ON skills (user_id);

CREATE TABLE skill_versions (
    skill_id   TEXT NOT NULL REFERENCES skills (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL CONSTRAINT skill_versions_version_positive CHECK (version >= 1),
    body       TEXT NOT NULL CONSTRAINT skill_versions_body_json CHECK (json_valid(body)),
    model      TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    PRIMARY KEY (skill_id, version)
) STRICT;

CREATE TABLE deployments (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    skill_id           TEXT NOT NULL,
    skill_version      INTEGER NOT NULL,
    broker             TEXT NOT NULL CONSTRAINT deployments_broker CHECK (broker IN ('paper', 'hyperliquid')),
    status             TEXT NOT NULL DEFAULT 'active'
                       CONSTRAINT deployments_status CHECK (status IN ('active', 'paused', 'stopped')),
    initial_equity_usd TEXT NOT NULL
                       CONSTRAINT deployments_initial_equity CHECK (CAST(initial_equity_usd AS REAL) >= 0),
    equity_usd         TEXT NOT NULL,
    config             TEXT NOT NULL DEFAULT '{}' CONSTRAINT deployments_config_json CHECK (json_valid(config)),
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    next_tick_at       TEXT,
    lease_owner        TEXT,
    lease_expires_at   TEXT,
    FOREIGN KEY (skill_id, skill_version) REFERENCES skill_versions (skill_id, version)
) STRICT;
CREATE INDEX deployments_user_idx ON deployments (user_id);
CREATE INDEX deployments_due_idx ON deployments (next_tick_at) WHERE status = 'active';

CREATE TABLE decision_snapshots (
    id                 TEXT PRIMARY KEY,
    deployment_id      TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    tick_at            TEXT NOT NULL,
    system_prompt      TEXT NOT NULL,
    context            TEXT NOT NULL,
    steps              TEXT NOT NULL DEFAULT '[]',
    proposal           TEXT,
    verdict            TEXT NOT NULL,
    model              TEXT NOT NULL,
    finish_reason      TEXT,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           TEXT NOT NULL DEFAULT '0',
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    CONSTRAINT decision_snapshots_tokens_nonneg CHECK (
        input_tokens >= 0 AND output_tokens >= 0 AND cache_read_tokens >= 0 AND cache_write_tokens >= 0),
    CONSTRAINT decision_snapshots_cost_nonneg CHECK (CAST(cost_usd AS REAL) >= 0)
) STRICT;
CREATE UNIQUE INDEX decision_snapshots_deployment_tick_idx ON decision_snapshots (deployment_id, tick_at DESC);

CREATE TABLE trade_history (
    id                TEXT PRIMARY KEY,
    deployment_id     TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    skill_id          TEXT NOT NULL,
    skill_version     INTEGER NOT NULL,
    symbol            TEXT NOT NULL,
    side              TEXT NOT NULL CONSTRAINT trade_history_side CHECK (side IN ('long', 'short')),
    status            TEXT NOT NULL CONSTRAINT trade_history_status CHECK (status IN ('open', 'closed')),
    entry_tick_at     TEXT NOT NULL,
    entry_price       TEXT NOT NULL,
    entry_size_usd    TEXT NOT NULL,
    entry_leverage    TEXT,
    entry_reason      TEXT,
    entry_snapshot_id TEXT REFERENCES decision_snapshots (id) ON DELETE SET NULL,
    entry_regime_tag  TEXT CONSTRAINT trade_history_regime CHECK (
        entry_regime_tag IN ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown')),
    opened_qty        TEXT NOT NULL,
    open_qty          TEXT NOT NULL,
    exit_tick_at      TEXT,
    exit_price        TEXT,
    exit_reason       TEXT,
    exit_snapshot_id  TEXT REFERENCES decision_snapshots (id) ON DELETE SET NULL,
    close_kind        TEXT CONSTRAINT trade_history_close_kind CHECK (
        close_kind IN ('signal', 'flip', 'liquidation', 'external')),
    holding_minutes   TEXT,
    realized_pnl_usd  TEXT NOT NULL DEFAULT '0',
    fees_usd          TEXT NOT NULL DEFAULT '0',
    mfe_usd           TEXT NOT NULL DEFAULT '0',
    mae_usd           TEXT NOT NULL DEFAULT '0',
    exit_size_usd     TEXT NOT NULL DEFAULT '0',
    broker_reconciled INTEGER NOT NULL DEFAULT 0 CHECK (broker_reconciled IN (0, 1)),
    closed_at         TEXT,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    updated_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    FOREIGN KEY (skill_id, skill_version) REFERENCES skill_versions (skill_id, version),
    CONSTRAINT trade_history_qty CHECK (
        CAST(open_qty AS REAL) >= 0 AND CAST(opened_qty AS REAL) >= CAST(open_qty AS REAL)),
    CONSTRAINT trade_history_excursions CHECK (CAST(mfe_usd AS REAL) >= 0 AND CAST(mae_usd AS REAL) <= 0),
    CONSTRAINT trade_history_closed_complete CHECK (
        status = 'open'
        OR (CAST(open_qty AS REAL) = 0 AND exit_tick_at IS NOT NULL AND exit_price IS NOT NULL
            AND close_kind IS NOT NULL AND closed_at IS NOT NULL)),
    CONSTRAINT trade_history_open_no_close_kind CHECK (status = 'closed' OR close_kind IS NULL)
) STRICT;
CREATE INDEX trade_history_deployment_entry_idx ON trade_history (deployment_id, entry_tick_at DESC);
CREATE INDEX trade_history_skill_entry_idx ON trade_history (skill_id, skill_version, entry_tick_at DESC);
CREATE UNIQUE INDEX trade_history_one_open_idx ON trade_history (deployment_id, symbol) WHERE status = 'open';

CREATE TABLE fills (
    deployment_id   TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    broker_fill_id  TEXT NOT NULL,
    symbol          TEXT NOT NULL,
    side            TEXT NOT NULL CONSTRAINT fills_side CHECK (side IN ('buy', 'sell')),
    qty             TEXT NOT NULL CONSTRAINT fills_qty_positive CHECK (CAST(qty AS REAL) > 0),
    price           TEXT NOT NULL CONSTRAINT fills_price_positive CHECK (CAST(price AS REAL) > 0),
    fee_usd         TEXT NOT NULL,
    time            TEXT NOT NULL,
    snapshot_id     TEXT REFERENCES decision_snapshots (id) ON DELETE SET NULL,
    client_order_id TEXT,
    liquidation     INTEGER NOT NULL DEFAULT 0 CONSTRAINT fills_liquidation_bool CHECK (liquidation IN (0, 1)),
    trade_id        TEXT REFERENCES trade_history (id) ON DELETE SET NULL,
    flip_trade_id   TEXT REFERENCES trade_history (id) ON DELETE SET NULL,
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    PRIMARY KEY (deployment_id, broker_fill_id)
) STRICT;
CREATE INDEX fills_deployment_time_idx ON fills (deployment_id, time);

CREATE TABLE reflection_notes (
    id                TEXT PRIMARY KEY,
    skill_id          TEXT NOT NULL,
    skill_version     INTEGER NOT NULL,
    deployment_id     TEXT REFERENCES deployments (id) ON DELETE CASCADE,
    status            TEXT NOT NULL DEFAULT 'active'
                      CONSTRAINT reflection_notes_status CHECK (status IN ('active', 'superseded', 'pending_review')),
    generated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    window_start      TEXT NOT NULL,
    window_end        TEXT NOT NULL,
    trades_considered INTEGER NOT NULL CONSTRAINT reflection_notes_trades_nonneg CHECK (trades_considered >= 0),
    lessons_text      TEXT NOT NULL
                      CONSTRAINT reflection_notes_lessons_len CHECK (length(lessons_text) BETWEEN 1 AND 2000),
    model_used        TEXT NOT NULL,
    input_tokens      INTEGER,
    output_tokens     INTEGER,
    cost_usd          TEXT,
    lint_flagged      INTEGER NOT NULL DEFAULT 0 CONSTRAINT reflection_notes_lint_bool CHECK (lint_flagged IN (0, 1)),
    lint_reason       TEXT CONSTRAINT reflection_notes_lint_reason_len CHECK (length(lint_reason) <= 500),
    superseded_at     TEXT,
    superseded_by     TEXT REFERENCES reflection_notes (id) ON DELETE SET NULL,
    accepted_at       TEXT,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    FOREIGN KEY (skill_id, skill_version) REFERENCES skill_versions (skill_id, version),
    CONSTRAINT reflection_notes_window CHECK (window_start <= window_end),
    CONSTRAINT reflection_notes_lint CHECK (lint_flagged = 1 OR lint_reason IS NULL),
    CONSTRAINT reflection_notes_pending_is_flagged CHECK (status <> 'pending_review' OR lint_flagged = 1)
) STRICT;
CREATE UNIQUE INDEX reflection_notes_active_per_deployment_idx
    ON reflection_notes (deployment_id) WHERE status = 'active' AND deployment_id IS NOT NULL;
CREATE UNIQUE INDEX reflection_notes_active_per_skill_idx
    ON reflection_notes (skill_id, skill_version) WHERE status = 'active' AND deployment_id IS NULL;
CREATE INDEX reflection_notes_deployment_generated_idx ON reflection_notes (deployment_id, generated_at DESC);
CREATE INDEX reflection_notes_skill_generated_idx ON reflection_notes (skill_id, skill_version, generated_at DESC);

CREATE TABLE reflection_runs (
    id            TEXT PRIMARY KEY,
    skill_id      TEXT NOT NULL,
    skill_version INTEGER NOT NULL,
    deployment_id TEXT REFERENCES deployments (id) ON DELETE CASCADE,
    started_at    TEXT NOT NULL,
    finished_at   TEXT NOT NULL,
    outcome       TEXT NOT NULL CONSTRAINT reflection_runs_outcome CHECK (outcome IN ('succeeded', 'failed')),
    error         TEXT CONSTRAINT reflection_runs_error_len CHECK (length(error) <= 2000),
    note_id       TEXT REFERENCES reflection_notes (id) ON DELETE SET NULL,
    model         TEXT NOT NULL,
    input_tokens  INTEGER,
    output_tokens INTEGER,
    cost_usd      TEXT,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    FOREIGN KEY (skill_id, skill_version) REFERENCES skill_versions (skill_id, version),
    CONSTRAINT reflection_runs_outcome_shape CHECK (
        (outcome = 'succeeded' AND error IS NULL) OR (outcome = 'failed' AND error IS NOT NULL AND note_id IS NULL))
) STRICT;
CREATE INDEX reflection_runs_deployment_idx ON reflection_runs (deployment_id, started_at DESC);

CREATE TABLE user_facts (
    id                 TEXT PRIMARY KEY,
    user_id            TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    skill_id           TEXT REFERENCES skills (id) ON DELETE CASCADE,
    fact               TEXT NOT NULL CONSTRAINT user_facts_fact_len CHECK (length(fact) BETWEEN 4 AND 500),
    source             TEXT NOT NULL CONSTRAINT user_facts_source CHECK (source IN ('chat', 'profile', 'inferred')),
    confidence         TEXT NOT NULL CONSTRAINT user_facts_confidence CHECK (confidence IN ('asserted', 'inferred')),
    topic              TEXT CONSTRAINT user_facts_topic_len CHECK (length(topic) BETWEEN 1 AND 32),
    last_referenced_at TEXT,
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    archived_at        TEXT,
    archived_reason    TEXT CONSTRAINT user_facts_archived_reason CHECK (
        archived_reason IN ('user_deleted', 'user_corrected', 'agent_forget')),
    updated_by         TEXT,
    CONSTRAINT user_facts_archive_shape CHECK ((archived_at IS NULL) = (archived_reason IS NULL))
) STRICT;
-- SQLite sorts NULLs first in DESC order; the query says NULLS LAST explicitly.
CREATE INDEX user_facts_active_idx ON user_facts (user_id, last_referenced_at DESC) WHERE archived_at IS NULL;

CREATE TABLE user_fact_changes (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    fact_id    TEXT NOT NULL REFERENCES user_facts (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    op         TEXT NOT NULL CONSTRAINT user_fact_changes_op CHECK (op IN ('insert', 'update', 'archive')),
    actor      TEXT,
    db_role    TEXT NOT NULL,
    jwt_sub    TEXT,
    changed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    old_fact   TEXT,
    new_fact   TEXT,
    reason     TEXT
) STRICT;
CREATE INDEX user_fact_changes_fact_idx ON user_fact_changes (fact_id, id);

CREATE TRIGGER user_facts_audit_insert AFTER INSERT ON user_facts
BEGIN
    INSERT INTO user_fact_changes (fact_id, user_id, op, actor, db_role, old_fact, new_fact, reason)
    VALUES (NEW.id, NEW.user_id, 'insert', NEW.updated_by, 'sqlite', NULL, NEW.fact, NEW.archived_reason);
END;

CREATE TRIGGER user_facts_audit_update AFTER UPDATE ON user_facts
WHEN OLD.fact IS NOT NEW.fact
  OR OLD.topic IS NOT NEW.topic
  OR OLD.source IS NOT NEW.source
  OR OLD.confidence IS NOT NEW.confidence
  OR OLD.skill_id IS NOT NEW.skill_id
  OR OLD.archived_at IS NOT NEW.archived_at
BEGIN
    INSERT INTO user_fact_changes (fact_id, user_id, op, actor, db_role, old_fact, new_fact, reason)
    VALUES (NEW.id, NEW.user_id,
            CASE WHEN OLD.archived_at IS NULL AND NEW.archived_at IS NOT NULL THEN 'archive' ELSE 'update' END,
            NEW.updated_by, 'sqlite', OLD.fact, NEW.fact, NEW.archived_reason);
END;

CREATE TABLE market_events (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CONSTRAINT market_events_kind_len CHECK (length(kind) BETWEEN 1 AND 64),
    title        TEXT NOT NULL CONSTRAINT market_events_title_len CHECK (length(title) BETWEEN 1 AND 500),
    symbols      TEXT NOT NULL DEFAULT '[]' CONSTRAINT market_events_symbols_json CHECK (json_valid(symbols)),
    scheduled_at TEXT NOT NULL,
    importance   TEXT NOT NULL CONSTRAINT market_events_importance CHECK (CAST(importance AS REAL) BETWEEN 0 AND 1),
    source       TEXT NOT NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')
) STRICT;
CREATE INDEX market_events_scheduled_idx ON market_events (scheduled_at);
