package relay

import (
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
)

// metrics are the relay's instruments, registered on the injected Registerer.
type metrics struct {
	connections      prometheus.Gauge
	subscriptions    prometheus.Gauge
	messages         *prometheus.CounterVec // by client message type
	events           *prometheus.CounterVec // by result: accepted or the reason prefix
	batchSize        prometheus.Histogram
	ingestSeconds    prometheus.Histogram
	querySeconds     *prometheus.HistogramVec // by op: req, count
	slowDisconnects  prometheus.Counter
	liveDeliveries   prometheus.Counter
	liveWriteBlocked prometheus.Counter
	groupWithheld    prometheus.Counter // stored events the last check kept back (groupgate.go)
	groupGateBehind  prometheus.Counter
	negTreeSessions  prometheus.Counter     // NIP-77 sessions served from the tree
	negTreeMisses    prometheus.Counter     // sessions the tree covered but was not current for
	negQueued        prometheus.Gauge       // NIP-77 sessions waiting for a load (negentropy_queue.go)
	negQueueWait     prometheus.Histogram   // how long sessions waited for a load
	negQueueRefused  *prometheus.CounterVec // NEG-OPENs refused because the queue was full, by scope
	refusedConns     *prometheus.CounterVec // by reason
	authHeld         *prometheus.CounterVec // REQs held for a first AUTH, by outcome (signin.go)
	badRealIP        prometheus.Counter
	queryBudgetStops prometheus.Counter
	followerSeq      prometheus.Gauge
	followerFailures prometheus.Counter
	ingestWaiting    prometheus.Gauge
	handoffCaught    prometheus.Counter
	handoffDropped   prometheus.Counter
	handoffRefills   prometheus.Counter
	cacheLearns      *prometheus.CounterVec // database answers offered to the cache's author ranges, by result
	groupEvents      *prometheus.CounterVec // answers to NIP-29 group events, by kind class and result (groups.ResultLabel)
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_relay_connections",
			Help: "Open WebSocket connections.",
		}),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_relay_subscriptions",
			Help: "Open subscriptions over all connections.",
		}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_messages_total",
			Help: "Client messages received, by type (EVENT, REQ, CLOSE, COUNT, AUTH, invalid).",
		}, []string{"type"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_events_total",
			Help: "EVENT answers, by result: accepted, or the OK reason prefix (invalid, duplicate, rate-limited, ...).",
		}, []string{"result"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cn_relay_batch_size",
			Help:    "Events per Store.Ingest call (group commit).",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		}),
		ingestSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cn_relay_ingest_seconds",
			Help:    "Duration of Store.Ingest calls.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		cacheLearns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_cache_learns_total",
			Help: "Database answers to author filters offered to the event cache's author ranges, by result: taken, left (the cache could not prove them current, or did not need them), busy (the learner's queue was full).",
		}, []string{"result"}),
		groupEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_group_events_total",
			Help: "Answers to NIP-29 group events (an h tag, or kinds 9000-9022 and 39000-39005), by class (moderation: 9000-9020, join: 9021, leave: 9022, state: 39000-39005, message: any other kind with h) and result: accepted, pending (a join request kept for review), or the refusal (unknown_group, not_member, members_only, role, stale, ...; rate-limited and the other checks before the group's by their NIP-01 prefix).",
		}, []string{"class", "result"}),
		querySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "cn_relay_query_seconds",
			Help:    "Duration of the stored part of a REQ (op=req: Reader.Read, on the primary, a replica or the event cache) and of COUNT (op=count: Reader.Count).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"op"}),
		slowDisconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_slow_disconnects_total",
			Help: "Connections closed as too slow: their memory budget was full (send queue, held live events), a write timed out, or the relay's budget was full and they held the most.",
		}),
		liveDeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_live_deliveries_total",
			Help: "Events delivered to live subscriptions (one per subscription).",
		}),
		liveWriteBlocked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_live_write_blocked_total",
			Help: "Live deliveries whose socket did not take the frame whole at once: a writer goroutine finished the write (the client reads slower than the fan-out).",
		}),
		groupWithheld: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_group_withheld_total",
			Help: "Stored events of a private or hidden NIP-29 group kept back by the last check before the socket (a query filters them first: above 0 means a read path let one through, or a member's access changed while the answer was read).",
		}),
		groupGateBehind: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_group_gate_behind_total",
			Help: "REQ answers checked with a group rule older than the answer (the outbox follower was behind): it can only keep more back.",
		}),
		negTreeSessions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_neg_tree_sessions_total",
			Help: "NIP-77 sessions served from the fingerprint tree (no items read).",
		}),
		negTreeMisses: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_neg_tree_misses_total",
			Help: "NIP-77 sessions the fingerprint tree covers that read their items because the tree was not ready or behind the outbox head.",
		}),
		negQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_relay_neg_queued",
			Help: "NIP-77 sessions waiting for one of the relay's --max-sync-loads slots to read their items.",
		}),
		negQueueWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cn_relay_neg_queue_wait_seconds",
			Help:    "How long NIP-77 sessions that had to wait waited for a load slot.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
		negQueueRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_neg_queue_refused_total",
			Help: "NEG-OPENs answered rate-limited because the load queue was full, by scope (connection: --max-queued-syncs-per-conn, relay: --max-queued-syncs).",
		}, []string{"scope"}),
		refusedConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_refused_connections_total",
			Help: "WebSocket upgrades refused, by reason (per_ip_limit, shutting_down).",
		}, []string{"reason"}),
		authHeld: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cn_relay_auth_held_reqs_total",
			Help: "REQs that needed authentication, sent by a new connection before its first AUTH: held (each once), released by an AUTH (answered then), expired (answered auth-required when --auth-grace ended).",
		}, []string{"outcome"}),
		badRealIP: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_bad_real_ip_total",
			Help: "WebSocket upgrades whose --real-ip-header was not an IP address (the TCP peer address was used).",
		}),
		queryBudgetStops: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_query_budget_stops_total",
			Help: "REQ queries that stopped reading rows at the connection's (or the relay's) memory budget; the client got what fit, then EOSE.",
		}),
		followerSeq: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_relay_follower_seq",
			Help: "Highest outbox seq the live follower has fanned out.",
		}),
		followerFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_follower_failures_total",
			Help: "Failed outbox reads or event loads of the live follower (retried).",
		}),
		ingestWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "cn_relay_ingest_waiting_events",
			Help: "Verified events handed to the group commit and not yet in a running Ingest.",
		}),
		handoffCaught: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_handoff_caught_events_total",
			Help: "Events a stored part read on a lagging replica got from the primary: made visible by outbox rows the replica had not replayed, and among the newest of their page.",
		}),
		handoffDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_handoff_dropped_events_total",
			Help: "Stored events read on a lagging replica and left out because the primary had since deleted, hidden or replaced them.",
		}),
		handoffRefills: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "cn_relay_handoff_refills_total",
			Help: "REQs read on a lagging replica whose stored part the primary completed in one snapshot: a page left short of its limit by events deleted, hidden or replaced since, a search page changed since, or a replica too far behind.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.ingestWaiting, m.connections, m.subscriptions, m.messages, m.events, m.batchSize,
			m.ingestSeconds, m.querySeconds, m.slowDisconnects, m.liveDeliveries, m.liveWriteBlocked, m.groupWithheld, m.groupGateBehind, m.negTreeSessions, m.negTreeMisses, m.negQueued, m.negQueueWait, m.negQueueRefused, m.refusedConns, m.authHeld,
			m.followerSeq, m.followerFailures, m.badRealIP, m.queryBudgetStops, m.handoffCaught, m.handoffDropped, m.handoffRefills, m.cacheLearns, m.groupEvents)
	}
	return m
}

