package replica_test

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/testkit"
)

// pageStep is one write of TestFullPagesFromDelayedReplica's publisher: a
// note, a new version of a replaceable or addressable event, or a NIP-09
// deletion, with when it was sent and when its OK came back.
type pageStep struct {
	ev      *nostr.Event
	sentAt  time.Time
	ackedAt time.Time
}

// pageModel is what a client may see after each prefix of the steps:
// visible[k] holds the events visible once steps[:k] are committed, newest
// first (ties by lowest id), as the relay's stored part orders them.
type pageModel struct {
	steps   []pageStep
	visible [][]*nostr.Event
}

func newPageModel(steps []pageStep) *pageModel {
	m := &pageModel{steps: steps, visible: make([][]*nostr.Event, len(steps)+1)}
	live := map[string]*nostr.Event{} // id -> visible event
	current := map[string]string{}    // replaceable key -> its visible version's id
	snapshot := func() []*nostr.Event {
		evs := make([]*nostr.Event, 0, len(live))
		for _, ev := range live {
			evs = append(evs, ev)
		}
		slices.SortFunc(evs, newestFirst)
		return evs
	}
	m.visible[0] = snapshot()
	for k, st := range steps {
		ev := st.ev
		switch {
		case ev.Kind == 5:
			for _, tag := range ev.Tags {
				if len(tag) >= 2 && tag[0] == "e" {
					delete(live, tag[1])
				}
			}
			// (the deletion is stored and visible too, but no filter of the
			// test asks for kind 5)
		case protocol.EffectiveKey(ev) != "":
			key := protocol.EffectiveKey(ev)
			if old, ok := current[key]; ok {
				delete(live, old) // (the test's versions are each newer than the last)
			}
			current[key] = ev.ID
			live[ev.ID] = ev
		default:
			live[ev.ID] = ev
		}
		m.visible[k+1] = snapshot()
	}
	return m
}

func newestFirst(a, b *nostr.Event) int {
	if a.CreatedAt != b.CreatedAt {
		return cmp.Compare(b.CreatedAt, a.CreatedAt)
	}
	return strings.Compare(a.ID, b.ID)
}

func matchesAny(filters []nostr.Filter, ev *nostr.Event) bool {
	return slices.ContainsFunc(filters, func(f nostr.Filter) bool { return protocol.Match(f, ev) })
}

// page is the answer of a primary reading the state after k steps: each
// filter's newest Limit matches, their union newest first.
func (m *pageModel) page(filters []nostr.Filter, k int) []string {
	seen := map[string]bool{}
	var out []*nostr.Event
	for _, f := range filters {
		n := 0
		for _, ev := range m.visible[k] {
			if n == f.Limit {
				break
			}
			if protocol.Match(f, ev) {
				n++
				if !seen[ev.ID] {
					seen[ev.ID] = true
					out = append(out, ev)
				}
			}
		}
	}
	slices.SortFunc(out, newestFirst)
	ids := make([]string, len(out))
	for i, ev := range out {
		ids[i] = ev.ID
	}
	return ids
}

