package main

import (
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestRunUnderBridgeRole runs the bridge as a login user of its group role
// (internal/dbroles): it takes its lease, publishes what the store wrote and
// commits its offset to the outbox head.
func TestRunUnderBridgeRole(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	url := db.LoginAsService(t, dbroles.Bridge)
	ns := testkit.NATS(t)

	st := testkit.NewStore(db.Pool)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "least privilege"}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	res, err := st.Ingest(ctx, []*nostr.Event{ev})
	require.NoError(t, err)
	require.True(t, res[0].OK, res[0].Message)
	head, err := outbox.Head(ctx, db.Pool)
	require.NoError(t, err)

	addr := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "bridge", "--listen", addr, "--database-url", url,
		"--nats-url", ns.ClientURL(), "--stream", "CN_ROLE")
	defer stop()
	testkit.WaitOffset(t, db.Pool, "bridge-v1", head) // bridge-v1 reaches the head under its role
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s, err := js.Stream(ctx, "CN_ROLE")
	require.NoError(t, err)
	msg, err := s.GetLastMsgForSubject(ctx, "cn.events.go")
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(head, 10), msg.Header.Get(jetstream.MsgIDHeader))
}
