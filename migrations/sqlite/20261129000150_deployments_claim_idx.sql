-- The tick claim (`LeaseStore::claim_due_deployments`) takes the due active deployments in
-- `next_tick_at NULLS FIRST, id` order, LIMIT n. With an index in exactly that order (SQLite
-- sorts NULL first in ascending order) the claim reads its n rows off the index and stops;
-- `deployments_due_idx (next_tick_at)` left the ties on `id` to a sort. The new index serves
-- whatever the old one did, so it replaces it.
CREATE INDEX IF NOT EXISTS deployments_claim_idx
    ON deployments (next_tick_at, id) WHERE status = 'active';
DROP INDEX IF EXISTS deployments_due_idx;
