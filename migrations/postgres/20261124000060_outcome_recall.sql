-- The recall memory of seed 003 (#15): each outcome carries its proposal's reason, the regime of
-- its market snapshot and, once scored in full, its narrative (seed 003's observation text); the
-- narratives and the annotations (text and tags) are searchable in full text. The columns live
-- on existing tables, so their row-level security policies (`*_outcomes_rls.sql`) cover them.

-- The proposal's reason (the `propose_order` tool's bound: 1..=280 characters).
alter table public.trade_outcomes add column reason text
    constraint trade_outcomes_reason_len check (reason is null or char_length(reason) between 1 and 280);
-- The market snapshot's regime, copied: backfilled from each row's snapshot, then NOT NULL.
alter table public.trade_outcomes add column market_condition text
    constraint trade_outcomes_condition check (
        market_condition in ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown'));
update public.trade_outcomes o set market_condition = m.market_condition
from public.market_snapshots m where m.id = o.snapshot_id;
alter table public.trade_outcomes alter column market_condition set not null;
-- Seed 003's observation text, written with the 24h scoring (null before).
alter table public.trade_outcomes add column narrative text;

-- The recall read (`OutcomeStore::recall_outcomes`) of one deployment, or of a regime, newest
-- first, ties by id: with `id` in the index the rows come in the read's order (no sort step).
drop index public.trade_outcomes_deployment_tick_idx;
create index trade_outcomes_deployment_tick_idx on public.trade_outcomes (deployment_id, tick_at desc, id);
create index trade_outcomes_condition_tick_idx on public.trade_outcomes (market_condition, tick_at desc, id);

-- Full text: stemmed English vectors, generated (so always in step with the text) and indexed.
alter table public.trade_outcomes add column narrative_tsv tsvector
    generated always as (to_tsvector('english'::regconfig, coalesce(narrative, ''))) stored;
create index trade_outcomes_narrative_tsv_idx on public.trade_outcomes using gin (narrative_tsv);

-- `array_to_string` is only STABLE (element output functions in general may depend on settings);
-- for text[] it is not, and a generated column needs an IMMUTABLE expression.
create function public.memory_tags_text(tags text[]) returns text
    language sql immutable strict parallel safe
    as $$ select array_to_string(tags, ' ') $$;
alter table public.trade_annotations add column search_tsv tsvector
    generated always as (to_tsvector('english'::regconfig,
        annotation || ' ' || coalesce(public.memory_tags_text(tags), ''))) stored;
create index trade_annotations_search_tsv_idx on public.trade_annotations using gin (search_tsv);
