-- 0018: NIP-98 replay protection for NIP-86. An Authorization event is accepted
-- once: the relay process that accepts it records its id here, in the database
-- every relay process of the node shares, and a second use (on any process) finds
-- the row. A row is needed only while its event could still pass the time check
-- (created_at within 60 s of now), so expires_at is created_at + 60 s and expired
-- rows are deleted by the next NIP-86 request.
CREATE TABLE cn_admin.nip98_seen (
    event_id   text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX nip98_seen_expires_at_idx ON cn_admin.nip98_seen (expires_at);
