package indexer

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/textsearch"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// ConsumerName is the outbox consumer that keeps cn_index.documents.
const ConsumerName = "index-v1"

// documentsTable is the live index; rebuildTable is filled by Rebuild.
const (
	documentsTable = "cn_index.documents"
	rebuildTable   = "cn_index.documents_rebuild"
)

// DefaultBatchSize is the indexer's outbox rows per transaction: large batches
// amortise the per-transaction work when catching up (measured: 2,000 rows per
// batch drained a backlog ~10% faster than 500); live traffic makes small batches
// anyway.
const DefaultBatchSize = 2000

// DefaultKinds are the kinds whose content is human text: profiles (0, their
// name, about and nip05: apps search people), short notes (1), threads (11),
// comments (1111), long-form articles (30023) and wiki articles (30818).
var DefaultKinds = []int{0, 1, 11, 1111, 30023, 30818}

// Kinds is a set of indexed kinds.
type Kinds map[int]bool

// NewKinds returns the set of kinds.
func NewKinds(kinds []int) Kinds {
	k := make(Kinds, len(kinds))
	for _, kind := range kinds {
		k[kind] = true
	}
	return k
}

// kindsOrDefault is kinds, or DefaultKinds when nil.
func kindsOrDefault(kinds []int) []int {
	if kinds == nil {
		return DefaultKinds
	}
	return kinds
}

// orDiscard is logger, or one that discards when nil.
func orDiscard(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return logger
}

