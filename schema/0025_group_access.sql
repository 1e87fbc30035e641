-- 0025: NIP-29 private and hidden groups (internal/groups, docs/groups.md).
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
