-- 0009: relay management (NIP-86, cnctl moderation ban-pubkey ...). The state
-- every relay process applies lives here; each change bumps
-- cn_admin.state.version in its transaction, and relays poll that one row
-- (every 250 ms), so all of them apply a change within a second.
CREATE SCHEMA cn_admin;

CREATE TABLE cn_admin.state (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version   bigint  NOT NULL
);
INSERT INTO cn_admin.state (version) VALUES (1);

-- A pubkey is banned (its new events are refused, its stored events hidden) or
-- allowed (NIP-86 allow list: it is also made a member, so it may publish
-- profiles and lists at once); one row per pubkey, so banning removes it from the
-- allow list and allowing from the ban list, as NIP-86 asks.
CREATE TABLE cn_admin.pubkeys (
    pubkey text        PRIMARY KEY,
    status text        NOT NULL CHECK (status IN ('banned', 'allowed')),
    reason text        NOT NULL,
    actor  text        NOT NULL,
    at     timestamptz NOT NULL
);

-- The events a pubkey ban hid, so that lifting the ban shows exactly those again.
CREATE TABLE cn_admin.ban_hides (
    pubkey   text NOT NULL,
    event_id text NOT NULL,
    PRIMARY KEY (pubkey, event_id)
);

-- Banned (hidden) and allowed events, one row per event.
CREATE TABLE cn_admin.events (
    event_id text        PRIMARY KEY,
    status   text        NOT NULL CHECK (status IN ('banned', 'allowed')),
    reason   text        NOT NULL,
    actor    text        NOT NULL,
    at       timestamptz NOT NULL
);

-- Kinds: allowed (when any kind is allowed, only allowed kinds are accepted) or
-- disallowed (always refused).
CREATE TABLE cn_admin.kinds (
    kind    integer     PRIMARY KEY CHECK (kind BETWEEN 0 AND 65535),
    allowed boolean     NOT NULL,
    actor   text        NOT NULL,
    at      timestamptz NOT NULL
);

-- Blocked addresses: an IP address or a CIDR prefix, in canonical form.
CREATE TABLE cn_admin.ips (
    prefix text        PRIMARY KEY,
    reason text        NOT NULL,
    actor  text        NOT NULL,
    at     timestamptz NOT NULL
);

-- NIP-11 name, description and icon set through NIP-86 (they override the flags).
CREATE TABLE cn_admin.info (
    field text        PRIMARY KEY CHECK (field IN ('name', 'description', 'icon')),
    value text        NOT NULL,
    actor text        NOT NULL,
    at    timestamptz NOT NULL
);

-- Every management action: who (an admin pubkey through NIP-86, or user@host
-- through cnctl), when, what, why.
CREATE TABLE cn_admin.log (
    id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    method text        NOT NULL,
    params jsonb       NOT NULL,
    actor  text        NOT NULL,
    source text        NOT NULL CHECK (source IN ('nip86', 'cnctl')),
    at     timestamptz NOT NULL
);

-- The moderator's optional classifier (an HTTP service): one outcome per event,
-- recorded in the moderator's transaction, so a replay reuses it and never asks
-- again. outcome 'unclassified' (with the reason: timeout, error, breaker open,
-- over budget) is final too: the moderator never waits on the classifier longer
-- than its batch deadline.
CREATE TABLE cn_moderation.classifications (
    event_id text        PRIMARY KEY,
    outcome  text        NOT NULL CHECK (outcome IN ('classified', 'unclassified')),
    labels   jsonb       NOT NULL DEFAULT '[]',
    reason   text        NOT NULL DEFAULT '',
    at       timestamptz NOT NULL
);

-- Requests sent to the classifier per UTC day, against the daily budget.
CREATE TABLE cn_moderation.classifier_usage (
    day      date    PRIMARY KEY,
    requests integer NOT NULL
);
