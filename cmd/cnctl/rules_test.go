package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// notStoreRules are the relay's flags that do not decide whether or how an
// event is stored, each with why. Every other relay flag must be taken by each
// command that stores events, with the same help line (name, usage, default,
// environment variables): see TestStoringCommandsTakeEveryRelayRuleFlag.
var notStoreRules = map[string]string{
	"listen":                    "where the relay serves",
	"blossom-dir":               "Blossom media, not events (docs/media.md)",
	"blossom-listen":            "Blossom media, not events (docs/media.md)",
	"blossom-url":               "Blossom media, not events (docs/media.md)",
	"blossom-max-blob-bytes":    "Blossom media, not events (docs/media.md)",
	"blossom-quota-bytes":       "Blossom media, not events (docs/media.md)",
	"blossom-quota-blobs":       "Blossom media, not events (docs/media.md)",
	"blossom-upload-timeout":    "Blossom media, not events (docs/media.md)",
	"blossom-types":             "Blossom media, not events (docs/media.md)",
	"blossom-upload-rate-ip":    "Blossom media, not events (docs/media.md)",
	"blossom-upload-burst-ip":   "Blossom media, not events (docs/media.md)",
	"blossom-request-rate-ip":   "Blossom media, not events (docs/media.md)",
	"blossom-request-burst-ip":  "Blossom media, not events (docs/media.md)",
	"blossom-mirror-private":    "Blossom media, not events (docs/media.md)",
	"groups":                    "NIP-29 groups need the node key to sign their state; import and sync refuse group events, except cnctl import --group-history --node-key-file (a moved or forked group)",
	"group-creators":            "NIP-29 groups (see groups)",
	"group-invite-ttl":          "NIP-29 groups (see groups)",
	"group-max-created-per-day": "NIP-29 groups (see groups)",
	"group-max-created":         "NIP-29 groups (see groups)",
	"group-max-members":         "NIP-29 groups (see groups)",
	"group-max-depth":           "NIP-29 groups (see groups)",
	"group-max-invite-codes":    "NIP-29 groups (see groups)",
	"group-max-open-codes":      "NIP-29 groups (see groups)",
	"group-member-list-every":   "NIP-29 groups (see groups)",
	"group-member-list-above":   "NIP-29 groups (see groups)",
	"ws-deflate":                "the WebSocket transport's compression, not what is stored",
	"max-claims-per-member":     "NIP-43 invite codes are made for live requests only",
	"max-open-claims":           "NIP-43 invite codes are made for live requests only",
	"membership":                "NIP-43 invite mode is a rule on live writers (who may post now); an import or a sync stores what the operator chose to move, and membership events are the node's own (docs/membership.md)",
	"admit-min-rank":            "NIP-43 admission by trust answers live join requests; nothing is imported through it",
	"invite-ttl":                "NIP-43 invite codes are made for live requests only",
	"group-admit-min-rank":      "NIP-29 groups (see groups)",
	"config":                    "the configuration file names values, it is not a rule (its relay section holds the relay's rules)",
	"group-late-window":         "NIP-29 groups (see groups); cnctl import --group-history has no window",
	"group-min-previous":        "NIP-29 groups (see groups); cnctl import --group-history does not check references",
	"metrics-listen":            "where the relay serves",
	"public-url":                "the relay's URL for AUTH",
	"auth-challenge-on-connect": "when the relay asks a client to sign in",
	"auth-grace":                "how long a REQ waits for a new connection's sign-in",
	"real-ip-header":            "a connection's address",
	"batch-max-events":          "how the relay groups commits, not what they store",
	"batch-max-delay":           "how the relay groups commits, not what they store",
	"ingest-concurrency":        "how the relay groups commits, not what they store",
	"send-queue":                "a connection's budget",
	"send-queue-bytes":          "a connection's budget",
	"total-queue-bytes":         "the connections' budget",
	"gc-percent":                "the relay process's garbage collector",
	"max-subscriptions":         "a connection's budget",
	"max-conns-per-ip":          "a connection's budget",
	"event-rate-ip":             "a connection's rate",
	"event-burst-ip":            "a connection's rate",
	"event-rate-pubkey":         "a connection's rate",
	"event-burst-pubkey":        "a connection's rate",
	"req-rate-ip":               "a connection's rate",
	"req-burst-ip":              "a connection's rate",
	"query-timeout":             "reads",
	"max-filters":               "reads",
	"max-limit":                 "reads",
	"default-limit":             "reads",
	"search":                    "reads",
	"require-topic-in-req":      "reads",
	"cache-bytes":               "reads",
	"always-read-head":          "how REQs answered from memory learn of other relays' writes, not what is stored",
	"read-database-url":         "reads",
	"max-replica-lag":           "reads",
	"negentropy":                "serving NIP-77",
	"max-sync-events":           "serving NIP-77",
	"neg-tree":                  "serving NIP-77",
	"neg-concurrency":           "serving NIP-77",
	"max-sync-loads":            "serving NIP-77",
	"max-queued-syncs-per-conn": "serving NIP-77",
	"max-queued-syncs":          "serving NIP-77",
	"neg-frame-limit":           "serving NIP-77",
	"neg-idle-timeout":          "serving NIP-77",
	"shutdown-timeout":          "the process",
	"drain-spread":              "the process",
	"auth":                      "a connection's NIP-42 AUTH (without a connection a protected event is refused)",
	"auth-required-for-writes":  "a connection's NIP-42 AUTH",
	"auth-required-for-reads":   "a connection's NIP-42 AUTH",
	"name":                      "NIP-11",
	"description":               "NIP-11",
	"pubkey":                    "NIP-11",
	"contact":                   "NIP-11",
	"icon":                      "NIP-11",
	"banner":                    "NIP-11",
	"posting-policy":            "NIP-11",
	"info-file":                 "NIP-11",
	"node-key-file":             "NIP-11 self",
	"min-rank":                  "the rank gate on live posts; an import or a sync stores what the operator chose to move (internal/bulk)",
	"admin-pubkeys":             "who may use NIP-86; the bans they set are in the database, which import and sync read",
	"stats-interval":            "maintenance (an import keeps the statistics itself)",
	"expiry-sweep-interval":     "maintenance",
	"database-url":              "every command's own",
	"log-level":                 "the process",
	"debug-listen":              "the process",
	"reuse-port":                "the process",
	"help":                      "every command's own",
}

