-- Outcome-scored trading memory (seed 003): the market at decision time, every directional
-- proposal with what the price did after it, and free-text annotations. Column names follow
-- seed 003 (`rsi_1h`, `btc_correlation`, `price_4h`, `outcome_grade`, ...) so its queries read
-- the same. Rows of `market_snapshots` and `trade_outcomes` are written by `record_tick` in the
-- tick's own transaction; the scoring columns are filled in later by the scorer (the backtest
-- loop, or the live runner's driver), never changed once `scored_at` is set.

-- One row per directional proposal (the symbol's indicators at the tick). Indicators are
-- statistics, stored as REAL; `btc_correlation` is against `reference_symbol`.
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

-- One row per directional proposal (open_long / open_short), executed or rejected. Prices and
-- PnL percentages are exact decimals (TEXT).
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
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
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
CREATE INDEX trade_outcomes_deployment_tick_idx ON trade_outcomes (deployment_id, tick_at DESC);
CREATE INDEX trade_outcomes_unscored_idx ON trade_outcomes (tick_at) WHERE scored_at IS NULL;

-- Free-text notes on an outcome or a ledger row (exactly one of the two). `tags` is a JSON array
-- of strings.
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
