package bulk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"
)

// TestCorpusNotesMentionOthers: every top-level note of the import corpus (a
// kind 1 with a t tag) mentions 1-3 distinct other authors of the corpus in p
// tags, so that `cnctl bench req` finds p values among a topic's events.
func TestCorpusNotesMentionOthers(t *testing.T) {
	t.Parallel()
	var file bytes.Buffer
	require.NoError(t, writeCorpus(&file, 2000, 20, time.Now().Add(-time.Minute)))
	var evs []nostr.Event
	authors := map[string]bool{}
	sc := bufio.NewScanner(&file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev nostr.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		evs = append(evs, ev)
		authors[ev.PubKey] = true
	}
	require.NoError(t, sc.Err())
	require.Len(t, evs, 2000)

	notes := 0
	for _, ev := range evs {
		if ev.Kind != 1 || ev.Tags.GetFirst([]string{"t"}) == nil {
			continue
		}
		notes++
		var ps []string
		for _, tag := range ev.Tags {
			if len(tag) >= 2 && tag[0] == "p" {
				ps = append(ps, tag[1])
			}
		}
		require.NotEmpty(t, ps, "note %s mentions no one", ev.ID)
		require.LessOrEqual(t, len(ps), 3, "note %s", ev.ID)
		seen := map[string]bool{}
		for _, p := range ps {
			require.True(t, authors[p], "note %s mentions %s, not an author of the corpus", ev.ID, p)
			require.NotEqual(t, ev.PubKey, p, "note %s mentions its own author", ev.ID)
			require.False(t, seen[p], "note %s mentions %s twice", ev.ID, p)
			seen[p] = true
		}
	}
	require.Greater(t, notes, 900, "the corpus is mostly top-level notes")
}
