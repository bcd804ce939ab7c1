-- Row-level security of the controls (#45). A user controls their own deployments only: they
-- read the audit rows of their deployments and insert rows naming themselves
-- (`requested_by` = their id), and may change a deployment's `status` and
-- `flatten_requested_at` — no other column — on their own deployments. The runner's columns
-- (leases, the flatten's progress) and every update or delete of an audit row stay the service
-- role's.
grant select, insert on public.deployment_controls to authenticated;
grant select, insert, update, delete on public.deployment_controls to service_role;
grant update (status, flatten_requested_at) on public.deployments to authenticated;

alter table public.deployment_controls enable row level security;

create policy "deployment_controls: service role" on public.deployment_controls
    for all to service_role using (true) with check (true);

create policy "deployment_controls: owner read" on public.deployment_controls
    for select to authenticated using (
        exists (select 1 from public.deployments d
                where d.id = deployment_controls.deployment_id and d.user_id = auth.uid()));

create policy "deployment_controls: owner write" on public.deployment_controls
    for insert to authenticated with check (
        requested_by = auth.uid()::text
        and exists (select 1 from public.deployments d
                    where d.id = deployment_controls.deployment_id and d.user_id = auth.uid()));

create policy "deployments: owner control" on public.deployments
    for update to authenticated
    using (user_id = auth.uid()) with check (user_id = auth.uid());
