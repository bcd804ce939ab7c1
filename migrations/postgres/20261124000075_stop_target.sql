-- Stops and targets executed by the broker (#16 item 4): a round trip can end at its stop or its
-- target, and a fill says which of the two resting levels made it.
alter table trade_history drop constraint trade_history_close_kind;
alter table trade_history add constraint trade_history_close_kind check (
    close_kind in ('signal', 'flip', 'liquidation', 'external', 'stop', 'target'));

-- NULL for market orders and liquidations (and every fill stored before this migration).
alter table fills add column trigger_kind text constraint fills_trigger_kind check (trigger_kind in ('stop', 'target'));
