-- Live news (#16 item 2): headlines polled from RSS/Atom feeds by the runner. News is global
-- reference data like `market_events`: readable by authenticated users, written by the service
-- role only (no INSERT/UPDATE/DELETE privilege or policy for `authenticated`).
create table public.news_items (
    id               uuid primary key,
    feed             text not null constraint news_items_feed_len check (char_length(feed) between 1 and 2000),
    source           text not null constraint news_items_source_len check (char_length(source) between 1 and 200),
    -- The dedupe key: the item's guid (Atom id), or the feed parser's hash of link and title.
    guid             text not null constraint news_items_guid_len check (char_length(guid) between 1 and 2000),
    title            text not null constraint news_items_title_len check (char_length(title) between 1 and 500),
    link             text constraint news_items_link_len check (link is null or char_length(link) between 1 and 2000),
    summary          text constraint news_items_summary_len check (summary is null or char_length(summary) between 1 and 2000),
    published_at     timestamptz not null,
    fetched_at       timestamptz not null,
    symbols          text[] not null default '{}',
    sentiment        numeric not null constraint news_items_sentiment check (sentiment between -1 and 1),
    sentiment_source text not null constraint news_items_sentiment_source check (sentiment_source in ('feed', 'lexicon')),
    importance       numeric not null constraint news_items_importance check (importance between 0 and 1),
    constraint news_items_feed_guid unique (feed, guid)
);
-- The tick's read: a published_at window, then fetched_at ≤ T.
create index news_items_published_idx on public.news_items (published_at);

grant select on public.news_items to authenticated;
grant select, insert, update, delete on public.news_items to service_role;
alter table public.news_items enable row level security;
create policy "news_items: service role" on public.news_items
    for all to service_role using (true) with check (true);
create policy "news_items: read" on public.news_items
    for select to authenticated using (true);
