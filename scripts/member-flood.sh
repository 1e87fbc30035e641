#!/usr/bin/env bash
# member-flood.sh: what the member flood of issue 47 costs the database.
#
# A relay with a node key (so that it hosts groups; default group policy) on a
# fresh database; scripts/memberflood then makes one key create a group, add
# MEMBERS made-up keys with one kind 9000 and send SINGLES single-key 9000s
# (each makes the node sign a new 39002 listing every member), and prints
# pg_total_relation_size, live and dead tuples per table, the database's size
# and the WAL written, before and after. Two runs, each on a fresh database:
#   1. no VACUUM during the flood, then a plain VACUUM of the tables at the end
#      (figures printed before and after that VACUUM);
#   2. a plain VACUUM after every VACUUM_EVERY singles, as autovacuum would.
#
# The WAL figure is the cluster's (pg_current_wal_lsn): with PRIVATE=1 (the
# default when initdb is found) the script runs a Postgres cluster of its own
# (autovacuum off, as the test server) so that nothing else writes WAL during
# the flood; PRIVATE=0 uses ADMIN_URL's server.
#
#   ADMIN_URL     Postgres URL to create the bench database from, PRIVATE=0
#                 (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   DB            bench database, dropped and recreated (default cn_member_flood)
#   BIN           directory holding relay and cnctl (default: go build into a temp dir)
#   PORT          relay port (default 7794); PGPORT the private cluster's (default 5497)
#   MEMBERS (1500) SINGLES (400) VACUUM_EVERY (20)
set -euo pipefail

DB=${DB:-cn_member_flood}
PORT=${PORT:-7794}
PGPORT=${PGPORT:-5497}
MEMBERS=${MEMBERS:-1500}
SINGLES=${SINGLES:-400}
VACUUM_EVERY=${VACUUM_EVERY:-20}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | tail -1)}
if [ -z "${PRIVATE:-}" ]; then
	PRIVATE=0
	[ -x "$PGBIN/initdb" ] && PRIVATE=1
fi
ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

# shellcheck source=scripts/benchlib.sh
. "$(dirname "$0")/benchlib.sh"

as_pg=()
if [ "$(id -u)" = 0 ]; then as_pg=(runuser -u postgres --); fi # initdb refuses root
if [ "$PRIVATE" = 1 ]; then
	pgdata=$(mktemp -d)
	chown postgres "$pgdata" 2>/dev/null || true
	"${as_pg[@]}" "$PGBIN/initdb" -D "$pgdata" -U postgres -A trust >/dev/null
	"${as_pg[@]}" "$PGBIN/pg_ctl" -D "$pgdata" -l "$pgdata/log" -w -o "-p $PGPORT -k /tmp -c autovacuum=off -c listen_addresses=127.0.0.1" start >/dev/null
	trap '"${as_pg[@]}" "$PGBIN/pg_ctl" -D "$pgdata" -m fast stop >/dev/null 2>&1 || true; rm -rf "$pgdata"; bench_cleanup' EXIT
	ADMIN_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
fi

(cd "$(dirname "$0")/.." && go build -o "$work/memberflood" ./scripts/memberflood)
"$BIN/cnctl" node-key generate --file "$work/node.key" >/dev/null

flood() { # label, memberflood flags...
	local label=$1
	shift
	fresh_db
	start_relay --node-key-file "$work/node.key" --metrics-listen ""
	echo "== $label (relay $BIN/relay)"
	"$work/memberflood" --url "$URL" --database-url "$DB_URL" --members "$MEMBERS" --singles "$SINGLES" "$@"
	kill "$relay_pid"
	wait "$relay_pid" 2>/dev/null || true
	relay_pid=
}

flood "no VACUUM during the flood; one plain VACUUM at the end" --vacuum-end
flood "a plain VACUUM every $VACUUM_EVERY singles (as autovacuum would); one at the end" --vacuum-every "$VACUUM_EVERY" --vacuum-end
