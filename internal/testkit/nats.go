package testkit

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS starts an embedded nats-server with JetStream on a free loopback port,
// its store in a temporary directory, and shuts it down (waiting for it) when
// the test ends. It fails t if the server is not ready within 30 s.
func NATS(t testing.TB) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatalf("testkit: nats-server: %v", err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatalf("testkit: nats-server not ready within 30 s")
	}
	return s
}
