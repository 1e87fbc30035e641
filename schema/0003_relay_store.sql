-- 0003: what the relay's queries and NIP-09 need besides the events themselves.

-- Single-letter tags of stored events (NIP-01 #x filters), except 't', which lives
-- normalised in cn_relay.event_topics.
CREATE TABLE cn_relay.event_tags (
    event_id   text   NOT NULL REFERENCES cn_relay.events (id) ON DELETE CASCADE,
    name       text   NOT NULL CHECK (length(name) = 1),
    value      text   NOT NULL,
    created_at bigint NOT NULL,
    PRIMARY KEY (name, value, created_at, event_id)
);
CREATE INDEX event_tags_event_id_idx ON cn_relay.event_tags (event_id);

-- NIP-09 deletion requests by target, kept for good so that a deletion that arrives
-- before its target still applies when the target arrives. target is an event id
-- ('e' tag) or an address 'kind:pubkey:d' ('a' tag, covering versions created at or
-- before created_at). pubkey is the deletion's author: it only ever deletes that
-- author's events.
CREATE TABLE cn_relay.deletion_targets (
    target      text   NOT NULL,
    pubkey      text   NOT NULL,
    deletion_id text   NOT NULL,
    created_at  bigint NOT NULL,
    PRIMARY KEY (target, pubkey, deletion_id)
);

-- Effective-version lookups by key and version listings for promotion after deletes.
CREATE INDEX events_effective_key_all_idx ON cn_relay.events (effective_key, created_at DESC, id)
    WHERE effective_key IS NOT NULL;
-- REQ by authors and kinds, newest first.
CREATE INDEX events_pubkey_kind_created_at_idx ON cn_relay.events (pubkey, kind, created_at DESC, id);

-- The relay's plans depend on fresh statistics (a fresh node grows from nothing to
-- millions of rows): analyse after 5% growth instead of the default 10%.
ALTER TABLE cn_relay.events       SET (autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE cn_relay.event_topics SET (autovacuum_analyze_scale_factor = 0.05);
ALTER TABLE cn_relay.event_tags   SET (autovacuum_analyze_scale_factor = 0.05);
