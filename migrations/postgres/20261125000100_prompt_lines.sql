-- Content-addressed snapshot text (#17 item 1): a snapshot's system prompt, user message and steps
-- are stored as lists of line numbers (`*_lines`: runs of `seq`s, see
-- crates/db/src/imp/prompt_lines.rs), each distinct line once per deployment, the new lines of a
-- write together in one zstd-compressed `prompt_blocks` row (`proposal` and `verdict` stay JSON:
-- small, and what one queries). `system_prompt` / `context` hold the texts only for rows written
-- before this migration, until the store converts them (at connect, in batches: the partial index
-- finds them); such a row keeps its `steps` JSON, a new row leaves it NULL.
alter table public.decision_snapshots
    alter column system_prompt drop not null,
    alter column context drop not null,
    alter column steps drop not null,
    alter column steps drop default,
    add column system_prompt_lines bytea,
    add column context_lines bytea,
    add column steps_lines bytea;
create index decision_snapshots_unconverted_idx on public.decision_snapshots (deployment_id, tick_at)
    where context_lines is null;

-- One numbering of lines per deployment: `next_seq` is the number the next new line gets. A
-- writer updates the row first, which serialises writers of one deployment. Ids are never reused
-- (bigserial): a writer's memory of a scope's lines stays true while it exists.
create table public.prompt_scopes (
    id            bigserial primary key,
    deployment_id uuid not null unique references public.deployments (id) on delete cascade,
    next_seq      bigint not null default 0 constraint prompt_scopes_next_seq_nonneg check (next_seq >= 0)
);

-- The lines `first_seq` .. `first_seq + line_count - 1` of a scope: one zstd frame of their
-- lengths (LEB128) and their bytes.
create table public.prompt_blocks (
    scope_id   bigint not null references public.prompt_scopes (id) on delete cascade,
    first_seq  bigint not null constraint prompt_blocks_first_seq_nonneg check (first_seq >= 0),
    line_count bigint not null constraint prompt_blocks_line_count_pos check (line_count > 0),
    body       bytea not null,
    primary key (scope_id, first_seq)
);
