package trust

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/internal/trust/gate"
)

// TestMinRankGate: relay --min-rank refuses posts from authors below the
// minimum with `blocked:`, admits ranked authors, seeds and exempt keys, always
// accepts identity events and deletions, and admits everyone before the first run.
func TestMinRankGate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := testkit.SecretKeys(4)
	seed, alice, bob, admin := k[0], k[1], k[2], k[3]
	g := &gate.Gate{Pool: e.db.Pool, MinRank: 10, Exempt: []string{testkit.Pub(admin)}, Refresh: time.Hour}
	require.NoError(t, g.Load(context.Background()))

	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	cfg.Limits.MaxPastAge = 100 * 365 * 24 * time.Hour // (the events here are from 1970: created_at 100, 200, ...)
	r, err := relay.New(cfg, relay.Deps{Store: e.store, Feed: relay.NewPGFeed(e.db.Pool, nil), Registerer: prometheus.NewRegistry(), Ranks: g})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	url := "ws://" + ln.Addr().String()
	publish := func(ev *nostr.Event) error {
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer ccancel()
		c, err := nostr.RelayConnect(cctx, url)
		require.NoError(t, err)
		defer c.Close()
		return c.Publish(cctx, *ev)
	}

	// No run yet: everyone posts.
	require.NoError(t, publish(note(t, bob, 100)))
	require.NoError(t, publish(testkit.Follows(t, seed, 100, testkit.Pub(alice))))
	e.sync(t, 0)
	e.recompute(t, testkit.Pub(seed))
	require.NoError(t, g.Load(context.Background()))
	require.True(t, g.Ready())

	err = publish(note(t, bob, 200))
	require.Error(t, err, "bob is not ranked")
	require.Contains(t, err.Error(), "blocked: this relay accepts posts from keys with a web-of-trust rank of at least 10")
	for name, ev := range map[string]*nostr.Event{
		"ranked author":     note(t, alice, 200),
		"seed":              note(t, seed, 200),
		"exempt admin":      note(t, admin, 200),
		"unranked profile":  testkit.Sign(t, bob, 0, 200, nostr.Tags{}, `{"name":"bob"}`),
		"unranked follows":  testkit.Follows(t, bob, 200, testkit.Pub(alice)),
		"unranked deletion": testkit.Sign(t, bob, 5, 300, nostr.Tags{{"k", "1"}}, ""),
	} {
		require.NoError(t, publish(ev), name)
	}

	// NIP-11 names the minimum (the provider appears once the daemon records it).
	_, err = e.db.Pool.Exec(context.Background(), `INSERT INTO cn_trust.provider VALUES ($1, $2)`, Algorithm, strings.Repeat("ab", 32))
	require.NoError(t, err)
	require.NoError(t, g.Load(context.Background()))
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String(), nil)
	req.Header.Set("Accept", "application/nostr+json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var info struct {
		Trust struct {
			MinRank   int `json:"min_rank"`
			Providers []struct {
				Kind   int    `json:"kind"`
				Pubkey string `json:"pubkey"`
			} `json:"nip85_providers"`
		} `json:"trust"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	require.Equal(t, 10, info.Trust.MinRank)
	require.Len(t, info.Trust.Providers, 1)
	require.Equal(t, 30382, info.Trust.Providers[0].Kind)
	require.Equal(t, strings.Repeat("ab", 32), info.Trust.Providers[0].Pubkey)
}
