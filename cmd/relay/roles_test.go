package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestRunUnderRelayRole runs the relay as a login user of the relay's group role
// (internal/dbroles) and uses what needs the database: publishing with and
// without topics (inheritance, members), a profile, a NIP-09 deletion, REQ,
// COUNT, NIP-50 search, extending the outbox partitions and a NIP-86 ban that
// hides stored events.
func TestRunUnderRelayRole(t *testing.T) {
	db := pgtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := db.LoginAsService(t, dbroles.Relay)

	adminKey := nostr.GeneratePrivateKey()
	adminPub, _ := nostr.GetPublicKey(adminKey)
	addr := testkit.FreeAddr(t)
	var logs testkit.Buffer
	stop := daemontest.Start(t, newApp(&logs, &logs), "relay", "--listen", addr, "--metrics-listen", "", "--database-url", url, "--admin-pubkeys", adminPub)
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "relay did not come up: %s", logs.String())

	ws := testkit.Dial(t, "ws://"+addr)
	defer ws.Close()
	challenge := ws.Next() // the NIP-42 challenge, sent on connect by default
	require.Equal(t, "AUTH", challenge.Label(), "%s", challenge)
	alice, bob := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	publish := func(key string, ev *nostr.Event) {
		t.Helper()
		ev.CreatedAt = nostr.Now()
		require.NoError(t, ev.Sign(key))
		require.NoError(t, ws.Send("EVENT", ev))
		require.Equal(t, []any{"OK", ev.ID, true, ""}, ws.Next().Values(), logs.String())
	}
	// req returns the ids a REQ (or a COUNT's count) answers.
	req := func(filter map[string]any) []string {
		t.Helper()
		require.NoError(t, ws.Send("REQ", "s", filter))
		var ids []string
		for {
			msg := ws.Next().Values()
			require.NotEqual(t, "CLOSED", msg[0], "%v %s", msg, logs.String())
			if msg[0] == "EOSE" {
				require.NoError(t, ws.Send("CLOSE", "s"))
				return ids
			}
			ids = append(ids, msg[2].(map[string]any)["id"].(string))
		}
	}

	note := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "hello roles"}
	publish(alice, note)
	reply := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"e", note.ID}}, Content: "a reply inherits"}
	publish(bob, reply)
	publish(alice, &nostr.Event{Kind: 0, Content: `{"name":"alice"}`}) // a member's profile
	doomed := &nostr.Event{Kind: 1, Tags: nostr.Tags{{"t", "go"}}, Content: "to be deleted"}
	publish(alice, doomed)
	publish(alice, &nostr.Event{Kind: 5, Tags: nostr.Tags{{"e", doomed.ID}}})
	require.ElementsMatch(t, []string{note.ID, reply.ID}, req(map[string]any{"kinds": []int{1}}))
	require.Empty(t, req(map[string]any{"search": "hello"}), "NIP-50 reads the (empty) index")

	require.NoError(t, ws.Send("COUNT", "c", map[string]any{"kinds": []int{1}}))
	count := ws.Next().Values()
	require.Equal(t, "COUNT", count[0], "%v", count)

	// NIP-86 as an admin: ban bob, which hides his stored reply.
	body := `{"method":"banpubkey","params":["` + mustPub(t, bob) + `","spam"]}`
	sum := sha256.Sum256([]byte(body))
	auth := &nostr.Event{Kind: 27235, CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"u", "http://" + addr}, {"method", "POST"}, {"payload", hex.EncodeToString(sum[:])}}}
	require.NoError(t, auth.Sign(adminKey))
	raw, err := json.Marshal(auth)
	require.NoError(t, err)
	hr, err := http.NewRequest(http.MethodPost, "http://"+addr, strings.NewReader(body))
	require.NoError(t, err)
	hr.Header.Set("Content-Type", relayadmin.ContentType)
	hr.Header.Set("Authorization", "Nostr "+base64.StdEncoding.EncodeToString(raw))
	resp, err := http.DefaultClient.Do(hr)
	require.NoError(t, err)
	var answer map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&answer))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v %s", answer, logs.String())
	require.Equal(t, []string{note.ID}, req(map[string]any{"kinds": []int{1}}), "the ban hid bob's reply")

	// Writers extend the outbox partitions through the SECURITY DEFINER function.
	c, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var created int
	require.NoError(t, c.QueryRow(ctx, "SELECT cn_relay.outbox_ensure_partitions(4)").Scan(&created))
	require.Equal(t, 2, created)

	stop()
	require.NotContains(t, logs.String(), "permission denied")
	require.NotContains(t, logs.String(), "42501")
}

func mustPub(t *testing.T, sk string) string {
	t.Helper()
	pk, err := nostr.GetPublicKey(sk)
	require.NoError(t, err)
	return pk
}
