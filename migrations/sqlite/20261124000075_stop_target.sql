-- Stops and targets executed by the broker (#16 item 4): a round trip can end at its stop or its
-- target, and a fill says which of the two resting levels made it.
--
-- SQLite cannot alter a CHECK constraint, and rebuilding `trade_history` would need foreign keys
-- off, which sqlx's migration transaction does not allow (dropping the table would cascade into
-- `trade_outcomes` and null `fills.trade_id`). The constraint only widens (every stored value
-- stays allowed), so its text is edited in the schema, the procedure SQLite documents for
-- loosening a CHECK (https://www.sqlite.org/lang_altertable.html#otheralter); the ALTER below
-- then bumps the schema version, so every connection re-reads the schema.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(sql,
    'close_kind IN (''signal'', ''flip'', ''liquidation'', ''external''))',
    'close_kind IN (''signal'', ''flip'', ''liquidation'', ''external'', ''stop'', ''target''))')
WHERE type = 'table' AND name = 'trade_history';
PRAGMA writable_schema = OFF;

-- NULL for market orders and liquidations (and every fill stored before this migration).
ALTER TABLE fills ADD COLUMN trigger_kind TEXT CONSTRAINT fills_trigger_kind CHECK (trigger_kind IN ('stop', 'target'));
