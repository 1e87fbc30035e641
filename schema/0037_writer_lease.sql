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
    -- set: it found no other live row and may answer REQs from memory for a
    -- TTL; a newcomer that reads it set acknowledges no write for a TTL
    sole_until timestamptz
);
