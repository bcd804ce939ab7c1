-- The state a runner carries from one tick of a deployment to the next that the other tables do
-- not hold (a live runner's paper broker, engine risk state, last decision), as opaque JSON.
-- `record_tick` writes it in the tick's own transaction, so a tick and the state after it commit
-- together or not at all, and only forward: a row is never replaced by the state of an older or
-- the same tick (a runner that lost its lease cannot overwrite a newer state).
-- `attempt_owner` / `attempt_tick_at`: which runner last started which tick (lease takeovers).
--
-- live-runner used to create this table itself (same columns, RLS on, no policy); an existing one
-- is adopted with its rows, so the statements below are idempotent.
create table if not exists public.live_runner_state (
    deployment_id   uuid primary key references public.deployments (id) on delete cascade,
    tick_at         timestamptz,
    state           jsonb,
    attempt_owner   text,
    attempt_tick_at timestamptz,
    updated_at      timestamptz not null default now()
);

do $$
begin
    if not exists (select 1 from pg_constraint
                   where conname = 'live_runner_state_complete'
                     and conrelid = 'public.live_runner_state'::regclass) then
        alter table public.live_runner_state add constraint live_runner_state_complete
            check ((tick_at is null) = (state is null));
    end if;
end
$$;

-- Row-level security as on every table: service_role has every privilege and an allow-all
-- policy. End users (`authenticated`, `anon`) get no privilege and no policy: the runner's
-- internal state is not theirs to read (the ledger, snapshots and notes are).
alter table public.live_runner_state enable row level security;
grant select, insert, update, delete on public.live_runner_state to service_role;
drop policy if exists "live_runner_state: service role" on public.live_runner_state;
create policy "live_runner_state: service role" on public.live_runner_state
    for all to service_role using (true) with check (true);
