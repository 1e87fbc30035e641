package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/store"
)

func newApp(stdout, stderr io.Writer) *cli.App {
	d := relay.DefaultConfig()
	l := d.Limits
	p := store.DefaultPendingLimits()
	return daemon.App("relay", "serve the community node's Nostr relay", stdout, stderr,
		[]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: node.DefaultRelayListen, EnvVars: []string{"CN_RELAY_LISTEN"}, Usage: "address to serve WebSocket, NIP-11, NIP-86 and /healthz on"},
			&cli.StringFlag{Name: "metrics-listen", Value: node.DefaultRelayMetricsListen, EnvVars: []string{"CN_RELAY_METRICS_LISTEN"}, Usage: "private address to serve /metrics on, never the public --listen (\"\": no metrics)"},
			&cli.StringFlag{Name: "public-url", EnvVars: []string{"CN_RELAY_PUBLIC_URL"}, Usage: "the relay's URL as clients see it (wss://...); AUTH events must name it (default: the Host header)"},
			&cli.StringFlag{Name: "real-ip-header", EnvVars: []string{"CN_RELAY_REAL_IP_HEADER"}, Usage: "header with the client address set by a trusted reverse proxy (X-Real-IP, or X-Forwarded-For: its last entry); a value that is not an IP address is ignored (the TCP peer counts) and counted in cn_relay_bad_real_ip_total"},

			&cli.IntFlag{Name: "batch-max-events", Value: d.BatchMaxEvents, EnvVars: []string{"CN_RELAY_BATCH_MAX_EVENTS"}, Usage: "events per group commit, at most"},
			&cli.DurationFlag{Name: "batch-max-delay", Value: d.BatchMaxDelay, EnvVars: []string{"CN_RELAY_BATCH_MAX_DELAY"}, Usage: "longest wait of an event for its group commit"},
			&cli.IntFlag{Name: "ingest-concurrency", Value: d.IngestConcurrency, EnvVars: []string{"CN_RELAY_INGEST_CONCURRENCY"}, Usage: "group commits running at once (1 makes batches as large as the load; raise it for a distant database or one with many cores)"},
			&cli.IntFlag{Name: "send-queue", Value: d.SendQueueSize, EnvVars: []string{"CN_RELAY_SEND_QUEUE"}, Usage: "outgoing messages queued per connection before the client counts as too slow"},
			&cli.IntFlag{Name: "send-queue-bytes", Value: d.SendQueueBytes, EnvVars: []string{"CN_RELAY_SEND_QUEUE_BYTES"}, Usage: "memory budget per connection: bytes queued or held for it (send queue, live events held while its REQs run, stored events its queries read) before the client counts as too slow; a REQ's answer stops at 3/4 of it (at least --max-message-bytes)"},
			&cli.IntFlag{Name: "total-queue-bytes", Value: d.TotalQueueBytes, EnvVars: []string{"CN_RELAY_TOTAL_QUEUE_BYTES"}, Usage: "memory budget of all connections together; when full, the connection holding the most is disconnected (at least --send-queue-bytes)"},
			&cli.IntFlag{Name: "max-subscriptions", Value: d.MaxSubscriptions, EnvVars: []string{"CN_RELAY_MAX_SUBSCRIPTIONS"}, Usage: "open subscriptions per connection"},
			&cli.IntFlag{Name: "max-conns-per-ip", Value: d.MaxConnsPerIP, EnvVars: []string{"CN_RELAY_MAX_CONNS_PER_IP"}, Usage: "simultaneous connections per client address (an IPv6 /64 counts as one address, here and in the per-address rates)"},
			&cli.Float64Flag{Name: "event-rate-ip", Value: d.EventRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_EVENT_RATE_IP"}, Usage: "EVENT and AUTH messages per second per client address (0: no limit)"},
			&cli.IntFlag{Name: "event-burst-ip", Value: d.EventRatePerIP.Burst, EnvVars: []string{"CN_RELAY_EVENT_BURST_IP"}, Usage: "burst for --event-rate-ip"},
			&cli.Float64Flag{Name: "event-rate-pubkey", Value: d.EventRatePerPubkey.PerSecond, EnvVars: []string{"CN_RELAY_EVENT_RATE_PUBKEY"}, Usage: "EVENT messages per second per author (0: no limit)"},
			&cli.IntFlag{Name: "event-burst-pubkey", Value: d.EventRatePerPubkey.Burst, EnvVars: []string{"CN_RELAY_EVENT_BURST_PUBKEY"}, Usage: "burst for --event-rate-pubkey"},
			&cli.Float64Flag{Name: "req-rate-ip", Value: d.ReqRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_REQ_RATE_IP"}, Usage: "REQ and COUNT messages per second per client address (0: no limit)"},
			&cli.IntFlag{Name: "req-burst-ip", Value: d.ReqRatePerIP.Burst, EnvVars: []string{"CN_RELAY_REQ_BURST_IP"}, Usage: "burst for --req-rate-ip"},
			&cli.DurationFlag{Name: "query-timeout", Value: d.QueryTimeout, EnvVars: []string{"CN_RELAY_QUERY_TIMEOUT"}, Usage: "longest REQ or COUNT query"},
			&cli.BoolFlag{Name: "negentropy", Value: d.Negentropy, EnvVars: []string{"CN_RELAY_NEGENTROPY"}, Usage: "serve NIP-77 negentropy sync (NEG-OPEN, NEG-MSG, NEG-CLOSE); --negentropy=false turns it off"},
			&cli.IntFlag{Name: "max-sync-events", Value: d.MaxSyncEvents, EnvVars: []string{"CN_RELAY_MAX_SYNC_EVENTS"}, Usage: "most events one NIP-77 session covers, and a connection's sessions together (160 bytes of memory budget each while they last, and CPU growing faster than linearly); over it NEG-OPEN gets NEG-ERR blocked"},
			&cli.IntFlag{Name: "neg-concurrency", Value: d.NegConcurrency, EnvVars: []string{"CN_RELAY_NEG_CONCURRENCY"}, Usage: "NIP-77 rounds computed at once by the whole relay; the others wait (default: half the CPUs, at least 1)"},
			&cli.IntFlag{Name: "max-sync-loads", Value: d.MaxSyncLoads, EnvVars: []string{"CN_RELAY_MAX_SYNC_LOADS"}, Usage: "NIP-77 sessions the whole relay reads items for at once; a NEG-OPEN beyond it gets NEG-ERR rate-limited"},
			&cli.IntFlag{Name: "neg-frame-limit", Value: d.NegFrameLimit, EnvVars: []string{"CN_RELAY_NEG_FRAME_LIMIT"}, Usage: "largest NIP-77 answer in bytes before hex encoding (at least 4096)"},
			&cli.DurationFlag{Name: "neg-idle-timeout", Value: d.NegIdleTimeout, EnvVars: []string{"CN_RELAY_NEG_IDLE_TIMEOUT"}, Usage: "a NIP-77 session without NEG-MSG for this long is closed (NEG-ERR closed:)"},
			&cli.IntFlag{Name: "cache-bytes", Value: d.CacheBytes, EnvVars: []string{"CN_RELAY_CACHE_BYTES"}, Usage: "memory for the event cache: the newest visible public events, kept by the outbox follower, answer the REQs they provably hold without the database (0: off)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: d.ShutdownTimeout, EnvVars: []string{"CN_RELAY_SHUTDOWN_TIMEOUT"}, Usage: "longest graceful shutdown"},

			&cli.BoolFlag{Name: "auth", Value: d.Auth.Enabled, EnvVars: []string{"CN_RELAY_AUTH"}, Usage: "offer NIP-42 authentication (needed to read direct messages, kinds 4 and 1059, and for protected NIP-70 events); --auth=false turns it off"},
			&cli.BoolFlag{Name: "auth-challenge-on-connect", Value: d.Auth.ChallengeOnConnect, EnvVars: []string{"CN_RELAY_AUTH_CHALLENGE_ON_CONNECT"}, Usage: "send the NIP-42 challenge as soon as a client connects, so that apps sign in before their first direct-message REQ; costs one message (45 bytes) per connection. --auth-challenge-on-connect=false sends it lazily, with the first auth-required answer only (an app's first inbox REQ is then refused); --auth-required-for-* send it on connect anyway"},
			&cli.BoolFlag{Name: "auth-required-for-writes", EnvVars: []string{"CN_RELAY_AUTH_REQUIRED_FOR_WRITES"}, Usage: "accept EVENTs from authenticated clients only (needs --auth)"},
			&cli.BoolFlag{Name: "auth-required-for-reads", EnvVars: []string{"CN_RELAY_AUTH_REQUIRED_FOR_READS"}, Usage: "serve REQ and COUNT to authenticated clients only (needs --auth)"},

			&cli.IntFlag{Name: "max-message-bytes", Value: l.MaxMessageBytes, EnvVars: []string{"CN_RELAY_MAX_MESSAGE_BYTES"}, Usage: "largest client message"},
			&cli.IntFlag{Name: "max-content-bytes", Value: l.MaxContentBytes, EnvVars: []string{"CN_RELAY_MAX_CONTENT_BYTES"}, Usage: "largest event content"},
			&cli.IntFlag{Name: "max-tags", Value: l.MaxTags, EnvVars: []string{"CN_RELAY_MAX_TAGS"}, Usage: "most tags per event"},
			&cli.DurationFlag{Name: "created-at-lower-limit", Value: l.MaxPastAge, EnvVars: []string{"CN_RELAY_CREATED_AT_LOWER_LIMIT"}, Usage: "refuse events whose created_at is further in the past than this (NIP-11 created_at_lower_limit; the default, 20 years, refuses 1970 and negative timestamps)"},
			&cli.IntFlag{Name: "max-topics-per-event", Value: l.MaxTopics, EnvVars: []string{"CN_RELAY_MAX_TOPICS_PER_EVENT"}, Usage: "most distinct topics (t tags) per event; each costs an outbox row every consumer processes (an event inheriting more keeps the first ones)"},
			&cli.IntFlag{Name: "max-filters", Value: l.MaxFilters, EnvVars: []string{"CN_RELAY_MAX_FILTERS"}, Usage: "most filters per REQ or COUNT"},
			&cli.IntFlag{Name: "max-limit", Value: l.MaxLimit, EnvVars: []string{"CN_RELAY_MAX_LIMIT"}, Usage: "cap of a filter's limit"},
			&cli.IntFlag{Name: "default-limit", Value: l.DefaultLimit, EnvVars: []string{"CN_RELAY_DEFAULT_LIMIT"}, Usage: "limit of a filter without one"},
			&cli.BoolFlag{Name: "require-topic", Value: l.RequireTopic, EnvVars: []string{"CN_RELAY_REQUIRE_TOPIC"}, Usage: "refuse events that have no topic: no t tag, nothing stored to inherit one from, and not an identity kind (0, 3, 10000-19999)"},
			&cli.StringFlag{Name: "identity-writers", Value: string(l.IdentityWriters), EnvVars: []string{"CN_RELAY_IDENTITY_WRITERS"}, Usage: "whose profiles and lists are published at once: members (authors who have posted in a topic here, or were admitted; a newcomer's wait, answered \"pending:\", until its first post) or any"},
			&cli.StringFlag{Name: "default-topic", EnvVars: []string{"CN_RELAY_DEFAULT_TOPIC"}, Usage: "single-community mode: events with no topic and nothing to inherit go to this topic instead of being refused (default: off)"},
			&cli.IntFlag{Name: "pending-per-key", Value: p.PerKey, EnvVars: []string{"CN_RELAY_PENDING_PER_KEY"}, Usage: "profiles and lists (effective keys) one newcomer may have waiting for its first post"},
			&cli.Int64Flag{Name: "pending-max", Value: p.Max, EnvVars: []string{"CN_RELAY_PENDING_MAX"}, Usage: "newcomers' profiles and lists that may wait in all (beyond: rate-limited)"},
			&cli.DurationFlag{Name: "pending-max-age", Value: p.MaxAge, EnvVars: []string{"CN_RELAY_PENDING_MAX_AGE"}, Usage: "how long a newcomer's profile or list waits for its first post before it is deleted"},
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

			&cli.StringSliceFlag{Name: "read-database-url", EnvVars: []string{"CN_RELAY_READ_DATABASE_URL"}, Usage: "a streaming replica of --database-url that serves REQ, COUNT and NIP-50 search (repeat the flag or separate with commas; default: none, the primary serves); see README \"Read replicas\""},
			&cli.DurationFlag{Name: "max-replica-lag", Value: node.DefaultMaxReplicaLag, EnvVars: []string{"CN_RELAY_MAX_REPLICA_LAG"}, Usage: "a replica further behind the primary than this (the age of the oldest outbox row it has not replayed) is skipped until it catches up"},
			&cli.DurationFlag{Name: "stats-interval", Value: node.DefaultStatsInterval, EnvVars: []string{"CN_RELAY_STATS_INTERVAL"}, Usage: "how often the query tables' statistics are checked and, when missing or stale (autovacuum off or behind), refreshed with ANALYZE (0: never)"},
			&cli.DurationFlag{Name: "expiry-sweep-interval", Value: node.DefaultSweepInterval, EnvVars: []string{"CN_RELAY_EXPIRY_SWEEP_INTERVAL"}, Usage: "how often expired (NIP-40) events are swept (0: never)"},
		},
		func(c *cli.Context, logger *slog.Logger) error {
			o, err := relayOptions(c)
			if err != nil {
				return err
			}
			o.Logger = logger
			return node.Relay(c.Context, o)
		})
}

// relayOptions maps the flags onto the relay process's options and validates
// them.
func relayOptions(c *cli.Context) (node.RelayOptions, error) {
	cfg := relay.DefaultConfig()
	cfg.Listen = c.String("listen")
	cfg.MetricsListen = c.String("metrics-listen")
	cfg.PublicURL = c.String("public-url")
	cfg.RealIPHeader = c.String("real-ip-header")
	cfg.BatchMaxEvents = c.Int("batch-max-events")
	cfg.BatchMaxDelay = c.Duration("batch-max-delay")
	cfg.IngestConcurrency = c.Int("ingest-concurrency")
	cfg.SendQueueSize = c.Int("send-queue")
	cfg.SendQueueBytes = c.Int("send-queue-bytes")
	cfg.TotalQueueBytes = c.Int("total-queue-bytes")
	cfg.MaxSubscriptions = c.Int("max-subscriptions")
	cfg.MaxConnsPerIP = c.Int("max-conns-per-ip")
	cfg.EventRatePerIP = relay.Rate{PerSecond: c.Float64("event-rate-ip"), Burst: c.Int("event-burst-ip")}
	cfg.EventRatePerPubkey = relay.Rate{PerSecond: c.Float64("event-rate-pubkey"), Burst: c.Int("event-burst-pubkey")}
	cfg.ReqRatePerIP = relay.Rate{PerSecond: c.Float64("req-rate-ip"), Burst: c.Int("req-burst-ip")}
	cfg.QueryTimeout = c.Duration("query-timeout")
	cfg.ShutdownTimeout = c.Duration("shutdown-timeout")
	cfg.Negentropy = c.Bool("negentropy")
	cfg.MaxSyncEvents = c.Int("max-sync-events")
	cfg.NegConcurrency = c.Int("neg-concurrency")
	cfg.NegFrameLimit = c.Int("neg-frame-limit")
	cfg.MaxSyncLoads = c.Int("max-sync-loads")
	cfg.NegIdleTimeout = c.Duration("neg-idle-timeout")
	cfg.CacheBytes = c.Int("cache-bytes")
	cfg.Auth = relay.AuthConfig{
		Enabled:            c.Bool("auth"),
		ChallengeOnConnect: c.Bool("auth-challenge-on-connect"),
		RequiredForWrites:  c.Bool("auth-required-for-writes"),
		RequiredForReads:   c.Bool("auth-required-for-reads"),
	}
	if f := c.String("info-file"); f != "" {
		data, err := os.ReadFile(f)
		if err != nil {
			return node.RelayOptions{}, fmt.Errorf("info file: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&cfg.Info); err != nil {
			return node.RelayOptions{}, fmt.Errorf("info file %s: %w", f, err)
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
			return node.RelayOptions{}, err
		}
		cfg.Info.Self = k.PubKey
	}
	cfg.Info.Version = version()
	cfg.Limits.MaxMessageBytes = c.Int("max-message-bytes")
	cfg.Limits.MaxContentBytes = c.Int("max-content-bytes")
	cfg.Limits.MaxTags = c.Int("max-tags")
	cfg.Limits.MaxPastAge = c.Duration("created-at-lower-limit")
	cfg.Limits.MaxTopics = c.Int("max-topics-per-event")
	cfg.Limits.MaxFilters = c.Int("max-filters")
	cfg.Limits.MaxLimit = c.Int("max-limit")
	cfg.Limits.DefaultLimit = c.Int("default-limit")
	cfg.Limits.RequireTopic = c.Bool("require-topic")
	cfg.Limits.RequireTopicInREQ = c.Bool("require-topic-in-req")
	writers, err := protocol.ParseIdentityWriters(c.String("identity-writers"))
	if err != nil {
		return node.RelayOptions{}, err
	}
	cfg.Limits.IdentityWriters = writers
	cfg.Limits.Search = c.Bool("search")
	if t := c.String("default-topic"); t != "" {
		cfg.Limits.DefaultTopic = protocol.NormalizeTopic(t)
		if cfg.Limits.DefaultTopic == "" {
			return node.RelayOptions{}, fmt.Errorf("--default-topic %q normalises to nothing", t)
		}
	}
	if topics := c.StringSlice("allowed-topics"); len(topics) > 0 {
		cfg.Limits.AllowedTopics = make(map[string]bool, len(topics))
		for _, t := range topics {
			if n := protocol.NormalizeTopic(t); n != "" {
				cfg.Limits.AllowedTopics[n] = true
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return node.RelayOptions{}, err
	}
	s := node.RelayOptions{Relay: cfg, DatabaseURL: c.String("database-url"), SweepInterval: c.Duration("expiry-sweep-interval"),
		StatsInterval: c.Duration("stats-interval"), MinRank: c.Int("min-rank"),
		ReadDatabaseURLs: c.StringSlice("read-database-url"), MaxReplicaLag: c.Duration("max-replica-lag"),
		Pending: store.PendingLimits{PerKey: c.Int("pending-per-key"), Max: c.Int64("pending-max"), MaxAge: c.Duration("pending-max-age")}}
	if err := s.Pending.Validate(); err != nil {
		return node.RelayOptions{}, err
	}
	if s.MinRank < 0 || s.MinRank > 100 {
		return node.RelayOptions{}, fmt.Errorf("--min-rank: want 0-100, got %d", s.MinRank)
	}
	for _, a := range c.StringSlice("admin-pubkeys") {
		pk, err := protocol.ParsePubkey(a)
		if err != nil {
			return node.RelayOptions{}, fmt.Errorf("admin pubkeys: %w", err)
		}
		s.AdminPubkeys = append(s.AdminPubkeys, pk)
	}
	if s.StatsInterval < 0 {
		return node.RelayOptions{}, fmt.Errorf("stats interval must not be negative, got %s", s.StatsInterval)
	}
	if s.MaxReplicaLag <= 0 {
		return node.RelayOptions{}, fmt.Errorf("--max-replica-lag must be positive, got %s", s.MaxReplicaLag)
	}
	if s.SweepInterval < 0 {
		return node.RelayOptions{}, fmt.Errorf("expiry sweep interval must not be negative, got %s", s.SweepInterval)
	}
	return s, nil
}
