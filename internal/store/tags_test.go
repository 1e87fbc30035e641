package store

import (
	"encoding/json"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// tagsCorpus: what Postgres prints for jsonb tags, and what it never prints.
var tagsCorpus = []string{
	`[]`, `[[]]`, `[["t", "bench"]]`, `[["t", "bench"], ["p", "ab12"], ["e", "cd", "wss://x", "reply"]]`,
	`[["content-warning"], []]`, `[["t", "caf\u00e9"], ["x", "a\"b"]]`, `[["x", "line\nbreak"]]`,
	`[["x", "ünïcödé ✓"]]`, ` [ [ "a" , "b" ] ] `, `[["a"], ["b"]] x`, `[["a", 1]]`, `[["a"]`, `[`, ``,
	`null`, `[null]`, `[["a"],]`, `{"a": 1}`, `[["a" "b"]]`, `[["a\\b"]]`,
}

// TestDecodeTagsLikeEncodingJSON: decodeTags gives what encoding/json gives
// (the same tags, or an error) on every corpus entry.
func TestDecodeTagsLikeEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, raw := range tagsCorpus {
		checkDecodeTags(t, raw)
	}
}

func FuzzDecodeTags(f *testing.F) {
	for _, raw := range tagsCorpus {
		f.Add(raw)
	}
	f.Fuzz(checkDecodeTags)
}

func checkDecodeTags(t *testing.T, raw string) {
	var want nostr.Tags
	wantErr := json.Unmarshal([]byte(raw), &want)
	got, err := decodeTags(raw)
	if wantErr != nil {
		require.Error(t, err, "%q", raw)
		return
	}
	require.NoError(t, err, "%q", raw)
	require.Equal(t, want, got, "%q", raw)
}

func BenchmarkDecodeTags(b *testing.B) {
	raw := `[["t", "bench"], ["p", "3bf0c63fcb93463407af97a5e5ee64fa883d107ef9e558472c4eb9aaaefa459d"], ["e", "5c83da77af1dec6d7289834998ad7aafbd9e2191396d75ec3cc27f5a77226f36", "wss://relay.example", "reply"]]`
	b.Run("decodeTags", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeTags(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var tags nostr.Tags
			if err := json.Unmarshal([]byte(raw), &tags); err != nil {
				b.Fatal(err)
			}
		}
	})
}
