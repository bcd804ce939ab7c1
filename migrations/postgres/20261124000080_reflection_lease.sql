-- One reflection of a deployment at a time across runners (#16 item 7): a reflection is leased
-- like a tick. The runner that finds a reflection due claims it (`LeaseStore::claim_reflection`)
-- before calling the model; another runner that finds it due while the lease is live skips it.
-- A runner that dies leaves a lease that expires (`reflection_lease_until`), after which the
-- cadence's next due reflection may be claimed again. Service role only, like the rest of the
-- table.
alter table public.live_runner_state add column if not exists reflection_owner text;
alter table public.live_runner_state add column if not exists reflection_lease_until timestamptz;
