-- Row-level security of the review queue (#45). A user reviews the held bullets of their own
-- notes only (a deployment's note through the deployment's owner, a skill-scoped note through
-- the skill's), naming themselves as the reviewer (`reviewed_by` = their id). An acceptance
-- writes a note and supersedes the note in force: a user may insert or supersede a note only
-- while an acceptance of theirs is in flight in the transaction — a bullet of that scope they
-- accepted whose note is not linked yet (`held_lessons_accepted_note` makes sure it is before
-- the commit) — and the note inserted must be that acceptance's: the held note's window, in
-- force from the review, active, not flagged, ending with the bullet. Every other write of
-- notes and held bullets stays the service role's.
grant update (status, reviewed_at, reviewed_by, review_reason, resulting_note_id)
    on public.held_lessons to authenticated;
grant insert on public.reflection_notes to authenticated;
grant update (status, superseded_at, superseded_by) on public.reflection_notes to authenticated;

-- Whether the caller owns a note's scope (its deployment, or for a skill-scoped note its skill).
create function public.owns_note_scope(deployment uuid, skill uuid) returns boolean
language sql stable
as $$
    select case when deployment is not null then
               exists (select 1 from public.deployments d
                       where d.id = deployment and d.user_id = auth.uid())
           else
               exists (select 1 from public.skills s where s.id = skill and s.user_id = auth.uid())
           end
$$;

create policy "held_lessons: owner review" on public.held_lessons
    for update to authenticated
    using (
        exists (select 1 from public.reflection_notes n
                where n.id = held_lessons.note_id and public.owns_note_scope(n.deployment_id, n.skill_id)))
    with check (
        reviewed_by = auth.uid()::text
        and exists (select 1 from public.reflection_notes n
                    where n.id = held_lessons.note_id
                      and public.owns_note_scope(n.deployment_id, n.skill_id)));

-- The caller's acceptance in flight in a note scope: a bullet of that scope they accepted whose
-- note is not linked yet. Security definer, so that a policy of `reflection_notes` can ask
-- without reading `reflection_notes` under its own policies (which PostgreSQL refuses as a
-- recursion); it answers for the caller only (`reviewed_by` = their id).
create function public.held_acceptance_in_flight(
    note_deployment uuid, note_skill uuid, note_version int) returns boolean
language sql stable security definer set search_path = public, pg_temp
as $$
    select exists (
        select 1 from public.held_lessons h join public.reflection_notes n on n.id = h.note_id
        where h.status = 'accepted' and h.resulting_note_id is null
          and h.reviewed_by = auth.uid()::text
          and n.deployment_id is not distinct from note_deployment
          and n.skill_id = note_skill and n.skill_version = note_version)
$$;

-- Whether a note is the one the caller's acceptance in flight writes: the held note's scope and
-- window, in force from the review, ending with the bullet.
create function public.is_held_acceptance_note(
    note_deployment uuid, note_skill uuid, note_version int, note_window_start timestamptz,
    note_window_end timestamptz, note_generated_at timestamptz, note_lessons text) returns boolean
language sql stable security definer set search_path = public, pg_temp
as $$
    select exists (
        select 1 from public.held_lessons h join public.reflection_notes n on n.id = h.note_id
        where h.status = 'accepted' and h.resulting_note_id is null
          and h.reviewed_by = auth.uid()::text
          and n.deployment_id is not distinct from note_deployment
          and n.skill_id = note_skill and n.skill_version = note_version
          and n.window_start = note_window_start and n.window_end = note_window_end
          and h.reviewed_at = note_generated_at
          and right(note_lessons, char_length(h.text)) = h.text)
$$;

create policy "reflection_notes: owner accepts a held lesson" on public.reflection_notes
    for insert to authenticated
    with check (
        status = 'active' and not lint_flagged
        and public.owns_note_scope(deployment_id, skill_id)
        and public.is_held_acceptance_note(deployment_id, skill_id, skill_version, window_start,
                                           window_end, generated_at, lessons_text));

create policy "reflection_notes: owner supersedes for an accepted held lesson" on public.reflection_notes
    for update to authenticated
    using (status in ('active', 'superseded') and public.owns_note_scope(deployment_id, skill_id))
    with check (
        status = 'superseded'
        and public.owns_note_scope(deployment_id, skill_id)
        and public.held_acceptance_in_flight(deployment_id, skill_id, skill_version));
