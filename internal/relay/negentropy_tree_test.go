package relay

import (
	"context"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
	"github.com/nbd-wtf/go-nostr/nip77/negentropy/storage/vector"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestNegTreeMatchesRecomputation drives the relay's NIP-77 tree through a
// random history of outbox reads, as the follower applies them: new events
// (notes, replaceable profiles, group messages, events that expire),
// replacements (a newer profile: no row for the old one), deletions,
// moderation hides and unhides, expirations (the clock passes them, no row)
// and groups turning private or hidden and back (the gate changes, the
// group's rows are regrouped). After every step the tree holds exactly the
// public set recomputed from the model (visible, not expired, not of a
// private kind, not kept from anonymous readers by its group), and every
// range's fingerprint equals go-nostr's recomputation from the ids.
func TestNegTreeMatchesRecomputation(t *testing.T) {
	t.Parallel()
	rng := mrand.New(mrand.NewPCG(11, 12))
	now := int64(1_700_000_000)
	gate := newGroupGate()
	rules := map[string]protocol.GroupRule{}
	tree := newNegTree(gate, func() time.Time { return time.Unix(now, 0) })
	_, _, err := tree.fill(func(func(negentropy.Candidate)) (int64, bool, error) { return 1, false, nil })
	require.NoError(t, err)
	tree.regroupAll()

	type state struct {
		ev      *nostr.Event
		visible bool // stored and shown (not deleted, hidden or replaced)
	}
	model := map[string]*state{}
	effective := map[string]string{} // key -> visible id
	authors := []string{randomHex(32), randomHex(32), randomHex(32)}
	groupIDs := []string{"g1", "g2"}
	seq := int64(1)
	// read applies rows (with the events they name, visible now, loaded).
	read := func(rows ...outbox.Row) {
		byID := map[string]*nostr.Event{}
		for i := range rows {
			seq++
			rows[i].Seq = seq
			if st := model[rows[i].EventID]; st != nil && st.visible {
				byID[st.ev.ID] = st.ev
			}
		}
		if ids := accessChanged(rows); len(ids) > 0 {
			tree.regroup(ids)
		}
		tree.apply(rows, byID, seq)
	}
	rowsOf := func(op outbox.Op, ev *nostr.Event) []outbox.Row {
		topics := []string{"go"}
		if g, ok := protocol.GroupOf(ev); ok {
			topics = []string{groups.ScopePrefix + g}
		}
		var out []outbox.Row
		for _, tp := range topics {
			out = append(out, outbox.Row{Op: op, EventID: ev.ID, TopicID: tp, Kind: ev.Kind, CreatedAt: int64(ev.CreatedAt),
				EffectiveKey: protocol.EffectiveKey(ev)})
		}
		return out
	}
	newEvent := func() *nostr.Event {
		ev := &nostr.Event{ID: randomHex(32), PubKey: authors[rng.IntN(len(authors))], CreatedAt: nostr.Timestamp(now - 50 + int64(rng.IntN(100)))}
		switch rng.IntN(6) {
		case 0:
			ev.Kind = 0
			ev.CreatedAt = nostr.Timestamp(now + int64(len(model))) // newer than any version before
		case 1:
			ev.Kind, ev.Tags = 9, nostr.Tags{{"h", groupIDs[rng.IntN(len(groupIDs))]}}
		case 2:
			ev.Kind, ev.Tags = 39000, nostr.Tags{{"d", groupIDs[rng.IntN(len(groupIDs))]}}
		case 3:
			ev.Kind, ev.Tags = 1, nostr.Tags{{"expiration", strconv.FormatInt(now+1+int64(rng.IntN(30)), 10)}}
		case 4:
			ev.Kind = protocol.KindEncryptedDM // never public
		default:
			ev.Kind = 1
		}
		return ev
	}
	public := func(ev *nostr.Event) bool {
		if exp, ok := protocol.Expiration(ev); ok && exp <= now {
			return false
		}
		if protocol.IsPrivateKind(ev.Kind) {
			return false
		}
		return protocol.Viewer{Groups: gate}.MayReadGroup(ev)
	}
	counts := map[string]int{}
	for step := range 3000 {
		var live []*state
		for _, st := range model {
			live = append(live, st)
		}
		slices.SortFunc(live, func(a, b *state) int { return compareStrings(a.ev.ID, b.ev.ID) })
		switch op := rng.IntN(10); {
		case op < 4 || len(live) == 0: // a new event (a replacement, for a profile)
			ev := newEvent()
			st := &state{ev: ev, visible: true}
			model[ev.ID] = st
			var rows []outbox.Row
			if k := protocol.EffectiveKey(ev); k != "" {
				if old := effective[k]; old != "" {
					model[old].visible = false
				}
				effective[k] = ev.ID
				counts["replace"]++
			}
			rows = append(rows, rowsOf(outbox.OpUpsert, ev)...)
			read(rows...)
		case op == 4: // deleted (NIP-09) or hidden by moderation
			st := live[rng.IntN(len(live))]
			if !st.visible {
				continue
			}
			st.visible = false
			if k := protocol.EffectiveKey(st.ev); k != "" && effective[k] == st.ev.ID {
				delete(effective, k)
			}
			read(rowsOf(outbox.OpDelete, st.ev)...)
			counts["delete"]++
		case op == 5: // unhidden (only a non-replaceable event, for simplicity)
			st := live[rng.IntN(len(live))]
			if st.visible || protocol.EffectiveKey(st.ev) != "" {
				continue
			}
			st.visible = true
			read(rowsOf(outbox.OpUpsert, st.ev)...)
			counts["unhide"]++
		case op == 6: // time passes: expirations, without rows
			now += int64(rng.IntN(5))
			counts["tick"]++
		case op == 7: // a group turns private, hidden, or public again
			g := groupIDs[rng.IntN(len(groupIDs))]
			switch rng.IntN(3) {
			case 0:
				rules[g] = protocol.GroupRule{Private: true, Readers: []string{authors[0]}}
			case 1:
				rules[g] = protocol.GroupRule{Hidden: true}
			default:
				delete(rules, g)
			}
			gate.set(nil, maps.Clone(rules))
			meta := &nostr.Event{ID: randomHex(32), PubKey: authors[0], Kind: groups.KindEditMetadata, CreatedAt: nostr.Timestamp(now),
				Tags: nostr.Tags{{"h", g}}}
			model[meta.ID] = &state{ev: meta, visible: true}
			read(rowsOf(outbox.OpUpsert, meta)...)
			counts["regroup"]++
		default: // a row repeated (another topic of the same change), harmless
			st := live[rng.IntN(len(live))]
			op := outbox.OpDelete
			if st.visible {
				op = outbox.OpUpsert
			}
			read(rowsOf(op, st.ev)...)
		}
		if step%50 != 0 && step != 2999 {
			continue
		}
		var want []negentropy.Item
		for _, st := range model {
			if st.visible && public(st.ev) {
				want = append(want, negentropy.Item{CreatedAt: st.ev.CreatedAt, ID: st.ev.ID})
			}
		}
		snap, ok := tree.snapshot(seq, time.Second, nil)
		require.True(t, ok)
		compareWindow(t, rng, snap.Window(0, snap.Len()), want, step)
	}
	for _, c := range []string{"replace", "delete", "unhide", "tick", "regroup"} {
		require.Positive(t, counts[c], c)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareWindow checks a tree window against go-nostr's vector storage over
// want: the items in order, and random ranges' fingerprints.
func compareWindow(t *testing.T, rng *mrand.Rand, got lib.Storage, want []negentropy.Item, step int) {
	t.Helper()
	v := vector.New()
	for _, it := range want {
		v.Insert(it.CreatedAt, it.ID)
	}
	v.Seal()
	n := v.Size()
	require.Equal(t, n, got.Size(), "step %d: items", step)
	var a, b []lib.Item
	for _, it := range v.Range(0, n) {
		a = append(a, it)
	}
	for _, it := range got.Range(0, n) {
		b = append(b, it)
	}
	require.Equal(t, a, b, "step %d", step)
	for range 20 {
		i := rng.IntN(n + 1)
		j := i + rng.IntN(n-i+1)
		require.Equal(t, v.Fingerprint(i, j), got.Fingerprint(i, j), "step %d: fingerprint [%d, %d)", step, i, j)
	}
}

// slowTreeStore is the Postgres store whose NIP-77 tree snapshot, once it
// has its snapshot and its first item, waits for release (or its context):
// a fill as slow as the test wants.
type slowTreeStore struct {
	pgStore
	started chan struct{} // closed when the fill holds its snapshot
	release chan struct{}
	once    *sync.Once
}

func (s slowTreeStore) SyncTreeItems(ctx context.Context, add func(negentropy.Candidate)) (int64, bool, error) {
	return s.pgStore.SyncTreeItems(ctx, func(c negentropy.Candidate) {
		s.once.Do(func() {
			close(s.started)
			select {
			case <-s.release:
			case <-ctx.Done():
			}
		})
		add(c)
	})
}

// TestNegTreeFillDoesNotHoldLiveDelivery: the tree is filled beside the
// follower, not before it. While the fill holds its snapshot (artificially
// stopped after its first item), an event published is delivered live to a
// subscription, a NIP-77 session is answered from the database with every
// event committed before its NEG-OPEN (the published one included, the
// deleted one not), and once the fill ends the tree holds the snapshot with
// the rows committed during the fill applied on top (the new event in, the
// deleted one out), and serves the session.
func TestNegTreeFillDoesNotHoldLiveDelivery(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	rng := mrand.New(mrand.NewPCG(21, 22))
	k := newKey(t)
	early := signedNotes(t, k, 30, 60, rng)
	e.store(early)

	slow := slowTreeStore{pgStore: e.st, started: make(chan struct{}), release: make(chan struct{}), once: &sync.Once{}}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(slow.release) }) }
	t.Cleanup(release)
	r, err := New(testConfig(), WithEventCache(testConfig(), Deps{Store: slow,
		Feed: NewPGFeed(e.db.Pool, nil), Registerer: prometheus.NewRegistry()}))
	require.NoError(t, err)
	tr := serveRelayWait(t, r, false) // (the old follower waited for the fill)
	select {
	case <-slow.started:
	case <-time.After(waitTimeout):
		t.Fatal("the tree's fill did not start")
	}

	sub := dial(t, tr.url)
	sub.send("REQ", "live", map[string]any{"kinds": []int{1}, "since": int64(nostr.Now())})
	sub.eose("live")
	pub := dial(t, tr.url)
	live := k.note(t, "during the fill", nil)
	ok, msg := pub.publish(live)
	require.True(t, ok, msg)
	require.Equal(t, live.ID, sub.event("live").ID, "delivered live while the tree is being filled")
	deletion := k.signed(t, 5, nostr.Tags{{"e", early[0].ID}, {"t", "go"}}, "")
	ok, msg = pub.publish(deletion)
	require.True(t, ok, msg)
	require.Equal(t, -1, tr.Relay.negTree.len(), "still filling")

	want := []string{live.ID, deletion.ID}
	for _, ev := range early[1:] {
		want = append(want, ev.ID)
	}
	slices.Sort(want)
	_, need := syncThrough(t, dial(t, tr.url), "during", map[string]any{}, nil, 0)
	require.Equal(t, want, need, "a session during the fill: every event committed before its NEG-OPEN")
	require.Equal(t, 0, negTreeSessions(tr), "read from the database")

	release()
	treeCurrent(t, tr)
	_, need = syncThrough(t, dial(t, tr.url), "after", map[string]any{}, nil, 0)
	require.Equal(t, want, need, "the tree: the snapshot and the rows committed during the fill")
	require.Equal(t, 1, negTreeSessions(tr), "served from the tree")
}

