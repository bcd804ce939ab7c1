-- `OutcomeStore::symbol_outcomes` (`sim-worker memory-stats`, and the recall tools to come) reads one
-- symbol's outcomes in a time window across deployments: without this index it scans the table.
create index if not exists trade_outcomes_symbol_tick_idx on public.trade_outcomes (symbol, tick_at desc);
