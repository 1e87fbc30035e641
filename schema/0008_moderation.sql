-- 0008: the moderation-v1 consumer (cmd/moderator) and the operator's moderation
-- commands. Everything here is written by the consumer in the transaction that
-- moves its offset, or by cnctl in a transaction of its own, so a replay from any
-- offset ends in the same state (rows are keyed so that writing them again
-- changes nothing).
CREATE SCHEMA cn_moderation;

-- A hidden event is soft-deleted with reason 'moderation' (store.ModerateTx):
-- readers stop seeing it, the outbox gets delete rows with that reason, and
-- unhiding clears it again (only this reason; an author's NIP-09 deletion is final).
ALTER TABLE cn_relay.events DROP CONSTRAINT events_deleted_reason_check;
ALTER TABLE cn_relay.events ADD CONSTRAINT events_deleted_reason_check
    CHECK (deleted_reason IN ('nip09', 'expiration', 'moderation'));

-- The rule set in force, managed by `cnctl moderation rules apply`. A rule's
-- version goes up each time its definition changes; labels name the version
-- that made them.
CREATE TABLE cn_moderation.rules (
    name       text        PRIMARY KEY,
    version    integer     NOT NULL CHECK (version > 0),
    position   integer     NOT NULL,
    spec       jsonb       NOT NULL,
    updated_at timestamptz NOT NULL
);

-- Every applied change of the rule set: who, when, what.
CREATE TABLE cn_moderation.rule_changes (
    id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       text        NOT NULL,
    version    integer     NOT NULL,
    change     text        NOT NULL CHECK (change IN ('added', 'changed', 'removed')),
    spec       jsonb,
    changed_by text        NOT NULL,
    changed_at timestamptz NOT NULL
);

-- The NIP-32 labels (kind 1985, signed by the node key) the moderator emitted:
-- one per (target, rule, version), so its event id is deterministic. seq is the
-- outbox row that made the rule fire; retracted_by is the node's NIP-09 deletion
-- that took the label back when the target was deleted (only labels from before
-- the deletion's row: a replay decides as of each row, never with hindsight).
CREATE TABLE cn_moderation.labels (
    label_id     text    PRIMARY KEY,
    target_id    text    NOT NULL,
    rule         text    NOT NULL,
    rule_version integer NOT NULL,
    label        text    NOT NULL,
    seq          bigint  NOT NULL,
    retracted_by text
);
CREATE INDEX labels_target_id_idx ON cn_moderation.labels (target_id);

-- NIP-56 reports (kind 1984), one row per (report, target). target is an event
-- id (target_kind 'event') or a pubkey ('pubkey': a report about a person). seq
-- is the outbox row that brought the report, withdrawn_seq the one that took it
-- away (the reporter deleted it, or it expired): report rules count the reports
-- open as of the row they run on, so a replay counts exactly what the live run
-- counted.
CREATE TABLE cn_moderation.reports (
    report_id     text    NOT NULL,
    target        text    NOT NULL,
    target_kind   text    NOT NULL CHECK (target_kind IN ('event', 'pubkey')),
    target_pubkey text    NOT NULL,
    reporter      text    NOT NULL,
    report_type   text    NOT NULL,
    created_at    bigint  NOT NULL,
    seq           bigint  NOT NULL,
    withdrawn_seq bigint,
    PRIMARY KEY (report_id, target)
);
CREATE INDEX reports_target_idx ON cn_moderation.reports (target, created_at);

-- Decisions about events: hide, unhide, hold (queue for an operator), dismiss
-- (an operator looked and left it). source is 'rule' or 'operator'; actor is the
-- rule's name@version or the operator's user@host. A rule makes each decision
-- about an event once (the unique index), so replays add nothing; an operator's
-- decision is final for the rules: they never hide what an operator unhid.
CREATE TABLE cn_moderation.actions (
    id       bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_id text        NOT NULL,
    action   text        NOT NULL CHECK (action IN ('hide', 'unhide', 'hold', 'dismiss')),
    source   text        NOT NULL CHECK (source IN ('rule', 'operator')),
    actor    text        NOT NULL,
    reason   text        NOT NULL,
    rank     double precision, -- the reporter rank a report rule relied on (trust), if any
    at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX actions_rule_once_idx ON cn_moderation.actions (event_id, action, actor) WHERE source = 'rule';
CREATE INDEX actions_event_id_idx ON cn_moderation.actions (event_id, id);
