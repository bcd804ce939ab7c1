-- Conversations kept (#46): a chat conversation and its turns, so a client sends only the new
-- message and a conversation can be read back from any device. A turn keeps the user's message,
-- the answer and the messages the model loop added (assistant calls and tool results, as JSON,
-- each tool result cut by the server to a bound before it is written). A conversation's last
-- activity is its newest turn (or its creation): `serve --conversation-retention-days` deletes
-- the ones idle longer. Written AS THE USER (the HTTP server's requests run under row-level
-- security): see the `_rls` migration.
create table public.chat_conversations (
    id            uuid primary key,
    user_id       uuid not null references auth.users (id) on delete cascade,
    mode          text not null
                  constraint chat_conversations_mode check (mode in ('authoring', 'coach', 'ops')),
    deployment_id uuid references public.deployments (id) on delete set null,
    title         text not null
                  constraint chat_conversations_title_len check (char_length(title) between 1 and 120),
    created_at    timestamptz not null,
    -- A turn names its conversation and its user together: a turn is always its conversation's
    -- owner's.
    constraint chat_conversations_id_user unique (id, user_id)
);
create index chat_conversations_user_idx on public.chat_conversations (user_id, created_at desc);

create table public.chat_conversation_turns (
    id              uuid primary key,
    conversation_id uuid not null,
    user_id         uuid not null,
    seq             integer not null constraint chat_conversation_turns_seq check (seq >= 0),
    at              timestamptz not null,
    user_message    text not null
                    constraint chat_conversation_turns_message_len check (char_length(user_message) between 1 and 8000),
    answer          text not null
                    constraint chat_conversation_turns_answer_len check (char_length(answer) <= 32000),
    messages        jsonb not null
                    constraint chat_conversation_turns_messages_json check (
                        jsonb_typeof(messages) = 'array' and octet_length(messages::text) <= 262144),
    constraint chat_conversation_turns_owner foreign key (conversation_id, user_id)
        references public.chat_conversations (id, user_id) on delete cascade,
    constraint chat_conversation_turns_order unique (conversation_id, seq)
);
create index chat_conversation_turns_at_idx on public.chat_conversation_turns (conversation_id, at);
