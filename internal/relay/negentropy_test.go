package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay/wsconn"
	"github.com/kukuri/communitynode/internal/store"
)

// negEnv is a relay over a real Postgres store, for NIP-77 tests.
type negEnv struct {
	t     testing.TB
	db    *pgtest.DB
	st    pgStore
	relay *testRelay
}

func newNegEnv(t *testing.T, edit func(*Config)) *negEnv { return newNegEnvTB(t, edit) }

func newNegEnvTB(t testing.TB, edit func(*Config)) *negEnv {
	t.Helper()
	db := pgtest.New(t)
	st := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
	cfg := testConfig()
	if edit != nil {
		edit(&cfg)
	}
	reg := prometheus.NewRegistry()
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: st, Feed: NewPGFeed(db.Pool, nil), Registerer: reg}))
	require.NoError(t, err)
	return &negEnv{t: t, db: db, st: st, relay: serveRelay(t, r)}
}

// another serves one more relay on the same store, with its own config.
func (e *negEnv) another(edit func(*Config)) *testRelay {
	e.t.Helper()
	cfg := testConfig()
	edit(&cfg)
	r, err := New(cfg, WithEventCache(cfg, Deps{Store: e.st, Feed: NewPGFeed(e.db.Pool, nil), Registerer: prometheus.NewRegistry()}))
	require.NoError(e.t, err)
	return serveRelay(e.t, r)
}

// store ingests evs through the store path of EVENT, in batches, and requires
// every one stored.
func (e *negEnv) store(evs []*nostr.Event) {
	e.t.Helper()
	for batch := range slices.Chunk(evs, 500) {
		res, err := e.st.Ingest(context.Background(), batch)
		require.NoError(e.t, err)
		for i, r := range res {
			require.True(e.t, r.OK, "event %d: %s", i, r.Message)
		}
	}
}

// signedNotes returns n kind-1 notes by k in topic "go" over spread seconds
// (many share a timestamp).
func signedNotes(t *testing.T, k key, n, spread int, rng *mrand.Rand) []*nostr.Event {
	t.Helper()
	base := nostr.Now() - 3600
	evs := make([]*nostr.Event, n)
	for i := range evs {
		ev := &nostr.Event{Kind: 1, CreatedAt: base + nostr.Timestamp(rng.IntN(spread)), Tags: nostr.Tags{{"t", "go"}},
			Content: "note " + strconv.Itoa(i) + " " + strconv.FormatUint(rng.Uint64(), 36)}
		require.NoError(t, ev.Sign(k.sk))
		evs[i] = ev
	}
	return evs
}

// syncThrough runs a whole NIP-77 session as the client, with go-nostr's
// negentropy client (internal/negentropy.Client wraps it), over c, and returns
// what only the client has and what only the relay has.
func syncThrough(t *testing.T, c *client, sub string, filter map[string]any, local []negentropy.Item, frameLimit int) (have, need []string) {
	t.Helper()
	cl, err := negentropy.NewClient(local, frameLimit)
	require.NoError(t, err)
	defer cl.Close()
	msg, err := cl.Start()
	require.NoError(t, err)
	c.send("NEG-OPEN", sub, filter, msg)
	for round := 0; ; round++ {
		require.Less(t, round, 500, "no end in sight")
		reply := c.expect("NEG-MSG")
		require.Len(t, reply, 3)
		require.Equal(t, sub, str(t, reply[1]))
		next, done, err := cl.Reconcile(str(t, reply[2]))
		require.NoError(t, err)
		if done {
			break
		}
		c.send("NEG-MSG", sub, next)
	}
	c.send("NEG-CLOSE", sub)
	return cl.Result()
}

func itemsOf(evs []*nostr.Event) []negentropy.Item {
	items := make([]negentropy.Item, len(evs))
	for i, ev := range evs {
		items[i] = negentropy.Item{CreatedAt: ev.CreatedAt, ID: ev.ID}
	}
	return items
}

func idsOf(items []negentropy.Item) []string {
	ids := make([]string, len(items))
	for i, it := range items {
		ids[i] = it.ID
	}
	slices.Sort(ids)
	return ids
}

