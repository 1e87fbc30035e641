#!/usr/bin/env bash
# req-latency.sh: REQ latency of a fresh node before any ANALYZE.
#
# Creates a fresh database, migrates it, runs a relay against it, fills it through
# the relay with `cnctl bench ingest` up to each size given (default 20000), and
# after each fill runs `cnctl bench req --connections 1` with and without #t in the
# filters. It never runs ANALYZE; it prints what pg_stat_user_tables says about
# the tables' statistics before each REQ run, so that a run on a server with
# autovacuum on shows whether it got in first.
#
#   ADMIN_URL   Postgres URL of a database to create the bench database from
#               (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   DB          name of the bench database, dropped and recreated (default cn_req_latency)
#   BIN         directory holding the relay and cnctl binaries (default: go build into a temp dir)
#   PORT        relay port (default 7791)
#   REQUESTS    requests per shape (default 300)
#
# Example: scripts/req-latency.sh 20000 1000000
set -euo pipefail

ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DB=${DB:-cn_req_latency}
PORT=${PORT:-7791}
REQUESTS=${REQUESTS:-300}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(20000)

# shellcheck source=scripts/benchlib.sh
. "$(dirname "$0")/benchlib.sh"

fresh_db
echo "autovacuum: $(psql -qXAt "$DB_URL" -c 'SHOW autovacuum')"
start_relay

have=0
for size in "${SIZES[@]}"; do
	# Fill in chunks of at most 100,000 events (they are signed up front, in memory).
	while [ "$have" -lt "$size" ]; do
		n=$((size - have))
		[ "$n" -le 100000 ] || n=100000
		"$BIN/cnctl" bench ingest --url "$URL" --connections 16 --authors 500 --events "$n" >"$work/ingest.txt"
		have=$((have + n))
	done
	echo
	echo "== $size events; statistics of cn_relay tables (no ANALYZE was run):"
	psql -qX "$DB_URL" -c "SELECT relname, n_live_tup, n_mod_since_analyze,
	       coalesce(last_analyze, last_autoanalyze)::text AS analysed
	  FROM pg_stat_user_tables WHERE schemaname = 'cn_relay' AND relname IN ('events', 'event_topics', 'event_tags')
	  ORDER BY relname"
	for with_topic in true false; do
		echo "-- bench req --connections 1 --with-topic=$with_topic"
		"$BIN/cnctl" bench req --url "$URL" --connections 1 --requests "$REQUESTS" --with-topic=$with_topic
	done
done
