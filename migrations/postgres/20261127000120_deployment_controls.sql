-- Controls (#45): pause, resume and stop a deployment, every change audited.
--
-- `deployment_controls` is the audit trail: one row per change of a deployment's status, who
-- asked (a user id, or an operator's name), why, when, and the status before and after. The
-- store writes it in the transaction that changes the status.
--
-- A stop may ask for the deployment's open positions to be closed ("flattened") through its
-- broker. The request is kept on the deployment (`flatten_requested_at`) until a runner has
-- done it (`flattened_at`), so it survives a runner killed in between; a failed attempt is
-- counted and retried later (`flatten_attempts`, `flatten_retry_at`, `flatten_error`).
-- A stopped deployment is final: nothing moves it back to active or paused.
alter table public.deployments
    add column flatten_requested_at timestamptz,
    add column flatten_attempts     int not null default 0
        constraint deployments_flatten_attempts_nonneg check (flatten_attempts >= 0),
    add column flatten_retry_at     timestamptz,
    add column flatten_error        text
        constraint deployments_flatten_error_len check (char_length(flatten_error) between 1 and 1000),
    add column flattened_at         timestamptz,
    add constraint deployments_flatten_stopped
        check (flatten_requested_at is null or status = 'stopped'),
    add constraint deployments_flattened_requested
        check (flattened_at is null or flatten_requested_at is not null);

-- Stopped deployments whose flatten is still to do (what runners look for).
create index deployments_flatten_due_idx on public.deployments (flatten_retry_at)
    where status = 'stopped' and flatten_requested_at is not null and flattened_at is null;

create function public.deployments_stopped_final() returns trigger
language plpgsql
as $$
begin
    if old.status = 'stopped' and new.status <> 'stopped' then
        raise exception using
            errcode = 'check_violation',
            constraint = 'deployments_stopped_final',
            message = format('deployment %s is stopped: a stopped deployment is final', old.id);
    end if;
    return new;
end
$$;

create trigger deployments_stopped_final
    before update of status on public.deployments
    for each row execute function public.deployments_stopped_final();

create table public.deployment_controls (
    id            uuid primary key,
    deployment_id uuid not null references public.deployments (id) on delete cascade,
    action        text not null
                  constraint deployment_controls_action check (action in ('pause', 'resume', 'stop')),
    flatten       boolean not null default false,
    requested_by  text not null
                  constraint deployment_controls_requested_by_len check (char_length(requested_by) between 1 and 100),
    reason        text
                  constraint deployment_controls_reason_len check (char_length(reason) between 1 and 500),
    requested_at  timestamptz not null,
    from_status   text not null
                  constraint deployment_controls_from_status check (from_status in ('active', 'paused', 'stopped')),
    to_status     text not null
                  constraint deployment_controls_to_status check (to_status in ('active', 'paused', 'stopped')),
    constraint deployment_controls_flatten_stop check (not flatten or action = 'stop'),
    constraint deployment_controls_transition check (
        (action = 'pause' and from_status = 'active' and to_status = 'paused')
        or (action = 'resume' and from_status = 'paused' and to_status = 'active')
        or (action = 'stop' and to_status = 'stopped' and (from_status <> 'stopped' or flatten)))
);
create index deployment_controls_deployment_idx
    on public.deployment_controls (deployment_id, requested_at desc, id);
