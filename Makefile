# The two commands a newcomer needs: `make run` and `make test` (Go only).
GO ?= go
BENCH ?= .
BENCHCOUNT ?= 5
BENCHTIME ?= 1s
# Signatures verify ~3x faster through libsecp256k1 (go-nostr's build tag) when its
# headers are installed (Debian: apt install libsecp256k1-dev); pure Go otherwise.
GOTAGS ?= $(shell printf '\043include <secp256k1_schnorrsig.h>\nint main(void){return 0;}\n' | \
	$${CC:-cc} -x c - -lsecp256k1 -o /dev/null >/dev/null 2>&1 && echo libsecp256k1)

.PHONY: run test test-long fuzz test-race test-ops test-apps test-community-app bench bench-index bench-trust bench-peers lint build clean-dev docs

## run: start the whole node locally (embedded Postgres unless DATABASE_URL is set)
run:
	$(GO) build -tags '$(GOTAGS)' -o bin/cnctl ./cmd/cnctl
	./bin/cnctl dev

## test: every test against a real Postgres (CN_TEST_DATABASE_URL, Docker, or embedded), the soaks in their short versions (-short); under 10 minutes on two cores
# internal/relay first: it is the longest package (~90 s), and go test starts
# packages in the order given (two at a time on two cores).
test:
	$(GO) test -short -count=1 -timeout 15m ./internal/relay ./...

## test-long: the soak tests in full (chaos with every daemon, the bridge's and the remote indexer's kill rounds, 20,000 concurrent outbox appends, 20,000-item NIP-77 differentials, three relay restarts under 50 publishing clients; a failover with every daemon, which make test skips); make test runs the others' short versions
LONG_TESTS ?= ^(TestChaos|TestRemoteIndexerEqualsLocal|TestSoakConcurrentWriters|TestNegentropyDifferential|TestEveryDaemonHealsAfterFailover|TestRelayRestartUnderLoad|TestConsumerRestartWithoutGap)$$
test-long:
	$(GO) test -count=1 -timeout 40m -run '$(LONG_TESTS)' ./test/chaos ./internal/bridge ./internal/indexer ./pkg/outbox ./internal/relay ./test/durability ./test/restart

## docs: regenerate docs/configuration.md from the binaries' flags (each command's TestConfigurationDoc fails when it is stale)
docs:
	CN_UPDATE_DOCS=1 $(GO) test -count=1 -run '^TestConfigurationDoc$$' ./cmd/...

## fuzz: the network-facing parsers' fuzz targets for a fixed time each (FUZZTIME); make test runs their seed corpora
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzServerReconcile$$' -fuzztime $(FUZZTIME) ./internal/negentropy
	$(GO) test -run '^$$' -fuzz '^FuzzNegMessages$$' -fuzztime $(FUZZTIME) ./internal/relay
	$(GO) test -run '^$$' -fuzz '^FuzzHeadEnd$$' -fuzztime $(FUZZTIME) ./internal/relay
	$(GO) test -run '^$$' -fuzz '^FuzzParseFrames$$' -fuzztime $(FUZZTIME) ./internal/relay/wsconn
	$(GO) test -run '^$$' -fuzz '^FuzzParseClientMessage$$' -fuzztime $(FUZZTIME) ./internal/protocol
	$(GO) test -run '^$$' -fuzz '^FuzzParseAuth$$' -fuzztime $(FUZZTIME) ./internal/blossom

## test-race: the packages with concurrency under the race detector, against the same real Postgres (a few minutes)
RACE_PKGS ?= ./internal/relay ./internal/relay/wsconn ./internal/eventcache ./internal/store ./internal/ephemeral ./internal/node ./internal/devnode ./pkg/backoff ./internal/admission ./pkg/consumer ./pkg/outbox
# These bound the process's heap, RSS or delivery latency, which the race detector's
# instrumentation slows and inflates; make test runs them.
RACE_SKIP ?= ^(TestNeverReadingClient|TestRelayWideBudget|TestSlowSubscriberDoesNotDelayOthers|TestHeldConnectionMemory)$$
test-race:
	$(GO) test -race -count=1 -timeout 30m -skip '$(RACE_SKIP)' $(RACE_PKGS)

## test-ops: alert rules (promtool), every dashboard and alert expression against a live Prometheus, the status page and the console in headless Chromium (axe-core checks); installs Debian's prometheus and chromium when missing (as root)
test-ops:
	bash ops/test-ops.sh

## test-apps: stock app libraries (nostr-tools, NDK; test/apps, node --test) against bin/relay with default flags on a fresh database; needs Node.js 20+ and npm, installs the libraries with npm ci
test-apps:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && \
		node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || \
		{ echo "test-apps: install Node.js 20 or later and npm first (found node: $$(node --version 2>/dev/null || echo none), npm: $$(npm --version 2>/dev/null || echo none))" >&2; exit 1; }
	cd test/apps && npm ci --no-audit --no-fund
	$(GO) test -tags apps -count=1 -timeout 15m -v ./test/apps/...

## test-community-app: a real NIP-29 web app, Flotilla (built once from a local git repository of its source, FLOTILLA_SRC; cached in test/community-app/.cache), driven in headless Chromium against two cnctl dev nodes (open, invite-only); needs Node.js 20+, npm and Debian's chromium
test-community-app:
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && \
		node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' || \
		{ echo "test-community-app: install Node.js 20 or later and npm first (found node: $$(node --version 2>/dev/null || echo none), npm: $$(npm --version 2>/dev/null || echo none))" >&2; exit 1; }
	@test -x "$${CN_CHROMIUM:-/usr/bin/chromium}" || { echo "test-community-app: no Chromium at $${CN_CHROMIUM:-/usr/bin/chromium}: apt install chromium (Debian), or set CN_CHROMIUM to its path" >&2; exit 1; }
	cd test/community-app && npm ci --no-audit --no-fund
	build=$$(test/community-app/build-flotilla.sh) && \
		CN_FLOTILLA_BUILD="$$build" $(GO) test -tags communityapp -count=1 -timeout 20m -v ./test/community-app/...

## bench: benchmarks with figures (BENCH=regexp BENCHCOUNT=n BENCHTIME=d), except the indexer's and trust's
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHTIME) -count $(BENCHCOUNT) \
		./pkg/... $$($(GO) list ./internal/... | grep -v -e /internal/indexer -e /internal/trust)

## bench-index: the indexer's benchmarks (200,000-row catch-up, search over 1,000,000 documents, publish -> searchable), 3 runs each
bench-index:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 3 -timeout 60m ./internal/indexer

## bench-trust: trust's benchmarks (recompute over 1,000,000 pubkeys and 30,000,000 follow edges, catch-up over 200,000 outbox rows), 3 runs each
bench-trust:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 3 -timeout 60m ./internal/trust

## bench-peers: REQ latency and throughput of relays side by side (PEERS="ours=ws://... strfry=ws://...", see scripts/bench-peers.sh)
bench-peers:
	@test -n "$(PEERS)" || { echo 'usage: make bench-peers PEERS="ours=ws://127.0.0.1:7777 other=ws://..."'; exit 2; }
	scripts/bench-peers.sh $(PEERS)

## lint: gofmt and go vet
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

## build: binaries into ./bin
build:
	$(GO) build -tags '$(GOTAGS)' -o bin/ ./cmd/...

## clean-dev: remove the embedded Postgres data of `make run`
clean-dev:
	rm -rf .cn
