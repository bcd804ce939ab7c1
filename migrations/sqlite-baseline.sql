-- Generated from migrations/sqlite by the db crate's test `sqlite_baseline` (UPDATE_SQLITE_BASELINE=1 rewrites it):
-- what every migration builds on an empty database, given to an empty database in their stead. Do not edit.

CREATE TABLE _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
);

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
    lease_expires_at   TEXT, flatten_requested_at TEXT
    CONSTRAINT deployments_flatten_stopped CHECK (flatten_requested_at IS NULL OR status = 'stopped'), flatten_attempts INTEGER NOT NULL DEFAULT 0
    CONSTRAINT deployments_flatten_attempts_nonneg CHECK (flatten_attempts >= 0), flatten_retry_at TEXT, flatten_error TEXT
    CONSTRAINT deployments_flatten_error_len CHECK (length(flatten_error) BETWEEN 1 AND 1000), flattened_at TEXT
    CONSTRAINT deployments_flattened_requested CHECK (flattened_at IS NULL OR flatten_requested_at IS NOT NULL),
    FOREIGN KEY (skill_id, skill_version) REFERENCES skill_versions (skill_id, version)
) STRICT;

CREATE INDEX deployments_user_idx ON deployments (user_id);

CREATE TABLE decision_snapshots (
    id                 TEXT PRIMARY KEY,
    deployment_id      TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    tick_at            TEXT NOT NULL,
    system_prompt      TEXT,
    context            TEXT,
    steps              TEXT,
    proposal           TEXT,
    verdict            TEXT NOT NULL,
    model              TEXT NOT NULL,
    finish_reason      TEXT,
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd           TEXT NOT NULL DEFAULT '0',
    created_at         TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'), error TEXT
    CONSTRAINT decision_snapshots_error_len CHECK (length(error) <= 2000), model_error INTEGER NOT NULL DEFAULT 0
    CONSTRAINT decision_snapshots_model_error_bool CHECK (model_error IN (0, 1)), system_prompt_lines BLOB, context_lines BLOB, steps_lines BLOB,
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
        close_kind IN ('signal', 'flip', 'liquidation', 'external', 'stop', 'target')),
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
    created_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'), trigger_kind TEXT CONSTRAINT fills_trigger_kind CHECK (trigger_kind IN ('stop', 'target')),
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
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'), observations TEXT
    CONSTRAINT reflection_notes_observations_json
    CHECK (json_valid(observations) AND length(observations) <= 32000), accepted_by TEXT
    CONSTRAINT reflection_notes_accepted_by_len CHECK (length(accepted_by) BETWEEN 1 AND 100)
    CONSTRAINT reflection_notes_accepted_by_at CHECK (accepted_by IS NULL OR accepted_at IS NOT NULL),
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

CREATE TABLE live_runner_state (
    deployment_id   TEXT PRIMARY KEY REFERENCES deployments (id) ON DELETE CASCADE,
    tick_at         TEXT,
    state           TEXT CONSTRAINT live_runner_state_json CHECK (state IS NULL OR json_valid(state)),
    attempt_owner   TEXT,
    attempt_tick_at TEXT,
    updated_at      TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'), reflection_owner TEXT, reflection_lease_until TEXT,
    CONSTRAINT live_runner_state_complete CHECK ((tick_at IS NULL) = (state IS NULL))
) STRICT;

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