// ParseKinds parses a comma-separated list of kinds ("1,30023"); "" is nil (the
// default kinds).
func ParseKinds(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var kinds []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 0 || k > 65535 {
			return nil, fmt.Errorf("%q is not a kind (0-65535)", f)
		}
		if protocol.IsPrivateKind(k) {
			return nil, fmt.Errorf("kind %d holds direct messages, served only to their parties: it is never indexed", k)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// Handler is the index-v1 consumer's handler.
type Handler struct {
	Kinds Kinds
	Now   func() time.Time // nil: time.Now
}

// Handle applies rows to the live index inside the consumer's transaction.
func (h *Handler) Handle(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
	// A row of a kind that is not indexed cannot concern a document (changing the
	// indexed kinds needs a reindex, see docs/operations.md), so it costs no lookup.
	ids := h.rowIDs(rows)
	if len(ids) == 0 {
		return nil
	}
	return h.apply(ctx, tx, documentsTable, ids, true)
}

// querier is what apply needs: a consumer.Tx or a pgx.Tx.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// source is an event as the index sees it.
type source struct {
	id, pubkey, content, key string
	kind                     int
	createdAt                int64
	expiresAt                *int64
	visible                  bool
	topics                   []string
}

// sourceColumns reads an event as the index sees it; the extra text of long-form
// kinds (title, summary) is indexed with the content, exactly as
// protocol.SearchText builds it for live NIP-50 matching.
const sourceColumns = `e.id, e.pubkey, e.kind, e.created_at,
       CASE WHEN e.kind < 30000 THEN e.content
            ELSE e.content || coalesce(' ' || (SELECT string_agg(t->>1, ' ') FROM jsonb_array_elements(e.tags) t
                                               WHERE t->>0 IN ('title', 'summary')), '') END,
       coalesce(e.effective_key, ''), ` + schema.LiveSQL + `, e.expires_at, ` + schema.ScopeTopicsSQL

// loadSQL reads the current state of the events $1.
const loadSQL = "SELECT " + sourceColumns + " FROM cn_relay.events e WHERE e.id = ANY($1)"

// loadWinnersSQL reads the live effective versions of the keys $1.
const loadWinnersSQL = "SELECT " + sourceColumns + ` FROM cn_relay.events e
	WHERE e.effective_key = ANY($1) AND ` + schema.LiveSQL

// loadAllSQL reads every live event of the kinds $1 (for a rebuild).
const loadAllSQL = "SELECT " + sourceColumns + ` FROM cn_relay.events e
	WHERE e.kind = ANY($1) AND ` + schema.LiveSQL

// indexable reports whether s gets a document now.
func (h *Handler) indexable(s source) bool {
	return s.visible && h.Kinds[s.kind] && !protocol.IsPrivateKind(s.kind) && len(s.topics) > 0 &&
		(s.expiresAt == nil || *s.expiresAt > h.now().Unix())
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// apply derives the documents of the events ids from their current state and
// writes them to table. A visible event of an indexed kind gets its document (an
// existing one is left as is: its fields never change); any other event loses
// it. For replaceable and addressable events the whole key is derived again: its
// current effective version (which may not be among ids) is the only document
// the key keeps. So the result depends only on the current state of the events
// named, never on the order or number of times rows are applied.
func (h *Handler) apply(ctx context.Context, q querier, table string, ids []string, sharedLock bool) error {
	if sharedLock {
		// The switch lock comes first, in a statement of its own: queued in
		// the batch below, it ran after pgx had prepared the batch's
		// statements, and preparing a statement that names the table locks
		// it until the transaction ends. A rebuild's switch-over, holding the
		// switch lock and waiting for the table, then deadlocked with this
		// batch, holding the table and waiting for the switch lock.
		b := &pgx.Batch{}
		b.Queue("SELECT pg_advisory_xact_lock_shared($1)", schema.IndexSwitchLock)
		if err := q.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("take the index switch lock: %w", err)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	srcs, err := loadSources(ctx, q, loadSQL, ids)
	if err != nil {
		return err
	}
	keySet := map[string]bool{}
	for _, s := range srcs {
		if s.key != "" {
			keySet[s.key] = true
		}
	}
	keys := make([]string, 0, len(keySet))
	for k := range keySet {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// A key's document is its winner as the second read sees it: between the two
	// reads a concurrent ingest may have made another version effective, and the
	// first read's version must then not be indexed beside it.
	winnerOf := make(map[string]string, len(keys))
	if len(keys) > 0 {
		winners, err := loadSources(ctx, q, loadWinnersSQL, keys)
		if err != nil {
			return err
		}
		for _, w := range winners {
			winnerOf[w.key] = w.id
		}
		srcs = append(winners, srcs...)
	}

	var gone []string
	var ins docColumns
	owners := make(map[string]string, len(keys)) // key -> indexed effective version
	seen := make(map[string]bool, len(srcs))
	for _, s := range srcs {
		if seen[s.id] {
			continue
		}
		seen[s.id] = true
		if !h.indexable(s) || (s.key != "" && winnerOf[s.key] != s.id) {
			gone = append(gone, s.id)
			continue
		}
		if s.key != "" {
			owners[s.key] = s.id
		}
		ins.add(s)
	}
	for _, id := range ids {
		if !seen[id] {
			gone = append(gone, id) // not stored at all
		}
	}
	keyOwners := make([]string, len(keys))
	for i, k := range keys {
		keyOwners[i] = owners[k] // "" when the key has no indexed version
	}

	var b pgx.Batch
	if len(gone) > 0 {
		b.Queue("DELETE FROM "+table+" WHERE event_id = ANY($1)", gone)
	}
	if len(keys) > 0 {
		b.Queue(`DELETE FROM `+table+` d USING unnest($1::text[], $2::text[]) AS k(key, owner)
			WHERE d.effective_key = k.key AND d.event_id <> k.owner`, keys, keyOwners)
	}
	ins.queueInsert(&b, table, false)
	if b.Len() == 0 {
		return nil
	}
	if err := q.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("write %s: %w", table, err)
	}
	return nil
}

// loadSources runs sql (loadSQL or loadWinnersSQL) with args.
func loadSources(ctx context.Context, q querier, sql string, args []string) ([]source, error) {
	if len(args) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, sql, args)
	if err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	srcs := make([]source, 0, len(args))
	for rows.Next() {
		var s source
		if err := rows.Scan(&s.id, &s.pubkey, &s.kind, &s.createdAt, &s.content, &s.key, &s.visible, &s.expiresAt, &s.topics); err != nil {
			rows.Close()
			return nil, fmt.Errorf("load events: %w", err)
		}
		srcs = append(srcs, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	return srcs, nil
}

// queueInsert queues the INSERT of the documents into table; a document that
// exists already is left as is (its fields never change). fresh says that table
// has no documents of these events and no indexes yet (a rebuild's initial load).
func (c *docColumns) queueInsert(b *pgx.Batch, table string, fresh bool) {
	if len(c.ids) == 0 {
		return
	}
	c.analyze()
	conflict := " ON CONFLICT (event_id) DO NOTHING"
	if fresh {
		conflict = ""
	}
	b.Queue(`INSERT INTO `+table+` (event_id, pubkey, kind, created_at, topics, effective_key, expires_at, tsv)
		SELECT id, pubkey, kind, created_at, topics::text[], nullif(key, ''), expires, tsv::tsvector
		FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::text[])
		     AS u(id, pubkey, kind, created_at, topics, key, expires, tsv)`+conflict,
		c.ids, c.pubkeys, c.kinds, c.createdAts, c.topics, c.keys, c.expires, c.tsvs)
}

// docColumns holds documents column-wise, for one unnest INSERT.
type docColumns struct {
	ids, pubkeys, topics, keys, tsvs []string
	contents                         []string   // analysed into tsvs by analyze
	topicLists                       [][]string // ditto
	kinds                            []int32
	createdAts                       []int64
	expires                          []*int64
}

// add analyses s and appends its document. Topics travel as one text[] literal
// per document (a ragged text[][] cannot be a parameter).
func (c *docColumns) add(s source) {
	c.ids = append(c.ids, s.id)
	c.pubkeys = append(c.pubkeys, s.pubkey)
	c.kinds = append(c.kinds, int32(s.kind))
	c.createdAts = append(c.createdAts, s.createdAt)
	c.topics = append(c.topics, arrayLiteral(s.topics))
	c.keys = append(c.keys, s.key)
	c.expires = append(c.expires, s.expiresAt)
	text := s.content
	if s.kind == 0 {
		text = protocol.ProfileText(text) // as protocol.SearchText, for live NIP-50 matching
	}
	c.contents = append(c.contents, text)
	c.topicLists = append(c.topicLists, s.topics)
}

// parallelAnalyzeMin is the batch size from which analyze uses every CPU: Postgres
// waits for the batch meanwhile, so the analysis is on the catch-up's critical path.
const parallelAnalyzeMin = 256

// analyze computes the tsvector of every document added (textsearch.WithTopics).
func (c *docColumns) analyze() {
	n := len(c.contents)
	c.tsvs = make([]string, n)
	workers := 1
	if n >= parallelAnalyzeMin {
		workers = min(runtime.GOMAXPROCS(0), n/(parallelAnalyzeMin/2))
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				c.tsvs[i] = textsearch.WithTopics(c.contents[i], c.topicLists[i])
			}
		})
	}
	wg.Wait()
}

// arrayLiteral writes v in the input syntax of text[]: every element double-quoted,
// with backslash and double quote escaped.
func arrayLiteral(v []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, e := range v {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for j := 0; j < len(e); j++ {
			if e[j] == '"' || e[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(e[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
