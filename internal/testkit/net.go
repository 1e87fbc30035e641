package testkit

import (
	"net"
	"testing"
)

// FreeAddr returns a 127.0.0.1 address that was free a moment ago (the kernel
// handed the port out and it was released at once).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return addr
}
