-- 0025: NIP-29 subgroups (internal/groups Forest).
--
-- A group's parent is its state's meta.parent. The store finds a group's
-- subgroups (to list them in its kind 39000, to check a 9002 lists them all,
-- to make them roots when it is deleted) by this expression; the index keeps
-- that a probe whatever the number of groups (autovacuum may be off: the
-- ingest's plans do not rely on statistics).
CREATE INDEX groups_parent ON cn_relay.groups ((state -> 'meta' ->> 'parent'));
