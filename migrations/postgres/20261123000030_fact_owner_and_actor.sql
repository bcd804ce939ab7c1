-- Two gaps of the facts' audit trail (#20):
-- 1. A change of `updated_by` alone (who last touched the fact) was not recorded.
-- 2. `user_facts.skill_id` could name another user's skill (a fact scoped to a skill its owner
--    does not have). It must belong to the fact's owner; refused with a named check violation.

drop trigger if exists user_facts_audit_update on public.user_facts;
create trigger user_facts_audit_update
    after update on public.user_facts
    for each row
    when (old.fact is distinct from new.fact
          or old.topic is distinct from new.topic
          or old.source is distinct from new.source
          or old.confidence is distinct from new.confidence
          or old.skill_id is distinct from new.skill_id
          or old.archived_at is distinct from new.archived_at
          or old.updated_by is distinct from new.updated_by)
    execute function public.user_facts_audit();

-- security definer: the check must see the skill even when the writer's row-level security
-- would hide it (it then fails, as it should, instead of passing by not seeing the row).
create function public.user_facts_skill_owner() returns trigger
language plpgsql security definer set search_path = public, pg_temp
as $$
begin
    if new.skill_id is not null and not exists (
        select 1 from public.skills s where s.id = new.skill_id and s.user_id = new.user_id
    ) then
        raise exception using
            errcode = 'check_violation',
            constraint = 'user_facts_skill_owner',
            message = format('skill %s does not belong to the fact''s owner', new.skill_id);
    end if;
    return new;
end
$$;

create trigger user_facts_skill_owner
    before insert or update of skill_id, user_id on public.user_facts
    for each row execute function public.user_facts_skill_owner();
