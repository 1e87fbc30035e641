package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/daemon/daemontest"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/platform/oneline"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestRunServesAndStops runs the command against a real database and an
// embedded JetStream server: /healthz answers, the consumer takes its lease,
// the stream exists, and cancel stops it cleanly.
func TestRunServesAndStops(t *testing.T) {
	db := pgtest.New(t)
	ns := testkit.NATS(t)

	addr := testkit.FreeAddr(t)
	stop := daemontest.Start(t, newApp(io.Discard, io.Discard), "bridge", "--listen", addr, "--database-url", db.URL,
		"--nats-url", ns.ClientURL(), "--stream", "CN_CMD")
	require.Equal(t, "ok\n", daemontest.WaitOK(t, "http://"+addr+"/healthz"))
	daemontest.WaitLease(t, db.Pool, "bridge-v1")
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.Stream(context.Background(), "CN_CMD")
	require.NoError(t, err, "the bridge created its stream")
	stop()
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"bridge", "--nats-url", "nats://127.0.0.1:1"}, // no database
		{"bridge", "--database-url", "postgres://x"},   // no NATS URL
		{"bridge", "--database-url", "postgres://x", "--nats-url", "nats://x", "--batch-size", "0"},
		{"bridge", "--database-url", "postgres://x", "--nats-url", "nats://x", "extra"},
	} {
		err := newApp(io.Discard, io.Discard).RunContext(context.Background(), args)
		require.Error(t, err, "%v", args)
	}
}

// TestRefusesAnOldServer: a server that announces 2.9.10 (a fake that speaks
// just enough of the protocol to accept a connection) is refused at start in
// one line.
func TestRefusesAnOldServer(t *testing.T) {
	db := pgtest.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				fmt.Fprintf(conn, "INFO {\"server_id\":\"old\",\"version\":\"2.9.10\",\"proto\":1,\"headers\":true,\"max_payload\":1048576}\r\n")
				r := bufio.NewReader(conn)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "PING") {
						fmt.Fprintf(conn, "PONG\r\n")
					}
				}
			}()
		}
	}()
	err = newApp(io.Discard, io.Discard).RunContext(context.Background(), []string{"bridge", "--database-url", db.URL,
		"--nats-url", "nats://" + ln.Addr().String(), "--listen", ""})
	require.Error(t, err)
	require.Equal(t, "nats server 2.9.10 is too old: the bridge needs nats-server >= 2.10.0 with JetStream", oneline.Error(err))
}

// TestHealthzFollowsNATS: /healthz answers 503 while the NATS server is down.
func TestHealthzFollowsNATS(t *testing.T) {
	db := pgtest.New(t)
	ns := testkit.NATS(t)
	addr := testkit.FreeAddr(t)
	daemontest.Start(t, newApp(io.Discard, io.Discard), "bridge", "--listen", addr, "--database-url", db.URL, "--nats-url", ns.ClientURL())
	require.Equal(t, "ok\n", daemontest.WaitOK(t, "http://"+addr+"/healthz"))
	ns.Shutdown()
	ns.WaitForShutdown()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, 10*time.Second, 20*time.Millisecond)
}
