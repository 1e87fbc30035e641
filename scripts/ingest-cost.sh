#!/usr/bin/env bash
# ingest-cost.sh: events/s, OK latency and Postgres CPU per event of one relay.
#
# Creates a fresh database, migrates it, runs a relay against it, publishes
# WARMUP events, then times `cnctl bench ingest --connections CONNECTIONS
# --authors 500 --events EVENTS` and prints one line:
#
#   events/s, OK p50/p99, Postgres CPU per event (user+system ticks of the bench
#   database's backends, from /proc/PID/stat, over the timed run), relay CPU per
#   event, and the bytes each event added to the WAL (the whole server's, so run
#   it alone) and to the bench database (pg_database_size), over the timed run,
#   the mean group commit (events per batch, cn_relay_batch_size, warm-up
#   included) and the load average at the end
#
# Run it with BIN pointing at two builds in turn (old and new, interleaved) for
# an A/B in one sitting. Needs the Postgres server on this machine (it reads
# /proc of the backends).
#
#   ADMIN_URL  Postgres URL to create the bench database from
#              (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   DB         bench database, dropped and recreated (default cn_ingest_cost)
#   BIN        directory holding relay and cnctl (default: go build into a temp dir)
#   PORT       relay port (default 7792)
#   EVENTS     timed events (default 20000); WARMUP (default 2000)
#   CONNECTIONS  the timed run's connections (default 16)
#   METRICS_PORT the relay's metrics port (default PORT+100)
#   LABEL      printed first on the result line (default: BIN)
#   RELAY_FLAGS  extra relay flags (e.g. "--ingest-concurrency 1")
#   RELAY_LOG  keep the relay's log in this file
set -euo pipefail

ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DB=${DB:-cn_ingest_cost}
PORT=${PORT:-7792}
EVENTS=${EVENTS:-20000}
WARMUP=${WARMUP:-2000}
CONNECTIONS=${CONNECTIONS:-16}
METRICS_PORT=${METRICS_PORT:-$((PORT + 100))}

LABEL_DEFAULT=${BIN:-built}
# shellcheck source=scripts/benchlib.sh
. "$(dirname "$0")/benchlib.sh"
LABEL=${LABEL:-$LABEL_DEFAULT}

fresh_db
# shellcheck disable=SC2086 # RELAY_FLAGS is a list of flags
start_relay --metrics-listen "127.0.0.1:$METRICS_PORT" ${RELAY_FLAGS:-}
"$BIN/cnctl" bench ingest --url "$URL" --connections 16 --authors 500 --events "$WARMUP" >/dev/null 2>&1

# ticks PIDS...: the sum of utime+stime (clock ticks) of the processes.
ticks() {
	local sum=0 pid f
	for pid in "$@"; do
		f=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
		f=${f##*) } # fields after the command name
		set -- $f
		sum=$((sum + ${12} + ${13}))
	done
	echo "$sum"
}
backends() { psql -qXAt "$ADMIN_URL" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$DB' AND pid <> pg_backend_pid()"; }

# The timed run: bench ingest generates (signs) its events first, so the CPU
# window opens when it starts publishing: after its "generated" line.
"$BIN/cnctl" bench ingest --url "$URL" --connections "$CONNECTIONS" --authors 500 --events "$EVENTS" --json \
	>"$work/report.json" 2>"$work/bench.err" &
bench_pid=$!
while ! grep -q generated "$work/bench.err" 2>/dev/null; do
	kill -0 "$bench_pid" 2>/dev/null || break
	sleep 0.05
done
before_pids=$(backends)
wal0=$(psql -qXAt "$ADMIN_URL" -c "SELECT pg_current_wal_lsn()")
size0=$(psql -qXAt "$ADMIN_URL" -c "SELECT pg_database_size('$DB')")
pg0=$(ticks $before_pids)
relay0=$(ticks "$relay_pid")
wait "$bench_pid"
after_pids=$(backends)
pg1=$(ticks $after_pids)
relay1=$(ticks "$relay_pid")
wal=$(psql -qXAt "$ADMIN_URL" -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0')::bigint")
size=$(( $(psql -qXAt "$ADMIN_URL" -c "SELECT pg_database_size('$DB')") - size0 ))
# Backends that started during the run started at 0 ticks; ones that ended are lost (the relay's pool keeps its connections).
new_pids=$(comm -13 <(echo "$before_pids" | sort) <(echo "$after_pids" | sort))
hz=$(getconf CLK_TCK)
per_batch=$(curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" |
	awk '/^cn_relay_batch_size_sum/ {s = $2} /^cn_relay_batch_size_count/ {c = $2} END {if (c > 0) printf "%.1f", s / c; else print "null"}')
jq -r --arg name "$LABEL" --argjson pg "$((pg1 - pg0))" --argjson relay "$((relay1 - relay0))" --argjson hz "$hz" \
	--argjson wal "$wal" --argjson size "$size" --arg newpids "$(echo $new_pids | wc -w)" \
	--arg batch "$per_batch" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" '
	def us(t): (t / $hz * 1e6 / .accepted | floor);
	"\($name) events/s \(.events_per_second | floor) ok_p50_ms \(.ok_latency.p50_ms * 100 | round / 100) ok_p99_ms \(.ok_latency.p99_ms * 100 | round / 100) pg_cpu_us_per_event \(us($pg)) relay_cpu_us_per_event \(us($relay)) wal_bytes_per_event \($wal / .accepted | floor) db_bytes_per_event \($size / .accepted | floor) accepted \(.accepted) new_backends \($newpids) events_per_batch \($batch) load \($load)"' \
	"$work/report.json"