// TestNegTreeFillKeepsReads: the reads the follower applies while a fill is
// under way are kept and applied on top of the fill's snapshot (those above
// its seq only); a snapshot older than where the kept reads start, or a
// fill that had to drop reads, is refused (errTreeRestart) and the next
// fill keeps the reads from the last one on.
func TestNegTreeFillKeepsReads(t *testing.T) {
	t.Parallel()
	now := int64(1_700_000_000)
	tree := newNegTree(newGroupGate(), func() time.Time { return time.Unix(now, 0) })
	evs := make([]*nostr.Event, 6)
	for i := range evs {
		evs[i] = &nostr.Event{ID: randomHex(32), Kind: 1, CreatedAt: nostr.Timestamp(now - int64(10*i))}
	}
	cand := func(ev *nostr.Event) negentropy.Candidate {
		return negentropy.Candidate{CreatedAt: int64(ev.CreatedAt), ID: ev.ID, Kind: ev.Kind}
	}
	row := func(seq int64, op outbox.Op, ev *nostr.Event) outbox.Row {
		return outbox.Row{Seq: seq, Op: op, EventID: ev.ID, TopicID: "go", Kind: ev.Kind, CreatedAt: int64(ev.CreatedAt)}
	}
	read := func(rows ...outbox.Row) {
		byID := map[string]*nostr.Event{}
		for _, r := range rows {
			if r.Op == outbox.OpUpsert {
				for _, ev := range evs {
					if ev.ID == r.EventID {
						byID[ev.ID] = ev
					}
				}
			}
		}
		tree.apply(rows, byID, rows[len(rows)-1].Seq)
	}
	items := func() []string {
		snap, ok := tree.snapshot(0, 0, nil)
		require.True(t, ok)
		var ids []string
		for _, it := range snap.Window(0, snap.Len()).Range(0, snap.Len()) {
			ids = append(ids, it.ID)
		}
		slices.Sort(ids)
		return ids
	}
	sorted := func(evs ...*nostr.Event) []string {
		var ids []string
		for _, ev := range evs {
			ids = append(ids, ev.ID)
		}
		slices.Sort(ids)
		return ids
	}

	tree.beginFill(10)
	read(row(11, outbox.OpUpsert, evs[2]), row(12, outbox.OpUpsert, evs[3]))
	// A snapshot at seq 9 misses row 10: refused.
	_, _, err := tree.fillFrom(func(add func(negentropy.Candidate)) (int64, bool, error) {
		add(cand(evs[0]))
		return 9, false, nil
	})
	require.ErrorIs(t, err, errTreeRestart)
	require.Equal(t, -1, tree.len())
	// The reads from 12 on are kept now.
	read(row(13, outbox.OpDelete, evs[0]), row(14, outbox.OpUpsert, evs[4]))
	// A snapshot at 12 (rows 11 and 12 in it): the kept reads 13 and 14 on top.
	seq, unscoped, err := tree.fillFrom(func(add func(negentropy.Candidate)) (int64, bool, error) {
		for _, ev := range evs[:4] {
			add(cand(ev))
		}
		return 12, false, nil
	})
	require.NoError(t, err)
	require.False(t, unscoped)
	require.Equal(t, int64(14), seq, "as current as the follower's last read")
	require.Equal(t, sorted(evs[1], evs[2], evs[3], evs[4]), items())
	// Ready: reads apply at once.
	read(row(15, outbox.OpDelete, evs[1]), row(16, outbox.OpUpsert, evs[5]))
	require.Equal(t, sorted(evs[2], evs[3], evs[4], evs[5]), items())
}
