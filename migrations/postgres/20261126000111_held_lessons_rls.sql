-- Row-level security on `held_lessons`, as on `reflection_notes`: the owner of the note's
-- deployment (or, for a skill-scoped note, of its skill) reads the rows; only the runner and the
-- review commands (`service_role`) write them.
grant select on public.held_lessons to authenticated;
grant select, insert, update, delete on public.held_lessons to service_role;

alter table public.held_lessons enable row level security;

create policy "held_lessons: service role" on public.held_lessons
    for all to service_role using (true) with check (true);

create policy "held_lessons: owner read" on public.held_lessons
    for select to authenticated using (
        exists (select 1 from public.reflection_notes n
                where n.id = held_lessons.note_id
                  and case when n.deployment_id is not null then
                          exists (select 1 from public.deployments d
                                  where d.id = n.deployment_id and d.user_id = auth.uid())
                      else
                          exists (select 1 from public.skills s
                                  where s.id = n.skill_id and s.user_id = auth.uid())
                      end));