// TestNegentropyDifferential: random sets on both sides (1 to 20,000 items
// each, many equal timestamps, several frame limits on each side; with
// -short, make test, up to 3,000: the 20,000-item runs are make test-long's); the
// have/need found through the relay and its Postgres store, with go-nostr's
// negentropy client, equal the true set difference. The relay's side is
// written to the events table directly (putItems): the ingest path is not
// what this checks, and signing 40,000 events would take most of a minute.
func TestNegentropyDifferential(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	rng := mrand.New(mrand.NewPCG(7, 24))
	conns := map[int]*client{}
	for run, tc := range []struct{ n, spread, clientLimit, serverLimit int }{
		{1, 1, 0, 4096},
		{2, 1, 4096, 4096},
		{40, 3, 0, 60000},
		{300, 5, 4096, 4096},
		{1200, 20, 8192, 60000},
		{3000, 2000, 4096, 16384},
		{20_000, 50, 60000, 60000},
		{20_000, 20_000, 4096, 4096},
		{20_000, 3, 16384, 60000},
	} {
		if testing.Short() && tc.n > 3000 {
			continue
		}
		c := conns[tc.serverLimit]
		if c == nil {
			c = dial(t, e.another(func(cfg *Config) { cfg.NegFrameLimit = tc.serverLimit }).url)
			conns[tc.serverLimit] = c
		}
		pubkey := randomHex(32)
		base := nostr.Timestamp(1_700_000_000 + run*100_000)
		var local, remote []negentropy.Item
		for range tc.n {
			it := negentropy.Item{CreatedAt: base + nostr.Timestamp(rng.IntN(tc.spread)), ID: randomHex(32)}
			switch rng.IntN(4) {
			case 0:
				local = append(local, it)
			case 1:
				remote = append(remote, it)
			default:
				local = append(local, it)
				remote = append(remote, it)
			}
		}
		e.putItems(pubkey, remote)
		have, need := syncThrough(t, c, "d"+strconv.Itoa(run), map[string]any{"authors": []string{pubkey}}, local, tc.clientLimit)
		wantHave, wantNeed := diff(idsOf(local), idsOf(remote))
		require.Equal(t, wantHave, have, "run %d: have", run)
		require.Equal(t, wantNeed, need, "run %d: need", run)
	}
}

// TestNegentropyTreeDifferential is TestNegentropyDifferential against the
// fingerprint tree: random sets (many equal timestamps, frame limits on each
// side), each run in its own time window of one relay's tree (filled at
// start from the events table, the items in topics), synced by anonymous
// readers with {since, until}; the have/need equal the true set difference,
// and every session was served from the tree.
func TestNegentropyTreeDifferential(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	rng := mrand.New(mrand.NewPCG(8, 25))
	type run struct {
		n, spread, clientLimit, serverLimit int
		base                                nostr.Timestamp
		local, remote                       []negentropy.Item
	}
	runs := []*run{
		{n: 1, spread: 1, clientLimit: 0, serverLimit: 4096},
		{n: 2, spread: 1, clientLimit: 4096, serverLimit: 4096},
		{n: 40, spread: 3, clientLimit: 0, serverLimit: 60000},
		{n: 300, spread: 5, clientLimit: 4096, serverLimit: 4096},
		{n: 1200, spread: 20, clientLimit: 8192, serverLimit: 60000},
		{n: 3000, spread: 2000, clientLimit: 4096, serverLimit: 16384},
		{n: 20_000, spread: 50, clientLimit: 60000, serverLimit: 60000},
		{n: 20_000, spread: 3, clientLimit: 16384, serverLimit: 4096},
	}
	pubkey := randomHex(32)
	for i, r := range runs {
		if testing.Short() && r.n > 3000 {
			continue
		}
		r.base = nostr.Timestamp(1_700_000_000 + i*100_000)
		for range r.n {
			it := negentropy.Item{CreatedAt: r.base + nostr.Timestamp(rng.IntN(r.spread)), ID: randomHex(32)}
			switch rng.IntN(4) {
			case 0:
				r.local = append(r.local, it)
			case 1:
				r.remote = append(r.remote, it)
			default:
				r.local = append(r.local, it)
				r.remote = append(r.remote, it)
			}
		}
		e.putScopedItems(pubkey, r.remote)
	}
	relays := map[int]*testRelay{}
	for i, r := range runs {
		if r.base == 0 {
			continue
		}
		tr := relays[r.serverLimit]
		if tr == nil {
			tr = e.another(func(cfg *Config) { cfg.NegFrameLimit = r.serverLimit })
			relays[r.serverLimit] = tr
		}
		treeCurrent(t, tr)
		before := negTreeSessions(tr)
		have, need := syncThrough(t, dial(t, tr.url), "d"+strconv.Itoa(i),
			map[string]any{"since": r.base, "until": r.base + nostr.Timestamp(r.spread) - 1}, r.local, r.clientLimit)
		wantHave, wantNeed := diff(idsOf(r.local), idsOf(r.remote))
		require.Equal(t, wantHave, have, "run %d: have", i)
		require.Equal(t, wantNeed, need, "run %d: need", i)
		require.Equal(t, before+1, negTreeSessions(tr), "run %d: served from the tree", i)
	}
}

