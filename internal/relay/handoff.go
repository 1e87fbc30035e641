package relay

import (
	"context"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// catchUpPage is how many outbox rows one catch-up read takes, and how many
// events one load asks for.
const catchUpPage = 500

// querySnapshot runs a subscription's stored part: on a replica when the
// store reads from replicas (ReplicaReader; replica reports it), else on the
// store's database.
func (r *Relay) querySnapshot(ctx context.Context, s *subscription) (evs []*nostr.Event, seq int64, replica bool, err error) {
	if rr, ok := r.store.(ReplicaReader); ok {
		return rr.QuerySnapshotReplica(ctx, s.filters, s.viewer)
	}
	evs, seq, err = r.store.QuerySnapshot(ctx, s.filters, s.viewer)
	return evs, seq, false, err
}

// catchUp is the handoff of a stored part read on a replica, whose snapshot
// holds the outbox up to seq, to the live part, which this process's follower
// feeds from the primary only with rows it reads after the subscription was
// filed: it may have passed seq before. catchUp reads the primary's outbox
// rows after seq up to its head at the time of the read (the Feed) and
// returns:
//
//   - stored without every event that one of those rows names (deleted,
//     hidden, or changed since) and every replaceable or addressable version
//     whose key one of their upserts gave to another event: the stored part
//     then holds nothing that the primary had hidden, deleted or replaced
//     when the REQ arrived, as if it had been read on the primary;
//   - caught: the events of those upsert rows that are visible on the
//     primary now, match s and its viewer may read, once each, in seq order,
//     their memory taken from the connection's budget. They are live events
//     (sent after EOSE, before any later live event);
//   - head: the highest seq read. The subscription's snapshot becomes head:
//     a live event with a seq up to head is one of the caught or was left
//     out for the reasons above, and is skipped; one above head was read by
//     the follower after the filing and is delivered.
//
// So a subscriber gets every matching event exactly once whatever the
// replica's lag. The cost is one indexed outbox read on the primary (empty
// when the replica is current), plus one event load when rows were missing;
// both grow with the replica's lag, which --max-replica-lag bounds.
func (r *Relay) catchUp(ctx context.Context, s *subscription, stored []*nostr.Event, seq int64) (kept []*nostr.Event, caught []pendingLive, head int64, err error) {
	changed := map[string]bool{} // event ids a row after seq names
	owner := map[string]string{} // effective key -> the event an upsert after seq made effective
	type upsert struct {
		id  string
		seq int64
	}
	var ups []upsert
	var rows []outbox.Row
	head = seq
	for {
		if rows, err = r.follower.feed.ReadAfter(ctx, head, catchUpPage, rows); err != nil {
			return nil, nil, 0, fmt.Errorf("catch up after seq %d: %w", head, err)
		}
		for _, row := range rows {
			if row.Op == outbox.OpUpsert {
				if row.EffectiveKey != "" {
					owner[row.EffectiveKey] = row.EventID
				}
				if !changed[row.EventID] {
					ups = append(ups, upsert{id: row.EventID, seq: row.Seq})
				}
			}
			changed[row.EventID] = true
		}
		if len(rows) > 0 {
			head = rows[len(rows)-1].Seq
		}
		if len(rows) < catchUpPage {
			break
		}
	}
	if head == seq {
		return stored, nil, seq, nil
	}
	kept = stored[:0]
	for _, ev := range stored {
		if changed[ev.ID] {
			continue
		}
		if k := protocol.EffectiveKey(ev); k != "" && owner[k] != "" && owner[k] != ev.ID {
			continue
		}
		kept = append(kept, ev)
	}
	r.m.handoffDropped.Add(float64(len(stored) - len(kept)))
	defer func() {
		if err != nil {
			for _, p := range caught {
				s.conn.mem.give(len(p.json))
			}
			caught = nil
		}
	}()
	for i := 0; i < len(ups); i += catchUpPage {
		batch := ups[i:min(i+catchUpPage, len(ups))]
		ids := make([]string, len(batch))
		for j, u := range batch {
			ids[j] = u.id
		}
		evs, err := r.store.Events(ctx, ids)
		if err != nil {
			return nil, caught, 0, fmt.Errorf("catch up: load events: %w", err)
		}
		byID := make(map[string]*nostr.Event, len(evs))
		for _, ev := range evs {
			byID[ev.ID] = ev
		}
		for _, u := range batch { // seq order
			ev := byID[u.id]
			if ev == nil || !r.index.matchesSub(s, ev) || !s.viewer.MayRead(ev) {
				continue
			}
			js := eventJSON(ev)
			if res := s.conn.mem.take(len(js), s.conn.mem.limit, false); res != taken {
				s.conn.tooSlow(res.String())
				return nil, caught, 0, fmt.Errorf("catch up: %s", res)
			}
			caught = append(caught, pendingLive{seq: u.seq, json: js})
		}
	}
	r.m.handoffCaught.Add(float64(len(caught)))
	return kept, caught, head, nil
}

// cacheWait is how long a REQ waits for the event cache to apply the writes
// committed before it arrived, before it reads the database instead.
const cacheWait = 100 * time.Millisecond

// queryCache answers a subscription's stored part from the event cache when
// the cache holds the whole answer (eventcache.Cache.Query) and has applied
// every outbox row committed before the REQ arrived (heads), with the seq it
// has applied: every row above it is applied to the cache, then fanned out,
// after the subscription was filed (follower), so the delivery promise holds
// as for a database snapshot. take caps the answer as the row budget does;
// each event's JSON is put in sv. ok is false when the database must answer.
func (r *Relay) queryCache(s *subscription, take func(int) bool, sv *store.Served) (evs []*nostr.Event, seq int64, ok bool) {
	if r.cache == nil {
		return nil, 0, false
	}
	now := r.now().Unix()
	// A REQ the cache cannot answer as it stands goes to the database at once
	// (without the head read below, which would only delay it).
	if _, _, _, ok := r.cache.Query(s.filters, s.viewer, now, nil); !ok {
		r.m.cacheAnswers.WithLabelValues("miss").Inc()
		return nil, 0, false
	}
	// Every write committed before the REQ arrived, by any process, is in
	// its stored part, as with a database snapshot: the cache must have
	// applied the outbox head read after the REQ arrived (this process's own
	// commits and the notifications received bound it from below for free).
	want := r.committed()
	if n, ok := r.follower.feed.(interface{ Notified() int64 }); ok {
		want = max(want, n.Notified())
	}
	head, err := r.heads.get(s.ctx)
	if err != nil {
		r.m.cacheAnswers.WithLabelValues("behind").Inc()
		return nil, 0, false
	}
	if !r.cache.WaitFor(max(want, head), cacheWait, s.ctx.Done()) {
		r.m.cacheAnswers.WithLabelValues("behind").Inc()
		return nil, 0, false
	}
	hits, seq, _, ok := r.cache.Query(s.filters, s.viewer, now, take)
	if !ok {
		r.m.cacheAnswers.WithLabelValues("miss").Inc()
		return nil, 0, false
	}
	r.m.cacheAnswers.WithLabelValues("hit").Inc()
	evs = make([]*nostr.Event, len(hits))
	for i, h := range hits {
		evs[i] = h.Event
		sv.Put(h.Event, h.JSON)
	}
	return evs, seq, true
}
