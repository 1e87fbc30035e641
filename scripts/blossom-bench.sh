#!/usr/bin/env bash
# blossom-bench.sh: the relay's Blossom server (issue 53): upload and
# download throughput of 1 MB and 50 MB blobs over loopback, and the relay's
# RSS while each upload streams in (scripts/blossombench).
#
# A relay on a fresh database with --blossom-dir in a temporary directory
# (on the same filesystem as TMPDIR: the figures include its fsyncs).
#
#   ADMIN_URL  Postgres URL to create the bench database from
#              (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   DB         bench database, dropped and recreated (default cn_blossom_bench)
#   BIN        directory holding relay and cnctl (default: go build into a temp dir)
#   PORT       relay port (default 7795)
#   SIZES      blob sizes in bytes (default 1048576,52428800); ROUNDS per size (5)
set -euo pipefail

DB=${DB:-cn_blossom_bench}
PORT=${PORT:-7795}
SIZES=${SIZES:-1048576,52428800}
ROUNDS=${ROUNDS:-5}
ADMIN_URL=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}

# shellcheck source=scripts/benchlib.sh
. "$(dirname "$0")/benchlib.sh"

(cd "$(dirname "$0")/.." && go build -o "$work/blossombench" ./scripts/blossombench)
fresh_db
start_relay --blossom-dir "$work/blobs" --metrics-listen ""
echo "relay pid $relay_pid, blobs in $work/blobs ($(df -h --output=source,fstype "$work" | tail -1))"
"$work/blossombench" --relay "$URL" --sizes "$SIZES" --rounds "$ROUNDS" --pid "$relay_pid"
