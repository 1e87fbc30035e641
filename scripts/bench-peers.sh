#!/usr/bin/env bash
# bench-peers.sh: REQ latency and throughput of any relays, side by side, as a
# markdown table.
#
#   scripts/bench-peers.sh [NAME=]ws://HOST:PORT ...
#
# For each round (ROUNDS, default 3) and each relay in turn (interleaved, so
# that noise on a shared machine spreads over all of them), it runs
# `cnctl bench req` three times:
#   --connections 1 --requests REQUESTS --with-topic=false   (the seven stock shapes)
#   --connections 1 --requests REQUESTS --with-topic=true    (the same, each with #t)
#   --connections 8 --requests TPUT_REQUESTS --with-topic=false   (throughput)
# and prints, per shape and relay, the median over the rounds of p50 and of p99
# (ms), then each relay's REQ throughput at 8 connections (all seven shapes'
# requests over their wall time, requests/s, median over the rounds).
#
# The relays must hold events with #t TOPIC to sample ids, authors and p values
# from. INGEST=N first publishes N such events to each relay (`cnctl bench ingest
# --connections 16 --authors 500`) and prints its events/s; give every relay
# the same store for a fair table (an empty store each, then INGEST).
#
# Only cnctl is needed: BIN (a directory holding it), else it is built from this
# repository (modules from the Go module proxy). jq from Debian.
#
#   ROUNDS         rounds (default 3)
#   REQUESTS       requests per shape at 1 connection (default 200)
#   TPUT_REQUESTS  requests per shape at 8 connections (default 800)
#   INGEST         events to publish to each relay first (default 0: none)
#   TOPIC          the t tag of the sampled and published events (default bench)
#   BIN            directory holding cnctl (default: go build into a temp dir)
#
# Example: INGEST=20000 scripts/bench-peers.sh ours=ws://127.0.0.1:7751 strfry=ws://127.0.0.1:7777
set -euo pipefail

ROUNDS=${ROUNDS:-3}
REQUESTS=${REQUESTS:-200}
TPUT_REQUESTS=${TPUT_REQUESTS:-800}
INGEST=${INGEST:-0}
TOPIC=${TOPIC:-bench}

names=()
urls=()
for arg in "$@"; do
	case $arg in
	ws://* | wss://*) names+=("$arg") urls+=("$arg") ;;
	*=ws://* | *=wss://*) names+=("${arg%%=*}") urls+=("${arg#*=}") ;;
	*)
		echo "bench-peers: $arg is not [NAME=]ws://... or wss://..." >&2
		exit 2
		;;
	esac
done
if [ ${#urls[@]} -eq 0 ]; then
	echo "usage: scripts/bench-peers.sh [NAME=]ws://HOST:PORT ..." >&2
	exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "${BIN:-}" ]; then
	BIN=$work/bin
	(cd "$(dirname "$0")/.." && go build -o "$BIN/" ./cmd/cnctl)
fi

# run FILE ARGS...: cnctl ARGS --json into FILE; a run in which some request got
# no EOSE still leaves its report (and a warning).
run() {
	local out=$1
	shift
	"$BIN/cnctl" "$@" --json >"$out" 2>"$out.err" || {
		echo "bench-peers: cnctl $* failed: $(tail -n 1 "$out.err")" >&2
		[ -s "$out" ] || echo '{"shapes":[]}' >"$out"
	}
}

n=${#urls[@]}
if [ "$INGEST" -gt 0 ]; then
	for i in $(seq 0 $((n - 1))); do
		run "$work/ingest.$i.json" bench ingest --url "${urls[$i]}" --topic "$TOPIC" --connections 16 --authors 500 --events "$INGEST"
	done
fi
for r in $(seq "$ROUNDS"); do
	for i in $(seq 0 $((n - 1))); do
		for t in false true; do
			run "$work/req.$i.$t.$r.json" bench req --url "${urls[$i]}" --topic "$TOPIC" --connections 1 --requests "$REQUESTS" --with-topic=$t
		done
		run "$work/tput.$i.$r.json" bench req --url "${urls[$i]}" --topic "$TOPIC" --connections 8 --requests "$TPUT_REQUESTS" --with-topic=false
	done
done

# median FILES... -- JQ: the median over FILES of the number JQ selects in each
# (a shape that was skipped or failed in every round prints as -).
median() {
	local files=()
	while [ "$1" != -- ]; do files+=("$1") && shift; done
	jq -rs "[.[] | $2 | numbers] | sort |
		if length == 0 then \"-\"
		elif length % 2 == 1 then .[length / 2 | floor]
		else (.[length / 2 - 1] + .[length / 2]) / 2 end |
		if type == \"number\" then (. * 100 | round / 100) else . end" "${files[@]}"
}

shapes=(by-id 1-author 100-authors '#t' '#p' '#e' kinds)
echo "REQ latency, ms: median of $ROUNDS rounds of $REQUESTS requests per shape at 1 connection (cnctl bench req)"
echo
head="| shape |"
rule="|---|"
for name in "${names[@]}"; do
	head+=" $name p50 | $name p99 |"
	rule+="---|---|"
done
echo "$head"
echo "$rule"
for t in false true; do
	for s in "${shapes[@]}"; do
		label=$s
		if [ $t = true ] && [ "$s" != '#t' ]; then label="$s + #t"; fi
		[ $t = true ] && [ "$s" = '#t' ] && continue # (the same filter as without)
		row="| $label |"
		for i in $(seq 0 $((n - 1))); do
			sel=".shapes[] | select(.name == \"$s\" and (.skipped // \"\") == \"\" and .eose == .requests) | .latency"
			row+=" $(median "$work"/req.$i.$t.*.json -- "$sel.p50_ms") | $(median "$work"/req.$i.$t.*.json -- "$sel.p99_ms") |"
		done
		echo "$row"
	done
done
echo
echo "| relay | REQ/s at 8 connections (seven shapes, $TPUT_REQUESTS requests each) |$([ "$INGEST" -gt 0 ] && echo " ingest events/s ($INGEST events, 16 connections) |")"
echo "|---|---|$([ "$INGEST" -gt 0 ] && echo "---|")"
for i in $(seq 0 $((n - 1))); do
	row="| ${names[$i]} | $(median "$work"/tput.$i.*.json -- '([.shapes[].eose] | add) / ([.shapes[].wall_seconds] | add)' | cut -d. -f1) |"
	if [ "$INGEST" -gt 0 ]; then
		row+=" $(median "$work/ingest.$i.json" -- '.events_per_second' | cut -d. -f1) |"
	fi
	echo "$row"
done
