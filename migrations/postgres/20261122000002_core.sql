-- Core schema: skills, deployments, the decision firehose, fills, the closed-trade ledger
-- (ADR-0017), reflection notes, user facts (ADR-0020) and market events.
-- Conventions: money/prices/sizes are numeric (exact), times timestamptz, ids uuid. Named CHECK
-- constraints so errors say which rule failed (the SQLite schema uses the same names).

create table public.skills (
    id         uuid primary key default gen_random_uuid(),
    user_id    uuid not null references auth.users (id) on delete cascade,
    name       text not null constraint skills_name_len check (char_length(name) between 1 and 200),
    created_at timestamptz not null default now()
);
create index skills_user_idx on public.skills (user_id);

create table public.skill_versions (
    skill_id   uuid not null references public.skills (id) on delete cascade,
    version    int  not null constraint skill_versions_version_positive check (version >= 1),
    body       jsonb not null, -- the skill document (skill-schema's Skill)
    model      text not null,
    created_at timestamptz not null default now(),
    primary key (skill_id, version)
);

create table public.deployments (
    id                 uuid primary key default gen_random_uuid(),
    user_id            uuid not null references auth.users (id) on delete cascade,
    skill_id           uuid not null,
    skill_version      int  not null,
    broker             text not null constraint deployments_broker check (broker in ('paper', 'hyperliquid')),
    status             text not null default 'active'
                       constraint deployments_status check (status in ('active', 'paused', 'stopped')),
    initial_equity_usd numeric not null constraint deployments_initial_equity check (initial_equity_usd >= 0),
    equity_usd         numeric not null,
    config             jsonb not null default '{}'::jsonb,
    created_at         timestamptz not null default now(),
    -- scheduling and leasing for many runner processes (null until a runner uses them)
    next_tick_at       timestamptz,
    lease_owner        text,
    lease_expires_at   timestamptz,
    foreign key (skill_id, skill_version) references public.skill_versions (skill_id, version)
);
create index deployments_user_idx on public.deployments (user_id);
create index deployments_due_idx on public.deployments (next_tick_at) where status = 'active';

-- The firehose: one row per tick. (deployment_id, tick_at) is unique so a retried tick cannot
-- write twice; its index also serves "latest decisions of a deployment" (scanned backwards).
create table public.decision_snapshots (
    id                 uuid primary key default gen_random_uuid(),
    deployment_id      uuid not null references public.deployments (id) on delete cascade,
    tick_at            timestamptz not null,
    system_prompt      text not null,
    context            text not null, -- the user message
    steps              jsonb not null default '[]'::jsonb,
    proposal           jsonb,
    verdict            jsonb not null,
    model              text not null,
    finish_reason      text,
    input_tokens       bigint not null default 0,
    output_tokens      bigint not null default 0,
    cache_read_tokens  bigint not null default 0,
    cache_write_tokens bigint not null default 0,
    cost_usd           numeric not null default 0,
    created_at         timestamptz not null default now(),
    constraint decision_snapshots_tokens_nonneg check (
        input_tokens >= 0 and output_tokens >= 0 and cache_read_tokens >= 0 and cache_write_tokens >= 0),
    constraint decision_snapshots_cost_nonneg check (cost_usd >= 0)
);
create unique index decision_snapshots_deployment_tick_idx
    on public.decision_snapshots (deployment_id, tick_at desc);

-- The closed-trade ledger (ADR-0017), column for column with types::TradeRecord.
-- realized_pnl_usd is gross of fees; fees_usd holds every fee of the round trip.
create table public.trade_history (
    id                uuid primary key default gen_random_uuid(),
    deployment_id     uuid not null references public.deployments (id) on delete cascade,
    skill_id          uuid not null,
    skill_version     int  not null,
    symbol            text not null,
    side              text not null constraint trade_history_side check (side in ('long', 'short')),
    status            text not null constraint trade_history_status check (status in ('open', 'closed')),
    -- entry
    entry_tick_at     timestamptz not null,
    entry_price       numeric not null,
    entry_size_usd    numeric not null,
    entry_leverage    numeric,
    entry_reason      text,
    entry_snapshot_id uuid references public.decision_snapshots (id) on delete set null,
    entry_regime_tag  text constraint trade_history_regime check (
        entry_regime_tag in ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown')),
    opened_qty        numeric not null,
    open_qty          numeric not null,
    -- exit (set on the first reducing fill)
    exit_tick_at      timestamptz,
    exit_price        numeric,
    exit_reason       text,
    exit_snapshot_id  uuid references public.decision_snapshots (id) on delete set null,
    close_kind        text constraint trade_history_close_kind check (
        close_kind in ('signal', 'flip', 'liquidation', 'external')),
    -- outcome
    holding_minutes   numeric,
    realized_pnl_usd  numeric not null default 0,
    fees_usd          numeric not null default 0,
    mfe_usd           numeric not null default 0,
    mae_usd           numeric not null default 0,
    -- Σ closing notional, so the average exit price extends exactly after a restart
    exit_size_usd     numeric not null default 0,
    -- opened, resized or closed to match the broker rather than by a fill of ours
    broker_reconciled boolean not null default false,
    -- bookkeeping: closed_at is the time of the tick that stored the close (point-in-time reads
    -- show a closed row at T only if closed_at <= T); not part of types::TradeRecord
    closed_at         timestamptz,
    created_at        timestamptz not null default now(),
    updated_at        timestamptz not null default now(),
    foreign key (skill_id, skill_version) references public.skill_versions (skill_id, version),
    constraint trade_history_qty check (open_qty >= 0 and opened_qty >= open_qty),
    constraint trade_history_excursions check (mfe_usd >= 0 and mae_usd <= 0),
    constraint trade_history_closed_complete check (
        status = 'open'
        or (open_qty = 0 and exit_tick_at is not null and exit_price is not null and close_kind is not null
            and closed_at is not null)),
    constraint trade_history_open_no_close_kind check (status = 'closed' or close_kind is null)
);
create index trade_history_deployment_entry_idx
    on public.trade_history (deployment_id, entry_tick_at desc);
create index trade_history_skill_entry_idx
    on public.trade_history (skill_id, skill_version, entry_tick_at desc);
-- One round trip at a time per deployment and symbol.
create unique index trade_history_one_open_idx
    on public.trade_history (deployment_id, symbol) where status = 'open';

-- Broker fills, applied at most once per deployment (broker_fill_id is the broker's id).
create table public.fills (
    deployment_id   uuid not null references public.deployments (id) on delete cascade,
    broker_fill_id  text not null,
    symbol          text not null,
    side            text not null constraint fills_side check (side in ('buy', 'sell')),
    qty             numeric not null constraint fills_qty_positive check (qty > 0),
    price           numeric not null constraint fills_price_positive check (price > 0),
    fee_usd         numeric not null,
    time            timestamptz not null,
    snapshot_id     uuid references public.decision_snapshots (id) on delete set null,
    client_order_id text,
    liquidation     boolean not null default false,
    -- the ledger row the fill applied to (for a fill that crossed zero: the row it closed) ...
    trade_id        uuid references public.trade_history (id) on delete set null,
    -- ... and, for such a flip, the row its opening leg started
    flip_trade_id   uuid references public.trade_history (id) on delete set null,
    created_at      timestamptz not null default now(),
    primary key (deployment_id, broker_fill_id)
);
create index fills_deployment_time_idx on public.fills (deployment_id, time);

-- Reflection notes (ADR-0017). deployment_id null = a skill-scoped note.
create table public.reflection_notes (
    id                uuid primary key default gen_random_uuid(),
    skill_id          uuid not null,
    skill_version     int  not null,
    deployment_id     uuid references public.deployments (id) on delete cascade,
    status            text not null default 'active'
                      constraint reflection_notes_status check (status in ('active', 'superseded', 'pending_review')),
    generated_at      timestamptz not null default now(),
    window_start      timestamptz not null,
    window_end        timestamptz not null,
    trades_considered int not null constraint reflection_notes_trades_nonneg check (trades_considered >= 0),
    lessons_text      text not null
                      constraint reflection_notes_lessons_len check (char_length(lessons_text) between 1 and 2000),
    model_used        text not null,
    input_tokens      bigint,
    output_tokens     bigint,
    cost_usd          numeric,
    -- deterministic linter (lessons vs. strategy.avoid): flagged notes are kept, marked
    lint_flagged      boolean not null default false,
    lint_reason       text constraint reflection_notes_lint_reason_len check (char_length(lint_reason) <= 500),
    superseded_at     timestamptz,
    superseded_by     uuid references public.reflection_notes (id) on delete set null,
    -- a flagged note waits in 'pending_review' (never injected) until a person accepts it; it is
    -- in force from accepted_at
    accepted_at       timestamptz,
    created_at        timestamptz not null default now(),
    foreign key (skill_id, skill_version) references public.skill_versions (skill_id, version),
    constraint reflection_notes_window check (window_start <= window_end),
    constraint reflection_notes_lint check (lint_flagged or lint_reason is null),
    constraint reflection_notes_pending_is_flagged check (status <> 'pending_review' or lint_flagged)
);
-- Exactly one active note per deployment, and one active skill-scoped note per skill version.
create unique index reflection_notes_active_per_deployment_idx
    on public.reflection_notes (deployment_id) where status = 'active' and deployment_id is not null;
create unique index reflection_notes_active_per_skill_idx
    on public.reflection_notes (skill_id, skill_version) where status = 'active' and deployment_id is null;
create index reflection_notes_deployment_generated_idx
    on public.reflection_notes (deployment_id, generated_at desc);
create index reflection_notes_skill_generated_idx
    on public.reflection_notes (skill_id, skill_version, generated_at desc);

-- Every reflection attempt, including failed ones: a failure is recorded here and never displaces
-- the active note.
create table public.reflection_runs (
    id            uuid primary key default gen_random_uuid(),
    skill_id      uuid not null,
    skill_version int  not null,
    deployment_id uuid references public.deployments (id) on delete cascade,
    started_at    timestamptz not null,
    finished_at   timestamptz not null,
    outcome       text not null constraint reflection_runs_outcome check (outcome in ('succeeded', 'failed')),
    error         text constraint reflection_runs_error_len check (char_length(error) <= 2000),
    note_id       uuid references public.reflection_notes (id) on delete set null,
    model         text not null,
    input_tokens  bigint,
    output_tokens bigint,
    cost_usd      numeric,
    created_at    timestamptz not null default now(),
    foreign key (skill_id, skill_version) references public.skill_versions (skill_id, version),
    constraint reflection_runs_outcome_shape check (
        (outcome = 'succeeded' and error is null) or (outcome = 'failed' and error is not null and note_id is null))
);
create index reflection_runs_deployment_idx on public.reflection_runs (deployment_id, started_at desc);

-- User facts (ADR-0020), optionally scoped to a skill.
create table public.user_facts (
    id                 uuid primary key default gen_random_uuid(),
    user_id            uuid not null references auth.users (id) on delete cascade,
    skill_id           uuid references public.skills (id) on delete cascade,
    fact               text not null constraint user_facts_fact_len check (char_length(fact) between 4 and 500),
    source             text not null constraint user_facts_source check (source in ('chat', 'profile', 'inferred')),
    confidence         text not null constraint user_facts_confidence check (confidence in ('asserted', 'inferred')),
    topic              text constraint user_facts_topic_len check (char_length(topic) between 1 and 32),
    last_referenced_at timestamptz,
    created_at         timestamptz not null default now(),
    archived_at        timestamptz,
    archived_reason    text constraint user_facts_archived_reason check (
        archived_reason in ('user_deleted', 'user_corrected', 'agent_forget')),
    -- who made the last change (set by the writer; recorded by the audit trigger)
    updated_by         text,
    constraint user_facts_archive_shape check ((archived_at is null) = (archived_reason is null))
);
create index user_facts_active_idx
    on public.user_facts (user_id, last_referenced_at desc nulls last)
    where archived_at is null;

-- Audit trail of every insert, text/metadata update and archive of a fact (reference bumps are
-- not changes and are not recorded). Written only by the trigger below.
create table public.user_fact_changes (
    id          bigint generated always as identity primary key,
    fact_id     uuid not null references public.user_facts (id) on delete cascade,
    user_id     uuid not null,
    op          text not null constraint user_fact_changes_op check (op in ('insert', 'update', 'archive')),
    actor       text,                 -- the writer's own label (user_facts.updated_by)
    db_role     text not null,        -- the database role that made the change
    jwt_sub     uuid,                 -- auth.uid() of the request, when there is one
    changed_at  timestamptz not null default now(),
    old_fact    text,
    new_fact    text,
    reason      text
);
create index user_fact_changes_fact_idx on public.user_fact_changes (fact_id, id);

create function public.user_facts_audit() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
declare
    v_op text;
begin
    if tg_op = 'INSERT' then
        v_op := 'insert';
    elsif old.archived_at is null and new.archived_at is not null then
        v_op := 'archive';
    else
        v_op := 'update';
    end if;
    insert into public.user_fact_changes (fact_id, user_id, op, actor, db_role, jwt_sub, old_fact, new_fact, reason)
    -- current_user is the function's owner here (security definer); the role the request runs as
    -- is the session's `role` setting (SET ROLE), else the login role.
    values (new.id, new.user_id, v_op, new.updated_by,
            coalesce(nullif(current_setting('role', true), 'none'), session_user::text), auth.uid(),
            case when tg_op = 'UPDATE' then old.fact end, new.fact, new.archived_reason);
    return new;
end
$$;

create trigger user_facts_audit_insert
    after insert on public.user_facts
    for each row execute function public.user_facts_audit();
create trigger user_facts_audit_update
    after update on public.user_facts
    for each row
    when (old.fact is distinct from new.fact
          or old.topic is distinct from new.topic
          or old.source is distinct from new.source
          or old.confidence is distinct from new.confidence
          or old.skill_id is distinct from new.skill_id
          or old.archived_at is distinct from new.archived_at)
    execute function public.user_facts_audit();

-- Scheduled market events (ADR-0018 vocabulary).
create table public.market_events (
    id           uuid primary key default gen_random_uuid(),
    kind         text not null constraint market_events_kind_len check (char_length(kind) between 1 and 64),
    title        text not null constraint market_events_title_len check (char_length(title) between 1 and 500),
    symbols      text[] not null default '{}',
    scheduled_at timestamptz not null,
    importance   numeric not null constraint market_events_importance check (importance between 0 and 1),
    source       text not null,
    created_at   timestamptz not null default now()
);
create index market_events_scheduled_idx on public.market_events (scheduled_at);