CREATE TABLE market_snapshots (
    id                    TEXT PRIMARY KEY,
    deployment_id         TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    decision_snapshot_id  TEXT NOT NULL REFERENCES decision_snapshots (id) ON DELETE CASCADE,
    tick_at               TEXT NOT NULL,
    symbol                TEXT NOT NULL,
    rsi_15m               REAL,
    rsi_1h                REAL,
    rsi_4h                REAL,
    macd_signal           TEXT,
    volatility_percentile REAL,
    volume_ratio          REAL,
    trend_strength        REAL,
    btc_correlation       REAL,
    reference_symbol      TEXT NOT NULL,
    market_condition      TEXT NOT NULL,
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    CONSTRAINT market_snapshots_rsi_range CHECK (
        (rsi_15m IS NULL OR rsi_15m BETWEEN 0 AND 100) AND (rsi_1h IS NULL OR rsi_1h BETWEEN 0 AND 100)
        AND (rsi_4h IS NULL OR rsi_4h BETWEEN 0 AND 100)),
    CONSTRAINT market_snapshots_macd_signal CHECK (macd_signal IN ('bullish', 'bearish', 'neutral')),
    CONSTRAINT market_snapshots_volatility_range CHECK (volatility_percentile BETWEEN 0 AND 100),
    CONSTRAINT market_snapshots_volume_nonneg CHECK (volume_ratio >= 0),
    CONSTRAINT market_snapshots_trend_range CHECK (trend_strength BETWEEN 0 AND 100),
    CONSTRAINT market_snapshots_correlation_range CHECK (btc_correlation BETWEEN -1 AND 1),
    CONSTRAINT market_snapshots_condition CHECK (
        market_condition IN ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown'))
) STRICT;

CREATE UNIQUE INDEX market_snapshots_tick_symbol_idx ON market_snapshots (decision_snapshot_id, symbol);

CREATE INDEX market_snapshots_deployment_tick_idx ON market_snapshots (deployment_id, tick_at DESC);

CREATE TABLE trade_outcomes (
    id                    TEXT PRIMARY KEY,
    deployment_id         TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    decision_snapshot_id  TEXT NOT NULL REFERENCES decision_snapshots (id) ON DELETE CASCADE,
    snapshot_id           TEXT NOT NULL REFERENCES market_snapshots (id) ON DELETE CASCADE,
    tick_at               TEXT NOT NULL,
    symbol                TEXT NOT NULL,
    direction             TEXT NOT NULL,
    confidence            INTEGER,
    entry_price           TEXT NOT NULL,
    predicted_stop        TEXT,
    predicted_target      TEXT,
    verdict               TEXT NOT NULL,
    price_1h              TEXT,
    price_4h              TEXT,
    price_24h             TEXT,
    pnl_percent_1h        TEXT,
    pnl_percent_4h        TEXT,
    pnl_percent_24h       TEXT,
    hit_target            INTEGER,
    hit_stop              INTEGER,
    first_hit             TEXT,
    max_favorable         TEXT,
    max_adverse           TEXT,
    outcome_grade         TEXT,
    scored_at             TEXT,
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'), reason TEXT
    CONSTRAINT trade_outcomes_reason_len CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 280), market_condition TEXT NOT NULL DEFAULT 'unknown'
    CONSTRAINT trade_outcomes_condition CHECK (
        market_condition IN ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown')), narrative TEXT,
    CONSTRAINT trade_outcomes_direction CHECK (direction IN ('long', 'short')),
    CONSTRAINT trade_outcomes_confidence_range CHECK (confidence BETWEEN 0 AND 100),
    CONSTRAINT trade_outcomes_entry_positive CHECK (CAST(entry_price AS REAL) > 0),
    CONSTRAINT trade_outcomes_verdict CHECK (verdict IN ('executed', 'rejected')),
    CONSTRAINT trade_outcomes_hits_bool CHECK (hit_target IN (0, 1) AND hit_stop IN (0, 1)),
    CONSTRAINT trade_outcomes_first_hit CHECK (first_hit IN ('target', 'stop', 'neither')),
    CONSTRAINT trade_outcomes_grade CHECK (outcome_grade IN ('A', 'B', 'C', 'D', 'F')),
    CONSTRAINT trade_outcomes_graded_when_scored CHECK (outcome_grade IS NULL OR scored_at IS NOT NULL)
) STRICT;

CREATE UNIQUE INDEX trade_outcomes_decision_idx ON trade_outcomes (decision_snapshot_id);

CREATE INDEX trade_outcomes_unscored_idx ON trade_outcomes (tick_at) WHERE scored_at IS NULL;

CREATE TABLE trade_annotations (
    id             TEXT PRIMARY KEY,
    deployment_id  TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    outcome_id     TEXT REFERENCES trade_outcomes (id) ON DELETE CASCADE,
    trade_id       TEXT REFERENCES trade_history (id) ON DELETE CASCADE,
    annotation     TEXT NOT NULL,
    tags           TEXT NOT NULL DEFAULT '[]',
    created_at     TEXT NOT NULL,
    CONSTRAINT trade_annotations_one_target CHECK ((outcome_id IS NULL) <> (trade_id IS NULL)),
    CONSTRAINT trade_annotations_annotation_len CHECK (length(annotation) BETWEEN 1 AND 2000),
    CONSTRAINT trade_annotations_tags_json CHECK (json_valid(tags) AND json_type(tags) = 'array')
) STRICT;

CREATE INDEX trade_annotations_deployment_idx ON trade_annotations (deployment_id, created_at DESC);

CREATE INDEX trade_annotations_outcome_idx ON trade_annotations (outcome_id);

CREATE INDEX trade_annotations_trade_idx ON trade_annotations (trade_id);

CREATE TRIGGER user_facts_audit_update AFTER UPDATE ON user_facts
WHEN OLD.fact IS NOT NEW.fact
  OR OLD.topic IS NOT NEW.topic
  OR OLD.source IS NOT NEW.source
  OR OLD.confidence IS NOT NEW.confidence
  OR OLD.skill_id IS NOT NEW.skill_id
  OR OLD.archived_at IS NOT NEW.archived_at
  OR OLD.updated_by IS NOT NEW.updated_by
BEGIN
    INSERT INTO user_fact_changes (fact_id, user_id, op, actor, db_role, old_fact, new_fact, reason)
    VALUES (NEW.id, NEW.user_id,
            CASE WHEN OLD.archived_at IS NULL AND NEW.archived_at IS NOT NULL THEN 'archive' ELSE 'update' END,
            NEW.updated_by, 'sqlite', OLD.fact, NEW.fact, NEW.archived_reason);
END;

CREATE TRIGGER user_facts_skill_owner_insert BEFORE INSERT ON user_facts
WHEN NEW.skill_id IS NOT NULL
 AND NOT EXISTS (SELECT 1 FROM skills s WHERE s.id = NEW.skill_id AND s.user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: user_facts_skill_owner');
END;

CREATE TRIGGER user_facts_skill_owner_update BEFORE UPDATE OF skill_id, user_id ON user_facts
WHEN NEW.skill_id IS NOT NULL
 AND NOT EXISTS (SELECT 1 FROM skills s WHERE s.id = NEW.skill_id AND s.user_id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: user_facts_skill_owner');
END;

CREATE INDEX trade_outcomes_symbol_tick_idx ON trade_outcomes (symbol, tick_at DESC);

CREATE INDEX trade_outcomes_deployment_tick_idx ON trade_outcomes (deployment_id, tick_at DESC, id);

CREATE INDEX trade_outcomes_condition_tick_idx ON trade_outcomes (market_condition, tick_at DESC, id);

CREATE VIRTUAL TABLE trade_outcomes_fts USING fts5 (
    narrative,
    content = 'trade_outcomes',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER trade_outcomes_fts_insert AFTER INSERT ON trade_outcomes BEGIN
    INSERT INTO trade_outcomes_fts (rowid, narrative) VALUES (new.rowid, new.narrative);
END;

CREATE TRIGGER trade_outcomes_fts_delete AFTER DELETE ON trade_outcomes BEGIN
    INSERT INTO trade_outcomes_fts (trade_outcomes_fts, rowid, narrative)
    VALUES ('delete', old.rowid, old.narrative);
END;

CREATE TRIGGER trade_outcomes_fts_update AFTER UPDATE OF narrative ON trade_outcomes BEGIN
    INSERT INTO trade_outcomes_fts (trade_outcomes_fts, rowid, narrative)
    VALUES ('delete', old.rowid, old.narrative);
    INSERT INTO trade_outcomes_fts (rowid, narrative) VALUES (new.rowid, new.narrative);
END;

CREATE VIRTUAL TABLE trade_annotations_fts USING fts5 (
    annotation,
    tags,
    content = 'trade_annotations',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61'
);

CREATE TRIGGER trade_annotations_fts_insert AFTER INSERT ON trade_annotations BEGIN
    INSERT INTO trade_annotations_fts (rowid, annotation, tags)
    VALUES (new.rowid, new.annotation, new.tags);
END;

CREATE TRIGGER trade_annotations_fts_delete AFTER DELETE ON trade_annotations BEGIN
    INSERT INTO trade_annotations_fts (trade_annotations_fts, rowid, annotation, tags)
    VALUES ('delete', old.rowid, old.annotation, old.tags);
END;

CREATE TRIGGER trade_annotations_fts_update AFTER UPDATE OF annotation, tags ON trade_annotations BEGIN
    INSERT INTO trade_annotations_fts (trade_annotations_fts, rowid, annotation, tags)
    VALUES ('delete', old.rowid, old.annotation, old.tags);
    INSERT INTO trade_annotations_fts (rowid, annotation, tags)
    VALUES (new.rowid, new.annotation, new.tags);
END;

CREATE TABLE news_items (
    id               TEXT PRIMARY KEY,
    feed             TEXT NOT NULL CONSTRAINT news_items_feed_len CHECK (length(feed) BETWEEN 1 AND 2000),
    source           TEXT NOT NULL CONSTRAINT news_items_source_len CHECK (length(source) BETWEEN 1 AND 200),
    guid             TEXT NOT NULL CONSTRAINT news_items_guid_len CHECK (length(guid) BETWEEN 1 AND 2000),
    title            TEXT NOT NULL CONSTRAINT news_items_title_len CHECK (length(title) BETWEEN 1 AND 500),
    link             TEXT CONSTRAINT news_items_link_len CHECK (link IS NULL OR length(link) BETWEEN 1 AND 2000),
    summary          TEXT CONSTRAINT news_items_summary_len CHECK (summary IS NULL OR length(summary) BETWEEN 1 AND 2000),
    published_at     TEXT NOT NULL,
    fetched_at       TEXT NOT NULL,
    symbols          TEXT NOT NULL DEFAULT '[]' CONSTRAINT news_items_symbols_json CHECK (json_valid(symbols)),
    sentiment        TEXT NOT NULL CONSTRAINT news_items_sentiment CHECK (CAST(sentiment AS REAL) BETWEEN -1 AND 1),
    sentiment_source TEXT NOT NULL CONSTRAINT news_items_sentiment_source CHECK (sentiment_source IN ('feed', 'lexicon')),
    importance       TEXT NOT NULL CONSTRAINT news_items_importance CHECK (CAST(importance AS REAL) BETWEEN 0 AND 1),
    CONSTRAINT news_items_feed_guid UNIQUE (feed, guid)
) STRICT;

CREATE INDEX news_items_published_idx ON news_items (published_at);

CREATE INDEX trade_history_closed_exit_idx ON trade_history (deployment_id, exit_tick_at)
    WHERE status = 'closed';

CREATE INDEX trade_history_closed_at_idx ON trade_history (deployment_id, closed_at)
    WHERE status = 'closed';

CREATE INDEX trade_history_closed_entry_idx
    ON trade_history (deployment_id, entry_tick_at DESC, id DESC) WHERE status = 'closed';

CREATE INDEX decision_snapshots_unconverted_idx ON decision_snapshots (deployment_id, tick_at)
    WHERE context_lines IS NULL;

CREATE TABLE prompt_scopes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    deployment_id TEXT NOT NULL UNIQUE REFERENCES deployments (id) ON DELETE CASCADE,
    next_seq      INTEGER NOT NULL DEFAULT 0 CONSTRAINT prompt_scopes_next_seq_nonneg CHECK (next_seq >= 0)
) STRICT;

CREATE TABLE prompt_blocks (
    scope_id   INTEGER NOT NULL REFERENCES prompt_scopes (id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL CONSTRAINT prompt_blocks_first_seq_nonneg CHECK (first_seq >= 0),
    line_count INTEGER NOT NULL CONSTRAINT prompt_blocks_line_count_pos CHECK (line_count > 0),
    body       BLOB NOT NULL,
    UNIQUE (scope_id, first_seq)
) STRICT;

CREATE TABLE held_lessons (
    id                TEXT PRIMARY KEY,
    note_id           TEXT NOT NULL REFERENCES reflection_notes (id) ON DELETE CASCADE,
    position          INTEGER NOT NULL CONSTRAINT held_lessons_position_nonneg CHECK (position >= 0),
    text              TEXT NOT NULL
                      CONSTRAINT held_lessons_text_len CHECK (length(text) BETWEEN 1 AND 2000),
    reasons           TEXT NOT NULL
                      CONSTRAINT held_lessons_reasons_json CHECK (json_valid(reasons) AND length(reasons) <= 2000),
    status            TEXT NOT NULL DEFAULT 'pending'
                      CONSTRAINT held_lessons_status CHECK (status IN ('pending', 'accepted', 'rejected')),
    reviewed_at       TEXT,
    reviewed_by       TEXT CONSTRAINT held_lessons_reviewed_by_len CHECK (length(reviewed_by) BETWEEN 1 AND 100),
    resulting_note_id TEXT REFERENCES reflection_notes (id) ON DELETE SET NULL,
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'), review_reason TEXT
    CONSTRAINT held_lessons_review_reason_len CHECK (length(review_reason) BETWEEN 1 AND 500)
    CONSTRAINT held_lessons_review_reason_reviewed CHECK (review_reason IS NULL OR status <> 'pending'),
    CONSTRAINT held_lessons_note_position UNIQUE (note_id, position),
    CONSTRAINT held_lessons_review CHECK (
        (status = 'pending') = (reviewed_at IS NULL) AND (reviewed_at IS NULL) = (reviewed_by IS NULL)),
    CONSTRAINT held_lessons_result CHECK (status = 'accepted' OR resulting_note_id IS NULL)
) STRICT;

CREATE INDEX held_lessons_status_idx ON held_lessons (status, created_at);

CREATE INDEX deployments_flatten_due_idx ON deployments (flatten_retry_at)
    WHERE status = 'stopped' AND flatten_requested_at IS NOT NULL AND flattened_at IS NULL;

CREATE TRIGGER deployments_stopped_final
BEFORE UPDATE OF status ON deployments
WHEN OLD.status = 'stopped' AND NEW.status <> 'stopped'
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: deployments_stopped_final');
END;

CREATE TABLE deployment_controls (
    id            TEXT PRIMARY KEY,
    deployment_id TEXT NOT NULL REFERENCES deployments (id) ON DELETE CASCADE,
    action        TEXT NOT NULL
                  CONSTRAINT deployment_controls_action CHECK (action IN ('pause', 'resume', 'stop')),
    flatten       INTEGER NOT NULL DEFAULT 0 CONSTRAINT deployment_controls_flatten_bool CHECK (flatten IN (0, 1)),
    requested_by  TEXT NOT NULL
                  CONSTRAINT deployment_controls_requested_by_len CHECK (length(requested_by) BETWEEN 1 AND 100),
    reason        TEXT
                  CONSTRAINT deployment_controls_reason_len CHECK (length(reason) BETWEEN 1 AND 500),
    requested_at  TEXT NOT NULL,
    from_status   TEXT NOT NULL
                  CONSTRAINT deployment_controls_from_status CHECK (from_status IN ('active', 'paused', 'stopped')),
    to_status     TEXT NOT NULL
                  CONSTRAINT deployment_controls_to_status CHECK (to_status IN ('active', 'paused', 'stopped')),
    CONSTRAINT deployment_controls_flatten_stop CHECK (NOT flatten OR action = 'stop'),
    CONSTRAINT deployment_controls_transition CHECK (
        (action = 'pause' AND from_status = 'active' AND to_status = 'paused')
        OR (action = 'resume' AND from_status = 'paused' AND to_status = 'active')
        OR (action = 'stop' AND to_status = 'stopped' AND (from_status <> 'stopped' OR flatten)))
) STRICT;

CREATE INDEX deployment_controls_deployment_idx
    ON deployment_controls (deployment_id, requested_at DESC, id);

CREATE TRIGGER held_lessons_review_final
BEFORE UPDATE ON held_lessons
WHEN OLD.status <> 'pending' AND (
    NEW.status IS NOT OLD.status
    OR NEW.reviewed_at IS NOT OLD.reviewed_at
    OR NEW.reviewed_by IS NOT OLD.reviewed_by
    OR NEW.review_reason IS NOT OLD.review_reason
    OR (OLD.resulting_note_id IS NOT NULL AND NEW.resulting_note_id IS NOT NULL
        AND NEW.resulting_note_id <> OLD.resulting_note_id))
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: held_lessons_review_final');
END;

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

CREATE INDEX deployments_claim_idx
    ON deployments (next_tick_at, id) WHERE status = 'active';

CREATE TABLE pending_actions (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    conversation_id TEXT REFERENCES chat_conversations (id) ON DELETE SET NULL,
    kind            TEXT NOT NULL
                    CONSTRAINT pending_actions_kind CHECK (kind IN (
                        'pause_deployment', 'resume_deployment', 'stop_deployment',
                        'save_skill_version')),
    deployment_id   TEXT REFERENCES deployments (id) ON DELETE CASCADE,
    skill_id        TEXT REFERENCES skills (id) ON DELETE CASCADE,
    arguments       TEXT NOT NULL
                    CONSTRAINT pending_actions_arguments_json CHECK (
                        json_valid(arguments) AND json_type(arguments) = 'object'
                        AND length(CAST(arguments AS BLOB)) <= 65536),
    summary         TEXT NOT NULL
                    CONSTRAINT pending_actions_summary_len CHECK (length(summary) BETWEEN 1 AND 500),
    created_at      TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CONSTRAINT pending_actions_status CHECK (status IN (
                        'pending', 'confirmed', 'discarded', 'expired', 'failed')),
    decided_at      TEXT,
    decided_by      TEXT
                    CONSTRAINT pending_actions_decided_by_len CHECK (length(decided_by) BETWEEN 1 AND 100),
    result          TEXT CONSTRAINT pending_actions_result_json CHECK (result IS NULL OR json_valid(result)),
    error           TEXT
                    CONSTRAINT pending_actions_error_len CHECK (length(error) BETWEEN 1 AND 1000),
    CONSTRAINT pending_actions_target CHECK (
        CASE WHEN kind = 'save_skill_version' THEN skill_id IS NOT NULL AND deployment_id IS NULL
             ELSE deployment_id IS NOT NULL AND skill_id IS NULL END),
    CONSTRAINT pending_actions_expiry CHECK (expires_at > created_at),
    CONSTRAINT pending_actions_decided CHECK ((status = 'pending') = (decided_at IS NULL)),
    CONSTRAINT pending_actions_decided_by CHECK (decided_by IS NULL OR status NOT IN ('pending', 'expired')),
    CONSTRAINT pending_actions_result CHECK (result IS NULL OR status = 'confirmed'),
    CONSTRAINT pending_actions_error CHECK ((error IS NOT NULL) = (status = 'failed'))
) STRICT;

CREATE INDEX pending_actions_user_idx ON pending_actions (user_id, created_at DESC, id);

CREATE INDEX pending_actions_expiry_idx ON pending_actions (expires_at) WHERE status = 'pending';

CREATE TRIGGER pending_actions_decided_final
BEFORE UPDATE ON pending_actions
WHEN OLD.status <> 'pending'
BEGIN
    SELECT RAISE(ABORT, 'CHECK constraint failed: pending_actions_decided_final');
END;

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
