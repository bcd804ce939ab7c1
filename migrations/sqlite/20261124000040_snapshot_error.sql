-- Provider failures are visible (#20 item 1), as on PostgreSQL: the model loop's error text
-- (cut by the tick to types::MAX_STORED_ERROR_CHARS) and whether the tick ended on a model
-- failure (provider error or deadline).
ALTER TABLE decision_snapshots ADD COLUMN error TEXT
    CONSTRAINT decision_snapshots_error_len CHECK (length(error) <= 2000);
ALTER TABLE decision_snapshots ADD COLUMN model_error INTEGER NOT NULL DEFAULT 0
    CONSTRAINT decision_snapshots_model_error_bool CHECK (model_error IN (0, 1));
