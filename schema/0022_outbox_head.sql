-- 0022: the outbox head, the highest committed seq, as one row. Every append
-- sets it in the statement that inserts its rows (pkg/outbox), under the
-- outbox lock, so in any snapshot it equals max(seq) of the outbox. Reading it
-- is one row of one page, where max(seq) walks the newest row of every
-- partition: the relay reads the head for each REQ its event cache answers.
CREATE TABLE cn_relay.outbox_head (
    singleton boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    seq       bigint  NOT NULL CHECK (seq >= 0)
);

-- (schema.OutboxLock: after every append committed so far, the ones running
-- finish first)
SELECT pg_advisory_xact_lock(7164768989509608047);
INSERT INTO cn_relay.outbox_head (seq) SELECT coalesce(max(seq), 0) FROM cn_relay.events_outbox;
