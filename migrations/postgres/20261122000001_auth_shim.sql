-- Auth shim: the small part of Supabase's `auth` schema that row-level security policies use,
-- so the same policies run on a plain PostgreSQL. Every statement tolerates an existing object
-- (Supabase already ships all of them; roles are cluster-wide and may come from another database).

create schema if not exists auth;

create table if not exists auth.users (
    id    uuid primary key,
    email text
);

-- Roles: NOLOGIN; a login role (the API gateway, the runner) is granted one of them, or a superuser
-- uses SET ROLE. Two migrations racing in separate databases may both try to create a role, so a
-- unique violation is tolerated as well.
do $$
declare
    r text;
begin
    foreach r in array array['anon', 'authenticated', 'service_role'] loop
        if not exists (select 1 from pg_roles where rolname = r) then
            begin
                if r = 'service_role' then
                    execute format('create role %I nologin noinherit bypassrls', r);
                else
                    execute format('create role %I nologin noinherit', r);
                end if;
            exception when duplicate_object or unique_violation then
                null;
            end;
        end if;
    end loop;
end
$$;

grant usage on schema public to anon, authenticated, service_role;

-- auth.uid() / auth.role(): the JWT claims of the request, as PostgREST sets them with
-- `set_config('request.jwt.claims', '<json>', true)`. Both return null outside a request.
do $$
begin
    if not exists (
        select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'auth' and p.proname = 'uid'
    ) then
        execute $f$
            create function auth.uid() returns uuid
            language sql stable
            as $b$
                select (nullif(current_setting('request.jwt.claims', true), '')::json ->> 'sub')::uuid
            $b$
        $f$;
    end if;
    if not exists (
        select 1 from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where n.nspname = 'auth' and p.proname = 'role'
    ) then
        execute $f$
            create function auth.role() returns text
            language sql stable
            as $b$
                select nullif(current_setting('request.jwt.claims', true), '')::json ->> 'role'
            $b$
        $f$;
    end if;
end
$$;

-- Grants on the auth schema. On Supabase it belongs to another admin role and these grants
-- already exist; refusing to re-grant them there is not an error.
do $$
begin
    grant usage on schema auth to anon, authenticated, service_role;
    grant execute on function auth.uid() to anon, authenticated, service_role;
    grant execute on function auth.role() to anon, authenticated, service_role;
    grant select, insert, update, delete on auth.users to service_role;
exception when insufficient_privilege then
    raise notice 'auth shim: grants on schema auth left as they are (%)', sqlerrm;
end
$$;
