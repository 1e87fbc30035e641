# benchlib.sh: what the benchmark scripts share. Sourced (not run) after the
# script has set ADMIN_URL, DB and PORT; it then provides:
#
#   $work        a temporary directory, removed on exit with the relay stopped
#                (its log copied to $RELAY_LOG first, when set)
#   $BIN         relay and cnctl: the caller's BIN, or built into $work/bin
#   fresh_db     drop and recreate $DB on ADMIN_URL's server, migrate it; sets DB_URL
#   start_relay  run $BIN/relay on 127.0.0.1:$PORT against $DB_URL with the
#                per-address rate limits off (the load comes from one address),
#                plus any arguments given; waits for /healthz; sets relay_pid and URL

work=$(mktemp -d)
relay_pid=
bench_cleanup() {
	if [ -n "$relay_pid" ]; then kill "$relay_pid" 2>/dev/null || true; wait "$relay_pid" 2>/dev/null || true; fi
	if [ -n "${RELAY_LOG:-}" ] && [ -f "$work/relay.log" ]; then cp "$work/relay.log" "$RELAY_LOG" || true; fi
	rm -rf "$work"
}
trap bench_cleanup EXIT

if [ -z "${BIN:-}" ]; then
	BIN=$work/bin
	(cd "$(dirname "${BASH_SOURCE[0]}")/.." && go build -o "$BIN/" ./cmd/relay ./cmd/cnctl)
fi

fresh_db() {
	# The bench database's URL: ADMIN_URL with its database name replaced.
	DB_URL=$(printf '%s' "$ADMIN_URL" | sed -E "s#^(postgres(ql)?://[^/]*/)[^?]*#\1$DB#")
	psql -qX -v ON_ERROR_STOP=1 "$ADMIN_URL" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB" 2>/dev/null
	"$BIN/cnctl" migrate --database-url "$DB_URL" >/dev/null
}

start_relay() {
	URL=ws://127.0.0.1:$PORT
	"$BIN/relay" --database-url "$DB_URL" --listen "127.0.0.1:$PORT" \
		--event-rate-ip 0 --event-rate-pubkey 0 --req-rate-ip 0 "$@" >"$work/relay.log" 2>&1 &
	relay_pid=$!
	for _ in $(seq 100); do
		curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && return 0
		kill -0 "$relay_pid" 2>/dev/null || { cat "$work/relay.log"; exit 1; }
		sleep 0.1
	done
	echo "relay did not answer /healthz: $work/relay.log" >&2
	cat "$work/relay.log" >&2
	exit 1
}
