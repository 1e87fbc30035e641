-- 0023: a consumer transaction that appended outbox rows commits as the
-- server's synchronous_commit asks. consumer_advance used to make every
-- consumer commit asynchronous (unless the consumer asked otherwise); when the
-- handler had appended rows (the moderator's labels, trust's assertions) those
-- rows became visible, were fanned out and published before they were durable,
-- and a crash could take them back and hand out their seq values again.
-- pkg/outbox's append sets cn.outbox_appended for its transaction; the
-- asynchronous commit is kept only for transactions without it.
CREATE OR REPLACE FUNCTION cn_relay.consumer_advance(p_consumer text, p_owner text, p_generation bigint,
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
