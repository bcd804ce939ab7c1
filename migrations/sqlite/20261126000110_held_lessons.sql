-- Typed lessons (#43): a note's observations and the observations its figures did not bear out
-- (`{"observations": [...], "dropped": [...]}`, NULL for a note of plain bullets and for every
-- note written before), and the bullets the lesson defences held back, one row each, reviewed
-- one by one. Accepting one writes a new note (`resulting_note_id`) in force from the review.
ALTER TABLE reflection_notes ADD COLUMN observations TEXT
    CONSTRAINT reflection_notes_observations_json
    CHECK (json_valid(observations) AND length(observations) <= 32000);

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
    created_at        TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z'),
    CONSTRAINT held_lessons_note_position UNIQUE (note_id, position),
    CONSTRAINT held_lessons_review CHECK (
        (status = 'pending') = (reviewed_at IS NULL) AND (reviewed_at IS NULL) = (reviewed_by IS NULL)),
    CONSTRAINT held_lessons_result CHECK (status = 'accepted' OR resulting_note_id IS NULL)
) STRICT;
CREATE INDEX held_lessons_status_idx ON held_lessons (status, created_at);
