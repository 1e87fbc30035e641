-- NIP-43 relay membership (internal/membership, docs/membership.md).
--
-- cn_relay.nip43_members: one register per key, the newest of the node's own
-- kind 8000 (add) and 8001 (remove) events naming it (created_at, ties to the
-- lower id). It is a projection of those stored events (membership.Project;
-- `cnctl members rebuild` compares and rewrites it); internal/store writes it
-- in the transaction that stores the 8000/8001 and the new 13534, holding the
-- effective-key lock of the node's 13534.
CREATE TABLE cn_relay.nip43_members (
    pubkey   text        PRIMARY KEY,
    member   boolean     NOT NULL,
    at       bigint      NOT NULL, -- created_at of the deciding 8000/8001
    event_id text        NOT NULL,
    via      text        NOT NULL DEFAULT '' -- claim, trust, admin, operator (8000 only)
);
CREATE INDEX nip43_members_member ON cn_relay.nip43_members (pubkey) WHERE member;

-- Invite codes (claims). Secrets: only their SHA-256 is stored; id is the
-- first 16 hex digits of it (what admins name to revoke). Single use.
CREATE TABLE cn_relay.membership_claims (
    id         text        PRIMARY KEY,
    hash       text        NOT NULL UNIQUE,
    issuer     text        NOT NULL,
    issued_at  timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_by    text,
    used_at    timestamptz,
    revoked_at timestamptz
);

-- Join requests (kind 28934 without a valid claim) waiting for an admin: the
-- request event itself (it carries no claim).
CREATE TABLE cn_relay.membership_pending (
    pubkey       text        PRIMARY KEY,
    event_id     text        NOT NULL,
    event        jsonb       NOT NULL,
    requested_at timestamptz NOT NULL
);
