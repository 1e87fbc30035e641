package relaysync_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relaysync"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// side is one node's store on a database of its own.
type side struct {
	db *pgtest.DB
	st *store.Store
}

func newSide(t *testing.T) side {
	t.Helper()
	db := pgtest.New(t)
	return side{db: db, st: store.New(db.Pool, testkit.RunWriter(t, db.Pool), protocol.DefaultTopicRules())}
}

func (s side) ingest(t *testing.T, evs ...*nostr.Event) {
	t.Helper()
	res, err := s.st.Ingest(context.Background(), evs)
	require.NoError(t, err)
	for i, v := range res {
		require.True(t, v.OK, "event %d: %s", i, v.Message)
	}
}

// Items and Events make s this node's side of a sync: the public view of its
// store, as cnctl sync reads it (node.syncLocal).
func (s side) Items(ctx context.Context, f nostr.Filter) ([]negentropy.Item, error) {
	return store.NewReader(s.db.Pool).SyncItems(ctx, f, protocol.Viewer{}, 1000, nil)
}

func (s side) Events(ctx context.Context, ids []string) ([]*nostr.Event, error) {
	return store.NewReader(s.db.Pool).Events(ctx, ids)
}

// serve runs a real relay on s until the test ends and returns its URL.
func (s side) serve(t *testing.T, edit func(*relay.Config)) string {
	t.Helper()
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	if edit != nil {
		edit(&cfg)
	}
	r, err := relay.New(cfg, relay.Deps{Store: s.st,
		Feed: relay.NewPGFeed(s.db.Pool, nil), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "ws://" + ln.Addr().String()
}

func notes(t *testing.T, sk string, n int, at nostr.Timestamp, content string) []*nostr.Event {
	out := make([]*nostr.Event, n)
	for i := range out {
		out[i] = testkit.Sign(t, sk, 1, at+nostr.Timestamp(i), nostr.Tags{{"t", "sync"}}, content)
	}
	return out
}

func idsOf(evs []*nostr.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	slices.Sort(out)
	return out
}

// TestSyncBothWays: against a real relay, a sync in both directions finds the
// events only on each side, writes exactly the remote's missing ones as JSON
// Lines (for the importer) and uploads the local ones, which the remote then
// serves; a second sync finds nothing to move.
func TestSyncBothWays(t *testing.T) {
	t.Parallel()
	local, remote := newSide(t), newSide(t)
	url := remote.serve(t, nil)
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - 1000
	shared := notes(t, sk, 5, at, "shared")
	onlyHere := notes(t, sk, 7, at+100, "only here")
	onlyThere := notes(t, sk, 3, at+200, "only there")
	local.ingest(t, append(slices.Clone(shared), onlyHere...)...)
	remote.ingest(t, append(slices.Clone(shared), onlyThere...)...)

	var down, progress bytes.Buffer
	f := nostr.Filter{Kinds: []int{1}}
	res, err := relaysync.Run(context.Background(), local, relaysync.Options{URL: url, Filter: f, Direction: relaysync.Both, Batch: 2}, &down, &progress)
	require.NoError(t, err)
	require.Equal(t, 7, res.Have)
	require.Equal(t, 3, res.Need)
	require.Positive(t, res.Rounds)
	require.Positive(t, res.NegBytesSent)
	require.Positive(t, res.NegBytesReceived)
	require.Equal(t, 3, res.Downloaded)
	require.Equal(t, 7, res.Uploaded)
	require.Empty(t, res.UploadRefused)
	require.Contains(t, progress.String(), "7 only here, 3 only there")

	var got []*nostr.Event
	sc := bufio.NewScanner(&down)
	for sc.Scan() {
		ev := &nostr.Event{}
		require.NoError(t, json.Unmarshal(sc.Bytes(), ev))
		got = append(got, ev)
	}
	require.Equal(t, idsOf(onlyThere), idsOf(got), "the downloaded lines are the remote's missing events, once each")

	c := testkit.Dial(t, url)
	require.Equal(t, idsOf(append(append(slices.Clone(shared), onlyHere...), onlyThere...)), idsOf(c.Query(f)), "the remote has the uploaded events")

	local.ingest(t, got...)
	res, err = relaysync.Run(context.Background(), local, relaysync.Options{URL: url, Filter: f, Direction: relaysync.Both}, &down, nil)
	require.NoError(t, err)
	require.Zero(t, res.Have)
	require.Zero(t, res.Need)
}

// TestSyncCountsRefusals: events the remote refuses are counted by reason,
// with the reason's details cut off, and are not counted as uploaded.
func TestSyncCountsRefusals(t *testing.T) {
	t.Parallel()
	local, remote := newSide(t), newSide(t)
	// The remote takes no content longer than 5 bytes.
	url := remote.serve(t, func(c *relay.Config) { c.Limits.MaxContentBytes = 5 })
	sk := nostr.GeneratePrivateKey()
	local.ingest(t, notes(t, sk, 4, nostr.Now()-10, "far too long for the remote")...)
	res, err := relaysync.Run(context.Background(), local, relaysync.Options{URL: url, Filter: nostr.Filter{Kinds: []int{1}}, Direction: relaysync.Up}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, 4, res.Have)
	require.Zero(t, res.Uploaded)
	require.Len(t, res.UploadRefused, 1, "%v", res.UploadRefused)
	for reason, n := range res.UploadRefused {
		require.Equal(t, 4, n)
		require.False(t, strings.HasSuffix(reason, ")"), "details are cut: %q", reason)
	}
}

// TestSyncWithoutNIP77: a real relay with NIP-77 off ends the sync with an
// error that says so, within the timeout, instead of hanging.
func TestSyncWithoutNIP77(t *testing.T) {
	t.Parallel()
	local, remote := newSide(t), newSide(t)
	url := remote.serve(t, func(c *relay.Config) { c.Negentropy = false })
	start := time.Now()
	_, err := relaysync.Run(context.Background(), local, relaysync.Options{URL: url, Filter: nostr.Filter{Kinds: []int{1}}, Direction: relaysync.Down, Timeout: time.Second}, &bytes.Buffer{}, nil)
	require.ErrorContains(t, err, "NIP-77")
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestParseDirection(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"down", "up", "both"} {
		d, err := relaysync.ParseDirection(s)
		require.NoError(t, err)
		require.Equal(t, relaysync.Direction(s), d)
	}
	_, err := relaysync.ParseDirection("sideways")
	require.Error(t, err)
}
