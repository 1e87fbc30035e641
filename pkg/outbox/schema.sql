-- pkg/outbox's tables: the ordered change feed, its range partitions and the
-- retention horizon, as they are after every migration of the node (schema/).
--
-- The node applies its migrations with `cnctl migrate` and never this file;
-- TestOutboxAndConsumerDDL (schema/ddl_test.go) checks that the two define
-- the same objects. A service that keeps an outbox in a database of its own
-- applies Schema with its own migration tool, once.

CREATE SCHEMA IF NOT EXISTS cn_relay;

-- The outbox. seq is taken from a CACHE 1 sequence under the outbox advisory lock, so
-- rows become visible in seq order. The table is range-partitioned by seq so that
-- retention drops whole partitions instead of deleting rows (design.md, rule 5).
CREATE SEQUENCE cn_relay.events_outbox_seq_seq AS bigint START 1 CACHE 1;

CREATE TABLE cn_relay.events_outbox (
    seq           bigint      NOT NULL DEFAULT nextval('cn_relay.events_outbox_seq_seq'),
    op            text        NOT NULL CHECK (op IN ('upsert', 'delete')),
    event_id      text        NOT NULL,
    topic_id      text        NOT NULL,
    kind          integer     NOT NULL,
    created_at    bigint      NOT NULL,
    ingested_at   timestamptz NOT NULL DEFAULT now(),
    effective_key text,
    reason        text,
    PRIMARY KEY (seq)
) PARTITION BY RANGE (seq);

ALTER SEQUENCE cn_relay.events_outbox_seq_seq OWNED BY cn_relay.events_outbox.seq;

COMMENT ON COLUMN cn_relay.events_outbox.topic_id IS
    'one row per topic of the event, as in cn_relay.event_topics; ''NODE'' for identity events';

-- Safety net: a row whose seq is past every range partition lands here instead of
-- failing the writer's transaction. cn_relay.outbox_ensure_partitions moves such rows
-- into their range partition; it should stay empty.
CREATE TABLE cn_relay.events_outbox_default PARTITION OF cn_relay.events_outbox DEFAULT;

-- How many seq values one range partition covers. Change it only between
-- partitions; existing partitions keep their bounds.
CREATE TABLE cn_relay.outbox_partitioning (
    singleton      boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    partition_size bigint  NOT NULL CHECK (partition_size > 0)
);
INSERT INTO cn_relay.outbox_partitioning (partition_size) VALUES (1000000);

-- The range partitions of the outbox with their bounds [lo, hi), read from the catalog.
CREATE VIEW cn_relay.outbox_partitions AS
SELECT c.relname::text AS name,
       (m[1])::bigint  AS lo,
       (m[2])::bigint  AS hi
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL regexp_match(pg_get_expr(c.relpartbound, c.oid),
                                'FROM \(''?(-?\d+)''?\) TO \(''?(-?\d+)''?\)') AS m
WHERE i.inhparent = 'cn_relay.events_outbox'::regclass
  AND m IS NOT NULL;

-- Creates range partitions until p_ahead whole partitions lie beyond the highest seq
-- handed out so far, moving any rows that landed in the default partition. Safe to
-- call concurrently and repeatedly; returns how many partitions it created.
CREATE FUNCTION cn_relay.outbox_ensure_partitions(p_ahead integer DEFAULT 2)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_size    bigint;
    v_head    bigint;
    v_lo      bigint;
    v_target  bigint;
    v_name    text;
    v_created integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('cn_relay.outbox_ensure_partitions'));
    -- Creating a partition locks the parent exclusively: rather than queue every
    -- writer behind a long reader, give up after a second (callers retry later).
    PERFORM set_config('lock_timeout', '1s', true);
    SELECT partition_size INTO v_size FROM cn_relay.outbox_partitioning;
    SELECT CASE WHEN is_called THEN last_value ELSE 0 END INTO v_head
      FROM cn_relay.events_outbox_seq_seq;
    v_head := greatest(v_head, coalesce((SELECT max(seq) FROM cn_relay.events_outbox_default), 0));
    SELECT coalesce(max(hi), 0) INTO v_lo FROM cn_relay.outbox_partitions;
    v_target := (v_head / v_size + 1 + p_ahead) * v_size;

    WHILE v_lo < v_target LOOP
        v_name := format('events_outbox_p%s', lpad(v_lo::text, 15, '0'));
        IF EXISTS (SELECT 1 FROM cn_relay.events_outbox_default
                   WHERE seq >= v_lo AND seq < v_lo + v_size) THEN
            EXECUTE format('CREATE TABLE cn_relay.%I (LIKE cn_relay.events_outbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name);
            EXECUTE format('WITH moved AS (DELETE FROM cn_relay.events_outbox_default
                                           WHERE seq >= %s AND seq < %s RETURNING *)
                            INSERT INTO cn_relay.%I SELECT * FROM moved', v_lo, v_lo + v_size, v_name);
            EXECUTE format('ALTER TABLE cn_relay.events_outbox ATTACH PARTITION cn_relay.%I FOR VALUES FROM (%s) TO (%s)',
                           v_name, v_lo, v_lo + v_size);
        ELSE
            EXECUTE format('CREATE TABLE cn_relay.%I PARTITION OF cn_relay.events_outbox FOR VALUES FROM (%s) TO (%s)',
                           v_name, v_lo, v_lo + v_size);
        END IF;
        v_lo := v_lo + v_size;
        v_created := v_created + 1;
    END LOOP;
    RETURN v_created;
END;
$$;

SELECT cn_relay.outbox_ensure_partitions();

-- The outbox retention horizon: every seq <= pruned_through may have been removed by
-- `cnctl outbox prune`. Replays cannot start below it (reset-offset clamps to it).
CREATE TABLE cn_relay.outbox_retention (
    singleton      boolean     NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    pruned_through bigint      NOT NULL DEFAULT 0 CHECK (pruned_through >= 0),
    pruned_at      timestamptz
);
INSERT INTO cn_relay.outbox_retention DEFAULT VALUES;

-- The head: the highest committed seq. Append sets it in the statement that
-- inserts its rows, under the outbox lock, so in any snapshot it equals
-- max(seq) of the outbox; Head reads this one row instead of the newest row of
-- every partition.
CREATE TABLE cn_relay.outbox_head (
    singleton boolean NOT NULL DEFAULT true PRIMARY KEY CHECK (singleton),
    seq       bigint  NOT NULL CHECK (seq >= 0)
);
INSERT INTO cn_relay.outbox_head (seq) VALUES (0);
