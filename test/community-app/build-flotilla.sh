#!/usr/bin/env bash
# Builds Flotilla (coracle-social/flotilla) at FLOTILLA_COMMIT from a local git
# repository into .cache/flotilla-<commit>/build, once: a later run finds the
# build there and returns at once. The source is read from the repository
# (git archive into a temporary folder under .cache, removed afterwards), never
# copied into this repository. Prints the build folder on its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
commit="${FLOTILLA_COMMIT:-1510f39}"
cache="$here/.cache/flotilla-$commit"
out="$cache/build"

if [ -f "$out/index.html" ]; then
  echo "$out"
  exit 0
fi

src=""
for c in "${FLOTILLA_SRC:-}" /work/.mirror/coracle-social+flotilla/repo "$root/../.mirror/coracle-social+flotilla/repo"; do
  [ -n "$c" ] || continue
  if git -C "$c" cat-file -e "$commit^{commit}" 2>/dev/null; then src="$c"; break; fi
done
if [ -z "$src" ]; then
  echo "test-community-app: no git repository of Flotilla with commit $commit (looked in \$FLOTILLA_SRC='${FLOTILLA_SRC:-}', /work/.mirror/coracle-social+flotilla/repo, $root/../.mirror/coracle-social+flotilla/repo): clone https://github.com/coracle-social/flotilla and set FLOTILLA_SRC to it" >&2
  exit 1
fi

pnpm="$here/node_modules/.bin/pnpm"
[ -x "$pnpm" ] || { echo "test-community-app: $pnpm is missing: run npm ci in test/community-app" >&2; exit 1; }

mkdir -p "$here/.cache"
work="$(mktemp -d "$here/.cache/work-$commit.XXXXXX")"
trap 'rm -rf "$work"' EXIT
git -C "$src" archive "$commit" | tar -x -C "$work"
cd "$work"
# Every @welshman/* package at 0.8.3: the lock file's 0.8.1 is no longer served
# by the npm registry. --ignore-scripts: sharp's install script downloads
# libvips, and vite build does not need it.
node -e '
const fs = require("fs");
const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
const o = {};
for (const d of Object.keys({...p.dependencies, ...p.devDependencies})) if (d.startsWith("@welshman/")) o[d] = "0.8.3";
p.pnpm = {...p.pnpm, overrides: {...(p.pnpm && p.pnpm.overrides), ...o}};
fs.writeFileSync("package.json", JSON.stringify(p, null, 2));
'
echo "test-community-app: building Flotilla $commit from $src (pnpm install, vite build; a few minutes)" >&2
"$pnpm" install --ignore-scripts --no-frozen-lockfile --reporter=silent >&2
# The build's own environment (.env.template, as build.sh reads it), without
# the steps that need the network or native tools (icons, Capacitor).
set -a; source .env.template; set +a
export VITE_BUILD_HASH="$commit"
NODE_OPTIONS="--max-old-space-size=3072" ./node_modules/.bin/vite build --logLevel error >&2
test -f build/index.html || { echo "test-community-app: vite build wrote no build/index.html" >&2; exit 1; }
mkdir -p "$cache" && rm -rf "$out.tmp" && mv build "$out.tmp" && mv "$out.tmp" "$out"
echo "$out"
