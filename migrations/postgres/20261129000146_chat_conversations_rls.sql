-- Row-level security on the kept conversations: a user reads, starts, continues and deletes
-- their own conversations and nobody else's; a turn is never edited (no UPDATE grant). The
-- service role (the retention purge) keeps every privilege.
grant select, insert, delete on public.chat_conversations to authenticated;
grant select, insert, delete on public.chat_conversation_turns to authenticated;
grant select, insert, update, delete on public.chat_conversations to service_role;
grant select, insert, update, delete on public.chat_conversation_turns to service_role;

alter table public.chat_conversations enable row level security;
alter table public.chat_conversation_turns enable row level security;

create policy "chat_conversations: service role" on public.chat_conversations
    for all to service_role using (true) with check (true);
create policy "chat_conversations: owner read" on public.chat_conversations
    for select to authenticated using (user_id = auth.uid());
create policy "chat_conversations: owner insert" on public.chat_conversations
    for insert to authenticated with check (user_id = auth.uid());
create policy "chat_conversations: owner delete" on public.chat_conversations
    for delete to authenticated using (user_id = auth.uid());

create policy "chat_conversation_turns: service role" on public.chat_conversation_turns
    for all to service_role using (true) with check (true);
create policy "chat_conversation_turns: owner read" on public.chat_conversation_turns
    for select to authenticated using (user_id = auth.uid());
create policy "chat_conversation_turns: owner insert" on public.chat_conversation_turns
    for insert to authenticated with check (user_id = auth.uid());
create policy "chat_conversation_turns: owner delete" on public.chat_conversation_turns
    for delete to authenticated using (user_id = auth.uid());
