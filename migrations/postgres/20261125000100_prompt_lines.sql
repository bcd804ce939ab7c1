-- Content-addressed prompt text (#17 item 1): a snapshot's system prompt and user message are
-- stored as lists of line numbers (`system_prompt_lines`, `context_lines`: runs of `seq`s, see
-- crates/db/src/imp/prompt_lines.rs), each distinct line once per deployment in `prompt_lines`.
-- `system_prompt` / `context` hold the text only for rows written before this migration, until
-- the store converts them (at connect, in batches: the partial index finds them).
alter table public.decision_snapshots
    alter column system_prompt drop not null,
    alter column context drop not null,
    add column system_prompt_lines bytea,
    add column context_lines bytea;
create index decision_snapshots_unconverted_idx on public.decision_snapshots (deployment_id, tick_at)
    where context_lines is null;

-- One numbering of lines per deployment: `next_seq` is the number the next new line gets. A
-- writer updates the row first, which serialises writers of one deployment.
create table public.prompt_scopes (
    id            bigserial primary key,
    deployment_id uuid not null unique references public.deployments (id) on delete cascade,
    next_seq      bigint not null default 0 constraint prompt_scopes_next_seq_nonneg check (next_seq >= 0)
);

-- Each distinct line of a deployment's prompts once; `hash` (FNV-1a 64) finds candidates, the
-- body decides.
create table public.prompt_lines (
    scope_id bigint not null references public.prompt_scopes (id) on delete cascade,
    seq      bigint not null,
    hash     bigint not null,
    body     text not null,
    primary key (scope_id, seq)
);
create index prompt_lines_hash_idx on public.prompt_lines (scope_id, hash);
