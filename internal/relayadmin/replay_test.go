package relayadmin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestNIP86ReplayConsumer: replayconsumer moves a consumer's offset back to
// replay retained rows, records who did it, and refuses a stale preview, a
// skip, an unknown consumer and anyone but an admin.
func TestNIP86ReplayConsumer(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin, stranger := testkit.NewKey(t), testkit.NewKey(t)
	r := startRelay(t, db, admin.PK)
	ctx := context.Background()
	c := dial(t, r)
	for i := range 3 {
		ok, reason := c.Publish(admin.Sign(t, &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "replay"}}, Content: string(rune('a' + i))}))
		require.True(t, ok, reason)
	}
	conn := db.Conn(t)
	var head int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT max(seq) FROM cn_relay.events_outbox").Scan(&head))
	_, err := conn.Exec(ctx, "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('test-v1', $1)", head)
	require.NoError(t, err)

	status, body := call(t, r, stranger, relayadmin.ReplayMethod, []any{"test-v1", 0, head}, nil)
	require.Equal(t, http.StatusForbidden, status, "%v", body)
	status, body = call(t, r, admin, relayadmin.ReplayMethod, []any{"test-v1", head + 1, head}, nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	require.Contains(t, body["error"], "only replays")
	status, body = call(t, r, admin, relayadmin.ReplayMethod, []any{"nobody-v1", 0, 0}, nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	require.Contains(t, body["error"], "unknown consumer")
	status, body = call(t, r, admin, relayadmin.ReplayMethod, []any{"test-v1", -1, head}, nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", body)

	status, body = call(t, r, admin, relayadmin.ReplayMethod, []any{"test-v1", 1, head}, nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, map[string]any{"consumer": "test-v1", "from": float64(head), "to": 1.0, "replayed": float64(head - 1)}, body["result"])
	var last int64
	var by string
	require.NoError(t, conn.QueryRow(ctx, "SELECT last_seq FROM cn_relay.consumer_offsets WHERE consumer = 'test-v1'").Scan(&last))
	require.EqualValues(t, 1, last)
	require.NoError(t, conn.QueryRow(ctx, "SELECT requested_by FROM cn_relay.consumer_offset_resets WHERE consumer = 'test-v1'").Scan(&by))
	require.Equal(t, "nip86:"+admin.PK, by)
	var logged int
	require.NoError(t, conn.QueryRow(ctx, "SELECT count(*) FROM cn_admin.log WHERE method = $1 AND actor = $2", relayadmin.ReplayMethod, admin.PK).Scan(&logged))
	require.Equal(t, 1, logged)

	// The same preview again is stale now: the offset is 1, not head.
	status, body = call(t, r, admin, relayadmin.ReplayMethod, []any{"test-v1", 0, head}, nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", body)
	require.Contains(t, body["error"], "preview again")
}

// TestNIP86AnswersWebPages: a web page of another origin (the node's console,
// any NIP-86 web client) may read NIP-86 answers, and send the NIP-98
// Authorization header, which "*" does not cover.
func TestNIP86AnswersWebPages(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	admin := testkit.NewKey(t)
	r := startRelay(t, db, admin.PK)
	req := signedRequest(t, r, admin, `{"method":"supportedmethods","params":[]}`, func(*nostr.Event) {})
	req.Header.Set("Origin", "http://127.0.0.1:7790")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	pre, err := http.NewRequest(http.MethodOptions, r.http, nil)
	require.NoError(t, err)
	pre.Header.Set("Origin", "http://127.0.0.1:7790")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	resp, err = http.DefaultClient.Do(pre)
	require.NoError(t, err)
	resp.Body.Close()
	require.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")
}
