-- Two gaps of the facts' audit trail (#20), as on PostgreSQL:
-- 1. A change of `updated_by` alone (who last touched the fact) was not recorded.
-- 2. `user_facts.skill_id` must belong to the fact's owner.

DROP TRIGGER user_facts_audit_update;
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
