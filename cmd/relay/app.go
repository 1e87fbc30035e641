package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/daemon"
	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/storerules"
)

// relayLive are the flags a configuration reload (SIGHUP, NIP-86
// reloadconfig) applies to the running relay without a reconnect
// (node.applyRelayReload, relay.Live); every other flag needs a restart.
// docs/configuration.md marks each flag from this set.
var relayLive = daemon.NewLive(append([]string{"log-level",
	"max-filters", "max-limit", "default-limit", "require-topic-in-req",
	"event-rate-ip", "event-burst-ip", "event-rate-pubkey", "event-burst-pubkey", "req-rate-ip", "req-burst-ip",
	"max-subscriptions", "max-conns-per-ip", "query-timeout", "admin-pubkeys", "min-rank",
	"admit-min-rank", "group-admit-min-rank"}, storerules.Live...)...)

func newApp(stdout, stderr io.Writer) *cli.App {
	d := relay.DefaultConfig()
	l := d.Limits
	return daemon.App("relay", "serve the community node's Nostr relay", stdout, stderr,
		append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: node.DefaultRelayListen, EnvVars: []string{"CN_RELAY_LISTEN"}, Usage: "address to serve WebSocket, NIP-11, NIP-86 and /healthz on"},
			&cli.StringFlag{Name: "metrics-listen", Value: node.DefaultRelayMetricsListen, EnvVars: []string{"CN_RELAY_METRICS_LISTEN"}, Usage: "private address to serve /metrics on, never the public --listen (\"\": no metrics); each relay on a host needs its own, as it needs its own --listen"},
			&cli.StringSliceFlag{Name: "public-url", EnvVars: []string{"CN_RELAY_PUBLIC_URL"}, Usage: "the relay's URL as clients see it (wss://host/path; repeat the flag or separate with commas for a relay reached under several names): NIP-42 AUTH events and NIP-98 headers must name one, never the Host header a client sends (default: none, then --listen must be a loopback address, which is the relay's only URL; any other address is refused at start)"},
			&cli.StringFlag{Name: "real-ip-header", EnvVars: []string{"CN_RELAY_REAL_IP_HEADER"}, Usage: "header with the client address set by a trusted reverse proxy (X-Real-IP, or X-Forwarded-For: its last entry); a value that is not an IP address is ignored (the TCP peer counts) and counted in cn_relay_bad_real_ip_total"},

			&cli.IntFlag{Name: "batch-max-events", Value: d.BatchMaxEvents, EnvVars: []string{"CN_RELAY_BATCH_MAX_EVENTS"}, Usage: "events per group commit, at most"},
			&cli.DurationFlag{Name: "batch-max-delay", Value: d.BatchMaxDelay, EnvVars: []string{"CN_RELAY_BATCH_MAX_DELAY"}, Usage: "longest wait of an event for its group commit"},
			&cli.IntFlag{Name: "ingest-concurrency", Value: d.IngestConcurrency, EnvVars: []string{"CN_RELAY_INGEST_CONCURRENCY"}, Usage: "group commits running at once (1 makes batches as large as the load; raise it for a distant database or one with many cores)"},
			&cli.IntFlag{Name: "send-queue", Value: d.SendQueueSize, EnvVars: []string{"CN_RELAY_SEND_QUEUE"}, Usage: "outgoing messages queued per connection before the client counts as too slow"},
			&cli.IntFlag{Name: "send-queue-bytes", Value: d.SendQueueBytes, EnvVars: []string{"CN_RELAY_SEND_QUEUE_BYTES"}, Usage: "memory budget per connection: bytes queued or held for it (send queue, live events held while its REQs run, stored events its queries read) before the client counts as too slow; a REQ's answer stops at 3/4 of it (at least --max-message-bytes)"},
			&cli.IntFlag{Name: "gc-percent", Value: relay.DefaultGCPercent, EnvVars: []string{"CN_RELAY_GC_PERCENT"}, Usage: "the garbage collector's target (GOGC): a collection runs when the heap has grown by this percentage of the live heap and stacks; 50 keeps ~1-1.5 KiB less RSS per held connection than Go's default 100 for ~15% more CPU while connections open (docs/benchmarks.md); GOGC in the environment applies when this flag is not set"},
			&cli.IntFlag{Name: "total-queue-bytes", Value: d.TotalQueueBytes, EnvVars: []string{"CN_RELAY_TOTAL_QUEUE_BYTES"}, Usage: "memory budget of all connections together; when full, the connection holding the most is disconnected (at least --send-queue-bytes)"},
			&cli.IntFlag{Name: "max-subscriptions", Value: d.MaxSubscriptions, EnvVars: []string{"CN_RELAY_MAX_SUBSCRIPTIONS"}, Usage: "open subscriptions per connection"},
			&cli.IntFlag{Name: "max-conns-per-ip", Value: d.MaxConnsPerIP, EnvVars: []string{"CN_RELAY_MAX_CONNS_PER_IP"}, Usage: "simultaneous connections per client address (an IPv6 /64 counts as one address, here and in the per-address rates)"},
			&cli.BoolFlag{Name: "ws-deflate", Value: d.Deflate, EnvVars: []string{"CN_RELAY_WS_DEFLATE"}, Usage: "offer WebSocket permessage-deflate (RFC 7692) without context takeover: messages of 256 bytes or more are compressed; nothing is kept per idle connection, a compressor (about 1.2 MB) is pooled per message being written"},
			&cli.Float64Flag{Name: "event-rate-ip", Value: d.EventRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_EVENT_RATE_IP"}, Usage: "EVENT and AUTH messages per second per client address (0: no limit)"},
			&cli.IntFlag{Name: "event-burst-ip", Value: d.EventRatePerIP.Burst, EnvVars: []string{"CN_RELAY_EVENT_BURST_IP"}, Usage: "burst for --event-rate-ip"},
			&cli.Float64Flag{Name: "event-rate-pubkey", Value: d.EventRatePerPubkey.PerSecond, EnvVars: []string{"CN_RELAY_EVENT_RATE_PUBKEY"}, Usage: "EVENT messages per second per author (0: no limit)"},
			&cli.IntFlag{Name: "event-burst-pubkey", Value: d.EventRatePerPubkey.Burst, EnvVars: []string{"CN_RELAY_EVENT_BURST_PUBKEY"}, Usage: "burst for --event-rate-pubkey"},
			&cli.Float64Flag{Name: "req-rate-ip", Value: d.ReqRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_REQ_RATE_IP"}, Usage: "REQ and COUNT messages per second per client address (0: no limit)"},
			&cli.IntFlag{Name: "req-burst-ip", Value: d.ReqRatePerIP.Burst, EnvVars: []string{"CN_RELAY_REQ_BURST_IP"}, Usage: "burst for --req-rate-ip"},
			&cli.DurationFlag{Name: "query-timeout", Value: d.QueryTimeout, EnvVars: []string{"CN_RELAY_QUERY_TIMEOUT"}, Usage: "longest REQ or COUNT query"},
			&cli.BoolFlag{Name: "negentropy", Value: d.Negentropy, EnvVars: []string{"CN_RELAY_NEGENTROPY"}, Usage: "serve NIP-77 negentropy sync (NEG-OPEN, NEG-MSG, NEG-CLOSE); --negentropy=false turns it off"},
			&cli.BoolFlag{Name: "neg-tree", Value: d.NegTree, EnvVars: []string{"CN_RELAY_NEG_TREE"}, Usage: "keep a fingerprint tree of the events anyone may read (96+ bytes of memory per event), so that NIP-77 sessions of {} or a time window by unauthenticated readers read no items; --neg-tree=false: every session reads its items from the database"},
			&cli.IntFlag{Name: "max-sync-events", Value: d.MaxSyncEvents, EnvVars: []string{"CN_RELAY_MAX_SYNC_EVENTS"}, Usage: "most events one NIP-77 session covers, and a connection's sessions together (a session that reads its items: 160 bytes of memory budget each while it lasts); over it NEG-OPEN gets NEG-ERR blocked"},
			&cli.IntFlag{Name: "neg-concurrency", Value: d.NegConcurrency, DefaultText: "half the CPUs, at least 1", EnvVars: []string{"CN_RELAY_NEG_CONCURRENCY"}, Usage: "NIP-77 rounds computed at once by the whole relay; the others wait"},
			&cli.IntFlag{Name: "max-sync-loads", Value: d.MaxSyncLoads, EnvVars: []string{"CN_RELAY_MAX_SYNC_LOADS"}, Usage: "NIP-77 sessions the whole relay reads items for at once (the database work of a NEG-OPEN); the others wait their turn, a FIFO per connection served round-robin, holding no items"},
			&cli.IntFlag{Name: "max-queued-syncs-per-conn", Value: d.MaxQueuedSyncsPerConn, EnvVars: []string{"CN_RELAY_MAX_QUEUED_SYNCS_PER_CONN"}, Usage: "NIP-77 sessions of one connection that may wait for --max-sync-loads; a NEG-OPEN beyond gets NEG-ERR rate-limited (apps open about a dozen at once; sessions also count against --max-subscriptions)"},
			&cli.IntFlag{Name: "max-queued-syncs", Value: d.MaxQueuedSyncs, EnvVars: []string{"CN_RELAY_MAX_QUEUED_SYNCS"}, Usage: "NIP-77 sessions of the whole relay that may wait for --max-sync-loads (about 1 KiB plus the initial message each, from --total-queue-bytes); a NEG-OPEN beyond gets NEG-ERR rate-limited"},
			&cli.IntFlag{Name: "neg-frame-limit", Value: d.NegFrameLimit, EnvVars: []string{"CN_RELAY_NEG_FRAME_LIMIT"}, Usage: "largest NIP-77 answer in bytes before hex encoding (at least 4096)"},
			&cli.DurationFlag{Name: "neg-idle-timeout", Value: d.NegIdleTimeout, EnvVars: []string{"CN_RELAY_NEG_IDLE_TIMEOUT"}, Usage: "a NIP-77 session without NEG-MSG for this long after its last answer is closed (NEG-ERR closed:); a session waiting for its turn to read its items (--max-sync-loads) is not idle"},
			&cli.IntFlag{Name: "cache-bytes", Value: d.CacheBytes, EnvVars: []string{"CN_RELAY_CACHE_BYTES"}, Usage: "memory for the event cache: the newest visible public events, kept by the outbox follower, answer the REQs they provably hold without the database (0: off)"},
			&cli.DurationFlag{Name: "shutdown-timeout", Value: d.ShutdownTimeout, EnvVars: []string{"CN_RELAY_SHUTDOWN_TIMEOUT"}, Usage: "longest graceful shutdown (SIGTERM, SIGINT): connections still open then are cut"},
			&cli.DurationFlag{Name: "drain-spread", Value: defaultDrainSpread, EnvVars: []string{"CN_RELAY_DRAIN_SPREAD"}, Usage: "on SIGTERM or SIGINT, after it stops accepting and answers every EVENT it read, the relay closes its connections with 1012 (service restart) one by one over this time, in random order, so that their clients do not reconnect at once (0: all at once, with 1001 going away); shorter than --shutdown-timeout"},

			&cli.BoolFlag{Name: "auth", Value: d.Auth.Enabled, EnvVars: []string{"CN_RELAY_AUTH"}, Usage: "offer NIP-42 authentication (needed to read direct messages, kinds 4 and 1059, and for protected NIP-70 events); --auth=false turns it off"},
			&cli.BoolFlag{Name: "auth-challenge-on-connect", Value: d.Auth.ChallengeOnConnect, EnvVars: []string{"CN_RELAY_AUTH_CHALLENGE_ON_CONNECT"}, Usage: "send the NIP-42 challenge as soon as a client connects, so that apps sign in before their first direct-message REQ; costs one message (45 bytes) per connection. --auth-challenge-on-connect=false sends it lazily, with the first auth-required answer; --auth-required-for-* send it on connect anyway. Either way every auth-required answer to a connection not signed in comes after the challenge again (at most 8 per connection)"},
			&cli.DurationFlag{Name: "auth-grace", Value: d.Auth.Grace, EnvVars: []string{"CN_RELAY_AUTH_GRACE"}, Usage: "how long after connecting a REQ that needs authentication (direct messages, a private group) is held, instead of answered auth-required, until the connection's first AUTH: an app that asks at the instant it connects is then answered in full (0: never held; at most 1m)"},
			&cli.BoolFlag{Name: "auth-required-for-writes", EnvVars: []string{"CN_RELAY_AUTH_REQUIRED_FOR_WRITES"}, Usage: "accept EVENTs from authenticated clients only (needs --auth)"},
			&cli.BoolFlag{Name: "auth-required-for-reads", EnvVars: []string{"CN_RELAY_AUTH_REQUIRED_FOR_READS"}, Usage: "serve REQ and COUNT to authenticated clients only (needs --auth)"},

			&cli.IntFlag{Name: "max-filters", Value: l.MaxFilters, EnvVars: []string{"CN_RELAY_MAX_FILTERS"}, Usage: "most filters per REQ or COUNT"},
			&cli.IntFlag{Name: "max-limit", Value: l.MaxLimit, EnvVars: []string{"CN_RELAY_MAX_LIMIT"}, Usage: "cap of a filter's limit"},
			&cli.IntFlag{Name: "default-limit", Value: l.DefaultLimit, EnvVars: []string{"CN_RELAY_DEFAULT_LIMIT"}, Usage: "limit of a filter without one"},
			&cli.BoolFlag{Name: "search", Value: l.Search, EnvVars: []string{"CN_RELAY_SEARCH"}, Usage: "answer NIP-50 search filters from the indexer's index (cn_index)"},
			&cli.BoolFlag{Name: "require-topic-in-req", Value: l.RequireTopicInREQ, EnvVars: []string{"CN_RELAY_REQUIRE_TOPIC_IN_REQ"}, Usage: "refuse REQ and COUNT filters without #t (filters for identity kinds only are exempt)"},

			&cli.StringFlag{Name: "name", EnvVars: []string{"CN_RELAY_NAME"}, Usage: "NIP-11 name"},
			&cli.StringFlag{Name: "description", EnvVars: []string{"CN_RELAY_DESCRIPTION"}, Usage: "NIP-11 description"},
			&cli.StringFlag{Name: "pubkey", EnvVars: []string{"CN_RELAY_PUBKEY"}, Usage: "NIP-11 operator pubkey (hex); default: the node key (self), which NIP-29 apps on nostr-tools look groups up by"},
			&cli.StringFlag{Name: "contact", EnvVars: []string{"CN_RELAY_CONTACT"}, Usage: "NIP-11 contact URI"},
			&cli.StringFlag{Name: "icon", EnvVars: []string{"CN_RELAY_ICON"}, Usage: "NIP-11 icon URL"},
			&cli.StringFlag{Name: "banner", EnvVars: []string{"CN_RELAY_BANNER"}, Usage: "NIP-11 banner URL"},
			&cli.StringFlag{Name: "posting-policy", EnvVars: []string{"CN_RELAY_POSTING_POLICY"}, Usage: "NIP-11 posting_policy URL"},
			&cli.StringFlag{Name: "info-file", EnvVars: []string{"CN_RELAY_INFO_FILE"}, Usage: "JSON file with NIP-11 fields (name, description, icon, banner, pubkey, contact, posting_policy, terms_of_service, privacy_policy, relay_countries, language_tags, tags, retention); flags override it"},
			&cli.StringFlag{Name: "node-key-file", EnvVars: []string{"CN_NODE_KEY_FILE"}, Usage: "the node's key (cnctl node-key generate): NIP-11 `self` names its pubkey; with --groups the relay signs NIP-29 group state with it"},
			&cli.BoolFlag{Name: "groups", Value: true, EnvVars: []string{"CN_RELAY_GROUPS"}, Usage: "host NIP-29 relay-based groups when --node-key-file is given (the relay then holds the node key); --groups=false refuses group events"},
			&cli.StringFlag{Name: "group-creators", Value: string(groups.CreatorsMembers), EnvVars: []string{"CN_RELAY_GROUP_CREATORS"}, Usage: "who may create a NIP-29 group (kind 9007): members (of the community: authors who have posted in a topic here, or were admitted), admins (--admin-pubkeys) or any"},
			&cli.DurationFlag{Name: "group-late-window", Value: groups.DefaultLateWindow, EnvVars: []string{"CN_RELAY_GROUP_LATE_WINDOW"}, Usage: "a NIP-29 group event whose created_at is further than this in the past is refused (late publication); 0 disables; moved groups are imported with cnctl import --group-history"},
			&cli.IntFlag{Name: "group-min-previous", Value: 0, EnvVars: []string{"CN_RELAY_GROUP_MIN_PREVIOUS"}, Usage: "NIP-29 timeline references a group event needs at least (previous tags; 9007, 9021, 9022 exempt); references given are always checked"},
			&cli.DurationFlag{Name: "group-invite-ttl", Value: groups.DefaultInviteTTL, EnvVars: []string{"CN_RELAY_GROUP_INVITE_TTL"}, Usage: "how long a NIP-29 invite code (kind 9009) opens a closed group after its created_at; codes are not used up"},
			&cli.IntFlag{Name: "group-max-created-per-day", Value: groups.DefaultCreatedPerDay, EnvVars: []string{"CN_RELAY_GROUP_MAX_CREATED_PER_DAY"}, Usage: "NIP-29 groups one key may create (kind 9007) in 24 hours; more are refused restricted: (the relay's admins and the node are not bound)"},
			&cli.IntFlag{Name: "group-max-created", Value: groups.DefaultCreatedInAll, EnvVars: []string{"CN_RELAY_GROUP_MAX_CREATED"}, Usage: "NIP-29 groups one key may create in all, deleted ones included (their ids stay reserved); more are refused restricted: (the relay's admins and the node are not bound)"},
			&cli.IntFlag{Name: "group-max-members", Value: groups.DefaultMembers, EnvVars: []string{"CN_RELAY_GROUP_MAX_MEMBERS"}, Usage: "members of one NIP-29 group: a kind 9000 that would take a group past it, or a join request (9021) that would be honoured at once, is refused restricted:"},
			&cli.IntFlag{Name: "group-max-depth", Value: groups.DefaultDepth, EnvVars: []string{"CN_RELAY_GROUP_MAX_DEPTH"}, Usage: "how many levels below its root group a NIP-29 subgroup may sit: a kind 9002 whose parent would put the group or one of its subgroups deeper is refused restricted:"},
			&cli.IntFlag{Name: "group-max-invite-codes", Value: groups.DefaultCodesPerInvite, EnvVars: []string{"CN_RELAY_GROUP_MAX_INVITE_CODES"}, Usage: "invite codes one NIP-29 create-invite (kind 9009) may carry; more are refused restricted:"},
			&cli.IntFlag{Name: "group-max-open-codes", Value: groups.DefaultOpenCodes, EnvVars: []string{"CN_RELAY_GROUP_MAX_OPEN_CODES"}, Usage: "valid (unexpired) invite codes one NIP-29 group may hold: a kind 9009 that would take it past this is refused restricted:"},
			&cli.DurationFlag{Name: "group-member-list-every", Value: groups.DefaultListEvery, EnvVars: []string{"CN_RELAY_GROUP_MEMBER_LIST_EVERY"}, Usage: "a NIP-29 group above --group-member-list-above members gets at most one new member list (kind 39002, which lists every member) per this; changes in between take effect at once and are in the next list; 0 signs a list per change"},
			&cli.IntFlag{Name: "group-member-list-above", Value: groups.DefaultListAbove, EnvVars: []string{"CN_RELAY_GROUP_MEMBER_LIST_ABOVE"}, Usage: "member count above which a NIP-29 group's member lists are spaced by --group-member-list-every"},
			&cli.StringFlag{Name: "membership", Value: string(membership.Open), EnvVars: []string{"CN_RELAY_MEMBERSHIP"}, Usage: "NIP-43 relay membership (needs --node-key-file): open (anyone writes; a key becomes a member by its first post) or invite (only members write; see docs/membership.md)"},
			&cli.IntFlag{Name: "admit-min-rank", EnvVars: []string{"CN_RELAY_ADMIT_MIN_RANK"}, Usage: "admit a NIP-43 join request without an invite code at once when its key's trust-v1 rank is at least this, 1-100 (default 0: every such request waits for an admin)"},
			&cli.DurationFlag{Name: "invite-ttl", Value: membership.DefaultInviteTTL, EnvVars: []string{"CN_RELAY_INVITE_TTL"}, Usage: "how long a NIP-43 invite code (claim) made for a member's kind 28935 REQ stays valid; codes are single-use"},
			&cli.IntFlag{Name: "max-claims-per-member", Value: membership.DefaultClaimsPerMember, EnvVars: []string{"CN_RELAY_MAX_CLAIMS_PER_MEMBER"}, Usage: "open (unused, unexpired) NIP-43 invite codes one member's kind 28935 REQs may hold; a REQ past it is CLOSED restricted:"},
			&cli.IntFlag{Name: "max-open-claims", Value: membership.DefaultOpenClaims, EnvVars: []string{"CN_RELAY_MAX_OPEN_CLAIMS"}, Usage: "open NIP-43 invite codes of the whole relay (admins' mintinvite counted) past which members' kind 28935 REQs are CLOSED restricted:"},
			&cli.IntFlag{Name: "group-admit-min-rank", EnvVars: []string{"CN_RELAY_GROUP_ADMIT_MIN_RANK"}, Usage: "honour a NIP-29 join request (kind 9021) to an open group at once only from keys whose trust-v1 rank is at least this, 0-100 (seeds, admins and the node too); others wait for the group's admins (default 0: off; closed groups need an invite code either way)"},
			&cli.IntFlag{Name: "min-rank", EnvVars: []string{"CN_RELAY_MIN_RANK"}, Usage: "refuse posts from authors whose trust-v1 rank (cmd/trust) is below this, 0-100 (profiles, lists, deletions, seeds, admins and the node exempt; default 0: off)"},
			&cli.StringSliceFlag{Name: "admin-pubkeys", EnvVars: []string{"CN_RELAY_ADMIN_PUBKEYS"}, Usage: "pubkeys (hex or npub, comma separated) that may manage the relay through NIP-86 (default: none, NIP-86 answers 401)"},

			&cli.StringFlag{Name: "blossom-dir", EnvVars: []string{"CN_RELAY_BLOSSOM_DIR"}, Usage: "serve Blossom media (BUD-01/02/06; docs/media.md) with the blob files in this directory (created if missing; keep it on the same backups as the database); default: no Blossom"},
			&cli.StringFlag{Name: "blossom-listen", EnvVars: []string{"CN_RELAY_BLOSSOM_LISTEN"}, Usage: "serve Blossom on this address of its own (default: on the relay's address, beside WebSocket and NIP-11)"},
			&cli.StringFlag{Name: "blossom-url", EnvVars: []string{"CN_RELAY_BLOSSOM_URL"}, Usage: "Blossom's base URL as clients see it (https://host), for blob descriptors and NIP-11 (default: each request's host; NIP-11 says the relay's URL over http(s))"},
			&cli.Int64Flag{Name: "blossom-max-blob-bytes", Value: node.DefaultBlossomMaxBlobBytes, EnvVars: []string{"CN_RELAY_BLOSSOM_MAX_BLOB_BYTES"}, Usage: "largest Blossom blob; a larger upload is refused 413, as soon as it passes this while streaming"},
			&cli.Int64Flag{Name: "blossom-quota-bytes", Value: node.DefaultBlossomQuotaBytes, EnvVars: []string{"CN_RELAY_BLOSSOM_QUOTA_BYTES"}, Usage: "bytes of Blossom blobs one key may hold (a blob several keys uploaded counts for each); an upload past it is cut off with 413 (-1: no quota)"},
			&cli.IntFlag{Name: "blossom-quota-blobs", Value: node.DefaultBlossomQuotaBlobs, EnvVars: []string{"CN_RELAY_BLOSSOM_QUOTA_BLOBS"}, Usage: "Blossom blobs one key may hold; one more is refused 413 (-1: no quota)"},
			&cli.StringSliceFlag{Name: "blossom-types", EnvVars: []string{"CN_RELAY_BLOSSOM_TYPES"}, Usage: "media types Blossom accepts (comma separated; image/* for a whole top-level type), judged by the upload's Content-Type or, without one, by its first bytes; others are refused 415 (default: any)"},
			&cli.DurationFlag{Name: "blossom-upload-timeout", Value: node.DefaultBlossomUploadTimeout, EnvVars: []string{"CN_RELAY_BLOSSOM_UPLOAD_TIMEOUT"}, Usage: "longest a Blossom upload's body may take to arrive; a slower one is cut off with 408"},
			&cli.Float64Flag{Name: "blossom-upload-rate-ip", Value: node.DefaultBlossomUploadRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_BLOSSOM_UPLOAD_RATE_IP"}, Usage: "Blossom uploads (PUT /upload, /mirror) per second per client address, beyond --blossom-upload-burst-ip; past it 429 with Retry-After (0: no limit)"},
			&cli.IntFlag{Name: "blossom-upload-burst-ip", Value: node.DefaultBlossomUploadRatePerIP.Burst, EnvVars: []string{"CN_RELAY_BLOSSOM_UPLOAD_BURST_IP"}, Usage: "burst for --blossom-upload-rate-ip"},
			&cli.Float64Flag{Name: "blossom-request-rate-ip", Value: node.DefaultBlossomRequestRatePerIP.PerSecond, EnvVars: []string{"CN_RELAY_BLOSSOM_REQUEST_RATE_IP"}, Usage: "Blossom requests of any kind per second per client address, beyond --blossom-request-burst-ip; past it 429 with Retry-After (0: no limit)"},
			&cli.IntFlag{Name: "blossom-request-burst-ip", Value: node.DefaultBlossomRequestRatePerIP.Burst, EnvVars: []string{"CN_RELAY_BLOSSOM_REQUEST_BURST_IP"}, Usage: "burst for --blossom-request-rate-ip"},
			&cli.BoolFlag{Name: "blossom-mirror-private", EnvVars: []string{"CN_RELAY_BLOSSOM_MIRROR_PRIVATE"}, Usage: "let Blossom's PUT /mirror (BUD-04) fetch from loopback, private and link-local addresses (default: refused 403, so that members cannot make the node reach its own network)"},

			&cli.StringSliceFlag{Name: "read-database-url", EnvVars: []string{"CN_RELAY_READ_DATABASE_URL"}, Usage: "a streaming replica of --database-url that serves REQ, COUNT and NIP-50 search (repeat the flag or separate with commas; default: none, the primary serves); see docs/operations.md, \"Read replicas\""},
			&cli.DurationFlag{Name: "max-replica-lag", Value: node.DefaultMaxReplicaLag, EnvVars: []string{"CN_RELAY_MAX_REPLICA_LAG"}, Usage: "a replica further behind the primary than this (the age of the oldest outbox row it has not replayed) is skipped until it catches up"},
			&cli.DurationFlag{Name: "stats-interval", Value: node.DefaultStatsInterval, EnvVars: []string{"CN_RELAY_STATS_INTERVAL"}, Usage: "how often the query tables' statistics are checked and, when missing or stale (autovacuum off or behind), refreshed with ANALYZE (0: never)"},
			&cli.BoolFlag{Name: "always-read-head", EnvVars: []string{"CN_RELAY_ALWAYS_READ_HEAD"}, Usage: "read the outbox head (one database round trip) before every REQ answered from the event cache, even while this relay is the only one acknowledging writes (the writer lease, schema 0037); set it on new relays while relays of a build without the writer lease still run (see docs/decisions/0007-sole-writer.md)"},
			&cli.DurationFlag{Name: "expiry-sweep-interval", Value: node.DefaultSweepInterval, EnvVars: []string{"CN_RELAY_EXPIRY_SWEEP_INTERVAL"}, Usage: "how often expired (NIP-40) events are swept (0: never)"},
		}, storerules.Flags()...), // what is stored: the same flags on cnctl import, sync and dev
		func(c *cli.Context, logger *slog.Logger) error {
			o, err := relayOptions(c)
			if err != nil {
				return err
			}
			if c.IsSet("gc-percent") || os.Getenv("GOGC") == "" {
				debug.SetGCPercent(c.Int("gc-percent"))
			}
			o.Logger = logger
			o.Reload = daemon.NewSource(c, relayLive, relayOptions)
			return listenHint(node.Relay(c.Context, o))
		})
}

