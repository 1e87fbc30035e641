#!/usr/bin/env bash
# replica-bench.sh: REQ throughput with one read replica beside the primary
# against the same node reading the primary only, and the primary's CPU per REQ.
#
# Starts a private primary (initdb) and a streaming replica of it
# (pg_basebackup -R, ops/replica/standby.conf) on this machine, fills the node
# with `cnctl bench ingest`, starts two relays on the same database, A reading
# the primary only and B with --read-database-url of the replica, and runs
# `cnctl bench req` (seven shapes, --connections 8) against A and B in
# alternation, RUNS times each. After each run it prints the primary's CPU
# time (every process of its postmaster, from /proc) per REQ.
#
#   PGBIN         Postgres server binaries (default /usr/lib/postgresql/15/bin)
#   PRIMARY_PORT  (default 7650), REPLICA_PORT (7651), PORT_A (7652), PORT_B (7653)
#   EVENTS        events to fill (default 20000)
#   REQUESTS      requests per shape and run (default 1000)
#   RUNS          runs per relay (default 3)
#   BIN           directory holding the relay and cnctl binaries (default: go build into a temp dir)
#
# As root, Postgres runs as the postgres account (runuser).
set -euo pipefail

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PRIMARY_PORT=${PRIMARY_PORT:-7650}
REPLICA_PORT=${REPLICA_PORT:-7651}
PORT_A=${PORT_A:-7652}
PORT_B=${PORT_B:-7653}
EVENTS=${EVENTS:-20000}
REQUESTS=${REQUESTS:-1000}
RUNS=${RUNS:-3}
DB=cn_i23_bench
root=$(cd "$(dirname "$0")/.." && pwd)

pgdir=$(mktemp -d)
chmod 755 "$pgdir"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$pgdir"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	for d in replica primary; do [ -f "$pgdir/$d/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$pgdir/$d" stop -m immediate >/dev/null 2>&1 || true; done
	rm -rf "$pgdir" "${work:-}"
}
trap cleanup EXIT
work=$(mktemp -d)
if [ -z "${BIN:-}" ]; then BIN=$work/bin; (cd "$root" && go build -o "$BIN/" ./cmd/relay ./cmd/cnctl); fi

as_pg "$PGBIN/initdb" -D "$pgdir/primary" -U postgres --auth=trust --locale=C --encoding=UTF8 >/dev/null
printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = ''\nmax_connections = 200\nshared_buffers = '128MB'\n" "$PRIMARY_PORT" >>"$pgdir/primary/postgresql.conf"
as_pg "$PGBIN/pg_ctl" -D "$pgdir/primary" -l "$pgdir/primary.log" -w start >/dev/null
PRIMARY=postgres://postgres@127.0.0.1:$PRIMARY_PORT
psql -qX "$PRIMARY/postgres?sslmode=disable" -c "CREATE DATABASE $DB"
DB_URL=$PRIMARY/$DB?sslmode=disable
"$BIN/cnctl" migrate --database-url "$DB_URL" >/dev/null

as_pg "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$PRIMARY_PORT" -U postgres -D "$pgdir/replica" -R -X stream -c fast
cp "$root/ops/replica/standby.conf" "$pgdir/replica/standby.conf"
[ "$(id -u)" = 0 ] && chown postgres "$pgdir/replica/standby.conf"
printf "port = %s\ninclude_if_exists = 'standby.conf'\n" "$REPLICA_PORT" >>"$pgdir/replica/postgresql.conf"
as_pg "$PGBIN/pg_ctl" -D "$pgdir/replica" -l "$pgdir/replica.log" -w start >/dev/null
REPLICA_URL=postgres://postgres@127.0.0.1:$REPLICA_PORT/$DB?sslmode=disable
echo "replica in recovery: $(psql -qXAt "$REPLICA_URL" -c 'SELECT pg_is_in_recovery()')"

relay() { # port, extra args
	local port=$1; shift
	"$BIN/relay" --database-url "$DB_URL" --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$((port + 20))" \
		--event-rate-ip 0 --event-rate-pubkey 0 --req-rate-ip 0 "$@" >"$work/relay-$port.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do
		curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$work/relay-$port.log" >&2
	exit 1
}
relay "$PORT_A"
relay "$PORT_B" --read-database-url "$REPLICA_URL"
"$BIN/cnctl" bench ingest --url "ws://127.0.0.1:$PORT_A" --connections 16 --authors 500 --events "$EVENTS" >/dev/null
psql -qX "$DB_URL" -c "ANALYZE"
for _ in $(seq 100); do
	[ "$(psql -qXAt "$REPLICA_URL" -c 'SELECT coalesce(max(seq),0) FROM cn_relay.events_outbox')" = \
	  "$(psql -qXAt "$DB_URL" -c 'SELECT coalesce(max(seq),0) FROM cn_relay.events_outbox')" ] && break
	sleep 0.1
done
for _ in $(seq 100); do
	curl -fsS "http://127.0.0.1:$((PORT_B + 20))/metrics" | grep -q '^cn_relay_replica_usable{replica="127.0.0.1:'"$REPLICA_PORT"'"} 1' && break
	sleep 0.1
done
echo "filled: $EVENTS events; relay B's replica is usable"

# The primary's CPU ticks: its postmaster and every child (backends, WAL sender).
primary_ticks() {
	local pm; pm=$(head -1 "$pgdir/primary/postmaster.pid")
	local sum=0 pid
	for pid in $pm $(pgrep -P "$pm"); do
		[ -r "/proc/$pid/stat" ] || continue
		sum=$((sum + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
	done
	echo "$sum"
}
hz=$(getconf CLK_TCK)
for run in $(seq "$RUNS"); do
	for side in A B; do
		port=$PORT_A; [ "$side" = B ] && port=$PORT_B
		before=$(primary_ticks)
		"$BIN/cnctl" bench req --url "ws://127.0.0.1:$port" --connections 8 --requests "$REQUESTS" --json >"$work/req.json" 2>/dev/null
		after=$(primary_ticks)
		python3 - "$work/req.json" "$side" "$run" "$((after - before))" "$hz" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
side, run, ticks, hz = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
n = 0
parts = []
for s in rep["shapes"]:
    n += s["eose"]
    parts.append("%s %.0f/s" % (s["name"], s["requests_per_second"]))
print("run %s relay %s (%s): %s; primary CPU %.1f us/REQ over %d REQs" % (
    run, side, "primary only" if side == "A" else "one replica", ", ".join(parts), ticks / hz * 1e6 / max(n, 1), n))
PY
	done
done
