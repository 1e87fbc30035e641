package trust

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// batch is what one Handle call read: the overlay it applies its ops to.
type batch struct {
	evs         map[string]*nostr.Event // the upserted events, as stored now
	srcs        map[string]*source      // source rows by event id (nil: removed by the batch)
	existed     map[string]bool         // source rows present before the batch
	sets        map[setKey]*set         // current follow/mute sets (nil: removed by the batch)
	setBySource map[string]setKey
	ids         map[string]int32 // pubkey ids of everything the events name
}

// read loads, in the consumer's transaction, the events the upserts name,
// the existing source rows and sets of every event named, the pubkey ids
// (creating the missing ones), and the current sets of the authors of new
// set versions.
func (g *Graph) read(ctx context.Context, tx consumer.Tx, upserts, all []string) (*batch, error) {
	// Read: the events, their existing source rows, the sets they name. An
	// upsert row's event is read in whatever state it is in now (not only
	// schema.LiveSQL): a later delete row removes what it added, so a replay
	// ends in the same graph.
	evs := map[string]*nostr.Event{}
	srcs := map[string]*source{}
	setBySource := map[string]setKey{}
	sets := map[setKey]*set{}
	var b pgx.Batch
	if len(upserts) > 0 {
		b.Queue(`SELECT id, pubkey, kind, created_at, tags FROM cn_relay.events WHERE id = ANY($1)`, upserts).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					ev := &nostr.Event{}
					var kind int32
					var createdAt int64
					if err := rows.Scan(&ev.ID, &ev.PubKey, &kind, &createdAt, &ev.Tags); err != nil {
						return fmt.Errorf("load events: %w", err)
					}
					ev.Kind, ev.CreatedAt = int(kind), nostr.Timestamp(createdAt)
					evs[ev.ID] = ev
				}
				return rows.Err()
			})
	}
	b.Queue(`SELECT event_id, author, etype, created_at, targets, amount_msat, coalesce(report_type, '')
		FROM cn_trust.sources WHERE event_id = ANY($1)`, all).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			s := &source{}
			var id string
			if err := rows.Scan(&id, &s.author, &s.etype, &s.createdAt, &s.targets, &s.amountMsat, &s.reportType); err != nil {
				return fmt.Errorf("load sources: %w", err)
			}
			srcs[id] = s
		}
		return rows.Err()
	})
	scanSets := func(rows pgx.Rows) error {
		for rows.Next() {
			var k setKey
			s := &set{}
			if err := rows.Scan(&k.author, &k.kind, &s.sourceID, &s.createdAt, &s.targets); err != nil {
				return fmt.Errorf("load sets: %w", err)
			}
			sets[k] = s
			setBySource[s.sourceID] = k
		}
		return rows.Err()
	}
	b.Queue(`SELECT author, kind, source_id, created_at, targets FROM cn_trust.sets WHERE source_id = ANY($1)`, all).Query(scanSets)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, err
	}

	// Pubkey ids for everything the new events name.
	var keys []string
	for _, ev := range evs {
		keys = append(keys, ev.PubKey)
		keys = append(keys, subjectsOf(ev)...)
		if ev.Kind == 9735 {
			if s, _ := zapSender(ev); s != "" {
				keys = append(keys, s)
			}
		}
	}
	ids, err := g.resolve(ctx, tx, keys)
	if err != nil {
		return nil, err
	}
	// The current sets of the authors of new set versions.
	var setAuthors []int32
	for _, ev := range evs {
		if ev.Kind == 3 || ev.Kind == 10000 {
			setAuthors = append(setAuthors, ids[ev.PubKey])
		}
	}
	if len(setAuthors) > 0 {
		rows, err := tx.Query(ctx, `SELECT author, kind, source_id, created_at, targets FROM cn_trust.sets WHERE author = ANY($1)`, setAuthors)
		if err != nil {
			return nil, fmt.Errorf("load sets: %w", err)
		}
		if err := scanSets(rows); err != nil {
			return nil, err
		}
	}

	existed := map[string]bool{} // source rows present before the batch
	for id := range srcs {
		existed[id] = true
	}
	return &batch{evs: evs, srcs: srcs, existed: existed, sets: sets, setBySource: setBySource, ids: ids}, nil
}

// resolve returns the ids of keys, creating the missing ones.
func (g *Graph) resolve(ctx context.Context, tx consumer.Tx, keys []string) (map[string]int32, error) {
	out := make(map[string]int32, len(keys))
	var missing []string
	g.mu.Lock()
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		if id, ok := g.ids[k]; ok {
			out[k] = id
			continue
		}
		out[k] = 0
		missing = append(missing, k)
	}
	g.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	slices.Sort(missing)
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			var k string
			var id int32
			if err := rows.Scan(&id, &k); err != nil {
				return err
			}
			out[k] = id
		}
		return rows.Err()
	}
	rows, err := tx.Query(ctx, `SELECT id, pubkey FROM cn_trust.pubkeys WHERE pubkey = ANY($1)`, missing)
	if err != nil {
		return nil, fmt.Errorf("load pubkey ids: %w", err)
	}
	if err := scan(rows); err != nil {
		return nil, fmt.Errorf("load pubkey ids: %w", err)
	}
	var insert []string
	for _, k := range missing {
		if out[k] == 0 {
			insert = append(insert, k)
		}
	}
	if len(insert) > 0 {
		// AfterCommit caches the new ids. An asynchronous commit (pkg/consumer's
		// default) that a crash or a failover takes back would leave cached ids
		// that name no row, or another key's row once the id is drawn again,
		// and the counters written through them would be lost or misplaced
		// (test/durability's failover test found it). So a batch that adds
		// keys commits durably, as a batch that appends outbox rows does
		// (cn_relay.consumer_advance reads the setting).
		if _, err := tx.Exec(ctx, "SELECT set_config($1, 'on', true)", outbox.AppendedSetting); err != nil {
			return nil, fmt.Errorf("add pubkeys: %w", err)
		}
		rows, err := tx.Query(ctx, `INSERT INTO cn_trust.pubkeys (pubkey) SELECT unnest($1::text[]) RETURNING id, pubkey`, insert)
		if err != nil {
			return nil, fmt.Errorf("add pubkeys: %w", err)
		}
		if err := scan(rows); err != nil {
			return nil, fmt.Errorf("add pubkeys: %w", err)
		}
	}
	g.mu.Lock()
	if g.pending == nil {
		g.pending = map[string]int32{}
	}
	for _, k := range missing {
		g.pending[k] = out[k]
	}
	g.mu.Unlock()
	return out, nil
}

// AfterCommit keeps the ids the committed batch resolved.
func (g *Graph) AfterCommit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids == nil || len(g.ids)+len(g.pending) > maxCachedIDs {
		g.ids = make(map[string]int32, len(g.pending))
	}
	for k, id := range g.pending {
		g.ids[k] = id
	}
	g.pending = nil
}
