-- Content-addressed snapshot text (#17 item 1): a snapshot's system prompt, user message and steps
-- are stored as lists of line numbers (`*_lines`: runs of `seq`s, see
-- crates/db/src/imp/prompt_lines.rs), each distinct line once per deployment, the new lines of a
-- write together in one zstd-compressed `prompt_blocks` row (`proposal` and `verdict` stay JSON:
-- small, and what one queries). `system_prompt` / `context` hold the texts only for rows written
-- before this migration, until the store converts them (at connect, in batches: the partial index
-- finds them); such a row keeps its `steps` JSON, a new row leaves it NULL.
ALTER TABLE decision_snapshots ADD COLUMN system_prompt_lines BLOB;
ALTER TABLE decision_snapshots ADD COLUMN context_lines BLOB;
ALTER TABLE decision_snapshots ADD COLUMN steps_lines BLOB;

-- SQLite cannot drop a NOT NULL constraint, and rebuilding `decision_snapshots` would need
-- foreign keys off, which sqlx's migration transaction does not allow. Dropping a NOT NULL only
-- loosens the table (every stored row stays valid), so its text is edited in the schema, the
-- procedure SQLite documents (https://www.sqlite.org/lang_altertable.html#otheralter). After the
-- ALTERs (an ALTER after the edit would splice its column at an offset of the old text), and
-- `RESET` re-reads the schema on this connection, which goes on to convert the old rows; the
-- DDL below bumps the schema version for every other connection.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(replace(replace(sql,
    'system_prompt      TEXT NOT NULL,', 'system_prompt      TEXT,'),
    'context            TEXT NOT NULL,', 'context            TEXT,'),
    'steps              TEXT NOT NULL DEFAULT ''[]'',', 'steps              TEXT,')
WHERE type = 'table' AND name = 'decision_snapshots';
PRAGMA writable_schema = RESET;

-- The rows still to convert (none once the store has opened the file).
CREATE INDEX decision_snapshots_unconverted_idx ON decision_snapshots (deployment_id, tick_at)
    WHERE context_lines IS NULL;

-- One numbering of lines per deployment: `next_seq` is the number the next new line gets. Ids are
-- never reused (AUTOINCREMENT): a writer's memory of a scope's lines stays true while it exists.
CREATE TABLE prompt_scopes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    deployment_id TEXT NOT NULL UNIQUE REFERENCES deployments (id) ON DELETE CASCADE,
    next_seq      INTEGER NOT NULL DEFAULT 0 CONSTRAINT prompt_scopes_next_seq_nonneg CHECK (next_seq >= 0)
) STRICT;

-- The lines `first_seq` .. `first_seq + line_count - 1` of a scope: one zstd frame of their
-- lengths (LEB128) and their bytes.
CREATE TABLE prompt_blocks (
    scope_id   INTEGER NOT NULL REFERENCES prompt_scopes (id) ON DELETE CASCADE,
    first_seq  INTEGER NOT NULL CONSTRAINT prompt_blocks_first_seq_nonneg CHECK (first_seq >= 0),
    line_count INTEGER NOT NULL CONSTRAINT prompt_blocks_line_count_pos CHECK (line_count > 0),
    body       BLOB NOT NULL,
    UNIQUE (scope_id, first_seq)
) STRICT;
