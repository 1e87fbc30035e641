#!/usr/bin/env bash
# How long the heavy migrations' statements hold their locks on a node with N
# events (default 1,000,000), the time ingest (and, for ACCESS EXCLUSIVE, REQs)
# waits while `cnctl migrate` applies them to a live node. Each statement runs
# in a transaction that is rolled back (the table is the same for every run);
# the lock is held for the statement's time. Prints the median of RUNS (3) runs.
#
#   CN_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable scripts/migration-locks.sh
set -euo pipefail
URL=${CN_TEST_DATABASE_URL:?set CN_TEST_DATABASE_URL to a superuser URL}
N=${N:-1000000}
RUNS=${RUNS:-3}
DB=cn_migration_locks_$$
base=${URL%%\?*}
query=${URL#"$base"}
DBURL="${base%/*}/$DB$query"
psql "$URL" -qc "CREATE DATABASE $DB"
trap 'psql "$URL" -qc "DROP DATABASE IF EXISTS $DB" >/dev/null' EXIT
go run ./cmd/cnctl migrate --database-url "$DBURL" >/dev/null
start=$(date +%s)
psql "$DBURL" -q <<SQL
INSERT INTO cn_relay.events (id, pubkey, kind, created_at, tags, content, sig)
SELECT md5(i::text) || md5((i + 1)::text), md5((i % 5000)::text) || md5((i % 5000 + 1)::text), 1, 1700000000 + i,
       '[["t","go"]]', 'note ' || i || ' ' || md5(i::text), repeat(md5(i::text), 4)
FROM generate_series(1, $N) i;
INSERT INTO cn_relay.event_topics (event_id, topic_id, created_at, pubkey, kind)
SELECT id, (ARRAY['go', 'nostr', 'postgres', 'tokyo'])[1 + created_at % 4], created_at, pubkey, kind FROM cn_relay.events;
VACUUM ANALYZE cn_relay.events;
VACUUM ANALYZE cn_relay.event_topics;
SQL
echo "loaded $N events and $N event_topics rows in $(( $(date +%s) - start )) s"

measure() { # name, lock, statements
	local times=()
	for _ in $(seq "$RUNS"); do
		local t0 t1
		t0=$(date +%s%N)
		psql "$DBURL" -qc "BEGIN; $3; ROLLBACK;" >/dev/null
		t1=$(date +%s%N)
		times+=($(( (t1 - t0) / 1000000 )))
	done
	local median
	median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
	printf '%-62s %-20s median %6d ms  (runs: %s)\n' "$1" "$2" "$median" "${times[*]}"
}

measure "floor: an empty transaction (psql start and connection)" "none" "SELECT 1"
measure "0019 CREATE INDEX events_sync_idx" "SHARE (events)" \
	"CREATE INDEX tmp_sync ON cn_relay.events (created_at, id) INCLUDE (kind, expires_at) WHERE deleted_at IS NULL AND is_effective"
measure "0008 ADD CONSTRAINT CHECK, validated (events)" "ACCESS EXCLUSIVE" \
	"ALTER TABLE cn_relay.events ADD CONSTRAINT tmp_check CHECK (deleted_reason IN ('nip09', 'expiration', 'moderation'))"
measure "0006 ADD COLUMN, UPDATE every row, SET NOT NULL (event_topics)" "ACCESS EXCLUSIVE" \
	"ALTER TABLE cn_relay.event_topics ADD COLUMN p2 text, ADD COLUMN k2 integer; UPDATE cn_relay.event_topics t SET p2 = e.pubkey, k2 = e.kind FROM cn_relay.events e WHERE e.id = t.event_id; ALTER TABLE cn_relay.event_topics ALTER COLUMN p2 SET NOT NULL, ALTER COLUMN k2 SET NOT NULL"
measure "0007 CREATE INDEX event_topics_topic_created_at_idx" "SHARE (event_topics)" \
	"CREATE INDEX tmp_tc ON cn_relay.event_topics (topic_id, created_at DESC, event_id) WHERE own"
measure "0017 ADD COLUMN NOT NULL DEFAULT true (no rewrite)" "ACCESS EXCLUSIVE" \
	"ALTER TABLE cn_relay.event_topics ADD COLUMN s2 boolean NOT NULL DEFAULT true"
measure "0015 ADD CONSTRAINT CHECK NOT VALID (no scan)" "ACCESS EXCLUSIVE" \
	"ALTER TABLE cn_relay.events ADD CONSTRAINT tmp_nv CHECK (octet_length(id) = 64) NOT VALID"
measure "0016 ALTER COLUMN SET STATISTICS" "SHARE UPDATE EXCL." \
	"ALTER TABLE cn_relay.events ALTER COLUMN content SET STATISTICS 10"
