-- The recall memory of seed 003 (#15): each outcome carries its proposal's reason, the regime of
-- its market snapshot and, once scored in full, its narrative (seed 003's observation text); the
-- narratives and the annotations (text and tags) are searchable in full text.

-- The proposal's reason (the `propose_order` tool's bound: 1..=280 characters).
ALTER TABLE trade_outcomes ADD COLUMN reason TEXT
    CONSTRAINT trade_outcomes_reason_len CHECK (reason IS NULL OR length(reason) BETWEEN 1 AND 280);
-- The market snapshot's regime, copied. SQLite adds a NOT NULL column in place only with a
-- non-null default: 'unknown' serves the rows of the ALTER alone (the backfill below replaces it
-- from each row's snapshot, and every insert names the column), so no row keeps it by omission.
ALTER TABLE trade_outcomes ADD COLUMN market_condition TEXT NOT NULL DEFAULT 'unknown'
    CONSTRAINT trade_outcomes_condition CHECK (
        market_condition IN ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown'));
UPDATE trade_outcomes SET market_condition = (
    SELECT m.market_condition FROM market_snapshots m WHERE m.id = trade_outcomes.snapshot_id);
-- Seed 003's observation text, written with the 24h scoring (NULL before).
ALTER TABLE trade_outcomes ADD COLUMN narrative TEXT;

-- The recall read (`OutcomeStore::recall_outcomes`) of one deployment, or of a regime, newest
-- first, ties by id: with `id` in the index the rows come in the read's order (no sort step).
DROP INDEX trade_outcomes_deployment_tick_idx;
CREATE INDEX trade_outcomes_deployment_tick_idx ON trade_outcomes (deployment_id, tick_at DESC, id);
CREATE INDEX trade_outcomes_condition_tick_idx ON trade_outcomes (market_condition, tick_at DESC, id);

-- Full text (FTS5, external content: the index holds no copy of the text). Rows are joined by
-- rowid: `trade_outcomes` and `trade_annotations` have TEXT primary keys, so their rowids are not
-- aliased and a VACUUM may renumber them; after a VACUUM run
-- `INSERT INTO trade_outcomes_fts(trade_outcomes_fts) VALUES ('rebuild')` (and the same for
-- `trade_annotations_fts`). Nothing in this workspace vacuums.
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
INSERT INTO trade_outcomes_fts (trade_outcomes_fts) VALUES ('rebuild');

-- An annotation's text and its tags (the JSON array: the tokenizer drops its punctuation).
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
INSERT INTO trade_annotations_fts (trade_annotations_fts) VALUES ('rebuild');
