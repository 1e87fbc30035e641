package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relaynode"
)

// settings is everything the command line says: the relay's Config and what the
// process around it needs.
type settings struct {
	relay         relay.Config
	admins        []string
	minRank       int
	nodePubKey    string
	databaseURL   string
	sweepInterval time.Duration
	statsInterval time.Duration
}

func newApp(stdout, stderr io.Writer) *cli.App {
	d := relay.DefaultConfig()
	l := d.Limits
	return daemon.App("relay", "serve the community node's Nostr relay", stdout, stderr,
		[]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: d.Listen, EnvVars: []string{"CN_RELAY_LISTEN"}, Usage: "address to serve WebSocket, NIP-11, /healthz and /metrics on"},
			&cli.StringFlag{Name: "public-url", EnvVars: []string{"CN_RELAY_PUBLIC_URL"}, Usage: "the relay's URL as clients see it (wss://...); AUTH events must name it (default: the Host header)"},
			&cli.StringFlag{Name: "real-ip-header", EnvVars: []string{"CN_RELAY_REAL_IP_HEADER"}, Usage: "header with the client address set by a trusted reverse proxy (e.g. X-Forwarded-For)"},

			&cli.IntFlag{Name: "batch-max-events", Value: d.BatchMaxEvents, EnvVars: []string{"CN_RELAY_BATCH_MAX_EVENTS"}, Usage: "events per group commit, at most"},
			&cli.DurationFlag{Name: "batch-max-delay", Value: d.BatchMaxDelay, EnvVars: []string{"CN_RELAY_BATCH_MAX_DELAY"}, Usage: "longest wait of an event for its group commit"},
			&cli.IntFlag{Name: "ingest-concurrency", Value: d.IngestConcurrency, EnvVars: []string{"CN_RELAY_INGEST_CONCURRENCY"}, Usage: "group commits running at once (1 makes batches as large as the load; raise it for a distant database or one with many cores)"},
			&cli.IntFlag{Name: "send-queue", Value: d.SendQueueSize, EnvVars: []string{"CN_RELAY_SEND_QUEUE"}, Usage: "outgoing messages queued per connection before the client counts as too slow"},
			&cli.IntFlag{Name: "send-queue-bytes", Value: d.SendQueueBytes, EnvVars: []string{"CN_RELAY_SEND_QUEUE_BYTES"}, Usage: "bytes of outgoing messages queued per connection before the client counts as too slow (at least --max-message-bytes)"},
			&cli.IntFlag{Name: "max-subscriptions", Value: d.MaxSubscriptions, EnvVars: []string{"CN_RELAY_MAX_SUBSCRIPTIONS"}, Usage: "open subscriptions per connection"},
			&cli.IntFlag{Name: "max-conns-per-ip", Value: d.MaxConnsPerIP, EnvVars: []string{"CN_RELAY_MAX_CONNS_PER_IP"}, Usage: "simultaneous connections per client address (an IPv6 /64 counts as one address, here and in the per-address rates)"},
			&cli.Float64Flag{Name: "event-rate-ip", Value: d.EventRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_EVENT_RATE_IP"}, Usage: "EVENT and AUTH messages per second per client address (0: no limit)"},
			&cli.IntFlag{Name: "event-burst-ip", Value: d.EventRatePerIP.Burst, EnvVars: []string{"CN_RELAY_EVENT_BURST_IP"}, Usage: "burst for --event-rate-ip"},
			&cli.Float64Flag{Name: "event-rate-pubkey", Value: d.EventRatePerPubkey.PerSecond, EnvVars: []string{"CN_RELAY_EVENT_RATE_PUBKEY"}, Usage: "EVENT messages per second per author (0: no limit)"},
			&cli.IntFlag{Name: "event-burst-pubkey", Value: d.EventRatePerPubkey.Burst, EnvVars: []string{"CN_RELAY_EVENT_BURST_PUBKEY"}, Usage: "burst for --event-rate-pubkey"},
			&cli.Float64Flag{Name: "req-rate-ip", Value: d.ReqRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_REQ_RATE_IP"}, Usage: "REQ and COUNT messages per second per client address (0: no limit)"},
			&cli.IntFlag{Name: "req-burst-ip", Value: d.ReqRatePerIP.Burst, EnvVars: []string{"CN_RELAY_REQ_BURST_IP"}, Usage: "burst for --req-rate-ip"},
			&cli.DurationFlag{Name: "query-timeout", Value: d.QueryTimeout, EnvVars: []string{"CN_RELAY_QUERY_TIMEOUT"}, Usage: "longest REQ or COUNT query"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: d.ShutdownTimeout, EnvVars: []string{"CN_RELAY_SHUTDOWN_TIMEOUT"}, Usage: "longest graceful shutdown"},

			&cli.BoolFlag{Name: "auth", EnvVars: []string{"CN_RELAY_AUTH"}, Usage: "enable NIP-42 authentication (needed for protected NIP-70 events)"},
			&cli.BoolFlag{Name: "auth-required-for-writes", EnvVars: []string{"CN_RELAY_AUTH_REQUIRED_FOR_WRITES"}, Usage: "accept EVENTs from authenticated clients only (needs --auth)"},
			&cli.BoolFlag{Name: "auth-required-for-reads", EnvVars: []string{"CN_RELAY_AUTH_REQUIRED_FOR_READS"}, Usage: "serve REQ and COUNT to authenticated clients only (needs --auth)"},

			&cli.IntFlag{Name: "max-message-bytes", Value: l.MaxMessageBytes, EnvVars: []string{"CN_RELAY_MAX_MESSAGE_BYTES"}, Usage: "largest client message"},
			&cli.IntFlag{Name: "max-content-bytes", Value: l.MaxContentBytes, EnvVars: []string{"CN_RELAY_MAX_CONTENT_BYTES"}, Usage: "largest event content"},
			&cli.IntFlag{Name: "max-tags", Value: l.MaxTags, EnvVars: []string{"CN_RELAY_MAX_TAGS"}, Usage: "most tags per event"},
			&cli.IntFlag{Name: "max-filters", Value: l.MaxFilters, EnvVars: []string{"CN_RELAY_MAX_FILTERS"}, Usage: "most filters per REQ or COUNT"},
			&cli.IntFlag{Name: "max-limit", Value: l.MaxLimit, EnvVars: []string{"CN_RELAY_MAX_LIMIT"}, Usage: "cap of a filter's limit"},
			&cli.IntFlag{Name: "default-limit", Value: l.DefaultLimit, EnvVars: []string{"CN_RELAY_DEFAULT_LIMIT"}, Usage: "limit of a filter without one"},
			&cli.BoolFlag{Name: "require-topic", Value: l.RequireTopic, EnvVars: []string{"CN_RELAY_REQUIRE_TOPIC"}, Usage: "refuse events that have no topic: no t tag, nothing stored to inherit one from, and not an identity kind (0, 3, 10000-19999)"},
			&cli.StringFlag{Name: "identity-writers", Value: string(l.IdentityWriters), EnvVars: []string{"CN_RELAY_IDENTITY_WRITERS"}, Usage: "who may publish profiles and lists (kinds 0, 3, 10000-19999): members (authors who have posted in a topic here) or any"},
			&cli.BoolFlag{Name: "search", Value: l.Search, EnvVars: []string{"CN_RELAY_SEARCH"}, Usage: "answer NIP-50 search filters from the indexer's index (cn_index)"},
			&cli.BoolFlag{Name: "require-topic-in-req", Value: l.RequireTopicInREQ, EnvVars: []string{"CN_RELAY_REQUIRE_TOPIC_IN_REQ"}, Usage: "refuse REQ and COUNT filters without #t (filters for identity kinds only are exempt)"},
			&cli.StringSliceFlag{Name: "allowed-topics", EnvVars: []string{"CN_RELAY_ALLOWED_TOPICS"}, Usage: "the only topics accepted (comma separated; default: all)"},

			&cli.StringFlag{Name: "name", EnvVars: []string{"CN_RELAY_NAME"}, Usage: "NIP-11 name"},
			&cli.StringFlag{Name: "description", EnvVars: []string{"CN_RELAY_DESCRIPTION"}, Usage: "NIP-11 description"},
			&cli.StringFlag{Name: "pubkey", EnvVars: []string{"CN_RELAY_PUBKEY"}, Usage: "NIP-11 operator pubkey (hex)"},
			&cli.StringFlag{Name: "contact", EnvVars: []string{"CN_RELAY_CONTACT"}, Usage: "NIP-11 contact URI"},
			&cli.StringFlag{Name: "icon", EnvVars: []string{"CN_RELAY_ICON"}, Usage: "NIP-11 icon URL"},
			&cli.StringFlag{Name: "banner", EnvVars: []string{"CN_RELAY_BANNER"}, Usage: "NIP-11 banner URL"},
			&cli.StringFlag{Name: "posting-policy", EnvVars: []string{"CN_RELAY_POSTING_POLICY"}, Usage: "NIP-11 posting_policy URL"},
			&cli.StringFlag{Name: "info-file", EnvVars: []string{"CN_RELAY_INFO_FILE"}, Usage: "JSON file with NIP-11 fields (name, description, icon, banner, pubkey, contact, posting_policy, terms_of_service, privacy_policy, relay_countries, language_tags, tags, retention); flags override it"},
			&cli.StringFlag{Name: "node-key-file", EnvVars: []string{"CN_NODE_KEY_FILE"}, Usage: "the node's key (cnctl node-key generate): NIP-11 `self` names its pubkey; the relay signs nothing with it"},
			&cli.IntFlag{Name: "min-rank", EnvVars: []string{"CN_RELAY_MIN_RANK"}, Usage: "refuse posts from authors whose trust-v1 rank (cmd/trust) is below this, 0-100 (profiles, lists, deletions, seeds, admins and the node exempt; default 0: off)"},
			&cli.StringSliceFlag{Name: "admin-pubkeys", EnvVars: []string{"CN_RELAY_ADMIN_PUBKEYS"}, Usage: "pubkeys (hex or npub, comma separated) that may manage the relay through NIP-86 (default: none, NIP-86 answers 401)"},

			&cli.DurationFlag{Name: "stats-interval", Value: relaynode.DefaultStatsInterval, EnvVars: []string{"CN_RELAY_STATS_INTERVAL"}, Usage: "how often the query tables' statistics are checked and, when missing or stale (autovacuum off or behind), refreshed with ANALYZE (0: never)"},
			&cli.DurationFlag{Name: "expiry-sweep-interval", Value: 30 * time.Second, EnvVars: []string{"CN_RELAY_EXPIRY_SWEEP_INTERVAL"}, Usage: "how often expired (NIP-40) events are swept (0: never)"},
		},
		func(c *cli.Context, logger *slog.Logger) error {
			s, err := parseSettings(c)
			if err != nil {
				return err
			}
			return relaynode.Run(c.Context, relaynode.Options{DatabaseURL: s.databaseURL, Relay: s.relay,
				SweepInterval: s.sweepInterval, StatsInterval: s.statsInterval, AdminPubkeys: s.admins,
				MinRank: s.minRank, NodePubKey: s.nodePubKey, Logger: logger})
		})
}