// putScopedItems is putItems with a topic for each event (an event_topics
// scope row), as the store places events: the fingerprint tree holds them.
func (e *negEnv) putScopedItems(pubkey string, items []negentropy.Item) {
	e.t.Helper()
	e.putItems(pubkey, items)
	rows := make([][]any, len(items))
	for i, it := range items {
		rows[i] = []any{it.ID, "go", int64(it.CreatedAt), pubkey, int32(1)}
	}
	_, err := e.db.Pool.CopyFrom(context.Background(), pgx.Identifier{"cn_relay", "event_topics"},
		[]string{"event_id", "topic_id", "created_at", "pubkey", "kind"}, pgx.CopyFromRows(rows))
	require.NoError(e.t, err)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// putItems writes visible kind-1 events by pubkey with the items' ids and
// timestamps straight into the events table (unsigned: only NIP-77 reads
// them).
func (e *negEnv) putItems(pubkey string, items []negentropy.Item) {
	e.t.Helper()
	rows := make([][]any, len(items))
	sig := strings.Repeat("0", 128)
	for i, it := range items {
		rows[i] = []any{it.ID, pubkey, int32(1), int64(it.CreatedAt), "", sig}
	}
	_, err := e.db.Pool.CopyFrom(context.Background(), pgx.Identifier{"cn_relay", "events"},
		[]string{"id", "pubkey", "kind", "created_at", "content", "sig"}, pgx.CopyFromRows(rows))
	require.NoError(e.t, err)
}

// diff returns the ids only in a and those only in b (both sorted).
func diff(a, b []string) (onlyA, onlyB []string) {
	for _, id := range a {
		if _, found := slices.BinarySearch(b, id); !found {
			onlyA = append(onlyA, id)
		}
	}
	for _, id := range b {
		if _, found := slices.BinarySearch(a, id); !found {
			onlyB = append(onlyB, id)
		}
	}
	return onlyA, onlyB
}

// TestNegentropyVisibility: a session covers what a REQ would return and
// nothing else: deleted (NIP-09) and expired events and direct messages to
// someone else never appear; asking for direct messages unauthenticated is
// refused as REQ is.
func TestNegentropyVisibility(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	rng := mrand.New(mrand.NewPCG(1, 1))
	k := newKey(t)
	notes := signedNotes(t, k, 5, 1, rng)
	expired := k.note(t, "expired", func(ev *nostr.Event) {
		ev.Tags = append(ev.Tags, nostr.Tag{"expiration", strconv.FormatInt(int64(nostr.Now())-10, 10)})
	})
	recipient := newKey(t) // a member: a DM must name one
	e.store([]*nostr.Event{recipient.note(t, "hello", nil)})
	dm := &nostr.Event{Kind: protocol.KindEncryptedDM, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"p", recipient.pk}}, Content: "secret"}
	require.NoError(t, dm.Sign(k.sk))
	deletion := &nostr.Event{Kind: 5, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"e", notes[0].ID}, {"t", "go"}}}
	require.NoError(t, deletion.Sign(k.sk))
	e.store(notes)
	e.store([]*nostr.Event{expired, dm, deletion})

	c := dial(t, e.relay.url)
	_, need := syncThrough(t, c, "v", map[string]any{"authors": []string{k.pk}}, nil, 0)
	c.send("REQ", "r", map[string]any{"authors": []string{k.pk}})
	var want []string
	for {
		msg := c.next()
		if str(t, msg[0]) == "EOSE" {
			break
		}
		var ev nostr.Event
		require.NoError(t, json.Unmarshal(msg[2], &ev))
		want = append(want, ev.ID)
	}
	slices.Sort(want)
	require.Equal(t, want, need, "the same set as REQ")
	for _, hidden := range []string{notes[0].ID, expired.ID, dm.ID} {
		require.NotContains(t, need, hidden)
	}
	require.Contains(t, need, deletion.ID)
	require.Len(t, need, 5) // four notes and the deletion

	c.send("NEG-OPEN", "dm", map[string]any{"kinds": []int{4}}, "61")
	msg := c.expect("NEG-ERR")
	require.Equal(t, "dm", str(t, msg[1]))
	require.True(t, strings.HasPrefix(str(t, msg[2]), "auth-required:"), join(msg))
	require.Zero(t, c.challengeAt().after, "the challenge to answer came on connect (NIP-42)")
	require.Equal(t, 7, c.challengeAt().after, "and again right before the auth-required answer (issue 48)")
	c.noChallenge()
}