// countGroupEvent counts the answer v to ev when it is a group event, by
// its code: its own (groups and membership declare theirs), or for a
// refusal not declared yet (the relay's checks, admission's) its prefix.
func (m *metrics) countGroupEvent(ev *nostr.Event, v protocol.Verdict) {
	if !protocol.IsGroupEvent(ev) {
		return
	}
	class := "message"
	switch {
	case ev.Kind == groups.KindJoinRequest:
		class = "join"
	case ev.Kind == groups.KindLeaveRequest:
		class = "leave"
	case groups.IsModerationKind(ev.Kind):
		class = "moderation"
	case groups.IsStateKind(ev.Kind):
		class = "state"
	}
	code := v.Code
	if code.IsZero() && !v.OK {
		code = protocol.UntypedCode(v.Message)
	}
	m.groupEvents.WithLabelValues(class, groups.ResultLabel(v.OK, code)).Inc()
}

// resultLabel is the events counter label for an OK answer: its NIP-01
// prefix (the relay's own refusals are not declared in a table yet), else
// accepted or error.
func resultLabel(ok bool, reason string) string {
	switch prefix := protocol.UntypedCode(reason).Prefix; {
	case prefix != "":
		return prefix
	case ok:
		return "accepted"
	default:
		return "error"
	}
}

// registerHeld registers the gauge of the bytes every connection holds
// together (the relay's budget in use).
func (m *metrics) registerHeld(reg prometheus.Registerer, b *wsconn.Budget) {
	if reg == nil {
		return
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "cn_relay_held_bytes",
		Help: "Bytes held for all connections (send queues, held live events, query rows read), bounded by --total-queue-bytes.",
	}, func() float64 { return float64(b.Held()) }))
}

// registerCache registers the event cache's size gauges (its answers are
// counted by its Reader: eventcache.NewAnswers).
func (m *metrics) registerCache(reg prometheus.Registerer, c EventCache) {
	if reg == nil {
		return
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_events",
			Help: "Events held by the event cache (--cache-bytes).",
		}, func() float64 { return float64(c.Stats().Events) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_bytes",
			Help: "Bytes charged for the events the event cache holds, bounded by --cache-bytes.",
		}, func() float64 { return float64(c.Stats().Bytes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_floor_seconds",
			Help: "created_at of the event cache's floor (0: it holds every visible public event); REQs reaching below it read the database.",
		}, func() float64 { return float64(c.Stats().Floor) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_ranges",
			Help: "Author ranges the event cache holds: authors (or an author's kind) whose events it holds below its floor, learnt from the database's answers to author filters.",
		}, func() float64 { return float64(c.Stats().Ranges) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_ranges_bytes",
			Help: "Bytes of cn_relay_cache_bytes taken by the author ranges and the events they hold below the floor (at most a quarter of --cache-bytes).",
		}, func() float64 { return float64(c.Stats().PinnedBytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cn_relay_cache_range_hits_total",
			Help: "Filters the event cache answered that only its author ranges could answer (they reach below its floor).",
		}, func() float64 { return float64(c.Stats().RangeHits) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_seen_keys",
			Help: "Keys (ids, authors, tag values) added to the event cache's seen set since it was built (0: not built yet).",
		}, func() float64 { return float64(c.SeenStats().Keys) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "cn_relay_cache_seen_bytes",
			Help: "Memory of the event cache's seen set (a Bloom filter of every stored id, author and tag value), on top of --cache-bytes.",
		}, func() float64 { return float64(c.SeenStats().Bytes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "cn_relay_cache_seen_proofs_total",
			Help: "Filters the event cache answered empty because they name ids, authors or tag values never stored here.",
		}, func() float64 { return float64(c.SeenStats().Proofs) }),
	)
}
