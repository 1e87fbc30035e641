-- 0016: ANALYZE gathers only statistics the planner uses. No query filters,
-- joins or sorts cn_relay.events on content, tags or sig (they are read back,
-- never searched: search has its own index in cn_index, tag filters use
-- cn_relay.event_tags), so their statistics were never used, and they are the
-- widest columns. On 1,000,000 events an ANALYZE of the table took ~1.0 s
-- before and ~0.57 s after (psql \timing, 3 runs each); on the small, growing
-- tables of a young node the relay's statistics keeper (store.AnalyzeStale)
-- analyses often, and this was most of its work.
ALTER TABLE cn_relay.events
    ALTER COLUMN content SET STATISTICS 0,
    ALTER COLUMN tags SET STATISTICS 0,
    ALTER COLUMN sig SET STATISTICS 0;