// negErr reads the next message, a NEG-ERR for sub, and returns it.
func negErr(t *testing.T, c *client, sub string) []json.RawMessage {
	t.Helper()
	msg := c.expect("NEG-ERR")
	require.GreaterOrEqual(t, len(msg), 3, join(msg))
	require.Equal(t, sub, str(t, msg[1]))
	return msg
}

// TestNegentropyHostileMessages: malformed and crashing messages cost the
// client its session (NEG-ERR), never the connection or the relay: the same
// connection then syncs correctly.
func TestNegentropyHostileMessages(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	k := newKey(t)
	evs := signedNotes(t, k, 100, 2, mrand.New(mrand.NewPCG(3, 3)))
	e.store(evs)
	filter := map[string]any{"authors": []string{k.pk}}
	overflow := "61" + "01" + strings.Repeat("ff", 9) + "7f" // the library slices with a negative length
	hugeIDList := "61" + "00" + "00" + "02" + strings.Repeat("ff", 7) + "7f"

	c := dial(t, e.relay.url)
	for i, open := range []string{overflow, hugeIDList, "zz", "6", "", "7f", "61" + "00" + "00" + "01" + strings.Repeat("AB", 16)} {
		sub := "o" + strconv.Itoa(i)
		c.send("NEG-OPEN", sub, filter, open)
		require.True(t, strings.HasPrefix(str(t, negErr(t, c, sub)[2]), "invalid:"), "open %q", open)
	}
	for _, raw := range []string{
		`["NEG-OPEN","p1",{"authors":["` + k.pk + `"]},"61","extra"]`,
		`["NEG-OPEN","p2",{"bogus":1},"61"]`,
		`["NEG-OPEN","p3",{},61]`,
		`["NEG-MSG","p4"]`,
	} {
		c.sendRaw(raw)
		msg := c.expect("NEG-ERR")
		require.True(t, strings.HasPrefix(str(t, msg[2]), "invalid:"), raw)
	}

	// A session whose client turns hostile mid-way: the session ends, the
	// relay answers the next message for it as an unknown session.
	for i, bad := range []string{overflow, hugeIDList, "61" + "00", "nothex"} {
		sub := "m" + strconv.Itoa(i)
		cl, err := negentropy.NewClient(itemsOf(evs[:50]), 0)
		require.NoError(t, err)
		start, err := cl.Start()
		require.NoError(t, err)
		cl.Close()
		c.send("NEG-OPEN", sub, filter, start)
		c.expect("NEG-MSG")
		c.send("NEG-MSG", sub, bad)
		require.True(t, strings.HasPrefix(str(t, negErr(t, c, sub)[2]), "invalid:"), "msg %q", bad)
		c.send("NEG-MSG", sub, start)
		require.Equal(t, reasonNegUnknown, str(t, negErr(t, c, sub)[2]))
	}

	// Reusing an id replaces the session (go-nostr's client always uses the
	// same one): one answer per NEG-OPEN, and the new session works.
	c.send("NEG-OPEN", "same", filter, "61")
	c.expect("NEG-MSG")
	have, need := syncThrough(t, c, "same", filter, itemsOf(evs[10:]), 0)
	require.Empty(t, have)
	require.Equal(t, idsOf(itemsOf(evs[:10])), need)

	c.send("REQ", "still", filter)
	for range evs {
		c.expect("EVENT")
	}
	c.eose("still")
	c.quiet()
	require.Zero(t, openNegs(e.relay.Relay), "every session ended")
}

