-- 0019: NIP-77 sessions read their items, (created_at, id) in that order, for
-- the visible events of a filter. For the whole node's sync ({}), a kind's, and
-- time windows of either, this partial index holds every column the query
-- reads: the predicate is schema.LiveSQL (current and not deleted), and kind
-- (the filter's kinds, and the direct messages a public reader may not see) and
-- expires_at (NIP-40) are carried along. Postgres then answers with an
-- index-only scan in the index's order: no sort, and no heap page read for the
-- rows on pages the visibility map marks all-visible.
CREATE INDEX events_sync_idx ON cn_relay.events (created_at, id) INCLUDE (kind, expires_at)
    WHERE deleted_at IS NULL AND is_effective;
