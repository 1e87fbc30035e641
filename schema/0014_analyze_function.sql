-- 0014: the relay keeps the query tables' statistics when autovacuum is off or
-- behind (store.AnalyzeStale), but Postgres 15 lets only a table's owner ANALYZE
-- it, and under the least-privilege roles (cnctl migrate) the operator owns the
-- tables. This function runs ANALYZE with its owner's rights, on the three query
-- tables only; cnctl migrate grants EXECUTE to the relay's role.
CREATE FUNCTION cn_relay.analyze_query_table(t text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog AS $$
BEGIN
    IF t NOT IN ('cn_relay.events', 'cn_relay.event_topics', 'cn_relay.event_tags') THEN
        RAISE EXCEPTION 'not a query table: %', t;
    END IF;
    EXECUTE 'ANALYZE ' || t;
END
$$;
REVOKE ALL ON FUNCTION cn_relay.analyze_query_table(text) FROM PUBLIC;
