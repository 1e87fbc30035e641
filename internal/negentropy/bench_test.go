package negentropy_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kukuri/communitynode/internal/negentropy"
)

// BenchmarkReconcile: one session, in memory (no network, no database), over
// CN_BENCH_NEG_ITEMS items (default 100,000) with 1% of them only on each
// side, the server at the relay's default frame limit (60,000) and the
// client at the same. It reports the bytes exchanged (hex, as on the wire)
// and the rounds, and the time the server side spent (what the relay pays).
func BenchmarkReconcile(b *testing.B) {
	n := 100_000
	if s := os.Getenv("CN_BENCH_NEG_ITEMS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	all := randomItems(n+n/100, n/10)
	local, remote := all[:n], all[n/100:] // 1% only local, 1% only remote
	b.ResetTimer()
	for range b.N {
		srv, err := negentropy.NewServer(remote, 60_000)
		if err != nil {
			b.Fatal(err)
		}
		cl, err := negentropy.NewClient(local, 60_000)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := cl.Start()
		bytes, rounds := len(msg), 0
		var serverTime time.Duration
		for {
			start := time.Now()
			reply, err := srv.Reconcile(msg)
			serverTime += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			rounds++
			bytes += len(reply)
			next, done, err := cl.Reconcile(reply)
			if err != nil {
				b.Fatal(err)
			}
			if done {
				break
			}
			bytes += len(next)
			msg = next
		}
		have, need := cl.Result()
		cl.Close()
		if len(have) != n/100 || len(need) != n/100 {
			b.Fatalf("found %d and %d differences, want %d each", len(have), len(need), n/100)
		}
		b.ReportMetric(float64(bytes), "wire-bytes/op")
		b.ReportMetric(float64(rounds), "rounds/op")
		b.ReportMetric(serverTime.Seconds(), "server-s/op")
	}
}
