-- 0012: one index less per tag row on the ingest path. The relay probes a
-- tag filter (#p, #e, any single letter but t) for a given event through the
-- primary key (name, value, created_at, event_id), naming the event's
-- created_at too, so nothing reads event_tags by event_id alone.
DROP INDEX cn_relay.event_tags_event_id_idx;
