-- Row-level security on the outcome tables, as on the other per-deployment tables: the owner of
-- the deployment (role `authenticated`, auth.uid() = deployments.user_id) reads its rows; only
-- the runner (`service_role`) writes them — `authenticated` has no INSERT/UPDATE/DELETE
-- privilege and no policy that would allow one.
grant select on public.market_snapshots, public.trade_outcomes, public.trade_annotations
to authenticated;
grant select, insert, update, delete on public.market_snapshots, public.trade_outcomes,
    public.trade_annotations to service_role;

do $$
declare
    t text;
begin
    foreach t in array array['market_snapshots', 'trade_outcomes', 'trade_annotations'] loop
        execute format('alter table public.%I enable row level security', t);
        execute format(
            'create policy "%s: service role" on public.%I for all to service_role using (true) with check (true)',
            t, t);
        execute format(
            'create policy "%s: owner read" on public.%I for select to authenticated using ('
            'exists (select 1 from public.deployments d where d.id = %I.deployment_id and d.user_id = auth.uid()))',
            t, t, t);
    end loop;
end
$$;
