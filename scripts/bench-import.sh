#!/usr/bin/env bash
# bench-import.sh: `cnctl import` of one JSON Lines file into a fresh database,
# several builds side by side in interleaved rounds (A/B in one sitting), and
# optionally `strfry import` of the same file into a fresh strfry database.
#
#   ROUNDS=3 scripts/bench-import.sh FILE old=/path/to/cnctl new=/path/to/cnctl
#   STRFRY=/path/to/strfry STRFRY_CONF=/path/to/strfry.conf ROUNDS=3 scripts/bench-import.sh FILE new=...
#
# FILE: e.g. the import benchmark's corpus (internal/bulk BenchmarkImport builds
# $CN_BENCH_IMPORT_DIR/cn_import_<events>_<authors>_p.jsonl). Each round runs every
# build once, in the order given, on a database dropped and migrated just
# before (ADMIN_URL's server, database DB); strfry, when set, imports into an
# emptied copy of the db directory its config names (STRFRY_DB, which must be
# that directory) after the builds. Prints one line per run (events/s = lines
# / wall seconds of the import alone, not migrate; the CPU per event of cnctl
# and of the database's backends) and the median per build.
# The load average before and after each run is printed: the machine is often
# shared.
set -euo pipefail

FILE=${1:?usage: bench-import.sh FILE label=cnctl ...}
shift
ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}
DB=${DB:-cn_bench_import}
ROUNDS=${ROUNDS:-3}
lines=$(grep -c . "$FILE")

declare -A figures
order=()
for spec in "$@"; do order+=("${spec%%=*}"); done
[ -n "${STRFRY:-}" ] && order+=(strfry)

DB_URL=$(printf '%s' "$ADMIN_URL" | sed -E "s#^(postgres(ql)?://[^/]*/)[^?]*#\1$DB#")
load() { cut -d' ' -f1 /proc/loadavg; }
# backend_ticks: while the file $1 exists, samples every 0.2 s the CPU ticks
# (user + system) of each Postgres backend serving $DB (found by its process
# title) and prints the sum of the last sample of each when it ends. A backend
# that ends loses its last 0.2 s at most.
backend_ticks() {
	declare -A last
	local p t
	while [ -e "$1" ]; do
		for p in $(pgrep -f "postgres: .* $DB " || true); do
			t=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) && last[$p]=$t
		done
		sleep 0.2
	done
	local sum=0
	for p in "${!last[@]}"; do sum=$((sum + ${last[$p]})); done
	echo "$sum"
}

run_cnctl() { # label binary
	psql -qX -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" 2>/dev/null
	"$2" migrate --database-url "$DB_URL" >/dev/null
	local l0 t0 t1 eps
	l0=$(load)
	t0=$(date +%s.%N)
	local flag=/tmp/bench-import-running
	touch $flag
	backend_ticks $flag >/tmp/bench-import-pg &
	local poller=$!
	/usr/bin/time -f '%U %S' -o /tmp/bench-import-time "$2" import --database-url "$DB_URL" --progress 0 --json "$FILE" >"/tmp/bench-import-$1.json" 2>/dev/null
	t1=$(date +%s.%N)
	rm -f $flag
	wait $poller
	eps=$(awk -v n="$lines" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
	local go_us pg_us
	go_us=$(awk -v n="$lines" '{ printf "%.0f", ($1 + $2) * 1e6 / n }' /tmp/bench-import-time)
	pg_us=$(awk -v n="$lines" '{ printf "%.0f", $1 * 1e4 / n }' /tmp/bench-import-pg) # USER_HZ 100
	echo "$1 round $round: $eps events/s ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; CPU per event: cnctl $go_us µs, Postgres backends $pg_us µs; load $l0 -> $(load)); $(tr -d ' \n' <"/tmp/bench-import-$1.json" | grep -o '"accepted":[0-9]*,"pending":[0-9]*,"duplicates":[0-9]*,"refused":[0-9]*')"
	figures[$1]+="$eps "
}

run_strfry() {
	: "${STRFRY_CONF:?STRFRY_CONF is the strfry config}" "${STRFRY_DB:?STRFRY_DB is the db directory STRFRY_CONF names}"
	rm -rf "$STRFRY_DB" && mkdir -p "$STRFRY_DB"
	local l0 t0 t1 eps
	l0=$(load)
	t0=$(date +%s.%N)
	"$STRFRY" --config "$STRFRY_CONF" import <"$FILE" >/tmp/bench-import-strfry.log 2>&1
	t1=$(date +%s.%N)
	eps=$(awk -v n="$lines" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
	echo "strfry round $round: $eps events/s ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s; load $l0 -> $(load)); $(grep -o 'Processed.*' /tmp/bench-import-strfry.log | tail -1)"
	figures[strfry]+="$eps "
}

echo "file $FILE: $lines lines; $ROUNDS rounds"
for round in $(seq "$ROUNDS"); do
	for spec in "$@"; do run_cnctl "${spec%%=*}" "${spec#*=}"; done
	[ -n "${STRFRY:-}" ] && run_strfry
done
for label in "${order[@]}"; do
	# shellcheck disable=SC2086
	echo "$label: median $(printf '%s\n' ${figures[$label]} | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }') events/s (runs: ${figures[$label]% })"
done
