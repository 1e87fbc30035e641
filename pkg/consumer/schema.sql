-- pkg/consumer's tables: each consumer's offset and lease, its parked rows,
-- the operator's offset resets and the fenced offset commit, as they are after
-- every migration of the node (schema/).
--
-- The node applies its migrations with `cnctl migrate` and never this file;
-- TestOutboxAndConsumerDDL (schema/ddl_test.go) checks that the two define
-- the same objects. A service that keeps consumers in a database of its own
-- applies Schema with its own migration tool, once.

CREATE SCHEMA IF NOT EXISTS cn_relay;

-- One row per consumer. last_seq only moves through pkg/consumer (or cnctl
-- reset-offset). owner_* and lease_expires_at support single-instance enforcement:
-- owner_generation is a fencing token that grows at every takeover, and an offset
-- commit must name the generation it holds.
CREATE TABLE cn_relay.consumer_offsets (
    consumer         text        NOT NULL PRIMARY KEY
        CONSTRAINT consumer_offsets_consumer_check CHECK (octet_length(consumer) <= 63 AND consumer ~ '^[a-z0-9][a-z0-9._-]*$'),
    last_seq         bigint      NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    owner_id         text,
    owner_generation bigint      NOT NULL DEFAULT 0,
    lease_expires_at timestamptz,
    -- Set when the consumer halts (policy halt); cleared by the next lease holder.
    halted_at        timestamptz,
    halted_reason    text
);

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

-- The stream position of a stream consumer (NewStream): the stream sequence of
-- the message whose Nats-Msg-Id is last_seq, committed with the offset.
CREATE TABLE cn_relay.consumer_stream_positions (
    consumer   text        NOT NULL PRIMARY KEY REFERENCES cn_relay.consumer_offsets (consumer) ON DELETE CASCADE,
    stream     text        NOT NULL,
    -- The stream sequence of the message whose Nats-Msg-Id is last_seq.
    stream_seq bigint      NOT NULL CHECK (stream_seq > 0),
    -- The consumer's offset when the position was stored: the position is used
    -- only while consumer_offsets.last_seq still equals it.
    last_seq   bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

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

-- Moves a consumer's offset from p_from to p_to for the instance holding generation
-- p_generation (committing asynchronously unless p_synchronous or the transaction
-- appended outbox rows: pkg/outbox sets cn.outbox_appended), or raises: SQLSTATE CN001 when that instance lost its lease (the
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
    IF NOT p_synchronous AND current_setting('cn.outbox_appended', true) IS DISTINCT FROM 'on' THEN
        -- Read at COMMIT: the transaction ends without waiting for its WAL flush.
        -- A crash can lose this offset together with the effects written in the
        -- same transaction (never one without the other: both are in this
        -- commit record), and the consumer applies those rows again. Nothing in
        -- this transaction is visible outside the consumer's own tables.
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
