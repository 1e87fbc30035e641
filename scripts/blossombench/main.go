// Command blossombench measures the relay's Blossom server
// (scripts/blossom-bench.sh): upload and download throughput per blob size,
// and the relay process's RSS while the largest blobs upload.
//
// It becomes a member first (a kind 1 post through the relay), then for each
// size and round uploads a fresh random blob (PUT /upload, streamed from
// memory), downloads it (GET), checks the bytes and deletes it. With --pid it
// samples /proc/<pid>/status (VmRSS) every 5 ms during each upload.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nbd-wtf/go-nostr"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "blossombench:", err)
		os.Exit(1)
	}
}

func run() error {
	relayURL := flag.String("relay", "ws://127.0.0.1:7795", "the relay (to become a member)")
	sizes := flag.String("sizes", "1048576,52428800", "blob sizes in bytes, comma separated")
	rounds := flag.Int("rounds", 5, "rounds per size")
	pid := flag.Int("pid", 0, "the relay's pid, to sample its RSS during uploads (0: none)")
	flag.Parse()
	base := "http" + strings.TrimPrefix(*relayURL, "ws")

	sk := nostr.GeneratePrivateKey()
	ctx := context.Background()
	r, err := nostr.RelayConnect(ctx, *relayURL)
	if err != nil {
		return err
	}
	post := nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "general"}}, Content: "bench"}
	if err := post.Sign(sk); err != nil {
		return err
	}
	if err := r.Publish(ctx, post); err != nil {
		return fmt.Errorf("become a member: %w", err)
	}
	r.Close()

	fmt.Printf("%-10s %6s %14s %14s %14s %14s\n", "size", "round", "upload MB/s", "download MB/s", "RSS before KiB", "RSS peak KiB")
	for _, s := range strings.Split(*sizes, ",") {
		size, err := strconv.Atoi(s)
		if err != nil {
			return err
		}
		var ups, downs []float64
		for i := range *rounds {
			data := make([]byte, size)
			_, _ = rand.Read(data)
			sum := sha256.Sum256(data)
			h := hex.EncodeToString(sum[:])
			before := rss(*pid)
			var peak atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					if v := rss(*pid); v > peak.Load() {
						peak.Store(v)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			start := time.Now()
			err := upload(base, sk, h, data)
			up := time.Since(start)
			close(stop)
			<-done
			if err != nil {
				return err
			}
			start = time.Now()
			got, err := download(base, h)
			down := time.Since(start)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, data) {
				return errors.New("downloaded bytes differ")
			}
			if err := del(base, sk, h); err != nil {
				return err
			}
			mb := float64(size) / 1e6
			ups, downs = append(ups, mb/up.Seconds()), append(downs, mb/down.Seconds())
			fmt.Printf("%-10d %6d %14.1f %14.1f %14d %14d\n", size, i+1, ups[i], downs[i], before, peak.Load())
		}
		fmt.Printf("%-10d median %14.1f %14.1f\n", size, median(ups), median(downs))
	}
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// rss is the process's VmRSS in KiB (0 without a pid).
func rss(pid int) int64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

func auth(sk, verb, hash string) string {
	ev := nostr.Event{Kind: 24242, CreatedAt: nostr.Now() - 1, Content: verb + " " + nostr.GeneratePrivateKey()[:8],
		Tags: nostr.Tags{{"t", verb}, {"x", hash}, {"expiration", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}}}
	_ = ev.Sign(sk)
	raw, _ := json.Marshal(ev)
	return "Nostr " + base64.RawURLEncoding.EncodeToString(raw)
}

func do(req *http.Request, want ...int) ([]byte, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(want, res.StatusCode) {
		return nil, fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, res.StatusCode, res.Header.Get("X-Reason"))
	}
	return body, nil
}

func upload(base, sk, h string, data []byte) error {
	req, _ := http.NewRequest(http.MethodPut, base+"/upload", bytes.NewReader(data))
	req.Header.Set("Authorization", auth(sk, "upload", h))
	req.Header.Set("X-SHA-256", h)
	req.Header.Set("Content-Type", "application/octet-stream")
	_, err := do(req, http.StatusCreated, http.StatusOK)
	return err
}

func download(base, h string) ([]byte, error) {
	req, _ := http.NewRequest(http.MethodGet, base+"/"+h, nil)
	return do(req, http.StatusOK)
}

func del(base, sk, h string) error {
	req, _ := http.NewRequest(http.MethodDelete, base+"/"+h, nil)
	req.Header.Set("Authorization", auth(sk, "delete", h))
	_, err := do(req, http.StatusOK)
	return err
}
