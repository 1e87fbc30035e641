-- 0034: bounds on groups and NIP-43 claims (issue 47; groups.Limits,
-- membership.Limits).
--
-- The store counts the groups one key created (a 9007's author is its
-- state's creator; created.seq is when the relay took the 9007, unix
-- microseconds) in the transaction of every batch with a 9007 of that key;
-- the index keeps that a probe whatever the number of groups (autovacuum may
-- be off: the ingest's plans do not rely on statistics).
CREATE INDEX groups_creator ON cn_relay.groups ((state ->> 'creator'), (((state -> 'created') ->> 'seq')::bigint));

-- The relay counts the open claims (not used, not revoked) of a member, and
-- of the whole relay, before it mints one for a kind 28935 REQ.
CREATE INDEX membership_claims_open_issuer ON cn_relay.membership_claims (issuer, expires_at)
    WHERE used_by IS NULL AND revoked_at IS NULL;
CREATE INDEX membership_claims_open ON cn_relay.membership_claims (expires_at)
    WHERE used_by IS NULL AND revoked_at IS NULL;
