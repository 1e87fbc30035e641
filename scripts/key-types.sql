-- key-types.sql: what storing ids and pubkeys as 32-byte bytea instead of
-- 64-character hex text would save on the events table's id and pubkey indexes
-- (issue 25's bytea direction, measured before deciding).
--
--   createdb cn_keytypes && psql -d cn_keytypes -f scripts/key-types.sql; dropdb cn_keytypes
--
-- 300,000 rows of 5,000 authors (hex from sha256, created_at spread over 23
-- days), inserted in random order (as events arrive) into three tables with the
-- five indexes of cn_relay.events that hold id or pubkey: id and pubkey as text
-- in the database's collation, as text COLLATE "C", and as bytea. Three rounds,
-- each table in turn; \timing prints each INSERT's time. Then the index sizes.
-- Everything is made in the schema keytypes, dropped at the end.
\set ON_ERROR_STOP on
DROP SCHEMA IF EXISTS keytypes CASCADE;
CREATE SCHEMA keytypes;
SET search_path = keytypes;
CREATE TABLE src AS
  SELECT encode(sha256(('id' || g)::bytea), 'hex') AS id,
         encode(sha256(('pk' || (g % 5000))::bytea), 'hex') AS pubkey,
         (g % 3) + 1 AS kind,
         1700000000::bigint + (g::bigint * 7919) % 2000000 AS created_at
  FROM generate_series(1, 300000) g;
CREATE TABLE text_db (id text PRIMARY KEY, pubkey text NOT NULL, kind int, created_at bigint);
CREATE TABLE text_c (id text COLLATE "C" PRIMARY KEY, pubkey text COLLATE "C" NOT NULL, kind int, created_at bigint);
CREATE TABLE bytes (id bytea PRIMARY KEY, pubkey bytea NOT NULL, kind int, created_at bigint);
CREATE INDEX ON text_db (created_at DESC, id);
CREATE INDEX ON text_db (pubkey, created_at DESC, id);
CREATE INDEX ON text_db (pubkey, kind, created_at DESC, id);
CREATE INDEX ON text_db (kind, created_at DESC, id);
CREATE INDEX ON text_c (created_at DESC, id);
CREATE INDEX ON text_c (pubkey, created_at DESC, id);
CREATE INDEX ON text_c (pubkey, kind, created_at DESC, id);
CREATE INDEX ON text_c (kind, created_at DESC, id);
CREATE INDEX ON bytes (created_at DESC, id);
CREATE INDEX ON bytes (pubkey, created_at DESC, id);
CREATE INDEX ON bytes (pubkey, kind, created_at DESC, id);
CREATE INDEX ON bytes (kind, created_at DESC, id);
-- the rows in one random order, hex and decoded, so every INSERT only inserts
CREATE TABLE src_hex AS SELECT id, pubkey, kind, created_at FROM src ORDER BY md5(id);
CREATE TABLE src_bytes AS SELECT decode(id, 'hex') AS id, decode(pubkey, 'hex') AS pubkey, kind, created_at FROM src_hex;
\timing on
\echo round 1: text (database collation), text COLLATE "C", bytea
INSERT INTO text_db SELECT * FROM src_hex;
INSERT INTO text_c SELECT * FROM src_hex;
INSERT INTO bytes SELECT * FROM src_bytes;
TRUNCATE text_db, text_c, bytes;
\echo round 2
INSERT INTO text_db SELECT * FROM src_hex;
INSERT INTO text_c SELECT * FROM src_hex;
INSERT INTO bytes SELECT * FROM src_bytes;
TRUNCATE text_db, text_c, bytes;
\echo round 3
INSERT INTO text_db SELECT * FROM src_hex;
INSERT INTO text_c SELECT * FROM src_hex;
INSERT INTO bytes SELECT * FROM src_bytes;
\timing off
SELECT t.relname AS "table", pg_size_pretty(sum(pg_relation_size(i.indexrelid))) AS "its five indexes"
FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
WHERE n.nspname = 'keytypes' AND t.relname IN ('text_db', 'text_c', 'bytes')
GROUP BY t.relname ORDER BY t.relname;
SHOW lc_collate;
RESET search_path;
DROP SCHEMA keytypes CASCADE;
