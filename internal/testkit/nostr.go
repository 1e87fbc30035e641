package testkit

import (
	"context"
	"fmt"
	"testing"

	"github.com/nbd-wtf/go-nostr"
)

// Key is a test author: a fresh secret key and its public key (hex).
type Key struct{ SK, PK string }

// NewKey returns a fresh key.
func NewKey(t testing.TB) Key {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	pk, err := nostr.GetPublicKey(sk)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	return Key{SK: sk, PK: pk}
}

// Sign signs ev with k, setting its pubkey and id, and returns it.
func (k Key) Sign(t testing.TB, ev *nostr.Event) *nostr.Event {
	t.Helper()
	if err := ev.Sign(k.SK); err != nil {
		t.Fatalf("testkit: sign: %v", err)
	}
	return ev
}

// SecretKeys returns n fresh secret keys (hex).
func SecretKeys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = nostr.GeneratePrivateKey()
	}
	return out
}

// Pub is sk's public key (hex); "" for a malformed sk.
func Pub(sk string) string {
	pk, _ := nostr.GetPublicKey(sk)
	return pk
}

// Unix is a created_at: unix seconds as an int, an int64 or a nostr.Timestamp.
type Unix interface{ ~int | ~int64 }

// Sign returns the event of kind, created at at, with tags and content, signed
// by sk.
func Sign[T Unix](t testing.TB, sk string, kind int, at T, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: nostr.Timestamp(at), Tags: tags, Content: content}
	if err := ev.Sign(sk); err != nil {
		t.Fatalf("testkit: sign: %v", err)
	}
	return ev
}

// Follows is sk's follow list (kind 3) of targets (pubkeys), created at at.
func Follows[T Unix](t testing.TB, sk string, at T, targets ...string) *nostr.Event {
	t.Helper()
	tags := nostr.Tags{}
	for _, p := range targets {
		tags = append(tags, nostr.Tag{"p", p})
	}
	return Sign(t, sk, 3, at, tags, "")
}

// SignNow is Sign with created_at now.
func SignNow(t testing.TB, sk string, kind int, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	return Sign(t, sk, kind, nostr.Now(), tags, content)
}

// QuerySync is go-nostr's Relay.QuerySync (REQ, the stored events, EOSE,
// CLOSE) through its public Subscribe, without QuerySync's leak: v0.38.2's
// QueryEvents starts a goroutine that, once the query ends, calls Unsub in a
// loop forever. Each QuerySync left one spinning for the rest of the test
// binary: they took 97% of the relay package's CPU (go test -cpuprofile), and
// every later test ran 10-60 times slower (docs/development.md). A CLOSED
// answer is an error "CLOSED: <reason>".
func QuerySync(ctx context.Context, rl *nostr.Relay, f nostr.Filter) ([]*nostr.Event, error) {
	sub, err := rl.Subscribe(ctx, nostr.Filters{f})
	if err != nil {
		return nil, err
	}
	defer sub.Unsub()
	var evs []*nostr.Event
	for {
		// go-nostr sends EndOfStoredEvents only once every stored event has
		// been received from sub.Events (Subscription.storedwg).
		select {
		case ev := <-sub.Events:
			evs = append(evs, ev)
		case <-sub.EndOfStoredEvents:
			return evs, nil
		case why := <-sub.ClosedReason:
			return evs, fmt.Errorf("CLOSED: %s", why)
		case <-ctx.Done():
			return evs, ctx.Err()
		}
	}
}
