-- 0002: what the consumer runtime and the operator's controls need besides offsets.

-- Rows a consumer gave up on under the 'park' failure policy. The outbox fields are
-- copied so that a parked row outlives outbox retention. A row leaves this table when
-- a retry succeeds or the operator drops it (cnctl dlq).
CREATE TABLE cn_relay.consumer_dead_letters (
    consumer           text        NOT NULL REFERENCES cn_relay.consumer_offsets (consumer) ON DELETE CASCADE,
    seq                bigint      NOT NULL,
    op                 text        NOT NULL,
    event_id           text        NOT NULL,
    topic_id           text        NOT NULL,
    kind               integer     NOT NULL,
    created_at         bigint      NOT NULL,
    ingested_at        timestamptz NOT NULL,
    effective_key      text,
    reason             text,
    error              text        NOT NULL,
    attempts           integer     NOT NULL CHECK (attempts > 0),
    parked_at          timestamptz NOT NULL DEFAULT now(),
    -- Set by `cnctl dlq retry`; the running consumer re-applies the row and clears it.
    retry_requested_at timestamptz,
    PRIMARY KEY (consumer, seq)
);

CREATE INDEX consumer_dead_letters_retry_idx ON cn_relay.consumer_dead_letters (consumer, seq)
    WHERE retry_requested_at IS NOT NULL;

-- Every executed `cnctl reset-offset`: who moved which offset, when, from where to where.
CREATE TABLE cn_relay.consumer_offset_resets (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer     text        NOT NULL,
    from_seq     bigint      NOT NULL,
    to_seq       bigint      NOT NULL,
    requested_by text        NOT NULL,
    forced       boolean     NOT NULL,
    executed_at  timestamptz NOT NULL DEFAULT now()
);

-- The outbox retention horizon: every seq <= pruned_through may have been removed by
-- `cnctl outbox prune`. Replays cannot start below it (reset-offset clamps to it).
CREATE TABLE cn_relay.outbox_retention (
    singleton      boolean     NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    pruned_through bigint      NOT NULL DEFAULT 0 CHECK (pruned_through >= 0),
    pruned_at      timestamptz
);
INSERT INTO cn_relay.outbox_retention DEFAULT VALUES;
