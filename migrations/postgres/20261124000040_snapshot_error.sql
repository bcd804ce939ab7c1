-- Provider failures are visible (#20 item 1): why a tick's model loop failed is stored with its
-- snapshot (the model loop's error text, cut by the tick to types::MAX_STORED_ERROR_CHARS), and
-- a tick that ended on a model failure (provider error or deadline) is told apart from a no-op.
alter table public.decision_snapshots
    add column error text
        constraint decision_snapshots_error_len check (char_length(error) <= 2000),
    add column model_error boolean not null default false;