// parseSettings maps the flags into settings and validates them.
func parseSettings(c *cli.Context) (settings, error) {
	cfg := relay.DefaultConfig()
	cfg.Listen = c.String("listen")
	cfg.PublicURL = c.String("public-url")
	cfg.RealIPHeader = c.String("real-ip-header")
	cfg.BatchMaxEvents = c.Int("batch-max-events")
	cfg.BatchMaxDelay = c.Duration("batch-max-delay")
	cfg.IngestConcurrency = c.Int("ingest-concurrency")
	cfg.SendQueueSize = c.Int("send-queue")
	cfg.SendQueueBytes = c.Int("send-queue-bytes")
	cfg.MaxSubscriptions = c.Int("max-subscriptions")
	cfg.MaxConnsPerIP = c.Int("max-conns-per-ip")
	cfg.EventRatePerIP = relay.Rate{PerSecond: c.Float64("event-rate-ip"), Burst: c.Int("event-burst-ip")}
	cfg.EventRatePerPubkey = relay.Rate{PerSecond: c.Float64("event-rate-pubkey"), Burst: c.Int("event-burst-pubkey")}
	cfg.ReqRatePerIP = relay.Rate{PerSecond: c.Float64("req-rate-ip"), Burst: c.Int("req-burst-ip")}
	cfg.QueryTimeout = c.Duration("query-timeout")
	cfg.ShutdownTimeout = c.Duration("shutdown-timeout")
	cfg.Auth = relay.AuthConfig{
		Enabled:           c.Bool("auth"),
		RequiredForWrites: c.Bool("auth-required-for-writes"),
		RequiredForReads:  c.Bool("auth-required-for-reads"),
	}
	if f := c.String("info-file"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return settings{}, fmt.Errorf("info file: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg.Info); err != nil {
			return settings{}, fmt.Errorf("info file %s: %w", f, err)
		}
	}
	for _, o := range []struct {
		flag string
		into *string
	}{{"name", &cfg.Info.Name}, {"description", &cfg.Info.Description}, {"pubkey", &cfg.Info.PubKey},
		{"contact", &cfg.Info.Contact}, {"icon", &cfg.Info.Icon}, {"banner", &cfg.Info.Banner},
		{"posting-policy", &cfg.Info.PostingPolicy}} {
		if c.IsSet(o.flag) {
			*o.into = c.String(o.flag)
		}
	}
	if f := c.String("node-key-file"); f != "" {
		k, err := nodekey.Load(f)
		if err != nil {
			return settings{}, err
		}
		cfg.Info.Self = k.PubKey
	}
	cfg.Info.Version = version()
	cfg.Limits.MaxMessageBytes = c.Int("max-message-bytes")
	cfg.Limits.MaxContentBytes = c.Int("max-content-bytes")
	cfg.Limits.MaxTags = c.Int("max-tags")
	cfg.Limits.MaxFilters = c.Int("max-filters")
	cfg.Limits.MaxLimit = c.Int("max-limit")
	cfg.Limits.DefaultLimit = c.Int("default-limit")
	cfg.Limits.RequireTopic = c.Bool("require-topic")
	cfg.Limits.RequireTopicInREQ = c.Bool("require-topic-in-req")
	writers, err := protocol.ParseIdentityWriters(c.String("identity-writers"))
	if err != nil {
		return settings{}, err
	}
	cfg.Limits.IdentityWriters = writers
	cfg.Limits.Search = c.Bool("search")
	if topics := c.StringSlice("allowed-topics"); len(topics) > 0 {
		cfg.Limits.AllowedTopics = make(map[string]bool, len(topics))
		for _, t := range topics {
			if n := protocol.NormalizeTopic(t); n != "" {
				cfg.Limits.AllowedTopics[n] = true
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return settings{}, err
	}
	s := settings{relay: cfg, databaseURL: c.String("database-url"), sweepInterval: c.Duration("expiry-sweep-interval"),
		statsInterval: c.Duration("stats-interval"), minRank: c.Int("min-rank"), nodePubKey: cfg.Info.Self}
	if s.minRank < 0 || s.minRank > 100 {
		return settings{}, fmt.Errorf("--min-rank: want 0-100, got %d", s.minRank)
	}
	for _, a := range c.StringSlice("admin-pubkeys") {
		pk, err := parsePubkey(strings.TrimSpace(a))
		if err != nil {
			return settings{}, fmt.Errorf("admin pubkeys: %w", err)
		}
		s.admins = append(s.admins, pk)
	}
	if s.statsInterval < 0 {
		return settings{}, fmt.Errorf("stats interval must not be negative, got %s", s.statsInterval)
	}
	if s.sweepInterval < 0 {
		return settings{}, fmt.Errorf("expiry sweep interval must not be negative, got %s", s.sweepInterval)
	}
	return s, nil
}

// parsePubkey accepts a hex pubkey or an npub.
func parsePubkey(s string) (string, error) {
	if strings.HasPrefix(s, "npub1") {
		prefix, v, err := nip19.Decode(s)
		if err != nil || prefix != "npub" {
			return "", fmt.Errorf("%q is not a valid npub", s)
		}
		return v.(string), nil
	}
	if len(s) != 64 || strings.Trim(s, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a 64-character hex pubkey or an npub", s)
	}
	return s, nil
}
