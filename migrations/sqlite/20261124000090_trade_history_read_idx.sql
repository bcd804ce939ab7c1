-- #16 item 6: a live tick reads a deployment's open rows, its newest closed rows, the rows
-- closed since the last note and the closed count (`tick::restore_state_carried`). These
-- partial indexes keep those reads proportional to what they return, not to the deployment's
-- age: the newest closed entries, closed rows by exit and by the tick that recorded their close
-- (open rows already have `trade_history_one_open_idx`).
CREATE INDEX IF NOT EXISTS trade_history_closed_exit_idx ON trade_history (deployment_id, exit_tick_at)
    WHERE status = 'closed';
CREATE INDEX IF NOT EXISTS trade_history_closed_at_idx ON trade_history (deployment_id, closed_at)
    WHERE status = 'closed';
CREATE INDEX IF NOT EXISTS trade_history_closed_entry_idx
    ON trade_history (deployment_id, entry_tick_at DESC, id DESC) WHERE status = 'closed';
