-- Blossom media (internal/blossom, docs/media.md): blobs addressed by their
-- SHA-256, stored as files under the blob directory; these tables are their
-- metadata. internal/blossom is the only writer of cn_blossom.blobs, owners,
-- auth_seen and log, except that the moderator (internal/moderation) sets and
-- clears blobs.hidden and appends to log when a NIP-56 report rule fires on a
-- blob.
CREATE SCHEMA cn_blossom;

-- One row per stored blob, however many keys uploaded it. type is the content
-- type of its first upload. hidden, when set, is why it is not served
-- (moderation, an operator); a hidden blob whose last owner deleted it keeps
-- its row (and loses its file), so that it cannot be uploaded again.
CREATE TABLE cn_blossom.blobs (
    sha256    bytea       PRIMARY KEY CHECK (length(sha256) = 32),
    size      bigint      NOT NULL CHECK (size >= 0),
    type      text        NOT NULL,
    created   timestamptz NOT NULL,
    hidden    text,
    hidden_at timestamptz
);

-- Each key's claim on a blob (an upload by that key). A blob's file is
-- removed when its last claim is (DELETE /<sha256>), under the blob row's lock.
CREATE TABLE cn_blossom.owners (
    sha256   bytea       NOT NULL REFERENCES cn_blossom.blobs ON DELETE CASCADE,
    pubkey   text        NOT NULL,
    uploaded timestamptz NOT NULL,
    PRIMARY KEY (sha256, pubkey)
);
CREATE INDEX owners_pubkey_idx ON cn_blossom.owners (pubkey, uploaded);

-- Kind 24242 authorizations already used for an upload or a delete, kept
-- until they expire (a reused one is refused); expired rows are deleted by
-- the next use.
CREATE TABLE cn_blossom.auth_seen (
    event_id   text        PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX auth_seen_expires_at_idx ON cn_blossom.auth_seen (expires_at);

-- What happened to blobs, in commit order per blob: uploads, deletions,
-- hides, unhides and purges, written in the same transaction as the change.
-- Readers follow it by id (docs/media.md).
CREATE TABLE cn_blossom.log (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at     timestamptz NOT NULL DEFAULT now(),
    op     text        NOT NULL CHECK (op IN ('upload', 'delete', 'hide', 'unhide', 'purge')),
    sha256 bytea       NOT NULL,
    pubkey text        NOT NULL DEFAULT '', -- the uploader or deleter ('' for operator and moderation)
    actor  text        NOT NULL DEFAULT '', -- who decided a hide, unhide or purge
    reason text        NOT NULL DEFAULT ''
);
CREATE INDEX log_sha256_idx ON cn_blossom.log (sha256, id);

-- NIP-56 reports may name a blob (an `x` tag): target is its hex SHA-256.
ALTER TABLE cn_moderation.reports DROP CONSTRAINT reports_target_kind_check;
ALTER TABLE cn_moderation.reports ADD CONSTRAINT reports_target_kind_check
    CHECK (target_kind IN ('event', 'pubkey', 'blob'));
