-- 0036: member lists (39002) the node signs later (issue 47; groups.MemberLists).
--
-- A group above --group-member-list-above members gets at most one new 39002
-- per --group-member-list-every; list_due is when its next one is due (NULL:
-- none waits). The relay's store sets it in the transaction of the batch that
-- deferred the list and clears it in the one that signs the list; the index
-- keeps the relay's poll a probe whatever the number of groups.
ALTER TABLE cn_relay.groups ADD COLUMN list_due timestamptz;
CREATE INDEX groups_list_due ON cn_relay.groups (list_due) WHERE list_due IS NOT NULL;