// check returns what is wrong with what a subscription with filters fs
// received, and, when its stored part is no page in range, whether it was
// shorter than the page and whether it was the page of a snapshot older than
// the REQ. The stored part must be the page at a snapshot k that holds every
// write acknowledged before the REQ was sent and none sent after its EOSE
// arrived; after EOSE, the matching events of the steps after k, in order,
// each once, except that one no longer visible at the end may be missing.
func (m *pageModel) check(s testkit.SubState, fs []nostr.Filter) (problems []string, short, stale bool) {
	if !s.EOSE {
		return []string{"no EOSE"}, false, false
	}
	lo, hi := 0, 0
	for k, st := range m.steps {
		if st.ackedAt.Before(s.ReqAt) {
			lo = k + 1
		}
		if st.sentAt.Before(s.EOSEAt) {
			hi = k + 1
		}
	}
	stored := make([]string, len(s.Stored))
	for i, ev := range s.Stored {
		stored[i] = ev.ID
	}
	snap := -1
	for k := lo; k <= hi && snap < 0; k++ {
		if slices.Equal(stored, m.page(fs, k)) {
			snap = k
		}
	}
	if snap < 0 {
		want := m.page(fs, lo)
		short = len(stored) < len(want)
		for k := 0; k < lo && !stale; k++ {
			stale = slices.Equal(stored, m.page(fs, k))
		}
		return []string{fmt.Sprintf("the stored part (%d events) is the page at no snapshot in steps [%d, %d] (%d events at step %d; shorter: %t, an older snapshot's: %t)",
			len(stored), lo, hi, len(want), lo, short, stale)}, short, stale
	}
	stepOf := map[string]int{}
	for k, st := range m.steps {
		stepOf[st.ev.ID] = k
	}
	final := map[string]bool{}
	for _, ev := range m.visible[len(m.steps)] {
		final[ev.ID] = true
	}
	var later []string
	for _, st := range m.steps[snap:] {
		if st.ev.Kind != 5 && matchesAny(fs, st.ev) {
			later = append(later, st.ev.ID)
		}
	}
	got := map[string]bool{}
	for _, id := range stored {
		got[id] = true
	}
	i := 0
	for _, ev := range s.Live {
		if got[ev.ID] {
			return append(problems, fmt.Sprintf("step %d's event twice", stepOf[ev.ID])), false, false
		}
		got[ev.ID] = true
		for i < len(later) && later[i] != ev.ID {
			if final[later[i]] {
				problems = append(problems, fmt.Sprintf("the live part lacks step %d's event (snapshot %d)", stepOf[later[i]], snap))
			}
			i++
		}
		if i == len(later) {
			return append(problems, fmt.Sprintf("live event of step %d out of order or not a later match (snapshot %d)", stepOf[ev.ID], snap)), false, false
		}
		i++
	}
	for ; i < len(later); i++ {
		if final[later[i]] {
			problems = append(problems, fmt.Sprintf("the live part lacks step %d's event (snapshot %d)", stepOf[later[i]], snap))
		}
	}
	return problems, false, false
}

