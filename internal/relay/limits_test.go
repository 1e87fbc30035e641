package relay

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
)

// outboxRows counts the outbox rows of an event.
func outboxRows(t *testing.T, db *pgtest.DB, id string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_relay.events_outbox WHERE event_id = $1", id).Scan(&n))
	return n
}

// TestTopicFanOutCap: one event cannot fan out into more than MaxTopics (8)
// topics, so into more than 8 outbox rows, whether its topics are its own (more
// are refused, and nothing is written) or inherited (the first 8 are kept).
func TestTopicFanOutCap(t *testing.T) {
	t.Parallel()
	tr, db := startPGRelay(t, nil)
	c := dial(t, tr.url)
	k := newKey(t)
	topics := func(from, n int) nostr.Tags {
		var tags nostr.Tags
		for i := from; i < from+n; i++ {
			tags = append(tags, nostr.Tag{"t", "topic" + strconv.Itoa(i)})
		}
		return tags
	}

	wide := k.note(t, "1000 topics", func(ev *nostr.Event) { ev.Tags = topics(0, 1000) })
	ok, reason := c.publish(wide)
	require.False(t, ok)
	require.Equal(t, "invalid: too many topics (1000 distinct t tags; this relay accepts at most 8 per event)", reason)
	require.Zero(t, outboxRows(t, db, wide.ID))

	eight := k.note(t, "8 topics", func(ev *nostr.Event) { ev.Tags = topics(0, 8) })
	ok, reason = c.publish(eight)
	require.True(t, ok, reason)
	require.Equal(t, 8, outboxRows(t, db, eight.ID))

	// A reply to 3 events with 8 topics each (24 topics in all) inherits 8.
	reply := k.note(t, "reply to many", func(ev *nostr.Event) { ev.Tags = nostr.Tags{{"e", eight.ID}} })
	for i := 1; i <= 2; i++ {
		more := k.note(t, "8 more topics", func(ev *nostr.Event) { ev.Tags = topics(8*i, 8) })
		ok, reason = c.publish(more)
		require.True(t, ok, reason)
		reply.Tags = append(reply.Tags, nostr.Tag{"e", more.ID})
	}
	require.NoError(t, reply.Sign(k.sk))
	ok, reason = c.publish(reply)
	require.True(t, ok, reason)
	require.Equal(t, 8, outboxRows(t, db, reply.ID))
}

// TestCreatedAtLowerLimit: created_at of -5 or 1 (1970) is refused and not
// stored; NIP-11 publishes both limits.
func TestCreatedAtLowerLimit(t *testing.T) {
	t.Parallel()
	tr, db := startPGRelay(t, nil)
	c := dial(t, tr.url)
	k := newKey(t)
	for _, at := range []nostr.Timestamp{-5, 1} {
		ev := k.note(t, "from 1970", func(ev *nostr.Event) { ev.CreatedAt = at })
		ok, reason := c.publish(ev)
		require.False(t, ok, "created_at %d", at)
		require.Equal(t, "invalid: created_at too far in the past", reason)
		require.Zero(t, outboxRows(t, db, ev.ID))
	}
	old := k.note(t, "from 2021", func(ev *nostr.Event) { ev.CreatedAt = 1609459200 })
	ok, reason := c.publish(old)
	require.True(t, ok, reason)

	_, doc := getInfo(t, tr.http)
	lim := doc["limitation"].(map[string]any)
	require.Equal(t, float64(20*365*24*3600), lim["created_at_lower_limit"])
	require.Equal(t, 900.0, lim["created_at_upper_limit"])
}

// TestUnknownFilterField: a filter with a field the relay does not know is
// refused with CLOSED instead of matching everything.
func TestUnknownFilterField(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, nil)
	c := dial(t, tr.url)
	c.sendRaw(`["REQ","a",{"foo":1}]`)
	require.Equal(t, `invalid: unknown filter field "foo"`, c.closed("a"))
	c.sendRaw(`["REQ","b",{"#":["x"]}]`)
	require.Equal(t, `invalid: unknown filter field "#"`, c.closed("b"))
	c.sendRaw(`["COUNT","c",{"kinds":[1],"bar":[]}]`)
	require.Equal(t, `invalid: unknown filter field "bar"`, c.closed("c"))
}

// TestRealIPHeaderNotAnAddress: a --real-ip-header value that is not an IP
// address does not become a limit key of its own: the connection counts for its
// TCP peer (so 5 of 12 get in with --max-conns-per-ip 5), and each is counted.
func TestRealIPHeaderNotAnAddress(t *testing.T) {
	t.Parallel()
	tr := startRelay(t, nil, func(c *Config) {
		c.MaxConnsPerIP = 5
		c.RealIPHeader = "X-Forwarded-For"
	})
	admitted, refused := 0, 0
	for i := range 12 {
		ws, resp, err := websocket.DefaultDialer.Dial(tr.url, http.Header{"X-Forwarded-For": {"not-an-ip-" + strconv.Itoa(i)}})
		if err != nil {
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			refused++
			continue
		}
		defer ws.Close()
		admitted++
	}
	require.Equal(t, 5, admitted)
	require.Equal(t, 7, refused)
	require.Equal(t, 12.0, testutil.ToFloat64(tr.m.badRealIP))

	// Well-formed addresses from the proxy still count one by one.
	ws, _, err := websocket.DefaultDialer.Dial(tr.url, http.Header{"X-Forwarded-For": {"203.0.113.9"}})
	require.NoError(t, err)
	ws.Close()
}
