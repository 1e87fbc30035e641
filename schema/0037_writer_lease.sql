-- 0037: the writer lease (internal/writerlease). Every relay process, which
-- acknowledges clients' writes, holds a row here while it runs, renewed every
-- second or so; a relay that finds no other live row is the only one
-- acknowledging writes, and answers REQs from its event cache without reading
-- the outbox head (docs/decisions/0007-sole-writer.md). Rows are read and
-- written only under schema.WriterLeaseLock (transaction level), so that a
-- renewal and a newcomer's registration are ordered.
CREATE TABLE cn_relay.writer_lease (
    holder     text        NOT NULL PRIMARY KEY, -- one relay process's run (random)
    expires_at timestamptz NOT NULL,             -- it acknowledges no write after it
    -- set by a renewal that found no other live row (the relay may answer
    -- REQs from memory for a TTL), kept by its later renewals that are not
    -- sole; a relay that reads a value less than a TTL old and new to it
    -- acknowledges no write for a TTL
    sole_until timestamptz
);
