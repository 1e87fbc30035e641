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

-- Moves a consumer's offset from p_from to p_to for the instance holding generation
-- p_generation (committing asynchronously unless p_synchronous), or raises: SQLSTATE CN001 when that instance lost its lease (the
-- fencing check), CN002 when the offset was moved by someone else. Raising aborts the
-- caller's transaction, so a pipelined COMMIT after it cannot commit the effects of
-- a fenced instance.
CREATE FUNCTION cn_relay.consumer_advance(p_consumer text, p_owner text, p_generation bigint,
                                          p_from bigint, p_to bigint, p_synchronous boolean)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_owner      text;
    v_generation bigint;
    v_last       bigint;
BEGIN
    IF NOT p_synchronous THEN
        -- Read at COMMIT: the transaction ends without waiting for its WAL flush.
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    UPDATE cn_relay.consumer_offsets SET last_seq = p_to, updated_at = now()
    WHERE consumer = p_consumer AND owner_id = p_owner
      AND owner_generation = p_generation AND last_seq = p_from;
    IF FOUND THEN
        RETURN;
    END IF;
    SELECT owner_id, owner_generation, last_seq INTO v_owner, v_generation, v_last
    FROM cn_relay.consumer_offsets WHERE consumer = p_consumer;
    IF v_generation IS DISTINCT FROM p_generation OR v_owner IS DISTINCT FROM p_owner THEN
        RAISE EXCEPTION 'consumer % lost its lease (generation %)', p_consumer, p_generation
            USING ERRCODE = 'CN001';
    END IF;
    RAISE EXCEPTION 'offset of consumer % moved from % to %', p_consumer, p_from, v_last
        USING ERRCODE = 'CN002';
END;
$$;
