-- Row-level security of alerts (#45). A user reads, adds and deletes their own channels — but
-- never reads a channel's `url` or `secret` back (no column privilege: the webhook URL, its HMAC
-- key and a bot token are the runner's to read, as the service role). A user reads their own
-- events and deliveries, and queues a test message to a channel of theirs (an event of kind
-- `test` and its one delivery); every other write of the outbox is the runner's.
grant select (id, user_id, name, kind, chat_id, hint, events, created_at) on public.alert_channels to authenticated;
grant insert, delete on public.alert_channels to authenticated;
grant select, insert on public.alert_events, public.alert_deliveries to authenticated;
grant select, insert, update, delete on public.alert_channels, public.alert_events,
    public.alert_deliveries to service_role;

do $$
declare
    t text;
begin
    foreach t in array array['alert_channels', 'alert_events', 'alert_deliveries'] loop
        execute format('alter table public.%I enable row level security', t);
        execute format(
            'create policy "%s: service role" on public.%I for all to service_role using (true) with check (true)',
            t, t);
    end loop;
end
$$;

create policy "alert_channels: owner read" on public.alert_channels
    for select to authenticated using (user_id = auth.uid());
create policy "alert_channels: owner add" on public.alert_channels
    for insert to authenticated with check (user_id = auth.uid());
create policy "alert_channels: owner delete" on public.alert_channels
    for delete to authenticated using (user_id = auth.uid());

create policy "alert_events: owner read" on public.alert_events
    for select to authenticated using (user_id = auth.uid());
create policy "alert_events: owner test" on public.alert_events
    for insert to authenticated with check (
        user_id = auth.uid() and kind = 'test' and deployment_id is null);

create policy "alert_deliveries: owner read" on public.alert_deliveries
    for select to authenticated using (user_id = auth.uid());
create policy "alert_deliveries: owner test" on public.alert_deliveries
    for insert to authenticated with check (
        user_id = auth.uid() and status = 'pending' and attempts = 0 and lease_owner is null
        and exists (select 1 from public.alert_events e
                    where e.id = alert_deliveries.event_id and e.user_id = auth.uid() and e.kind = 'test')
        and exists (select 1 from public.alert_channels c
                    where c.id = alert_deliveries.channel_id and c.user_id = auth.uid()));
