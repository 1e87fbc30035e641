package protocol_test

import (
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// testNow is the fixed "now" of the tests.
var testNow = time.Unix(1_700_000_000, 0)

// signed returns an event by sk, signed after edit has changed the defaults
// (kind 1, created_at testNow, one topic "go", content "hello").
func signed(t testing.TB, sk string, edit func(*nostr.Event)) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{
		Kind:      1,
		CreatedAt: nostr.Timestamp(testNow.Unix()),
		Tags:      nostr.Tags{{"t", "go"}},
		Content:   "hello",
	}
	if edit != nil {
		edit(ev)
	}
	require.NoError(t, ev.Sign(sk))
	return ev
}

func hex64(c byte) string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

func ts(v int64) *nostr.Timestamp {
	t := nostr.Timestamp(v)
	return &t
}
