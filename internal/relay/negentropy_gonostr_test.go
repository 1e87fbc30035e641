//go:build !race

// go-nostr v0.38.2's nip77.NegentropySync races with itself (its idlistpool
// is shared by goroutines without a lock), so this interop test stays out of
// the race detector's runs; make test runs it.

package relay

import (
	"context"
	"maps"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip77"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
)

// memStore is a go-nostr RelayStore in memory: the local side of go-nostr's
// own sync client.
type memStore struct {
	mu  sync.Mutex
	evs map[string]*nostr.Event
}

func (m *memStore) Publish(_ context.Context, ev nostr.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evs[ev.ID] = &ev
	return nil
}

func (m *memStore) QuerySync(_ context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*nostr.Event
	for _, ev := range m.evs {
		if f.Matches(ev) {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (m *memStore) QueryEvents(ctx context.Context, f nostr.Filter) (chan *nostr.Event, error) {
	evs, _ := m.QuerySync(ctx, f)
	ch := make(chan *nostr.Event, len(evs))
	for _, ev := range evs {
		ch <- ev
	}
	close(ch)
	return ch, nil
}

func (m *memStore) ids() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.evs))
}

// TestNegentropyGoNostrSync: go-nostr's own client (nip77.NegentropySync, with
// its fixed subscription id and 1 MB frame limit) syncs both ways with the
// relay: afterwards both hold the union.
func TestNegentropyGoNostrSync(t *testing.T) {
	t.Parallel()
	if !inChild(t) { // go-nostr's client leaves its QueryEvents goroutines spinning
		return
	}
	e := newNegEnv(t, nil)
	k := newKey(t)
	evs := signedNotes(t, k, 400, 5, mrand.New(mrand.NewPCG(9, 9)))
	local := &memStore{evs: map[string]*nostr.Event{}}
	var remote []*nostr.Event
	for i, ev := range evs {
		if i%3 != 1 {
			local.evs[ev.ID] = ev
		}
		if i%3 != 0 {
			remote = append(remote, ev)
		}
	}
	e.store(remote)
	filter := nostr.Filter{Authors: []string{k.pk}}
	// A deadline against a hang, not a speed bound: under make test's parallel
	// load go-nostr's client (one OK awaited per uploaded event) has taken close
	// to 30 s here; alone it takes about 2 s.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, nip77.NegentropySync(ctx, local, e.relay.url, filter))

	all := idsOf(itemsOf(evs))
	require.Equal(t, all, local.ids(), "the local store got what only the relay had")
	items, err := e.st.SyncItems(context.Background(), filter, protocol.Viewer{}, 10_000, nil)
	require.NoError(t, err)
	require.Equal(t, all, idsOf(items), "the relay got what only the local store had")
}
