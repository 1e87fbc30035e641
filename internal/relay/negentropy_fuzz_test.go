package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/protocol"
)

// syncFake adds fixed NIP-77 items to a fakeStore.
type syncFake struct {
	*fakeStore
	items []negentropy.Item
}

func (s syncFake) SyncItems(context.Context, nostr.Filter, protocol.Viewer, int, func(int) bool) ([]negentropy.Item, error) {
	return s.items, nil
}

// FuzzNegMessages: whatever a client sends as a NEG-OPEN's or a NEG-MSG's
// message, through a real WebSocket, the relay answers that session with
// NEG-MSG or NEG-ERR and keeps serving the connection (a COUNT after it is
// answered); no session is left open after NEG-CLOSE.
func FuzzNegMessages(f *testing.F) {
	f.Add("61" + "01" + strings.Repeat("ff", 9) + "7f")
	f.Add("61" + "00" + "00" + "02" + strings.Repeat("ff", 7) + "7f")
	f.Add("61")
	f.Add("6100000200")
	f.Add("zz")
	f.Add("")
	f.Add(`"]`)
	items := make([]negentropy.Item, 100)
	for i := range items {
		items[i] = negentropy.Item{CreatedAt: nostr.Timestamp(1000 + i%4), ID: fmt.Sprintf("%064x", i*7919)}
	}
	cl, err := negentropy.NewClient(items[:60], 0)
	if err != nil {
		f.Fatal(err)
	}
	start, _ := cl.Start()
	cl.Close()
	f.Add(start)

	store := syncFake{fakeStore: newFakeStore(), items: items}
	cfg := testConfig()
	cfg.MaxConnsPerIP = 1 << 20 // every input dials; closed ones may linger a moment
	r, err := New(cfg, Deps{Store: store, Feed: store.fakeStore, Registerer: prometheus.NewRegistry()})
	if err != nil {
		f.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	f.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			f.Error(err)
		}
	})
	url := "ws://" + ln.Addr().String()
	f.Fuzz(func(t *testing.T, msg string) {
		c := dial(t, url)
		quoted, _ := json.Marshal(msg)
		// As the opening message.
		c.sendRaw(`["NEG-OPEN","a",{},` + string(quoted) + `]`)
		answerFor(t, c, "a")
		c.send("NEG-CLOSE", "a")
		// As a later round.
		c.send("NEG-OPEN", "b", map[string]any{}, start)
		answerFor(t, c, "b")
		c.sendRaw(`["NEG-MSG","b",` + string(quoted) + `]`)
		answerFor(t, c, "b")
		c.send("NEG-CLOSE", "b")
		c.send("COUNT", "alive", map[string]any{"kinds": []int{1}})
		c.expect("COUNT")
		if n := openNegs(r); n != 0 {
			t.Fatalf("%d sessions left open", n)
		}
	})
}

// answerFor reads the next message: a NEG-MSG or NEG-ERR for sub.
func answerFor(t *testing.T, c *client, sub string) {
	t.Helper()
	msg := c.next()
	typ := str(t, msg[0])
	if (typ != "NEG-MSG" && typ != "NEG-ERR") || str(t, msg[1]) != sub {
		t.Fatalf("want NEG-MSG or NEG-ERR for %s, got %s", sub, join(msg))
	}
}
