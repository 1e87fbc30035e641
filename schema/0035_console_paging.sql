-- 0035: the console's lists come a page at a time (internal/console, issue 47).
--
-- Each list is read by keyset: the rows after the last one of the page before,
-- in the list's order, LIMIT the page's size. These indexes hold that order,
-- so a page is an index range scan whatever the number of rows (100,000
-- community members: 0.1 ms a page with the index, 97 ms without, growing with
-- the table) and whatever the statistics say (autovacuum may be off). The
-- other lists have theirs already: cn_relay.groups by id (its primary key),
-- the NIP-43 members by pubkey (nip43_members_member).
--
-- Community members, newest first (console.Members).
CREATE INDEX members_joined ON cn_relay.members (joined_at, pubkey);
-- NIP-43 invites, newest first (console.NIP43Invites).
CREATE INDEX membership_claims_issued ON cn_relay.membership_claims (issued_at, id);
-- NIP-43 join requests, oldest first (console.NIP43Pending).
CREATE INDEX membership_pending_requested ON cn_relay.membership_pending (requested_at, pubkey);
