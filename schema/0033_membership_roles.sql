-- NIP-43 relay roles (internal/membership, docs/membership.md "Roles").
--
-- cn_relay.nip43_roles: the roles the operators defined, one row per role id,
-- as the node's newest kind 33534 with that `d` says (a role removed by the
-- node's NIP-09 deletion has no row). A projection of the stored 33534 and
-- kind 5 events (membership.ProjectRoles); written by internal/store in the
-- transaction that stores them, holding the effective-key lock of the node's
-- 13534.
CREATE TABLE cn_relay.nip43_roles (
    id          text   PRIMARY KEY, -- the 33534's d tag
    label       text   NOT NULL DEFAULT '',
    description text   NOT NULL DEFAULT '',
    color       text   NOT NULL DEFAULT '', -- a hue 0-360, or '' (no tag)
    ord         text   NOT NULL DEFAULT '', -- an integer, or '' (no tag)
    at          bigint NOT NULL, -- created_at of the 33534
    event_id    text   NOT NULL
);

-- The roles assigned to each NIP-43 member (sorted role ids): what the node's
-- newest 13534 lists after the member's pubkey. Empty for non-members.
ALTER TABLE cn_relay.nip43_members ADD COLUMN roles text[] NOT NULL DEFAULT '{}';
