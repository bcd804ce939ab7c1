-- Row-level security. Owners (role `authenticated`, auth.uid() = their user id) read their own
-- rows; only user_facts is owner-writable (ADR-0020). Ledger, notes, snapshots and fills are
-- written by the runner as `service_role` only: `authenticated` has no INSERT/UPDATE/DELETE
-- privilege on them and no policy that would allow it.

-- Privileges --------------------------------------------------------------------------------
grant select on
    public.skills, public.skill_versions, public.deployments, public.decision_snapshots,
    public.fills, public.trade_history, public.reflection_notes, public.reflection_runs,
    public.user_facts, public.user_fact_changes, public.market_events
to authenticated;
grant insert, update on public.user_facts to authenticated;
grant select on public.market_events to anon;

grant select, insert, update, delete on all tables in schema public to service_role;
grant usage on all sequences in schema public to service_role;

-- Enable RLS and give service_role an explicit allow-all policy on every table (it is also created
-- BYPASSRLS; the policy keeps it working where the role pre-exists without that attribute).
do $$
declare
    t text;
begin
    foreach t in array array['skills', 'skill_versions', 'deployments', 'decision_snapshots',
                             'fills', 'trade_history', 'reflection_notes', 'reflection_runs',
                             'user_facts', 'user_fact_changes', 'market_events'] loop
        execute format('alter table public.%I enable row level security', t);
        execute format(
            'create policy "%s: service role" on public.%I for all to service_role using (true) with check (true)',
            t, t);
    end loop;
end
$$;

-- Owner reads ------------------------------------------------------------------------------
create policy "skills: owner read" on public.skills
    for select to authenticated using (user_id = auth.uid());

create policy "skill_versions: owner read" on public.skill_versions
    for select to authenticated using (
        exists (select 1 from public.skills s where s.id = skill_versions.skill_id and s.user_id = auth.uid()));

create policy "deployments: owner read" on public.deployments
    for select to authenticated using (user_id = auth.uid());

create policy "decision_snapshots: owner read" on public.decision_snapshots
    for select to authenticated using (
        exists (select 1 from public.deployments d
                where d.id = decision_snapshots.deployment_id and d.user_id = auth.uid()));

create policy "fills: owner read" on public.fills
    for select to authenticated using (
        exists (select 1 from public.deployments d where d.id = fills.deployment_id and d.user_id = auth.uid()));

create policy "trade_history: owner read" on public.trade_history
    for select to authenticated using (
        exists (select 1 from public.deployments d
                where d.id = trade_history.deployment_id and d.user_id = auth.uid()));

-- Deployment-scoped notes via the deployment's owner; skill-scoped notes via the skill's owner.
create policy "reflection_notes: owner read" on public.reflection_notes
    for select to authenticated using (
        case when deployment_id is not null then
            exists (select 1 from public.deployments d
                    where d.id = reflection_notes.deployment_id and d.user_id = auth.uid())
        else
            exists (select 1 from public.skills s
                    where s.id = reflection_notes.skill_id and s.user_id = auth.uid())
        end);

create policy "reflection_runs: owner read" on public.reflection_runs
    for select to authenticated using (
        case when deployment_id is not null then
            exists (select 1 from public.deployments d
                    where d.id = reflection_runs.deployment_id and d.user_id = auth.uid())
        else
            exists (select 1 from public.skills s
                    where s.id = reflection_runs.skill_id and s.user_id = auth.uid())
        end);

-- User facts: owner read / insert / update (ADR-0020). Forget is an update (soft archive).
create policy "user_facts: owner read" on public.user_facts
    for select to authenticated using (user_id = auth.uid());
create policy "user_facts: owner write" on public.user_facts
    for insert to authenticated with check (user_id = auth.uid());
create policy "user_facts: owner update" on public.user_facts
    for update to authenticated using (user_id = auth.uid()) with check (user_id = auth.uid());

create policy "user_fact_changes: owner read" on public.user_fact_changes
    for select to authenticated using (user_id = auth.uid());

-- Market events are public reference data.
create policy "market_events: read" on public.market_events
    for select to anon, authenticated using (true);