// openNegs counts the NIP-77 sessions open on every connection of r.
func openNegs(r *Relay) int {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	n := 0
	for c := range r.conns {
		c.mu.Lock()
		n += len(c.negs())
		c.mu.Unlock()
	}
	return n
}

// TestNegentropyLimits: over MaxSyncEvents a session is refused blocked with
// the limit as the 4th element; sessions count against MaxSubscriptions with
// REQs; an idle session is closed; NIP-11 lists 77 only while it is served.
func TestNegentropyLimits(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) {
		cfg.MaxSyncEvents = 3
		cfg.MaxSubscriptions = 2
	})
	k := newKey(t)
	evs := signedNotes(t, k, 4, 1, mrand.New(mrand.NewPCG(5, 5)))
	e.store(evs)
	c := dial(t, e.relay.url)

	c.send("NEG-OPEN", "big", map[string]any{"authors": []string{k.pk}}, "61")
	msg := negErr(t, c, "big")
	require.True(t, strings.HasPrefix(str(t, msg[2]), "blocked:"), join(msg))
	require.Len(t, msg, 4)
	require.JSONEq(t, "3", string(msg[3]))

	small := map[string]any{"ids": []string{evs[0].ID, evs[1].ID}}
	c.send("REQ", "r", small)
	c.expect("EVENT")
	c.expect("EVENT")
	c.eose("r")
	c.send("NEG-OPEN", "n1", small, "61")
	c.expect("NEG-MSG")
	c.send("NEG-OPEN", "n2", small, "61")
	require.Equal(t, reasonTooManySubs, str(t, negErr(t, c, "n2")[2]))
	c.send("REQ", "r2", small)
	require.Equal(t, reasonTooManySubs, c.closed("r2"))
	c.send("NEG-CLOSE", "n1")
	c.send("NEG-OPEN", "n2", small, "61")
	c.expect("NEG-MSG")

	// An idle session is ended by the relay.
	idle := newNegEnv(t, func(cfg *Config) { cfg.NegIdleTimeout = 50 * time.Millisecond })
	ic := dial(t, idle.relay.url)
	ic.send("NEG-OPEN", "i", small, "61")
	ic.expect("NEG-MSG")
	require.Equal(t, reasonNegIdle, str(t, negErr(t, ic, "i")[2]))
	require.Zero(t, openNegs(idle.relay.Relay))

	require.Contains(t, nips(t, e.relay.http), 77.0)
	off := newNegEnv(t, func(cfg *Config) { cfg.Negentropy = false })
	require.NotContains(t, nips(t, off.relay.http), 77.0)
	oc := dial(t, off.relay.url)
	oc.send("NEG-OPEN", "x", small, "61")
	require.Equal(t, reasonNegDisabled, str(t, negErr(t, oc, "x")[2]))
}

// nips reads supported_nips from the relay's NIP-11 document.
func nips(t *testing.T, url string) []any {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var doc map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	return doc["supported_nips"].([]any)
}

// TestNegentropyConcurrencyCap: while every NIP-77 slot of the relay is busy,
// a session's round waits, a REQ of another connection is still served, and
// the round runs once a slot frees.
func TestNegentropyConcurrencyCap(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) { cfg.NegConcurrency = 1 })
	k := newKey(t)
	evs := signedNotes(t, k, 3, 1, mrand.New(mrand.NewPCG(4, 4)))
	e.store(evs)
	filter := map[string]any{"authors": []string{k.pk}}

	e.relay.negSlots <- struct{}{} // the only slot is busy
	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "waits", filter, "61")
	other := dial(t, e.relay.url)
	other.send("REQ", "r", filter)
	for range evs {
		other.expect("EVENT")
	}
	other.eose("r")
	c.quiet() // the round has not run: its slot is taken
	<-e.relay.negSlots
	msg := c.expect("NEG-MSG")
	require.Equal(t, "waits", str(t, msg[1]))
}

