-- One reflection of a deployment at a time across runners (#16 item 7): a reflection is leased
-- like a tick (see the PostgreSQL migration of the same version).
ALTER TABLE live_runner_state ADD COLUMN reflection_owner TEXT;
ALTER TABLE live_runner_state ADD COLUMN reflection_lease_until TEXT;
