-- Alerts (#45): a user's channels and the outbox the ticks write to.
--
-- `alert_channels` is where a user wants to hear about their deployments: a signed JSON webhook,
-- a Slack- or Discord-compatible incoming webhook, or a Telegram bot and chat. `url` and `secret`
-- (the webhook's HMAC key, the bot token) are the service role's to read: a user sees `hint`,
-- what can be shown of the target (its host, the chat id). `events` lists the event kinds the
-- channel receives, comma-separated.
--
-- `alert_events` is the outbox: one row per event, written in the transaction of the tick (or
-- reflection) it is about, its id derived from the tick and the kind, so a tick redone after a
-- crash writes the same row. `alert_deliveries` is one row per event and channel (the pair is
-- unique), its id the idempotency key a receiver sees; a runner leases due rows `FOR UPDATE SKIP
-- LOCKED`, sends, and marks them delivered or schedules the next attempt.
create table public.alert_channels (
    id         uuid primary key,
    user_id    uuid not null references auth.users (id) on delete cascade,
    name       text not null constraint alert_channels_name_len check (char_length(name) between 1 and 100),
    kind       text not null
               constraint alert_channels_kind check (kind in ('webhook', 'slack', 'discord', 'telegram')),
    url        text constraint alert_channels_url check (
                   char_length(url) between 8 and 2000 and (url like 'https://%' or url like 'http://%')),
    secret     text constraint alert_channels_secret_len check (char_length(secret) between 1 and 500),
    chat_id    text constraint alert_channels_chat_id_len check (char_length(chat_id) between 1 and 100),
    hint       text not null constraint alert_channels_hint_len check (char_length(hint) between 1 and 200),
    events     text not null constraint alert_channels_events_len check (char_length(events) between 1 and 500),
    created_at timestamptz not null default now(),
    constraint alert_channels_target check (
        (kind = 'webhook' and url is not null and secret is not null and chat_id is null)
        or (kind in ('slack', 'discord') and url is not null and secret is null and chat_id is null)
        or (kind = 'telegram' and url is null and secret is not null and chat_id is not null))
);
create index alert_channels_user_idx on public.alert_channels (user_id);

create table public.alert_events (
    id            uuid primary key,
    user_id       uuid not null references auth.users (id) on delete cascade,
    deployment_id uuid references public.deployments (id) on delete cascade,
    kind          text not null constraint alert_events_kind check (kind in (
                      'order_executed', 'position_closed', 'rejection', 'model_error',
                      'model_error_streak', 'halt', 'lesson_held', 'runner_lagging', 'test')),
    occurred_at   timestamptz not null,
    text          text not null constraint alert_events_text_len check (char_length(text) between 1 and 2000),
    data          jsonb not null default '{}'::jsonb,
    created_at    timestamptz not null default now()
);
create index alert_events_user_idx on public.alert_events (user_id, occurred_at desc);

create table public.alert_deliveries (
    id               uuid primary key,
    event_id         uuid not null references public.alert_events (id) on delete cascade,
    channel_id       uuid not null references public.alert_channels (id) on delete cascade,
    user_id          uuid not null references auth.users (id) on delete cascade,
    status           text not null default 'pending'
                     constraint alert_deliveries_status check (status in ('pending', 'delivered', 'failed')),
    attempts         int not null default 0 constraint alert_deliveries_attempts_nonneg check (attempts >= 0),
    next_attempt_at  timestamptz not null,
    lease_owner      text,
    lease_expires_at timestamptz,
    last_error       text constraint alert_deliveries_error_len check (char_length(last_error) between 1 and 1000),
    delivered_at     timestamptz,
    created_at       timestamptz not null default now(),
    constraint alert_deliveries_once unique (event_id, channel_id),
    constraint alert_deliveries_delivered_at check ((status = 'delivered') = (delivered_at is not null))
);
create index alert_deliveries_due_idx on public.alert_deliveries (next_attempt_at) where status = 'pending';
create index alert_deliveries_user_idx on public.alert_deliveries (user_id, created_at desc);
