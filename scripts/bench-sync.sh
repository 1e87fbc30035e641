#!/usr/bin/env bash
# bench-sync.sh: `cnctl sync --direction down` from any NIP-77 relays, side by
# side, the same client node each time, as a markdown table.
#
#   CLIENT_DB=nb_c99 scripts/bench-sync.sh NAME=ws://HOST:PORT@PID ...
#
# For each round (ROUNDS, default 2) and each relay in turn (interleaved, so
# that noise on a shared machine spreads over all of them), it copies the
# client node's database CLIENT_DB (a template: `createdb -T`, no connection
# to it may be open) into a fresh one, runs
#   cnctl sync --relay URL --direction down --max-sync-events MAX
# against it (the whole session: reading the client's items, the NIP-77
# rounds, downloading and importing what it lacks), drops the copy, and
# prints one line per run: wall time, reconciliation time (NEG-OPEN to the
# last NEG-MSG), rounds, NIP-77 bytes (hex payloads both ways), what the
# client lacked and received, the relay process's CPU during the run (user +
# system, from /proc/PID/stat; for this relay that leaves out Postgres,
# which serves the head read and the download's REQs), its RSS after the run
# and its peak RSS (VmHWM), and the client's peak RSS. Then the medians per
# relay. PID is the relay's process id (its CPU and memory are read from
# /proc); without @PID they are left blank.
#
#   CLIENT_DB   template database of the client node (required)
#   ADMIN_URL   Postgres URL to create and drop databases with
#               (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   ROUNDS      rounds (default 2)
#   MAX         --max-sync-events (default 1000000)
#   BIN         directory holding cnctl (default: go build into a temp dir)
#   OUT         also append the per-run lines to this file
#
# Example: CLIENT_DB=nb_c99 scripts/bench-sync.sh ours=ws://127.0.0.1:7781@1234 strfry=ws://127.0.0.1:7777@5678
set -euo pipefail

: "${CLIENT_DB:?CLIENT_DB: template database of the client node}"
ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
ROUNDS=${ROUNDS:-2}
MAX=${MAX:-1000000}
OUT=${OUT:-/dev/null}

work=$(mktemp -d)
copy=
cleanup() {
	if [ -n "$copy" ]; then psql -qX "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $copy" >/dev/null 2>&1 || true; fi
	rm -rf "$work"
}
trap cleanup EXIT
if [ -z "${BIN:-}" ]; then
	BIN=$work/bin
	(cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -o "$BIN/" ./cmd/cnctl)
fi
tck=$(getconf CLK_TCK)

cpu_ticks() { # user + system ticks of pid $1
	awk '{print $14 + $15}' "/proc/$1/stat"
}
status_kb() { # field $2 (VmRSS, VmHWM) of pid $1, in kB
	awk -v f="$2:" '$1 == f {print $2}' "/proc/$1/status"
}

printf '| round | relay | wall s | reconcile s | rounds | NIP-77 bytes | lacked / received | relay CPU s | relay RSS MB | relay peak RSS MB | client peak RSS MB |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for round in $(seq "$ROUNDS"); do
	for peer in "$@"; do
		name=${peer%%=*}
		rest=${peer#*=}
		url=${rest%@*}
		pid=
		[ "$rest" != "$url" ] && pid=${rest##*@}
		copy=nb_sync_copy_$$
		psql -qX -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $copy" -c "CREATE DATABASE $copy TEMPLATE $CLIENT_DB" >/dev/null 2>&1
		db_url=$(printf '%s' "$ADMIN_URL" | sed -E "s#^(postgres(ql)?://[^/]*/)[^?]*#\1$copy#")
		c0=
		[ -n "$pid" ] && c0=$(cpu_ticks "$pid")
		t0=$(date +%s.%N)
		/usr/bin/time -f '%M' -o "$work/time" "$BIN/cnctl" sync --database-url "$db_url" --relay "$url" --direction down \
			--max-sync-events "$MAX" --timeout 120s --progress-every 1h >"$work/out" 2>"$work/err" || {
			echo "cnctl sync against $name failed:" >&2
			cat "$work/err" "$work/out" >&2
			exit 1
		}
		t1=$(date +%s.%N)
		cpu= rss= hwm=
		if [ -n "$pid" ]; then
			c1=$(cpu_ticks "$pid")
			cpu=$(awk -v a="$c0" -v b="$c1" -v t="$tck" 'BEGIN {printf "%.2f", (b - a) / t}')
			rss=$(awk -v k="$(status_kb "$pid" VmRSS)" 'BEGIN {printf "%.0f", k / 1024}')
			hwm=$(awk -v k="$(status_kb "$pid" VmHWM)" 'BEGIN {printf "%.0f", k / 1024}')
		fi
		line=$(grep -h '^sync: .* local items' "$work/err" "$work/out" | tail -1)
		rounds=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) rounds.*/\1/')
		lacked=$(printf '%s' "$line" | sed -E 's/.* ([0-9]+) only there.*/\1/')
		bytes=$(printf '%s' "$line" | sed -E 's/.*messages ([0-9]+) bytes sent and ([0-9]+) received.*/\1 \2/' | awk '{print $1 + $2}')
		rec=$(printf '%s' "$line" | sed -E 's/.*reconciled in ([0-9.]+)(m?s)$/\1 \2/' | awk '{ if ($2 == "ms") printf "%.3f", $1 / 1000; else printf "%.3f", $1 }')
		received=$(grep -ho 'received [0-9]*' "$work/out" "$work/err" | tail -1 | awk '{print $2}')
		client=$(awk '{printf "%.0f", $1 / 1024}' "$work/time")
		wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')
		row="| $round | $name | $wall | $rec | $rounds | $bytes | $lacked / ${received:-0} | $cpu | $rss | $hwm | $client |"
		echo "$row"
		echo "$row" >>"$OUT"
		echo "$name $wall $rec $rounds $bytes $cpu $hwm" >>"$work/all"
		psql -qX "$ADMIN_URL" -c "DROP DATABASE $copy" >/dev/null
		copy=
	done
done

echo
echo "| relay | runs | median wall s | median reconcile s | rounds | median NIP-77 bytes | median relay CPU s | relay peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|"
for peer in "$@"; do
	name=${peer%%=*}
	med() { # median of column $1 of $name's runs
		awk -v n="$name" -v c="$1" '$1 == n {print $c}' "$work/all" | sort -g |
			awk '{v[NR] = $1} END {if (NR == 0) print ""; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
	}
	runs=$(awk -v n="$name" '$1 == n' "$work/all" | wc -l)
	echo "| $name | $runs | $(med 2) | $(med 3) | $(med 4) | $(med 5) | $(med 6) | $(med 7) |"
done
