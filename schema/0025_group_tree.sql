-- 0025: NIP-29 subgroups (internal/groups Forest).
--
-- A group's parent is its state's meta.parent. The store finds a group's
-- subgroups (to list them in its kind 39000, to check a 9002 lists them all,
-- to make them roots when it is deleted) by this expression; the index keeps
-- that a probe whatever the number of groups (autovacuum may be off: the
-- ingest's plans do not rely on statistics).
CREATE INDEX groups_parent ON cn_relay.groups ((state -> 'meta' ->> 'parent'));

-- Each group's state now keeps the stamp of every 9002 it accepted
-- (State.Parents: when a group was adopted by its parent is a function of its
-- events). Groups made before this migration accepted no parent tag, so their
-- log is their stored 9002s, oldest first, each with no parent (Stamp order:
-- created_at, then ingested_at in microseconds, then the higher id first, as
-- the lower id is the newer).
UPDATE cn_relay.groups g SET state = jsonb_set(g.state, '{parents}', l.parents)
FROM (
    SELECT substr(t.topic_id, 7) AS group_id,
           jsonb_agg(jsonb_build_object('stamp', jsonb_build_object(
                   'at', e.created_at,
                   'seq', (extract(epoch FROM e.ingested_at) * 1000000)::bigint,
                   'id', e.id))
               ORDER BY e.created_at, e.ingested_at, e.id DESC) AS parents
    FROM cn_relay.events e
    JOIN cn_relay.event_topics t ON t.event_id = e.id AND t.scope AND starts_with(t.topic_id, 'GROUP:')
    WHERE e.kind = 9002
    GROUP BY 1
) l
WHERE g.id = l.group_id AND NOT (g.state ? 'parents');
