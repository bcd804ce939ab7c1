-- The review queue (#45): held bullets are reviewed from the pages and the API as well as the
-- commands. A review keeps why when the reviewer says (`review_reason`), a note accepted whole
-- (`accept-note`) keeps who accepted it (`accepted_by`) beside when, and a decided review is
-- final: its decision, reviewer, time and reason never change, and the note an acceptance
-- wrote is linked once.
ALTER TABLE held_lessons ADD COLUMN review_reason TEXT
    CONSTRAINT held_lessons_review_reason_len CHECK (length(review_reason) BETWEEN 1 AND 500)
    CONSTRAINT held_lessons_review_reason_reviewed CHECK (review_reason IS NULL OR status <> 'pending');

ALTER TABLE reflection_notes ADD COLUMN accepted_by TEXT
    CONSTRAINT reflection_notes_accepted_by_len CHECK (length(accepted_by) BETWEEN 1 AND 100)
    CONSTRAINT reflection_notes_accepted_by_at CHECK (accepted_by IS NULL OR accepted_at IS NOT NULL);

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
