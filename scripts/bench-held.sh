#!/usr/bin/env bash
# bench-held.sh: held connections (issue 37), this relay and, given its
# binary, strfry side by side in one sitting (docs/benchmarks.md "Held
# connections").
#
#   NS="2000 9000 18000" ROUNDS=2 STRFRY=/path/to/strfry STRFRY_CONF=strfry.conf scripts/bench-held.sh
#
# For each N, ROUNDS times, it runs internal/relay's BenchmarkHeldConnections
# against this relay (the benchmark starts it in-process: what it measures is
# the relay's own heap, stacks, RSS and CPU) and then, when STRFRY is set,
# against a strfry started for the run on a fresh database (HELD_URL, HELD_PID:
# its RSS and CPU are read from /proc). Each run opens N connections, each with
# one live subscription, then publishes notes at a steady rate (N=2,000: 40 at
# 10/s; otherwise 20 at 5/s) and prints KiB per connection, connections/s,
# relay CPU while opening and while fanning out, delivery p50/p99/max and
# missing/duplicated deliveries. Before each run it waits for the previous
# run's TIME_WAIT sockets to drain. One block of output per run, headed by the
# machine's load (uptime).
#
#   NS           connection counts (default "2000 9000 18000")
#   ROUNDS       rounds per N (default 2)
#   STRFRY       strfry binary (unset: this relay alone)
#   STRFRY_CONF  its configuration: it must listen on STRFRY_PORT, keep its
#                database in STRFRY_DB, have auth off, compression.enabled and
#                compression.slidingWindow both false (with the sliding window
#                on, every socket holds a compression window: ~83 KiB per
#                connection), nofiles >= 20000
#   STRFRY_PORT  (default 7778)   STRFRY_DB  (default /tmp/bench-held-strfry-db)
#   TEST_BIN     a prebuilt `go test -c ./internal/relay` binary (default: built
#                into a temp dir from this checkout)
#
# N=18,000 needs 20,000 open files per process (ulimit -n; both relays).
set -euo pipefail
cd "$(dirname "$0")/.."

NS=${NS:-"2000 9000 18000"}
ROUNDS=${ROUNDS:-2}
STRFRY_PORT=${STRFRY_PORT:-7778}
STRFRY_DB=${STRFRY_DB:-/tmp/bench-held-strfry-db}
ulimit -n 20000 2>/dev/null || echo "bench-held: could not raise the open-file limit to 20000 (N=18000 will fail)" >&2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=${TEST_BIN:-}
if [ -z "$bin" ]; then
	bin=$tmp/relay.test
	go test -c -o "$bin" ./internal/relay
fi

drain() {
	local t
	for _ in $(seq 1 150); do
		t=$(ss -tan state time-wait | wc -l)
		[ "$t" -lt 500 ] && return
		sleep 0.5
	done
}

held() { # N, then extra environment
	local n=$1
	shift
	local notes=20 rate=5
	if [ "$n" -le 2000 ]; then notes=40 rate=10; fi
	env "$@" HELD_N="$n" HELD_NOTES=$notes HELD_RATE=$rate "$bin" -test.run '^$' -test.bench HeldConnections -test.benchtime 1x |
		grep -E 'held_test' || true
}

for n in $NS; do
	for r in $(seq 1 "$ROUNDS"); do
		drain
		echo "== N=$n round $r: this relay ($(uptime | sed 's/.*load/load/'))"
		held "$n"
		if [ -n "${STRFRY:-}" ]; then
			drain
			rm -rf "$STRFRY_DB" && mkdir -p "$STRFRY_DB"
			"$STRFRY" --config="$STRFRY_CONF" relay >"$tmp/strfry.log" 2>&1 &
			pid=$!
			for _ in $(seq 1 100); do grep -q 'Started websocket server' "$tmp/strfry.log" && break; sleep 0.1; done
			echo "== N=$n round $r: strfry ($(uptime | sed 's/.*load/load/'))"
			held "$n" HELD_URL="ws://127.0.0.1:$STRFRY_PORT" HELD_PID=$pid
			kill "$pid"
			wait "$pid" 2>/dev/null || true
		fi
	done
done
