-- 0026: NIP-29 private and hidden groups (internal/groups, docs/groups.md).
--
-- cn_relay.group_access holds one row per group that not everyone may read,
-- and none for any other: a `private` group (every event of its scope,
-- GROUP:<id>, but its state events, is read by its members only) or a
-- `hidden` one (its state events 39000-39005, and the node's deletion of
-- them, are read by its members only): protocol.GroupKeepsFrom. readers are
-- its members' pubkeys. It is derived from
-- cn_relay.groups (groups.QueueSave writes both, in the transaction of the
-- batch that changed the group, holding the group's lock), so it changes in
-- the same commit as the group's state and the outbox rows of the events
-- that changed it.
--
-- Every read path for clients checks it in the statement that reads the
-- events (schema.GroupReadableSQL), so a change takes effect for reads at
-- once. The table is small (only such groups), so a read that finds it
-- empty costs one scan of an empty table per statement, whatever the
-- statistics say.
CREATE TABLE cn_relay.group_access (
    scope   text    PRIMARY KEY,   -- 'GROUP:' || id
    private boolean NOT NULL,
    hidden  boolean NOT NULL,
    readers text[]  NOT NULL
);

-- group_keeps(event, kind, readers): whether a private or hidden group keeps
-- the event (its scope row) from a reader authenticated as readers
-- (protocol.GroupKeepsFrom), one primary-key probe of event_topics. A
-- PL/pgSQL function of COST 1 rather than an inline subquery: the planner
-- costs an inline SubPlan at its whole cost for every row (it does not know
-- that the OR before it stops first), and that cost alone made it change the
-- plans of ordinary REQs (BenchmarkStoreQuery). STABLE: it reads the calling
-- statement's snapshot.
CREATE FUNCTION cn_relay.group_keeps(p_event_id text, p_kind integer, p_readers text[]) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE COST 1 AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM cn_relay.event_topics gt JOIN cn_relay.group_access ga ON ga.scope = gt.topic_id
        WHERE gt.event_id = p_event_id AND gt.scope AND NOT (ga.readers && p_readers)
          AND (ga.private AND NOT p_kind BETWEEN 39000 AND 39005
               OR ga.hidden AND (p_kind BETWEEN 39000 AND 39005 OR p_kind = 5)));
END $$;

-- group_keeps_doc(topics, kind): group_keeps for an anonymous reader of a
-- row that carries its event's scope topics (the search index's documents).
CREATE FUNCTION cn_relay.group_keeps_doc(p_topics text[], p_kind integer) RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE COST 1 AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM cn_relay.group_access ga WHERE ga.scope = ANY(p_topics)
          AND (ga.private AND NOT p_kind BETWEEN 39000 AND 39005
               OR ga.hidden AND (p_kind BETWEEN 39000 AND 39005 OR p_kind = 5)));
END $$;
