-- Row-level security on the prompt line tables (scopes and blocks), as on `decision_snapshots`:
-- lines are stored once per deployment (never shared across deployments, so never across users),
-- the deployment's owner (role `authenticated`) reads them, only the runner (`service_role`)
-- writes them.
grant select on public.prompt_scopes, public.prompt_blocks to authenticated;
grant select, insert, update, delete on public.prompt_scopes, public.prompt_blocks to service_role;
grant usage on sequence public.prompt_scopes_id_seq to service_role;

alter table public.prompt_scopes enable row level security;
alter table public.prompt_blocks enable row level security;

create policy "prompt_scopes: service role" on public.prompt_scopes
    for all to service_role using (true) with check (true);
create policy "prompt_blocks: service role" on public.prompt_blocks
    for all to service_role using (true) with check (true);

create policy "prompt_scopes: owner read" on public.prompt_scopes
    for select to authenticated using (
        exists (select 1 from public.deployments d
                where d.id = prompt_scopes.deployment_id and d.user_id = auth.uid()));
create policy "prompt_blocks: owner read" on public.prompt_blocks
    for select to authenticated using (
        exists (select 1 from public.prompt_scopes s
                join public.deployments d on d.id = s.deployment_id
                where s.id = prompt_blocks.scope_id and d.user_id = auth.uid()));