// TestNegentropyCloseWhileWaiting: a session waiting for a busy slot is
// closed at once by NEG-CLOSE (or a NEG-OPEN reusing its id), without waiting
// for the slot, and sends nothing afterwards.
func TestNegentropyCloseWhileWaiting(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) { cfg.NegConcurrency = 1 })
	k := newKey(t)
	e.store(signedNotes(t, k, 2, 1, mrand.New(mrand.NewPCG(6, 6))))
	filter := map[string]any{"authors": []string{k.pk}}
	e.relay.negSlots <- struct{}{}
	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "w", filter, "61")
	c.send("NEG-CLOSE", "w")
	c.send("COUNT", "n", filter) // answered only after NEG-CLOSE was handled
	msg := c.expect("COUNT")
	require.Equal(t, "n", str(t, msg[1]))
	require.Zero(t, openNegs(e.relay.Relay))
	<-e.relay.negSlots
	c.send("NEG-OPEN", "w2", filter, "61")
	msg = c.expect("NEG-MSG") // nothing of "w" came before
	require.Equal(t, "w2", str(t, msg[1]))
}

// TestNegentropyOtherVersion: a message of another protocol version gets the
// protocol's answer, the relay's version alone ("61"): as a NEG-OPEN, without
// opening a session (nothing is read); as a NEG-MSG, and the session goes on.
func TestNegentropyOtherVersion(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, nil)
	k := newKey(t)
	evs := signedNotes(t, k, 30, 3, mrand.New(mrand.NewPCG(8, 8)))
	e.store(evs)
	filter := map[string]any{"authors": []string{k.pk}}
	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "v2", filter, "62")
	msg := c.expect("NEG-MSG")
	require.Equal(t, []string{"v2", "61"}, []string{str(t, msg[1]), str(t, msg[2])})
	c.send("COUNT", "n", filter) // answered after the NEG-OPEN was handled
	c.expect("COUNT")
	require.Zero(t, openNegs(e.relay.Relay), "no session for another version")

	cl, err := negentropy.NewClient(itemsOf(evs[5:]), 0)
	require.NoError(t, err)
	defer cl.Close()
	start, err := cl.Start()
	require.NoError(t, err)
	c.send("NEG-OPEN", "s", filter, start)
	first := c.expect("NEG-MSG")
	c.send("NEG-MSG", "s", "6f00")
	msg = c.expect("NEG-MSG")
	require.Equal(t, []string{"s", "61"}, []string{str(t, msg[1]), str(t, msg[2])})
	// The session is still open and in step: the client's next message works.
	next, done, err := cl.Reconcile(str(t, first[2]))
	require.NoError(t, err)
	for !done {
		c.send("NEG-MSG", "s", next)
		reply := c.expect("NEG-MSG")
		next, done, err = cl.Reconcile(str(t, reply[2]))
		require.NoError(t, err)
	}
	_, need := cl.Result()
	require.Equal(t, idsOf(itemsOf(evs[:5])), need)
}

// negHeld sums what the connections of r hold for their NIP-77 sessions.
func negHeld(r *Relay) int64 {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()
	var n int64
	for c := range r.conns {
		n += c.negMem.Held()
	}
	return n
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // (polling, not synchronisation)
	}
}

