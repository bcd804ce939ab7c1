-- Row-level security of the pending actions (#46). A user reads their own actions, keeps new
-- ones in their own name naming only their own deployment, skill and conversation (the chat
-- turn does, as them), and decides them (status, who, when, result, error — no other column)
-- naming themselves. Confirming a skill version saves the next version of the user's own skill,
-- so a user may insert a version of a skill of theirs. The service role (the expiry sweep)
-- keeps every privilege.
grant select, insert on public.pending_actions to authenticated;
grant update (status, decided_at, decided_by, result, error) on public.pending_actions to authenticated;
grant select, insert, update, delete on public.pending_actions to service_role;
grant insert on public.skill_versions to authenticated;

alter table public.pending_actions enable row level security;

create policy "pending_actions: service role" on public.pending_actions
    for all to service_role using (true) with check (true);

create policy "pending_actions: owner read" on public.pending_actions
    for select to authenticated using (user_id = auth.uid());

create policy "pending_actions: owner keeps" on public.pending_actions
    for insert to authenticated with check (
        user_id = auth.uid()
        and status = 'pending'
        and (deployment_id is null
             or exists (select 1 from public.deployments d
                        where d.id = pending_actions.deployment_id and d.user_id = auth.uid()))
        and (skill_id is null
             or exists (select 1 from public.skills s
                        where s.id = pending_actions.skill_id and s.user_id = auth.uid()))
        and (conversation_id is null
             or exists (select 1 from public.chat_conversations c
                        where c.id = pending_actions.conversation_id and c.user_id = auth.uid())));

create policy "pending_actions: owner decides" on public.pending_actions
    for update to authenticated
    using (user_id = auth.uid())
    with check (user_id = auth.uid() and (decided_by is null or decided_by = auth.uid()::text));

create policy "skill_versions: owner saves" on public.skill_versions
    for insert to authenticated with check (
        exists (select 1 from public.skills s
                where s.id = skill_versions.skill_id and s.user_id = auth.uid()));
