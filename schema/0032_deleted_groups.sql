-- 0032: a deleted NIP-29 group is read by no one (docs/groups.md "Deleted
-- groups").
--
-- From its 9008 on, a group's events (messages, moderation events, the
-- node's kind 5 that deletes its state) are kept from every reader but
-- those who read every group (relay admins, the node key, operator tools):
-- groups.Access derives its row of cn_relay.group_access as private and
-- hidden with no readers, so every read path applies the rule of 0026
-- unchanged (cn_relay.group_keeps, schema.GroupReadableSQL). deleted tells
-- the relay to answer a REQ that names the group as it answers an unknown id
-- (no auth-required, no "private"); no read rule looks at it.
ALTER TABLE cn_relay.group_access ADD COLUMN deleted boolean NOT NULL DEFAULT false;

-- Groups deleted before this migration: their rows as groups.Access gives
-- them (a deleted group's state has a non-empty deleted.id; State.Deleted).
INSERT INTO cn_relay.group_access (scope, private, hidden, readers, deleted)
SELECT 'GROUP:' || g.id, true, true, '{}', true
FROM cn_relay.groups g
WHERE coalesce(g.state -> 'deleted' ->> 'id', '') <> ''
ON CONFLICT (scope) DO UPDATE SET private = true, hidden = true, readers = '{}', deleted = true;
