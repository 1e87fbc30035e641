package ephemeral

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const waitTimeout = 20 * time.Second

// listener is one relay process's Bus listening on a pool of its own.
type listener struct {
	bus *Bus
	got chan *nostr.Event
}

func listen(t *testing.T, db *pgtest.DB) *listener {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), db.URL)
	require.NoError(t, err)
	l := &listener{bus: New(pool, nil), got: make(chan *nostr.Event, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.bus.Listen(ctx, func(ev *nostr.Event) { l.got <- ev })
	}()
	t.Cleanup(func() { cancel(); <-done; pool.Close() })
	return l
}

// next is the next event l delivers.
func (l *listener) next(t *testing.T) *nostr.Event {
	t.Helper()
	select {
	case ev := <-l.got:
		return ev
	case <-time.After(waitTimeout):
		t.Fatal("no ephemeral event delivered")
		return nil
	}
}

// probeKind is the kind of ready's probes, which the tests skip: a probe
// may still arrive after ready returned.
const probeKind = 20002

// ready publishes probes through b until every listener has delivered one
// (delivery is at most once: a listener that is not LISTENing yet misses
// what is published).
func ready(t *testing.T, b *Bus, ls ...*listener) {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	deadline := time.After(waitTimeout)
	for i, l := range ls {
		for heard := false; !heard; {
			probe := testkit.SignNow(t, sk, probeKind, nil, fmt.Sprintf("probe %d", i))
			require.NoError(t, b.Publish(context.Background(), probe))
			select {
			case <-l.got:
				heard = true
			case <-time.After(50 * time.Millisecond): // no answer: publish another probe
			case <-deadline:
				t.Fatal("a listener never delivered a probe")
			}
		}
	}
}

// TestBusDeliversToEveryProcess: an event published by one relay process
// reaches every listening one, the publisher's own included, whole (also
// when it is larger than one notification and carries multi-byte text),
// and once per listener when it is published twice.
func TestBusDeliversToEveryProcess(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	a, b := listen(t, db), listen(t, db)
	ready(t, a.bus, a, b)

	sk := nostr.GeneratePrivateKey()
	small := testkit.SignNow(t, sk, 24133, nostr.Tags{{"p", testkit.Pub(sk)}}, "a NIP-46 request")
	large := testkit.SignNow(t, sk, 24133, nil, strings.Repeat("日本語のテキスト ", 2000)) // ~50 kB: 7 chunks
	for _, ev := range []*nostr.Event{small, large, small, large} {
		require.NoError(t, a.bus.Publish(context.Background(), ev))
	}
	marker := testkit.SignNow(t, sk, 20001, nil, "after the repeats")
	require.NoError(t, b.bus.Publish(context.Background(), marker))
	for name, l := range map[string]*listener{"the publisher": a, "another process": b} {
		var ids []string
		for ev := l.next(t); ev.ID != marker.ID; ev = l.next(t) {
			if ev.Kind == probeKind {
				continue
			}
			ok, err := ev.CheckSignature()
			require.NoError(t, err)
			require.True(t, ok, "%s: a whole, well-formed event", name)
			ids = append(ids, ev.ID)
		}
		require.Equal(t, []string{small.ID, large.ID}, ids, "%s: each event once, in order", name)
	}
}

// TestSplitKeepsUTF8: a payload is cut into pieces of at most n bytes, never
// inside a UTF-8 sequence, and the pieces join back into it.
func TestSplitKeepsUTF8(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("a日本🙂", 3000)
	for _, n := range []int{4, 5, 7, 100, chunkBytes} {
		parts := split(s, n)
		for _, p := range parts {
			require.LessOrEqual(t, len(p), n)
			require.True(t, utf8.ValidString(p), "n=%d", n)
		}
		require.Equal(t, s, strings.Join(parts, ""), "n=%d", n)
	}
	require.Equal(t, []string{"short"}, split("short", chunkBytes))
}

// TestAssemblerBounds: malformed payloads deliver nothing, chunks of an event
// are joined in index order whatever their arrival order, and no more than
// maxPartial incomplete events are held.
func TestAssemblerBounds(t *testing.T) {
	t.Parallel()
	ev := testkit.SignNow(t, nostr.GeneratePrivateKey(), 20001, nil, "hello")
	raw := ev.String()
	a := newAssembler()
	for _, bad := range []string{"", "n", "n 0", "n 0 1", "n x 1 {}", "n 1 1 {}", "n 0 0 {}", "n 0 1 not json", "n 0 1 {}"} {
		require.Nil(t, a.add(bad), "%q", bad)
	}
	half := len(raw) / 2
	require.Nil(t, a.add("k 1 2 "+raw[half:]))
	got := a.add("k 0 2 " + raw[:half])
	require.NotNil(t, got)
	require.Equal(t, ev.ID, got.ID)
	require.Nil(t, a.add("k2 0 1 "+raw), "an id delivered already")

	for i := range maxPartial + 10 {
		require.Nil(t, a.add(fmt.Sprintf("p%d 0 2 x", i)))
	}
	require.Len(t, a.partial, maxPartial)
	require.Len(t, a.order, maxPartial)
	a.reset()
	require.Empty(t, a.partial)
}
