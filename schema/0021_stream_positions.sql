-- 0021: stream consumers (pkg/consumer NewStream) take their rows from the
-- bridge's NATS JetStream stream instead of the outbox. Their own database
-- keeps, beside the offset, the stream sequence of the message the offset
-- points at, committed in the same transaction as the offset and the effects.
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
