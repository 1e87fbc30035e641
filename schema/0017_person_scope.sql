-- 0017: what a member's app sends survives (onboarding, lists, DMs).
--
-- event_topics.scope: the row places the event in a topic or in the person scope
-- ('NODE'), as the outbox does: consumers, inheritance and the delete rows of a
-- deletion read scope rows only. A row with scope false is an identity event's
-- own `t` tag (NIP-51 interests, a profile's hashtags): #t matches it (own), as
-- NIP-01 says, but it puts the event in no community topic. Rows stored before
-- this migration are scope rows (adding a column with a constant default
-- rewrites nothing). Identity events stored before it get their #t rows when
-- they are published again.
ALTER TABLE cn_relay.event_topics ADD COLUMN scope boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN cn_relay.event_topics.scope IS
    'true: the event is in this topic (or the person scope NODE), as in the outbox; false: only an identity event''s own t tag, for #t';

-- Identity events (profiles, follow and relay lists, NIP-51 sets, app data) from
-- keys that are not members yet: accepted, kept here, and neither served, indexed
-- nor in the outbox until the key becomes a member (its first post, an operator's
-- allowpubkey, a trust rank at the relay's gate). Then the store publishes the
-- newest version of each key as if it had just arrived and deletes the rows.
-- One row per effective key (the newest version wins); the relay bounds the rows
-- per key and in all, and deletes rows older than its pending age.
CREATE TABLE cn_relay.pending_events (
    id            text        PRIMARY KEY,
    pubkey        text        NOT NULL,
    effective_key text        NOT NULL UNIQUE,
    created_at    bigint      NOT NULL,
    event         text        NOT NULL, -- the signed event as JSON
    received_at   timestamptz NOT NULL
);
CREATE INDEX pending_events_pubkey_idx ON cn_relay.pending_events (pubkey);
CREATE INDEX pending_events_received_at_idx ON cn_relay.pending_events (received_at);
