-- One row per chat-coach turn (issue #14): which model answered, how many steps it took, its
-- token usage and cost. Written by the turn's caller — the HTTP server and the terminal client
-- write it AS THE USER (role `authenticated`, their JWT claims), so the narrowest grant that lets
-- them: an owner may INSERT and SELECT their own rows, never UPDATE or DELETE them (the cost of a
-- turn is a record, not something its user edits). The service role keeps every privilege.
create table public.chat_turns (
    id                 uuid primary key,
    user_id            uuid not null references auth.users (id) on delete cascade,
    at                 timestamptz not null,
    mode               text not null constraint chat_turns_mode check (mode in ('authoring', 'coach', 'ops')),
    model              text not null constraint chat_turns_model_len check (char_length(model) between 1 and 200),
    steps              integer not null constraint chat_turns_steps check (steps >= 0),
    input_tokens       bigint not null constraint chat_turns_input check (input_tokens >= 0),
    output_tokens      bigint not null constraint chat_turns_output check (output_tokens >= 0),
    cache_read_tokens  bigint not null constraint chat_turns_cache_read check (cache_read_tokens >= 0),
    cache_write_tokens bigint not null constraint chat_turns_cache_write check (cache_write_tokens >= 0),
    cost_usd           numeric not null constraint chat_turns_cost check (cost_usd >= 0),
    error              text constraint chat_turns_error_len check (char_length(error) <= 2000),
    created_at         timestamptz not null default now()
);
create index chat_turns_user_idx on public.chat_turns (user_id, at desc);

alter table public.chat_turns enable row level security;
grant select, insert on public.chat_turns to authenticated;
grant select, insert, update, delete on public.chat_turns to service_role;
create policy "chat_turns: service role" on public.chat_turns
    for all to service_role using (true) with check (true);
create policy "chat_turns: owner read" on public.chat_turns
    for select to authenticated using (user_id = auth.uid());
create policy "chat_turns: owner insert" on public.chat_turns
    for insert to authenticated with check (user_id = auth.uid());
