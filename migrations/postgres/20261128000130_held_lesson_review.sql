-- The review queue (#45): held bullets are reviewed from the pages and the API as well as the
-- commands. A review keeps why when the reviewer says (`review_reason`), a note accepted whole
-- (`accept-note`) keeps who accepted it (`accepted_by`) beside when, and a decided review is
-- final: its decision, reviewer, time and reason never change, and the note an acceptance
-- wrote is linked once and before the acceptance commits.
alter table public.held_lessons
    add column review_reason text
        constraint held_lessons_review_reason_len check (char_length(review_reason) between 1 and 500),
    add constraint held_lessons_review_reason_reviewed check (review_reason is null or status <> 'pending');

alter table public.reflection_notes
    add column accepted_by text
        constraint reflection_notes_accepted_by_len check (char_length(accepted_by) between 1 and 100),
    add constraint reflection_notes_accepted_by_at check (accepted_by is null or accepted_at is not null);

create function public.held_lessons_review_final() returns trigger
language plpgsql
as $$
begin
    if old.status <> 'pending' and (
        new.status is distinct from old.status
        or new.reviewed_at is distinct from old.reviewed_at
        or new.reviewed_by is distinct from old.reviewed_by
        or new.review_reason is distinct from old.review_reason
        or (old.resulting_note_id is not null and new.resulting_note_id is not null
            and new.resulting_note_id <> old.resulting_note_id)) then
        raise exception using
            errcode = 'check_violation',
            constraint = 'held_lessons_review_final',
            message = format('held lesson %s was %s by %s: a review is final',
                             old.id, old.status, old.reviewed_by);
    end if;
    return new;
end
$$;

create trigger held_lessons_review_final
    before update on public.held_lessons
    for each row execute function public.held_lessons_review_final();

-- An accepted bullet has its note when the transaction commits (the store writes the note and
-- links it in the acceptance's transaction).
create function public.held_lessons_accepted_note() returns trigger
language plpgsql
as $$
begin
    if exists (select 1 from public.held_lessons h
               where h.id = new.id and h.status = 'accepted' and h.resulting_note_id is null) then
        raise exception using
            errcode = 'check_violation',
            constraint = 'held_lessons_accepted_note',
            message = format('held lesson %s is accepted without the note accepting it wrote', new.id);
    end if;
    return null;
end
$$;

create constraint trigger held_lessons_accepted_note
    after update on public.held_lessons
    deferrable initially deferred
    for each row when (new.status = 'accepted')
    execute function public.held_lessons_accepted_note();
