-- 0004: the topic and tag rows of an event are written by the relay's store in the
-- same transaction as the event itself, and events are never removed physically
-- (NIP-09 and NIP-40 are soft deletes), so the foreign keys to cn_relay.events only
-- cost a referential-integrity lookup and a row lock per topic and tag row on the
-- ingest path (about a quarter of Postgres's CPU per event, measured with
-- `cnctl bench ingest`). Integrity is the store's promise: every event_topics and
-- event_tags row is inserted in the transaction that inserts its event.
ALTER TABLE cn_relay.event_topics DROP CONSTRAINT event_topics_event_id_fkey;
ALTER TABLE cn_relay.event_tags   DROP CONSTRAINT event_tags_event_id_fkey;