// TestFullPagesFromDelayedReplica: a relay reads REQs from a replica that
// applies the primary's commits 1 s late (--cache-bytes 0), while notes are
// published at 100/s, some deleted (NIP-09) and replaceable and addressable
// events replaced (some moving out of the topic asked for) inside the lag
// window. The limits are below the matching sets (but for the few articles
// and lists of the two-filter shape); one shape pages back with until, so
// that no new note enters its page and a deletion leaves it short. Each of 200 subscriptions opened at random moments gets, as its
// stored part, exactly the newest `limit` matching events (per filter, for
// REQs of two filters) visible at one snapshot of the primary that holds
// every write acknowledged before the REQ was sent (and none sent after its
// EOSE arrived); after EOSE, every later matching event once, in publication
// order (one deleted soon after its publication may be left out: it is no
// longer visible when the follower loads it).
func TestFullPagesFromDelayedReplica(t *testing.T) {
	c := startCluster(t)
	rep := c.AddReplica(t, "delayed", "recovery_min_apply_delay = '1s'", "hot_standby_feedback = on")
	r := startRelay(t, c, 30*time.Second, rep) // (CacheBytes = 0)
	name := replicaLabel(rep)
	r.waitMetric(t, `cn_relay_replica_usable{replica="`+name+`"}`, func(v float64) bool { return v == 1 }, "the replica serves")

	const (
		topic       = "pages"
		base        = 80  // steps published before any REQ
		steps       = 300 // steps published while REQs are opened
		every       = 10 * time.Millisecond
		conns       = 10
		subsPerConn = 20 // relay.DefaultConfig().MaxSubscriptions
	)
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	require.NoError(t, err)
	// The publisher: one step at a time, each waiting for its OK, so
	// publication order is outbox seq order. created_at advances every two
	// steps (ties are broken by id), from well in the past.
	t0 := nostr.Now() - (base+steps)/2 - 120
	older := t0 + base/2 - 5 // (the "load more" shape's until: within the base)
	shapes := [][]nostr.Filter{
		{{Kinds: []int{1, 10015, 30023}, Tags: nostr.TagMap{"t": {topic}}, Limit: 30}},
		{{Kinds: []int{1}, Tags: nostr.TagMap{"t": {topic}}, Limit: 20}, {Kinds: []int{10015, 30023}, Tags: nostr.TagMap{"t": {topic}}, Limit: 3}},
		{{Authors: []string{pk}, Kinds: []int{1, 30023}, Tags: nostr.TagMap{"t": {topic}}, Limit: 25}},
		{{Kinds: []int{1}, Tags: nostr.TagMap{"t": {topic}}, Until: &older, Limit: 20}},
	}
	pub := testkit.Dial(t, r.ws)
	var (
		mu      sync.Mutex
		done    []pageStep
		notes   []*nostr.Event // in publication order
		deleted = map[string]bool{}
	)
	next := func(i int) *nostr.Event {
		k := len(done)
		at := t0 + nostr.Timestamp(k/2)
		sign := func(kind int, tags nostr.Tags, content string) *nostr.Event {
			ev := &nostr.Event{Kind: kind, Tags: tags, Content: content, CreatedAt: at}
			require.NoError(t, ev.Sign(sk))
			return ev
		}
		other := func(in bool) string {
			if in {
				return topic
			}
			return "elsewhere"
		}
		switch {
		case k < 8 && k%2 == 1:
			// Four articles (addressable), in the topic.
			return sign(30023, nostr.Tags{{"d", fmt.Sprintf("art-%d", k/2)}, {"t", topic}}, fmt.Sprintf("article at step %d", k))
		case k == 9 || (k >= base && i%10 == 8):
			// A NIP-51 interests list (replaceable): in the topic every
			// other version.
			return sign(10015, nostr.Tags{{"t", other((k/10)%2 == 0)}}, "")
		case k >= base && i%10 == 6:
			// A new version of an article: a third of them move out of the
			// topic.
			return sign(30023, nostr.Tags{{"d", fmt.Sprintf("art-%d", (i/10)%4)}, {"t", other((i/10)%3 != 0)}}, fmt.Sprintf("article at step %d", k))
		case k >= base && i%10 == 3:
			// A deletion of one of the newest notes, of one further down
			// the pages, or of the newest one the "load more" shape reads
			// (which no new note can replace in its page).
			j := len(notes) - 2
			switch (i / 10) % 3 {
			case 1:
				j = len(notes) - 18
			case 2:
				for j > 0 && notes[j].CreatedAt > older {
					j--
				}
			}
			for ; j >= 0; j-- {
				if !deleted[notes[j].ID] {
					deleted[notes[j].ID] = true
					return sign(5, nostr.Tags{{"e", notes[j].ID}}, "")
				}
			}
		}
		ev := sign(1, nostr.Tags{{"t", topic}}, fmt.Sprintf("note at step %d", k))
		notes = append(notes, ev)
		return ev
	}
	publish := func(i int) error {
		mu.Lock()
		ev := next(i)
		st := pageStep{ev: ev, sentAt: time.Now()}
		mu.Unlock()
		if err := publishOK(pub, ev); err != nil {
			return err
		}
		st.ackedAt = time.Now()
		mu.Lock()
		done = append(done, st)
		mu.Unlock()
		return nil
	}
	for i := range base {
		require.NoError(t, publish(i))
	}
	// The replica holds the base before the first REQ: every page it answers
	// is one of a matching set larger than the limit.
	var head int64
	require.NoError(t, queryRow(t, c.Primary.URL(dbName), "SELECT seq FROM cn_relay.outbox_head").Scan(&head))
	require.Eventually(t, func() bool {
		var replayed int64
		err := queryRow(t, rep.URL(dbName), "SELECT seq FROM cn_relay.outbox_head").Scan(&replayed)
		if recoveryConflict(err) {
			return false
		}
		require.NoError(t, err)
		return replayed >= head
	}, 20*time.Second, 10*time.Millisecond, "the replica replayed the base")
	pubErr := make(chan error, 1)
	start := time.Now()
	go func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range steps {
			<-tick.C
			if err := publish(i); err != nil {
				pubErr <- err
				return
			}
		}
		pubErr <- nil
	}()

	// 200 subscriptions opened at random times while the publisher runs,
	// their shapes in turn.
	span := time.Duration(steps) * every
	clients := make([]*testkit.Client, conns)
	var wg sync.WaitGroup
	reqErr := make(chan error, conns)
	for i := range clients {
		clients[i] = testkit.Dial(t, r.ws)
		offsets := make([]time.Duration, subsPerConn)
		for j := range offsets {
			offsets[j] = time.Duration(rand.Int64N(int64(span)))
		}
		slices.Sort(offsets)
		wg.Add(1)
		go func(ci int, cl *testkit.Client) {
			defer wg.Done()
			for j, off := range offsets {
				select {
				case <-time.After(time.Until(start.Add(off))):
				case <-t.Context().Done():
					return
				}
				fs := shapes[(ci*subsPerConn+j)%len(shapes)]
				if err := req(cl, fmt.Sprintf("s%d", j), fs...); err != nil {
					reqErr <- err
					return
				}
			}
		}(i, clients[i])
	}
	wg.Wait()
	close(reqErr)
	for err := range reqErr {
		require.NoError(t, err)
	}
	require.NoError(t, <-pubErr)
	mu.Lock()
	last := done[len(done)-1].ev
	m := newPageModel(done)
	mu.Unlock()
	require.Equal(t, 1, last.Kind, "the last step is a note")

	// Live delivery is in seq order, and one connection's messages arrive in
	// the order they were queued; the last note is the last write, and every
	// connection has subscriptions that ask for it. Once each of those has
	// it and every subscription has its EOSE, each has everything it will
	// get.
	has := func(s testkit.SubState, id string) bool {
		return slices.ContainsFunc(s.Live, func(e *nostr.Event) bool { return e.ID == id }) ||
			slices.ContainsFunc(s.Stored, func(e *nostr.Event) bool { return e.ID == id })
	}
	require.Eventually(t, func() bool {
		for ci, cl := range clients {
			for j := range subsPerConn {
				s := cl.Sub(fmt.Sprintf("s%d", j)).State()
				require.Empty(t, s.Reason, "subscription closed")
				if !s.EOSE || (matchesAny(shapes[(ci*subsPerConn+j)%len(shapes)], last) && !has(s, last.ID)) {
					return false
				}
			}
		}
		return true
	}, 60*time.Second, 20*time.Millisecond, "every subscription got its EOSE, and the last note if it asks for it")

	var problems []string
	failing, short, stale := 0, 0, 0
	for ci, cl := range clients {
		for j := range subsPerConn {
			id := fmt.Sprintf("s%d", j)
			shape := (ci*subsPerConn + j) % len(shapes)
			s := cl.Sub(id).State()
			p, isShort, wasStale := m.check(s, shapes[shape])
			for _, msg := range p {
				problems = append(problems, fmt.Sprintf("client %d sub %s (shape %d, REQ at +%s): %s",
					ci, id, shape, s.ReqAt.Sub(start).Round(time.Millisecond), msg))
			}
			if len(p) > 0 {
				failing++
			}
			if isShort {
				short++
			}
			if wasStale {
				stale++
			}
		}
	}
	t.Logf("%d of %d subscriptions wrong: %d with a stored part shorter than the page, %d with an older snapshot's page", failing, conns*subsPerConn, short, stale)
	require.Empty(t, problems[:min(len(problems), 10)], "%d of %d subscriptions wrong (%d problems)", failing, conns*subsPerConn, len(problems))

	// The replica served, and the handoff had work to do.
	t.Logf("REQs read on the replica: %v; handoff: %v events left out, %v added, %v REQs refilled",
		r.metric(t, `cn_relay_read_seconds_count{op="req",pool="`+name+`"}`), r.metric(t, "cn_relay_handoff_dropped_events_total"),
		r.metric(t, "cn_relay_handoff_caught_events_total"), r.metric(t, "cn_relay_handoff_refills_total"))
	require.Greater(t, r.metric(t, `cn_relay_read_seconds_count{op="req",pool="`+name+`"}`), float64(conns*subsPerConn)/2, "most REQs read the replica")
	require.Greater(t, r.metric(t, "cn_relay_handoff_dropped_events_total"), 0.0, "events deleted or replaced on the primary were left out")
	require.Greater(t, r.metric(t, "cn_relay_handoff_caught_events_total"), 0.0, "events the replica lacked were added")
	require.Greater(t, r.metric(t, "cn_relay_handoff_refills_total"), 0.0, "pages short of their limit were filled from the primary")
}
