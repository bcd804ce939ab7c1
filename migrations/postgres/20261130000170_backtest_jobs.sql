-- Backtests as jobs (#47): a queue of backtest runs that `sim-worker work` processes lease,
-- run and report on, and the bar files they run over, stored once.
--
-- `backtest_bars` holds a bar file's bytes by their SHA-256, per user: a second submit of the
-- same bars stores nothing new. `format` is how the bytes parse (`csv`, the backtesting.py
-- layout, or `json`, Hyperliquid candles).
--
-- `backtest_jobs` is one row per backtest run: its `spec` (the skill document, the bars by hash,
-- the model and the run's options), its place in a `batch` (an arena's runs share one), and
-- where it stands: `queued` → `running` (leased to a worker until `lease_expires_at`, extended
-- by its heartbeat; a lease that expires is taken over by another worker, `attempts` counting
-- the claims) → `done` (`result`, the run's summary, and `report_html`) or `failed` (`error`),
-- or `cancelled` by its user. `ticks_done` / `ticks_total` and `cost_usd` are the progress the
-- heartbeat reports; `cost_limit_usd` the most the run may spend (the user's cost cap counts
-- these). `deployment_id` is the deployment the run records into (derived from the job's id), set
-- when a worker starts the run, before it registers the deployment: no foreign key.
create table public.backtest_bars (
    user_id    uuid not null references auth.users (id) on delete cascade,
    sha256     text not null constraint backtest_bars_sha256 check (sha256 ~ '^[0-9a-f]{64}$'),
    format     text not null constraint backtest_bars_format check (format in ('csv', 'json')),
    bytes      bytea not null
               constraint backtest_bars_size check (octet_length(bytes) between 1 and 67108864),
    created_at timestamptz not null,
    primary key (user_id, sha256)
);

create table public.backtest_jobs (
    id               uuid primary key,
    user_id          uuid not null references auth.users (id) on delete cascade,
    batch_id         uuid,
    label            text constraint backtest_jobs_label_len check (char_length(label) between 1 and 200),
    spec             jsonb not null
                     constraint backtest_jobs_spec check (
                         jsonb_typeof(spec) = 'object' and octet_length(spec::text) <= 1048576),
    status           text not null default 'queued'
                     constraint backtest_jobs_status check (
                         status in ('queued', 'running', 'done', 'failed', 'cancelled')),
    cost_limit_usd   numeric not null default 0
                     constraint backtest_jobs_cost_limit check (cost_limit_usd >= 0),
    attempts         integer not null default 0 constraint backtest_jobs_attempts check (attempts >= 0),
    lease_owner      text constraint backtest_jobs_owner_len check (char_length(lease_owner) between 1 and 200),
    lease_expires_at timestamptz,
    heartbeat_at     timestamptz,
    ticks_done       integer not null default 0 constraint backtest_jobs_ticks_done check (ticks_done >= 0),
    ticks_total      integer constraint backtest_jobs_ticks_total check (ticks_total >= 0),
    cost_usd         numeric not null default 0 constraint backtest_jobs_cost check (cost_usd >= 0),
    deployment_id    uuid,
    result           jsonb constraint backtest_jobs_result check (jsonb_typeof(result) = 'object'),
    report_html      text,
    error            text constraint backtest_jobs_error_len check (char_length(error) between 1 and 2000),
    created_at       timestamptz not null,
    started_at       timestamptz,
    finished_at      timestamptz,
    -- A running job is leased; a finished one is not, and says when it finished.
    constraint backtest_jobs_lease check ((status = 'running') = (lease_owner is not null)),
    constraint backtest_jobs_finished check (
        (status in ('done', 'failed', 'cancelled')) = (finished_at is not null)),
    constraint backtest_jobs_done check (status <> 'done' or result is not null),
    constraint backtest_jobs_failed check (status <> 'failed' or error is not null)
);
-- The claim's order: the oldest job first, among those waiting or running (a running one is
-- taken over when its lease expired).
create index backtest_jobs_claim_idx on public.backtest_jobs (created_at, id)
    where status in ('queued', 'running');
create index backtest_jobs_user_idx on public.backtest_jobs (user_id, created_at desc);
create index backtest_jobs_batch_idx on public.backtest_jobs (batch_id, created_at)
    where batch_id is not null;
