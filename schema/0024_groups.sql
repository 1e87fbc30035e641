-- 0024: NIP-29 relay-based groups (internal/groups).
--
-- cn_relay.groups holds each group's state as the relay keeps it live: the
-- canonical JSON of internal/groups.State (last-writer-wins registers: the
-- metadata, each user's membership and roles, join requests, invite codes,
-- creation and deletion). It is a projection of the stored moderation events:
-- `cnctl groups rebuild` recomputes it from cn_relay.events and
-- cn_relay.group_withheld and compares. The store writes it in the
-- transaction of the batch that changed the group, holding the group's lock
-- (schema.GroupLockSQL).
CREATE TABLE cn_relay.groups (
    id         text        PRIMARY KEY,
    state      jsonb       NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Group events no reader may see, because they carry an invite code: a 9009
-- (create-invite) and a 9021 (join request) with a code tag. They are kept
-- here instead of cn_relay.events, so no read path (REQ, COUNT, search,
-- NIP-77, export, the outbox and its consumers) can return them; only the
-- group projection reads them.
CREATE TABLE cn_relay.group_withheld (
    id          text        PRIMARY KEY,
    group_id    text        NOT NULL,
    pubkey      text        NOT NULL,
    kind        integer     NOT NULL,
    created_at  bigint      NOT NULL,
    event       text        NOT NULL,
    received_at timestamptz NOT NULL
);
CREATE INDEX group_withheld_group ON cn_relay.group_withheld (group_id);
