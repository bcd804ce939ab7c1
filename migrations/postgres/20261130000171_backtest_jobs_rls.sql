-- Row-level security of backtest jobs (#47). A user submits jobs of their own (queued, nothing
-- of a worker's set: the insert grant names the columns a submit writes) with the bars they run
-- over, reads their own jobs and bars, and cancels a job of theirs that has not finished;
-- everything else (claiming, heartbeats, results, failures) is the workers', as the service
-- role. The rows a job's run records (its deployment, ticks, ledger) are its user's, readable
-- under the policies of those tables.
grant select, insert on public.backtest_bars to authenticated;
grant select on public.backtest_jobs to authenticated;
grant insert (id, user_id, batch_id, label, spec, cost_limit_usd, created_at)
    on public.backtest_jobs to authenticated;
grant update (status, finished_at, lease_owner, lease_expires_at) on public.backtest_jobs to authenticated;
grant select, insert, update, delete on public.backtest_bars, public.backtest_jobs to service_role;

alter table public.backtest_bars enable row level security;
alter table public.backtest_jobs enable row level security;

create policy "backtest_bars: service role" on public.backtest_bars
    for all to service_role using (true) with check (true);
create policy "backtest_bars: owner read" on public.backtest_bars
    for select to authenticated using (user_id = auth.uid());
create policy "backtest_bars: owner insert" on public.backtest_bars
    for insert to authenticated with check (user_id = auth.uid());

create policy "backtest_jobs: service role" on public.backtest_jobs
    for all to service_role using (true) with check (true);
create policy "backtest_jobs: owner read" on public.backtest_jobs
    for select to authenticated using (user_id = auth.uid());
create policy "backtest_jobs: owner submit" on public.backtest_jobs
    for insert to authenticated with check (user_id = auth.uid() and status = 'queued');
-- A cancel moves a queued or running job of the user's to `cancelled` (its lease dropped), and
-- nothing else.
create policy "backtest_jobs: owner cancel" on public.backtest_jobs
    for update to authenticated
    using (user_id = auth.uid() and status in ('queued', 'running'))
    with check (user_id = auth.uid() and status = 'cancelled' and lease_owner is null);
