package node

import (
	"time"

	"github.com/kukuri/communitynode/internal/bridge"
	"github.com/kukuri/communitynode/internal/bulk"
	"github.com/kukuri/communitynode/internal/indexer"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/trust"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// The node's defaults, each declared once: the daemons' flags (cmd/*), the dev
// node (cnctl dev) and docs/configuration.md take them from here. A default that a domain
// package's own code or benchmarks need is declared there and named here.

// Where each process listens (loopback: put a reverse proxy in front of the
// relay; keep the others private).
const (
	DefaultRelayListen        = "127.0.0.1:7777" // WebSocket, NIP-11, NIP-86, /healthz
	DefaultRelayMetricsListen = "127.0.0.1:7778" // the relay's /metrics, never on the public address
	DefaultIndexerListen      = "127.0.0.1:7780" // /v1/search, /healthz, /metrics
	DefaultModeratorListen    = "127.0.0.1:7781" // /healthz, /metrics
	DefaultTrustListen        = "127.0.0.1:7782" // /v1/trust/{pubkey}, /healthz, /metrics
	DefaultBridgeListen       = "127.0.0.1:7783" // /healthz, /metrics
	DefaultDashboardListen    = "127.0.0.1:7790" // the status page
	// DefaultDevNATSListen is where cnctl dev's embedded NATS server (JetStream)
	// listens: 4223, not NATS's own 4222, so that a nats-server already running
	// on the machine is left alone.
	DefaultDevNATSListen = "127.0.0.1:4223"
)

// The relay's maintenance.
const (
	// DefaultSweepInterval is how often a relay sweeps expired (NIP-40) events
	// and newcomers' pending identity events.
	DefaultSweepInterval = 30 * time.Second
	// DefaultStatsInterval is how often a relay checks its query tables'
	// statistics: a cheap read of pg_stat_all_tables, so that a young node gets
	// its first statistics within seconds (store.AnalyzeStale).
	DefaultStatsInterval = 2 * time.Second
	// DefaultImportStatsInterval is how often cnctl import checks the same
	// statistics between its batches (bulk.Importer.StatsEvery; a sync's
	// import does not): rarer than the relay, since each check during a
	// large import may analyse three tables, 0.2-0.6 s each at a million
	// events.
	DefaultImportStatsInterval = 30 * time.Second
)

// The relay's read replicas (--read-database-url, package replica).
const (
	// DefaultMaxReplicaLag is the most a replica may lag the primary (the
	// age of the oldest outbox row it has not replayed) and still serve
	// REQ, COUNT and search. A larger lag costs the primary a longer
	// handoff read per REQ (the outbox rows between the replica and the
	// primary, with their events).
	DefaultMaxReplicaLag = 5 * time.Second
	// DefaultReplicaCheckInterval is how often each replica's lag is measured.
	DefaultReplicaCheckInterval = time.Second
)

// The consumers' outbox rows per transaction (each measured in its package).
const (
	DefaultIndexerBatchSize   = indexer.DefaultBatchSize
	DefaultModeratorBatchSize = moderation.DefaultBatchSize
	DefaultTrustBatchSize     = trust.DefaultBatchSize
	DefaultBridgeBatchSize    = bridge.DefaultBatchSize
	// DefaultImportBatchSize is cnctl import's events per transaction.
	DefaultImportBatchSize = bulk.DefaultBatchSize
)

// The trust daemon's schedule.
const (
	// DefaultRecomputeInterval is the time between full trust computations.
	DefaultRecomputeInterval = 10 * time.Minute
	// DefaultPublishInterval is the time between publishing rounds of changed
	// NIP-85 assertions.
	DefaultPublishInterval = 2 * time.Second
	// DefaultAssertMinRank is the rank below which a subject gets no assertion.
	DefaultAssertMinRank = trust.DefaultAssertMinRank
)

// The moderator's classifier (used only with --classifier-url).
const (
	DefaultClassifierTimeout       = moderation.DefaultClassifierTimeout
	DefaultClassifierBatchDeadline = moderation.DefaultClassifierBatchDeadline
	DefaultClassifierConcurrency   = moderation.DefaultClassifierConcurrency
	DefaultClassifierMaxBytes      = moderation.DefaultClassifierMaxBytes
	// DefaultClassifierDailyBudget is the classifier requests per UTC day that
	// all moderators share (the library's zero means unlimited).
	DefaultClassifierDailyBudget = 10000
)

// DefaultRetention is how long outbox rows are kept before cnctl outbox prune
// may drop them (the seed's 30 days).
const DefaultRetention = outbox.DefaultRetention

// The bridge's stream (internal/bridge): one stream per node, one subject per
// topic under the prefix.
const (
	DefaultBridgeStream        = bridge.DefaultStream
	DefaultBridgeSubjectPrefix = bridge.DefaultSubjectPrefix
)
