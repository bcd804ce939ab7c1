-- Outcome-scored trading memory (seed 003): the market at decision time, every directional
-- proposal with what the price did after it, and free-text annotations. Column names follow
-- seed 003 (`rsi_1h`, `btc_correlation`, `price_4h`, `outcome_grade`, ...) so its queries read
-- the same. Rows of `market_snapshots` and `trade_outcomes` are written by `record_tick` in the
-- tick's own transaction; the scoring columns are filled in later by the scorer (the backtest
-- loop, or the live runner's driver), never changed once `scored_at` is set.

-- One row per directional proposal (the symbol's indicators at the tick). Indicators are
-- statistics, stored as double precision; `btc_correlation` is against `reference_symbol`.
create table public.market_snapshots (
    id                    uuid primary key,
    deployment_id         uuid not null references public.deployments (id) on delete cascade,
    decision_snapshot_id  uuid not null references public.decision_snapshots (id) on delete cascade,
    tick_at               timestamptz not null,
    symbol                text not null,
    rsi_15m               double precision,
    rsi_1h                double precision,
    rsi_4h                double precision,
    macd_signal           text,
    volatility_percentile double precision,
    volume_ratio          double precision,
    trend_strength        double precision,
    btc_correlation       double precision,
    reference_symbol      text not null,
    market_condition      text not null,
    created_at            timestamptz not null default now(),
    constraint market_snapshots_rsi_range check (
        (rsi_15m is null or rsi_15m between 0 and 100) and (rsi_1h is null or rsi_1h between 0 and 100)
        and (rsi_4h is null or rsi_4h between 0 and 100)),
    constraint market_snapshots_macd_signal check (macd_signal in ('bullish', 'bearish', 'neutral')),
    constraint market_snapshots_volatility_range check (volatility_percentile between 0 and 100),
    constraint market_snapshots_volume_nonneg check (volume_ratio >= 0),
    constraint market_snapshots_trend_range check (trend_strength between 0 and 100),
    constraint market_snapshots_correlation_range check (btc_correlation between -1 and 1),
    constraint market_snapshots_condition check (
        market_condition in ('trending_up', 'trending_down', 'ranging', 'volatile', 'unknown'))
);
create unique index market_snapshots_tick_symbol_idx on public.market_snapshots (decision_snapshot_id, symbol);
create index market_snapshots_deployment_tick_idx on public.market_snapshots (deployment_id, tick_at desc);

-- One row per directional proposal (open_long / open_short), executed or rejected.
create table public.trade_outcomes (
    id                    uuid primary key,
    deployment_id         uuid not null references public.deployments (id) on delete cascade,
    decision_snapshot_id  uuid not null references public.decision_snapshots (id) on delete cascade,
    snapshot_id           uuid not null references public.market_snapshots (id) on delete cascade,
    tick_at               timestamptz not null,
    symbol                text not null,
    direction             text not null,
    confidence            integer,
    entry_price           numeric not null,
    predicted_stop        numeric,
    predicted_target      numeric,
    verdict               text not null,
    price_1h              numeric,
    price_4h              numeric,
    price_24h             numeric,
    pnl_percent_1h        numeric,
    pnl_percent_4h        numeric,
    pnl_percent_24h       numeric,
    hit_target            boolean,
    hit_stop              boolean,
    first_hit             text,
    max_favorable         numeric,
    max_adverse           numeric,
    outcome_grade         text,
    scored_at             timestamptz,
    created_at            timestamptz not null default now(),
    constraint trade_outcomes_direction check (direction in ('long', 'short')),
    constraint trade_outcomes_confidence_range check (confidence between 0 and 100),
    constraint trade_outcomes_entry_positive check (entry_price > 0),
    constraint trade_outcomes_verdict check (verdict in ('executed', 'rejected')),
    constraint trade_outcomes_first_hit check (first_hit in ('target', 'stop', 'neither')),
    constraint trade_outcomes_grade check (outcome_grade in ('A', 'B', 'C', 'D', 'F')),
    constraint trade_outcomes_graded_when_scored check (outcome_grade is null or scored_at is not null)
);
create unique index trade_outcomes_decision_idx on public.trade_outcomes (decision_snapshot_id);
create index trade_outcomes_deployment_tick_idx on public.trade_outcomes (deployment_id, tick_at desc);
create index trade_outcomes_unscored_idx on public.trade_outcomes (tick_at) where scored_at is null;

-- Free-text notes on an outcome or a ledger row (exactly one of the two).
create table public.trade_annotations (
    id             uuid primary key,
    deployment_id  uuid not null references public.deployments (id) on delete cascade,
    outcome_id     uuid references public.trade_outcomes (id) on delete cascade,
    trade_id       uuid references public.trade_history (id) on delete cascade,
    annotation     text not null,
    tags           text[] not null default '{}',
    created_at     timestamptz not null,
    constraint trade_annotations_one_target check (num_nonnulls(outcome_id, trade_id) = 1),
    constraint trade_annotations_annotation_len check (char_length(annotation) between 1 and 2000)
);
create index trade_annotations_deployment_idx on public.trade_annotations (deployment_id, created_at desc);
create index trade_annotations_outcome_idx on public.trade_annotations (outcome_id);
create index trade_annotations_trade_idx on public.trade_annotations (trade_id);