// TestNegentropyMemoryBudget: a session's items are charged to its
// connection's sync budget (and so to the relay's budget) until it ends; a
// connection's sessions hold at most MaxSyncEvents items together (blocked,
// with the limit); a full relay budget refuses a session (error); closing the
// session or the connection gives every byte back.
func TestNegentropyMemoryBudget(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) { cfg.MaxSyncEvents = 50 })
	k := newKey(t)
	evs := signedNotes(t, k, 30, 3, mrand.New(mrand.NewPCG(10, 10)))
	e.store(evs)
	filter := map[string]any{"authors": []string{k.pk}}
	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "a", filter, "61")
	c.expect("NEG-MSG")
	require.EqualValues(t, 30*negItemBytes, negHeld(e.relay.Relay))
	require.GreaterOrEqual(t, e.relay.mem.Held(), int64(30*negItemBytes), "drawn from the relay's budget")

	c.send("NEG-OPEN", "b", filter, "61") // 60 items together: over 50
	msg := negErr(t, c, "b")
	require.True(t, strings.HasPrefix(str(t, msg[2]), "blocked:"), join(msg))
	require.Len(t, msg, 4)
	require.JSONEq(t, "50", string(msg[3]))
	require.EqualValues(t, 30*negItemBytes, negHeld(e.relay.Relay), "the refused session gave its items back")

	c.send("NEG-CLOSE", "a")
	c.send("COUNT", "n", filter) // answered after NEG-CLOSE was handled
	c.expect("COUNT")
	require.Zero(t, negHeld(e.relay.Relay))
	c.send("NEG-OPEN", "b", filter, "61")
	c.expect("NEG-MSG")
	require.EqualValues(t, 30*negItemBytes, negHeld(e.relay.Relay))
	_ = c.tk.Close()
	waitFor(t, "the closed connection's bytes back", func() bool { return e.relay.mem.Held() == 0 })

	// A relay whose budget cannot hold the items (others hold all but ten
	// items' worth) refuses the session.
	tight := e.another(func(*Config) {})
	others := int(tight.mem.Limit()) - 10*negItemBytes
	require.Equal(t, wsconn.Taken, tight.mem.Take(others, tight.mem.Limit(), false))
	defer tight.mem.Give(others)
	tc := dial(t, tight.url)
	tc.send("NEG-OPEN", "t", filter, "61")
	require.Equal(t, reasonNegMemory, str(t, negErr(t, tc, "t")[2]))
	tc.send("COUNT", "n", filter)
	tc.expect("COUNT")
	require.Zero(t, negHeld(tight.Relay))
}

// TestNegentropyMessageRate: NEG-MSG draws on the client address's REQ rate
// (as NEG-OPEN does): one over it ends its session with NEG-ERR rate-limited.
func TestNegentropyMessageRate(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) { cfg.ReqRatePerIP = Rate{PerSecond: 0.001, Burst: 3} })
	k := newKey(t)
	evs := signedNotes(t, k, 20, 2, mrand.New(mrand.NewPCG(12, 12)))
	e.store(evs)
	filter := map[string]any{"authors": []string{k.pk}}
	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "s", filter, "61") // token 1
	c.expect("NEG-MSG")
	c.send("NEG-MSG", "s", "61") // token 2
	c.expect("NEG-MSG")
	c.send("NEG-MSG", "s", "61") // token 3
	c.expect("NEG-MSG")
	c.send("NEG-MSG", "s", "61")
	require.Equal(t, reasonNegRate, str(t, negErr(t, c, "s")[2]))
	require.Zero(t, openNegs(e.relay.Relay))
	require.Zero(t, negHeld(e.relay.Relay))
}

// TestNegentropyMessageTooLarge: a NEG-MSG (or REQ) larger than the message
// limit gets an answer naming its subscription: NEG-ERR (the session ends)
// or CLOSED, instead of an anonymous NOTICE; beyond twice the limit the socket
// is closed with 1009 (message too big), which the client sees.
func TestNegentropyMessageTooLarge(t *testing.T) {
	t.Parallel()
	e := newNegEnv(t, func(cfg *Config) { cfg.Limits.MaxMessageBytes = 4096 })
	k := newKey(t)
	e.store(signedNotes(t, k, 5, 1, mrand.New(mrand.NewPCG(13, 13))))
	filter := map[string]any{"authors": []string{k.pk}}
	c := dial(t, e.relay.url)
	c.send("NEG-OPEN", "big", filter, "61")
	c.expect("NEG-MSG")
	c.send("NEG-MSG", "big", "61"+strings.Repeat("00", 3000))
	msg := negErr(t, c, "big")
	require.Contains(t, str(t, msg[2]), "invalid: message too large", join(msg))
	require.Zero(t, openNegs(e.relay.Relay), "the session ended")
	c.send("REQ", "r", map[string]any{"ids": slices.Repeat([]string{strings.Repeat("ab", 32)}, 70)})
	require.Contains(t, c.closed("r"), "invalid: message too large")

	c.send("NEG-MSG", "big", "61"+strings.Repeat("00", 5000)) // over twice the limit
	select {
	case <-c.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection is still open")
	}
	require.True(t, websocket.IsCloseError(c.err, websocket.CloseMessageTooBig), "%v", c.err)
}
