-- Consent before any action (#46): what the chat coach proposes to change — pause, resume or
-- stop a deployment, save a new version of a skill — is kept here, pending, until its owner
-- confirms it (the store then applies it in the same transaction, with the change's own audit:
-- the `deployment_controls` row, the new skill version), discards it, or it expires. The coach
-- holds no write authority over deployments or skills: only its owner's confirmation does.
--
-- A decision is final: confirmed (with `result`), discarded, expired (decided at its expiry) or
-- failed (the change refused itself, with `error`); trigger `pending_actions_decided_final`
-- refuses any change of a decided row. Written AS THE USER (the HTTP server's requests run
-- under row-level security): see the `_rls` migration.
create table public.pending_actions (
    id              uuid primary key,
    user_id         uuid not null references auth.users (id) on delete cascade,
    conversation_id uuid references public.chat_conversations (id) on delete set null,
    kind            text not null
                    constraint pending_actions_kind check (kind in (
                        'pause_deployment', 'resume_deployment', 'stop_deployment',
                        'save_skill_version')),
    deployment_id   uuid references public.deployments (id) on delete cascade,
    skill_id        uuid references public.skills (id) on delete cascade,
    arguments       jsonb not null
                    constraint pending_actions_arguments_json check (
                        jsonb_typeof(arguments) = 'object' and octet_length(arguments::text) <= 65536),
    summary         text not null
                    constraint pending_actions_summary_len check (char_length(summary) between 1 and 500),
    created_at      timestamptz not null,
    expires_at      timestamptz not null,
    status          text not null default 'pending'
                    constraint pending_actions_status check (status in (
                        'pending', 'confirmed', 'discarded', 'expired', 'failed')),
    decided_at      timestamptz,
    decided_by      text
                    constraint pending_actions_decided_by_len check (char_length(decided_by) between 1 and 100),
    result          jsonb,
    error           text
                    constraint pending_actions_error_len check (char_length(error) between 1 and 1000),
    -- A deployment action names its deployment, a skill version its skill; never both.
    constraint pending_actions_target check (
        case when kind = 'save_skill_version' then skill_id is not null and deployment_id is null
             else deployment_id is not null and skill_id is null end),
    constraint pending_actions_expiry check (expires_at > created_at),
    constraint pending_actions_decided check ((status = 'pending') = (decided_at is null)),
    constraint pending_actions_decided_by check (decided_by is null or status not in ('pending', 'expired')),
    constraint pending_actions_result check (result is null or status = 'confirmed'),
    constraint pending_actions_error check ((error is not null) = (status = 'failed'))
);
create index pending_actions_user_idx on public.pending_actions (user_id, created_at desc, id);
-- The pending rows the expiry sweep looks for.
create index pending_actions_expiry_idx on public.pending_actions (expires_at) where status = 'pending';

create function public.pending_actions_decided_final() returns trigger
language plpgsql
as $$
begin
    if old.status <> 'pending' then
        raise exception using
            errcode = 'check_violation',
            constraint = 'pending_actions_decided_final',
            message = format('action %s was %s: a decision is final', old.id, old.status);
    end if;
    return new;
end
$$;

create trigger pending_actions_decided_final
    before update on public.pending_actions
    for each row execute function public.pending_actions_decided_final();
