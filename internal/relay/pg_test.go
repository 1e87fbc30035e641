package relay

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// startWriter runs an outbox.Writer on db (it announces appends with NOTIFY) until
// the test ends.
func startWriter(t testing.TB, db *pgtest.DB) *outbox.Writer {
	t.Helper()
	w := outbox.NewWriter(db.Pool, outbox.WriterConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func TestPGFeed(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	w := startWriter(t, db)
	feed := NewPGFeed(db.Pool, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	head, err := feed.Head(ctx)
	require.NoError(t, err)
	require.Zero(t, head)

	wakes := make(chan struct{}, 100)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		feed.Listen(ctx, func() { wakes <- struct{}{} })
	}()
	select {
	case <-wakes: // the wake-up after connecting
	case <-time.After(waitTimeout):
		t.Fatal("no wake-up after connecting")
	}

	r, err := w.Write(ctx, func(context.Context, pgx.Tx) ([]outbox.Record, error) {
		return []outbox.Record{
			{Op: outbox.OpUpsert, EventID: "e1", TopicID: "go", Kind: 1, CreatedAt: 1},
			{Op: outbox.OpDelete, EventID: "e0", TopicID: "go", Kind: 1, CreatedAt: 1, Reason: "nip09"},
		}, nil
	})
	require.NoError(t, err)
	select {
	case <-wakes: // the NOTIFY
	case <-time.After(waitTimeout):
		t.Fatal("no wake-up after a commit")
	}
	rows, err := feed.ReadAfter(ctx, 0, 10, nil)
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, r.First, rows[0].Seq)
	require.Equal(t, outbox.OpUpsert, rows[0].Op)
	require.Equal(t, outbox.ReasonNIP09, rows[1].Reason)
	head, err = feed.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, r.Last, head)

	// A lost LISTEN connection is re-established, with a wake-up.
	_, err = db.Pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND query ILIKE 'listen%'`)
	require.NoError(t, err)
	select {
	case <-wakes:
	case <-time.After(waitTimeout):
		t.Fatal("no wake-up after reconnecting")
	}
	cancel()
	<-listening
}

// pgStore adapts *store.Store to Store.
type pgStore struct{ *store.Store }

func (s pgStore) Ingest(ctx context.Context, evs []*nostr.Event) ([]IngestResult, error) {
	res, err := s.Store.Ingest(ctx, evs)
	out := make([]IngestResult, len(res))
	for i, r := range res {
		out[i] = IngestResult(r)
	}
	return out, err
}

// TestTwoRelaysShareDatabase: a subscriber on relay B receives an event published
// to relay A, through the Postgres outbox; both serve it to REQ and COUNT.
func TestTwoRelaysShareDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	st := pgStore{store.New(db.Pool, startWriter(t, db), protocol.DefaultTopicRules())}
	start := func() *testRelay {
		reg := prometheus.NewRegistry()
		r, err := New(testConfig(), WithEventCache(testConfig(), Deps{Store: st, Feed: NewPGFeed(db.Pool, nil), Registerer: reg}))
		require.NoError(t, err)
		return serveRelay(t, r)
	}
	a, b := start(), start()

	sub := dial(t, b.url)
	sub.send("REQ", "s", goFilter())
	sub.eose("s")
	pub := dial(t, a.url)
	k := newKey(t)
	ev := k.note(t, "across relays", nil)
	ok, reason := pub.publish(ev)
	require.True(t, ok, reason)
	require.Equal(t, ev.ID, sub.event("s").ID)

	ok, reason = pub.publish(ev)
	require.True(t, ok)
	require.Contains(t, reason, "duplicate:")

	for _, tr := range []*testRelay{a, b} {
		c := dial(t, tr.url)
		c.send("REQ", "q", goFilter())
		require.Equal(t, ev.ID, c.event("q").ID)
		c.eose("q")
		c.send("COUNT", "n", goFilter())
		c.expect("COUNT")
	}
}
