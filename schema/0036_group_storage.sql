-- 0036: a group's storage grows with what changed, not with its size (issue 47).
--
-- Member lists the node signs later (groups.MemberLists): a group above
-- --group-member-list-above members gets at most one new 39002 per
-- --group-member-list-every; list_due is when its next one is due (NULL: none
-- waits). The relay's store sets it in the transaction of the batch that
-- deferred the list and clears it in the one that signs the list; the index
-- keeps the relay's poll a probe whatever the number of groups.
ALTER TABLE cn_relay.groups ADD COLUMN list_due timestamptz;
CREATE INDEX groups_list_due ON cn_relay.groups (list_due) WHERE list_due IS NOT NULL;

-- Each user's registers of a group (groups.State.Members: the newest 9000 or
-- 9001 naming them; State.Requests: their newest join request) are a row of
-- their own, so that a batch that changes one user rewrites that user's row,
-- not the whole group's state (cn_relay.groups.state keeps the rest). Written
-- with the group's state by groups.QueueSave, holding the group's lock.
CREATE TABLE cn_relay.group_users (
    group_id text  NOT NULL,
    pubkey   text  NOT NULL,
    member   jsonb, -- groups.Membership, NULL when no 9000/9001 named the user
    request  jsonb, -- groups.Stamp, NULL when the user sent no join request
    PRIMARY KEY (group_id, pubkey)
);

INSERT INTO cn_relay.group_users (group_id, pubkey, member, request)
SELECT g.id, u.pubkey, g.state -> 'members' -> u.pubkey, g.state -> 'requests' -> u.pubkey
FROM cn_relay.groups g,
     LATERAL (SELECT jsonb_object_keys(CASE WHEN jsonb_typeof(g.state -> 'members') = 'object' THEN g.state -> 'members' ELSE '{}' END)
              UNION SELECT jsonb_object_keys(CASE WHEN jsonb_typeof(g.state -> 'requests') = 'object' THEN g.state -> 'requests' ELSE '{}' END)) AS u(pubkey);
UPDATE cn_relay.groups SET state = state - 'members' - 'requests';

-- group_state gives a group's whole state (groups.Load reads it): its row's
-- state with its users' registers.
CREATE FUNCTION cn_relay.group_state(g cn_relay.groups) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT g.state || jsonb_build_object(
        'members', coalesce((SELECT jsonb_object_agg(u.pubkey, u.member)
            FROM cn_relay.group_users u WHERE u.group_id = g.id AND u.member IS NOT NULL), '{}'),
        'requests', coalesce((SELECT jsonb_object_agg(u.pubkey, u.request)
            FROM cn_relay.group_users u WHERE u.group_id = g.id AND u.request IS NOT NULL), '{}'))
$$;