// listenHint adds to an address the relay could not listen on (a second relay
// on the host takes the first one's defaults) the flag and variable that set it.
func listenHint(err error) error {
	var le *relay.ListenError
	switch {
	case !errors.As(err, &le):
		return err
	case le.Metrics:
		return fmt.Errorf("%w (set --metrics-listen / CN_RELAY_METRICS_LISTEN)", err)
	default:
		return fmt.Errorf("%w (set --listen / CN_RELAY_LISTEN)", err)
	}
}

// defaultDrainSpread is --drain-spread: 10,000 connections reconnect at about
// 2,000 a second, half of --shutdown-timeout's default.
const defaultDrainSpread = 5 * time.Second

// relayOptions maps the flags onto the relay process's options and validates
// them.
func relayOptions(c *cli.Context) (node.RelayOptions, error) {
	cfg := relay.DefaultConfig()
	cfg.Listen = c.String("listen")
	cfg.MetricsListen = c.String("metrics-listen")
	cfg.PublicURLs = c.StringSlice("public-url")
	cfg.RealIPHeader = c.String("real-ip-header")
	cfg.BatchMaxEvents = c.Int("batch-max-events")
	cfg.BatchMaxDelay = c.Duration("batch-max-delay")
	cfg.IngestConcurrency = c.Int("ingest-concurrency")
	cfg.SendQueueSize = c.Int("send-queue")
	cfg.SendQueueBytes = c.Int("send-queue-bytes")
	cfg.TotalQueueBytes = c.Int("total-queue-bytes")
	cfg.MaxSubscriptions = c.Int("max-subscriptions")
	cfg.MaxConnsPerIP = c.Int("max-conns-per-ip")
	cfg.Deflate = c.Bool("ws-deflate")
	cfg.EventRatePerIP = relay.Rate{PerSecond: c.Float64("event-rate-ip"), Burst: c.Int("event-burst-ip")}
	cfg.EventRatePerPubkey = relay.Rate{PerSecond: c.Float64("event-rate-pubkey"), Burst: c.Int("event-burst-pubkey")}
	cfg.ReqRatePerIP = relay.Rate{PerSecond: c.Float64("req-rate-ip"), Burst: c.Int("req-burst-ip")}
	cfg.QueryTimeout = c.Duration("query-timeout")
	cfg.ShutdownTimeout = c.Duration("shutdown-timeout")
	cfg.DrainSpread = c.Duration("drain-spread")
	cfg.ReusePort = c.Bool("reuse-port")
	cfg.Negentropy = c.Bool("negentropy")
	cfg.NegTree = c.Bool("neg-tree")
	cfg.MaxSyncEvents = c.Int("max-sync-events")
	cfg.NegConcurrency = c.Int("neg-concurrency")
	cfg.NegFrameLimit = c.Int("neg-frame-limit")
	cfg.MaxSyncLoads = c.Int("max-sync-loads")
	cfg.MaxQueuedSyncsPerConn = c.Int("max-queued-syncs-per-conn")
	cfg.MaxQueuedSyncs = c.Int("max-queued-syncs")
	cfg.NegIdleTimeout = c.Duration("neg-idle-timeout")
	cfg.CacheBytes = c.Int("cache-bytes")
	cfg.Auth = relay.AuthConfig{
		Enabled:            c.Bool("auth"),
		ChallengeOnConnect: c.Bool("auth-challenge-on-connect"),
		RequiredForWrites:  c.Bool("auth-required-for-writes"),
		RequiredForReads:   c.Bool("auth-required-for-reads"),
		Grace:              c.Duration("auth-grace"),
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
	var nodeKey, memberKey nodekey.Key
	if f := c.String("node-key-file"); f != "" {
		k, err := nodekey.Load(f)
		if err != nil {
			return node.RelayOptions{}, err
		}
		cfg.Info.Self = k.PubKey
		memberKey = k
		if c.Bool("groups") {
			nodeKey = k
		}
	}
	cfg.Info.Version = version()
	rules, err := storerules.FromFlags(c)
	if err != nil {
		return node.RelayOptions{}, err
	}
	cfg.Limits = rules.Limits(cfg.Limits)
	cfg.Limits.MaxFilters = c.Int("max-filters")
	cfg.Limits.MaxLimit = c.Int("max-limit")
	cfg.Limits.DefaultLimit = c.Int("default-limit")
	cfg.Limits.RequireTopicInREQ = c.Bool("require-topic-in-req")
	cfg.Limits.Search = c.Bool("search")
	if err := cfg.Validate(); err != nil {
		return node.RelayOptions{}, err
	}
	s := node.RelayOptions{Relay: cfg, DatabaseURL: c.String("database-url"), SweepInterval: c.Duration("expiry-sweep-interval"),
		StatsInterval: c.Duration("stats-interval"), MinRank: c.Int("min-rank"),
		ReadDatabaseURLs: c.StringSlice("read-database-url"), MaxReplicaLag: c.Duration("max-replica-lag"),
		Pending: rules.Pending, AlwaysReadHead: c.Bool("always-read-head")}
	s.NodeKey, s.GroupInviteTTL = nodeKey, c.Duration("group-invite-ttl")
	if s.GroupCreators, err = groups.ParseCreators(c.String("group-creators")); err != nil {
		return node.RelayOptions{}, fmt.Errorf("--group-creators: %w", err)
	}
	s.GroupLateWindow, s.GroupMinPrevious = c.Duration("group-late-window"), c.Int("group-min-previous")
	if s.GroupLateWindow < 0 || s.GroupMinPrevious < 0 || s.GroupMinPrevious > 50 {
		return node.RelayOptions{}, fmt.Errorf("--group-late-window must not be negative and --group-min-previous must be 0 to 50 (NIP-29: references name the last 50 events seen), got %s and %d", s.GroupLateWindow, s.GroupMinPrevious)
	}
	if s.GroupInviteTTL <= 0 {
		return node.RelayOptions{}, fmt.Errorf("--group-invite-ttl must be positive, got %s", s.GroupInviteTTL)
	}
	s.GroupLimits = groups.Limits{CreatedPerDay: c.Int("group-max-created-per-day"), CreatedInAll: c.Int("group-max-created"),
		Members: c.Int("group-max-members"), Depth: c.Int("group-max-depth"),
		CodesPerInvite: c.Int("group-max-invite-codes"), OpenCodes: c.Int("group-max-open-codes")}
	s.ClaimsPerMember, s.OpenClaims = c.Int("max-claims-per-member"), c.Int("max-open-claims")
	s.GroupLists = groups.MemberLists{Every: c.Duration("group-member-list-every"), Above: c.Int("group-member-list-above")}
	if s.GroupLists.Every < 0 || s.GroupLists.Above < 0 {
		return node.RelayOptions{}, fmt.Errorf("--group-member-list-every and --group-member-list-above must not be negative, got %s and %d", s.GroupLists.Every, s.GroupLists.Above)
	}
	for _, name := range []string{"group-max-created-per-day", "group-max-created", "group-max-members", "group-max-depth",
		"group-max-invite-codes", "group-max-open-codes", "max-claims-per-member", "max-open-claims"} {
		if c.Int(name) < 1 {
			return node.RelayOptions{}, fmt.Errorf("--%s must be at least 1, got %d", name, c.Int(name))
		}
	}
	s.MembershipKey, s.AdmitMinRank, s.InviteTTL = memberKey, c.Int("admit-min-rank"), c.Duration("invite-ttl")
	if s.Membership, err = membership.ParseMode(c.String("membership")); err != nil {
		return node.RelayOptions{}, err
	}
	if s.Membership == membership.InviteOnly && memberKey.PubKey == "" {
		return node.RelayOptions{}, errors.New("--membership invite needs --node-key-file: the relay signs its member list (NIP-43) with the node key")
	}
	if s.AdmitMinRank < 0 || s.AdmitMinRank > 100 {
		return node.RelayOptions{}, fmt.Errorf("--admit-min-rank: want 0-100, got %d", s.AdmitMinRank)
	}
	if s.InviteTTL <= 0 || s.InviteTTL > membership.MaxInviteTTL {
		return node.RelayOptions{}, fmt.Errorf("--invite-ttl: want a positive duration of at most 720h, got %s", s.InviteTTL)
	}
	if s.GroupAdmitMinRank = c.Int("group-admit-min-rank"); s.GroupAdmitMinRank < 0 || s.GroupAdmitMinRank > 100 {
		return node.RelayOptions{}, fmt.Errorf("--group-admit-min-rank: want 0-100, got %d", s.GroupAdmitMinRank)
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
	if dir := c.String("blossom-dir"); dir != "" {
		s.Blossom = &node.BlossomOptions{Dir: dir, Listen: c.String("blossom-listen"), PublicURL: c.String("blossom-url"),
			MaxBlobBytes: c.Int64("blossom-max-blob-bytes"), QuotaBytes: c.Int64("blossom-quota-bytes"),
			QuotaBlobs: c.Int("blossom-quota-blobs"), UploadTimeout: c.Duration("blossom-upload-timeout"),
			MirrorPrivate: c.Bool("blossom-mirror-private")}
		for _, r := range []struct {
			name string
			into *ratelimit.Rate
		}{{"blossom-upload", &s.Blossom.UploadRatePerIP}, {"blossom-request", &s.Blossom.RequestRatePerIP}} {
			rate := ratelimit.Rate{PerSecond: c.Float64(r.name + "-rate-ip"), Burst: c.Int(r.name + "-burst-ip")}
			switch {
			case rate.PerSecond < 0 || (rate.PerSecond > 0 && rate.Burst < 1):
				return node.RelayOptions{}, fmt.Errorf("--%s-rate-ip must not be negative and --%s-burst-ip must be at least 1", r.name, r.name)
			case rate.PerSecond == 0:
				rate.PerSecond = -1 // no limit (a zero Rate is the default)
			}
			*r.into = rate
		}
		for _, t := range c.StringSlice("blossom-types") {
			t = strings.ToLower(strings.TrimSpace(t))
			if top, sub, ok := strings.Cut(t, "/"); !ok || top == "" || sub == "" || strings.ContainsAny(t, " ;,") {
				return node.RelayOptions{}, fmt.Errorf("--blossom-types: %q is not a media type (type/subtype or type/*)", t)
			}
			s.Blossom.Types = append(s.Blossom.Types, t)
		}
		if s.Blossom.MaxBlobBytes < 1 || s.Blossom.UploadTimeout <= 0 || s.Blossom.QuotaBytes == 0 || s.Blossom.QuotaBlobs == 0 {
			return node.RelayOptions{}, errors.New("--blossom-max-blob-bytes and --blossom-upload-timeout must be positive, --blossom-quota-bytes and --blossom-quota-blobs positive or -1")
		}
	} else if c.IsSet("blossom-listen") || c.IsSet("blossom-url") {
		return node.RelayOptions{}, errors.New("--blossom-listen and --blossom-url need --blossom-dir")
	}
	return s, nil
}
