-- The tick claim (`LeaseStore::claim_due_deployments`) takes the due active deployments in
-- `next_tick_at NULLS FIRST, id` order, LIMIT n. With an index in exactly that order the claim
-- reads its n rows off the index and stops; `deployments_due_idx (next_tick_at)` made it read
-- and sort every due row (at a bar close, every deployment). The new index serves whatever the
-- old one did (its first column, both ends of NULL), so it replaces it.
CREATE INDEX IF NOT EXISTS deployments_claim_idx
    ON public.deployments (next_tick_at NULLS FIRST, id) WHERE status = 'active';
DROP INDEX IF EXISTS public.deployments_due_idx;
