package testkit_test

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

	"github.com/kukuri/communitynode/internal/negentropy"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
)

// startRelay is a real relay (store on a pgtest database, NIP-42 challenge
// on connect, NIP-86 for admin) listening on loopback; it returns its
// WebSocket and HTTP URLs.
func startRelay(t *testing.T, admin string, edit func(*relay.Config)) (string, string) {
	t.Helper()
	db := pgtest.New(t)
	w := testkit.RunWriter(t, db.Pool)
	st := store.New(db.Pool, w, protocol.DefaultTopicRules())
	cfg := relay.DefaultConfig()
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	if edit != nil {
		edit(&cfg)
	}
	api := &relayadmin.API{Admin: &relayadmin.Admin{Pool: db.Pool, Store: st.Publisher(), TopicRules: st.Rules()}, Admins: map[string]bool{admin: true}}
	r, err := relay.New(cfg, relay.Deps{Store: st,
		Feed: relay.NewPGFeed(db.Pool, nil), Registerer: prometheus.NewRegistry(), Management: api})
	require.NoError(t, err)
	api.Audience = r.Audience
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return "ws://" + ln.Addr().String(), "http://" + ln.Addr().String()
}

// TestClient walks every request of the client against a real relay:
// publish, REQ to EOSE, a live event, AUTH, COUNT, NIP-77 and NIP-86.
func TestClient(t *testing.T) {
	t.Parallel()
	admin, alice := testkit.NewKey(t), testkit.NewKey(t)
	url, api := startRelay(t, admin.PK, nil)
	c := testkit.Dial(t, url)
	require.Equal(t, "AUTH", c.Next().Label(), "the challenge, sent on connect")

	note := testkit.SignNow(t, alice.SK, 1, nostr.Tags{{"t", "go"}}, "hello")
	ok, reason := c.Publish(note)
	require.True(t, ok, reason)
	ok, reason = c.Publish(testkit.SignNow(t, alice.SK, 1, nil, "no topic"))
	require.False(t, ok)
	require.True(t, strings.HasPrefix(reason, "restricted: "), reason)

	evs, reason := c.Req("r", nostr.Filter{Authors: []string{alice.PK}})
	require.Empty(t, reason)
	require.Len(t, evs, 1)
	require.Equal(t, note.ID, evs[0].ID)
	require.Len(t, c.Query(map[string]any{"ids": []string{note.ID}}), 1, "a filter as a map")

	// A live event reaches an open subscription, after its stored ones.
	sub, err := c.Subscribe("live", nostr.Filter{Authors: []string{alice.PK}})
	require.NoError(t, err)
	stored, reason := sub.WaitEOSE()
	require.Empty(t, reason)
	require.Len(t, stored, 1)
	pub := testkit.Dial(t, url)
	later := testkit.SignNow(t, alice.SK, 1, nostr.Tags{{"t", "go"}}, "later")
	got, err := pub.PublishCtx(context.Background(), later)
	require.NoError(t, err)
	require.True(t, got.OK, got.Reason)
	ctx, cancel := context.WithTimeout(context.Background(), testkit.ReplyTimeout)
	defer cancel()
	first, err := sub.Next(ctx)
	require.NoError(t, err)
	require.Equal(t, note.ID, first.ID, "stored first")
	live, err := sub.Next(ctx)
	require.NoError(t, err)
	require.Equal(t, later.ID, live.ID)
	state := sub.State()
	require.True(t, state.EOSE)
	require.Len(t, state.Live, 1)
	require.False(t, state.EOSEAt.Before(state.ReqAt))

	n, reason := c.Count("c", nostr.Filter{Authors: []string{alice.PK}})
	require.Empty(t, reason)
	require.EqualValues(t, 2, n)

	// NIP-77: the client holds one of the two events, the relay both.
	neg, err := negentropy.NewClient([]negentropy.Item{{CreatedAt: note.CreatedAt, ID: note.ID}}, 0)
	require.NoError(t, err)
	defer neg.Close()
	msg, err := neg.Start()
	require.NoError(t, err)
	answer, why := c.NegOpen("n", nostr.Filter{Authors: []string{alice.PK}}, msg)
	for {
		require.Empty(t, why)
		next, done, err := neg.Reconcile(answer)
		require.NoError(t, err)
		if done {
			break
		}
		answer, why = c.NegMsg("n", next)
	}
	require.NoError(t, c.NegClose("n"))
	have, need := neg.Result()
	require.Empty(t, have)
	require.Equal(t, []string{later.ID}, need)
	_, why = c.NegMsg("unknown", msg)
	require.NotEmpty(t, why, "NEG-ERR for a session that is not open")

	c.Auth(alice.SK)
	ok, reason = c.AuthAnswer(admin.SK)
	require.True(t, ok, reason)

	status, body := testkit.NIP86(t, api, admin.SK, "supportedmethods")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var out struct{ Result []string }
	require.NoError(t, json.Unmarshal(body, &out))
	require.Contains(t, out.Result, "banpubkey")
	status, _ = testkit.NIP86(t, api, alice.SK, "supportedmethods")
	require.Equal(t, http.StatusForbidden, status, "not an admin")
}

// TestClientSeesTheEnd: a closed connection ends every wait (ErrClosed).
func TestClientSeesTheEnd(t *testing.T) {
	t.Parallel()
	url, _ := startRelay(t, testkit.NewKey(t).PK, func(c *relay.Config) { c.Auth.ChallengeOnConnect = false })
	c := testkit.Dial(t, url)
	sub, err := c.Subscribe("s", nostr.Filter{Kinds: []int{1}})
	require.NoError(t, err)
	m := c.Next()
	require.Equal(t, "EOSE", m.Label(), "%s", m)
	require.True(t, sub.State().EOSE)
	require.NoError(t, c.Close())
	<-c.Done()
	require.Error(t, c.Err())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = c.NextCtx(ctx)
	require.ErrorIs(t, err, testkit.ErrClosed)
	_, err = sub.Next(ctx)
	require.ErrorIs(t, err, testkit.ErrClosed)
}
