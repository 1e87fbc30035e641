#!/usr/bin/env bash
# group-bench.sh: NIP-29 figures of one relay build (docs/benchmarks.md).
#
# ROUNDS times: a fresh database, a relay with a node key (so that it hosts
# groups; default group policy), then
#   - `cnctl bench ingest` of plain notes (kind 1, a t tag) and of group chat
#     (kind 9, the same t tag plus h=bench-chat, an open group), EVENTS timed
#     events each after WARMUP, 16 connections, one EVENT in flight each; the
#     order of the two alternates between rounds (A/B in one sitting);
#   - `cnctl bench join`: JOINS joins one at a time, 9021 -> OK and -> the
#     node's 9000 and the 39002 that lists the joiner on a live subscription.
# One line per round and workload.
#
#   ADMIN_URL  Postgres URL to create the bench database from
#              (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   DB         bench database, dropped and recreated (default cn_group_bench)
#   BIN        directory holding relay and cnctl (default: go build into a temp dir)
#   PORT       relay port (default 7793)
#   ROUNDS (3) EVENTS (10000) WARMUP (1000) JOINS (500)
set -euo pipefail

ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DB=${DB:-cn_group_bench}
PORT=${PORT:-7793}
ROUNDS=${ROUNDS:-3}
EVENTS=${EVENTS:-10000}
WARMUP=${WARMUP:-1000}
JOINS=${JOINS:-500}

# shellcheck source=scripts/benchlib.sh
. "$(dirname "$0")/benchlib.sh"

"$BIN/cnctl" node-key generate --file "$work/node.key" >/dev/null

ingest() { # label, extra bench flags...
	local label=$1
	shift
	"$BIN/cnctl" bench ingest --url "$URL" --connections 16 --authors 500 --events "$EVENTS" --warmup "$WARMUP" --json "$@" 2>/dev/null |
		jq -r --arg l "$label" --arg r "$round" '"round \($r) \($l): \(.events_per_second|floor) events/s, OK p50 \(.ok_latency.p50_ms) ms p99 \(.ok_latency.p99_ms) ms, accepted \(.accepted), rejected \(.rejected)"'
}

for round in $(seq "$ROUNDS"); do
	fresh_db
	start_relay --node-key-file "$work/node.key" --metrics-listen ""
	if [ $((round % 2)) -eq 1 ]; then
		ingest plain
		ingest group --kind 9 --group bench-chat
	else
		ingest group --kind 9 --group bench-chat
		ingest plain
	fi
	"$BIN/cnctl" bench join --url "$URL" --joins "$JOINS" --json 2>/dev/null |
		jq -r --arg r "$round" '"round \($r) join: \(.accepted) joins; 9021->OK p50 \(.ok_latency.p50_ms) p99 \(.ok_latency.p99_ms) ms; ->9000 p50 \(.put_user_latency.p50_ms) p99 \(.put_user_latency.p99_ms) ms; ->39002 p50 \(.members_latency.p50_ms) p99 \(.members_latency.p99_ms) ms"'
	kill "$relay_pid"
	wait "$relay_pid" 2>/dev/null || true
	relay_pid=
done
