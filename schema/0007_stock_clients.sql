-- 0007: stock Nostr clients. Every stored event still belongs to topics, and the
-- outbox still carries topic_id on every row, but a client no longer has to put
-- `t` tags on everything:
--
--   * an event without `t` tags inherits the topics of the stored events it
--     references (e, E, a, A and q tags): replies, reposts, reactions, comments,
--     reports, zap receipts, labels and deletions land in the topic of what they
--     are about, in event_topics and in the outbox (one row per topic);
--   * identity events (profiles, follow, mute and relay lists: every replaceable
--     kind, 0, 3 and 10000-19999) are node-wide. They are stored under the
--     reserved topic id 'NODE', in event_topics and in the outbox alike. No
--     normalised `t` value can equal it, because normalisation lower-cases (see
--     protocol.NodeTopic), so clients can neither publish into it nor ask for it
--     with #t.
-- own: the row comes from the event's own `t` tag. NIP-01 #t filters match own
-- topics only (clients check what they receive against their filters), so the
-- topic indexes the #t REQ paths walk hold own rows only; inherited and NODE rows
-- are for consumers (and cost no index entry there).
ALTER TABLE cn_relay.event_topics ADD COLUMN own boolean NOT NULL DEFAULT true;
DROP INDEX cn_relay.event_topics_topic_created_at_idx;
CREATE INDEX event_topics_topic_created_at_idx ON cn_relay.event_topics (topic_id, created_at DESC, event_id) WHERE own;
DROP INDEX cn_relay.event_topics_topic_pubkey_created_at_idx;
CREATE INDEX event_topics_topic_pubkey_created_at_idx
    ON cn_relay.event_topics (topic_id, pubkey, created_at DESC, event_id) INCLUDE (kind) WHERE own;

COMMENT ON COLUMN cn_relay.event_topics.topic_id IS
    'normalised t tag value (NFKC, lower case, trimmed), own or inherited from a referenced event; ''NODE'' (reserved, never a normalised value) for identity events';
COMMENT ON COLUMN cn_relay.events_outbox.topic_id IS
    'one row per topic of the event, as in cn_relay.event_topics; ''NODE'' for identity events';

-- Members: authors with at least one event stored in a community topic (not
-- 'NODE'), in the order they joined. With the default identity-writers policy
-- (members) only they may publish identity events, so that keys that never
-- posted here cannot fill the node with profiles. A row is written by the
-- ingest transaction that stores the author's first such event and is never
-- removed (deleting that event does not undo membership).
CREATE TABLE cn_relay.members (
    pubkey         text        PRIMARY KEY,
    first_event_id text        NOT NULL,
    joined_at      timestamptz NOT NULL
);

INSERT INTO cn_relay.members (pubkey, first_event_id, joined_at)
SELECT DISTINCT ON (t.pubkey) t.pubkey, t.event_id, e.ingested_at
FROM cn_relay.event_topics t JOIN cn_relay.events e ON e.id = t.event_id
ORDER BY t.pubkey, e.ingested_at, t.event_id;