// flagLine matches a flag's line in urfave/cli's help: the flag's name, then
// what follows its placeholder ("value", or a word in backquotes in its usage):
// usage, default and environment variables.
var flagLine = regexp.MustCompile(`^\s+--([a-z0-9-]+)(?:, -\w+)?(?: [^\s\[]+)?(?: \[ --[a-z0-9-]+ \S+ \])?\s{2,}(.*)$`)

// helpFlags returns each flag of a help text with the rest of its line.
func helpFlags(t *testing.T, help string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(help, "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil {
			out[m[1]] = m[2]
		}
	}
	require.NotEmpty(t, out, "no flags in:\n%s", help)
	return out
}

// TestStoringCommandsTakeEveryRelayRuleFlag reads `relay --help` from the
// built relay and fails when a relay flag that decides what is stored (any
// flag not in notStoreRules) is missing from cnctl import, sync or dev, or
// differs there in usage, default or environment variables.
func TestStoringCommandsTakeEveryRelayRuleFlag(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "relay")
	build := exec.Command("go", "build", "-o", bin, "github.com/kukuri/communitynode/cmd/relay")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	help, err := exec.Command(bin, "--help").Output()
	require.NoError(t, err)
	relayFlags := helpFlags(t, string(help))
	for name := range notStoreRules {
		_, ok := relayFlags[name]
		require.True(t, ok, "notStoreRules names --%s, which the relay no longer has", name)
	}

	var rules []string
	for name := range relayFlags {
		if notStoreRules[name] == "" {
			rules = append(rules, name)
		}
	}
	slices.Sort(rules)
	require.GreaterOrEqual(t, len(rules), 12, "the relay's store rules: limits, created_at, topics, identity writers, pending")
	for _, cmd := range []string{"import", "sync", "dev"} {
		out, err := cnctl(t, cmd, "--help")
		require.NoError(t, err)
		flags := helpFlags(t, out)
		var missing, differ []string
		for _, name := range rules {
			switch got, ok := flags[name]; {
			case !ok:
				missing = append(missing, "--"+name)
			case got != relayFlags[name]:
				differ = append(differ, fmt.Sprintf("--%s: relay %q, cnctl %s %q", name, relayFlags[name], cmd, got))
			}
		}
		require.Empty(t, missing, "relay flags that decide what is stored, which cnctl %s does not take "+
			"(declare them in internal/storerules, or add them to notStoreRules with why they are not store rules)", cmd)
		require.Empty(t, differ, "cnctl %s takes these relay flags differently", cmd)
	}
}
