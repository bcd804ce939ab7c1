-- Typed lessons (#43): a note's observations and the observations its figures did not bear out
-- (`{"observations": [...], "dropped": [...]}`, NULL for a note of plain bullets and for every
-- note written before), and the bullets the lesson defences held back, one row each, reviewed
-- one by one. Accepting one writes a new note (`resulting_note_id`) in force from the review.
alter table public.reflection_notes add column observations jsonb
    constraint reflection_notes_observations_json check (char_length(observations::text) <= 32000);

create table public.held_lessons (
    id                uuid primary key,
    note_id           uuid not null references public.reflection_notes (id) on delete cascade,
    position          int  not null constraint held_lessons_position_nonneg check (position >= 0),
    text              text not null
                      constraint held_lessons_text_len check (char_length(text) between 1 and 2000),
    reasons           jsonb not null
                      constraint held_lessons_reasons_json check (
                          jsonb_typeof(reasons) = 'array' and char_length(reasons::text) <= 2000),
    status            text not null default 'pending'
                      constraint held_lessons_status check (status in ('pending', 'accepted', 'rejected')),
    reviewed_at       timestamptz,
    reviewed_by       text constraint held_lessons_reviewed_by_len check (char_length(reviewed_by) between 1 and 100),
    resulting_note_id uuid references public.reflection_notes (id) on delete set null,
    created_at        timestamptz not null default now(),
    constraint held_lessons_note_position unique (note_id, position),
    constraint held_lessons_review check (
        (status = 'pending') = (reviewed_at is null) and (reviewed_at is null) = (reviewed_by is null)),
    constraint held_lessons_result check (status = 'accepted' or resulting_note_id is null)
);
create index held_lessons_status_idx on public.held_lessons (status, created_at);
