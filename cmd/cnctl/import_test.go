package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
)

// writeEvents writes a JSON Lines file: two notes, a line that is no JSON, a
// note with a bad signature and a reply that inherits its topic.
func writeEvents(t *testing.T) (path string, ids []string, at nostr.Timestamp) {
	t.Helper()
	sk := nostr.GeneratePrivateKey()
	at = nostr.Timestamp(time.Now().Add(-time.Hour).Unix())
	var lines []string
	add := func(ev *nostr.Event, tamper bool) {
		require.NoError(t, ev.Sign(sk))
		if tamper {
			ev.Sig = strings.Repeat("1", 128)
		} else {
			ids = append(ids, ev.ID)
		}
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	note := &nostr.Event{Kind: 1, CreatedAt: at, Tags: nostr.Tags{{"t", "go"}}, Content: "one"}
	add(note, false)
	add(&nostr.Event{Kind: 1, CreatedAt: at + 1, Tags: nostr.Tags{{"t", "zig"}}, Content: "two"}, false)
	lines = append(lines, "{nope")
	add(&nostr.Event{Kind: 1, CreatedAt: at + 2, Tags: nostr.Tags{{"t", "go"}}, Content: "forged"}, true)
	add(&nostr.Event{Kind: 1, CreatedAt: at + 3, Tags: nostr.Tags{{"e", note.ID}}, Content: "reply"}, false)
	path = filepath.Join(t.TempDir(), "events.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	return path, ids, at
}

func countRows(t *testing.T, db *pgtest.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.Pool.QueryRow(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

func TestImportCommand(t *testing.T) {
	t.Parallel()
	path, ids, _ := writeEvents(t)

	dry := pgtest.New(t)
	out, err := cnctl(t, "import", "--database-url", dry.URL, "--dry-run", "--progress", "0", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "line 3: invalid: message is not valid JSON\n")
	require.Contains(t, out, "line 4: invalid: bad signature (event ")
	require.Contains(t, out, "dry run (nothing written): 5 lines in ")
	require.Contains(t, out, "accepted 3, pending 0, duplicate 0, refused 2\n")
	require.Contains(t, out, "would append 3 outbox rows\n")
	require.Zero(t, countRows(t, dry, "cn_relay.events"))
	require.Zero(t, countRows(t, dry, "cn_relay.events_outbox"))

	db := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", db.URL, "--json", "--progress", "0", path)
	require.NoError(t, err, out)
	var st struct {
		Lines, Accepted, Refused int
		Reasons                  map[string]int `json:"refused_by_reason"`
		HeadSeq                  int            `json:"head_seq"`
	}
	require.NoError(t, json.NewDecoder(strings.NewReader(out)).Decode(&st), out) // stdout, then stderr
	require.Equal(t, 5, st.Lines)
	require.Equal(t, 3, st.Accepted)
	require.Equal(t, map[string]int{"invalid: message is not valid JSON": 1, "invalid: bad signature": 1}, st.Reasons)
	require.Equal(t, 3, st.HeadSeq)
	require.Equal(t, 3, countRows(t, db, "cn_relay.events"))
	require.Equal(t, 3, countRows(t, db, "cn_relay.events_outbox"), "one upsert row per event and topic")

	// Again: everything is a duplicate now.
	out, err = cnctl(t, "import", "--database-url", db.URL, "--progress", "0", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "accepted 0, pending 0, duplicate 3, refused 2\n")

	// The relay's topic settings apply: only zig is enabled.
	limited := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", limited.URL, "--allowed-topics", "zig", "--progress", "0", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "line 1: restricted: topic not enabled (event "+ids[0]+")\n")
	require.Contains(t, out, "accepted 1, pending 0, duplicate 0, refused 4\n")
}

func TestExportCommandRoundTrip(t *testing.T) {
	t.Parallel()
	path, ids, at := writeEvents(t)
	src := pgtest.New(t)
	out, err := cnctl(t, "import", "--database-url", src.URL, "--progress", "0", path)
	require.NoError(t, err, out)

	exported := filepath.Join(t.TempDir(), "export.jsonl")
	out, err = cnctl(t, "export", "--database-url", src.URL, "--output", exported)
	require.NoError(t, err, out)
	require.Contains(t, out, "exported 3 events in ")
	first, err := os.ReadFile(exported)
	require.NoError(t, err)

	dst := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", dst.URL, "--progress", "0", exported)
	require.NoError(t, err, out)
	require.Contains(t, out, "accepted 3, pending 0, duplicate 0, refused 0\n")
	out, err = cnctl(t, "export", "--database-url", dst.URL)
	require.NoError(t, err)
	require.Equal(t, string(first)+"exported 3 events in ", out[:strings.LastIndex(out, " ")+1], "the same events, in the same order")

	out, err = cnctl(t, "export", "--database-url", src.URL, "--filter", `{"#t":["go"]}`)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(out, "\n")-1, "the reply inherits go, but #t matches own t tags")
	require.Contains(t, out, ids[0])
	out, err = cnctl(t, "export", "--database-url", src.URL, "--filter", `{"kinds":[1]}`, "--since", at.Time().Format(time.RFC3339), "--until", fmt.Sprint(at+1))
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(out, "\n")-1, "--until is inclusive")
}

func TestImportExportErrors(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	path, _, _ := writeEvents(t)
	down := "postgres://postgres@127.0.0.1:1/x?connect_timeout=2"
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"import", path}, "no database: set DATABASE_URL", 2},
		{[]string{"import", "--database-url", down, "a", "b"}, `import takes one FILE or -`, 2},
		{[]string{"import", "--database-url", down, path, "--dry-run"}, "flag --dry-run after the arguments", 2},
		{[]string{"import", "--database-url", down, "--batch-size", "0", path}, "--batch-size must be positive", 2},
		{[]string{"import", "--database-url", down, "--identity-writers", "some", path}, "identity writers must be", 2},
		{[]string{"import", "--database-url", down, filepath.Join(t.TempDir(), "missing.jsonl")}, "no such file or directory", 1},
		{[]string{"import", "--database-url", down, path}, "connect to database", 1},
		{[]string{"export", "--database-url", down, "--filter", "{bad"}, "--filter is not a NIP-01 filter object", 2},
		{[]string{"export", "--database-url", down, "--filter", `{"ids":["xyz"]}`}, "--filter: invalid:", 2},
		{[]string{"export", "--database-url", down, "--filter", `{"search":"x"}`}, "search filters cannot be exported", 2},
		{[]string{"export", "--database-url", down, "--since", "yesterday"}, `"yesterday" is neither unix seconds nor an RFC 3339 time`, 2},
		{[]string{"export", "--database-url", down, "extra"}, `unexpected argument "extra"`, 2},
		{[]string{"export", "--database-url", down}, "connect to database", 1},
	} {
		_, err := cnctl(t, tc.args...)
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, oneLine(err), tc.want, "%v", tc.args)
		require.NotContains(t, oneLine(err), "\n")
		require.Equal(t, tc.code, exitCode(err), "%v", tc.args)
	}
}

// TestImportTakesTheRelaysRules: the relay's store rules reach the import from
// the relay's environment variables: with CN_RELAY_DEFAULT_TOPIC a topicless
// note is stored in that topic (as the running relay stores it) instead of
// being refused, and CN_RELAY_CREATED_AT_LOWER_LIMIT refuses what is older.
func TestImportTakesTheRelaysRules(t *testing.T) {
	sk := nostr.GeneratePrivateKey()
	note := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: "no t tag, nothing to reply to"}
	require.NoError(t, note.Sign(sk))
	old := &nostr.Event{Kind: 1, CreatedAt: nostr.Timestamp(time.Now().Add(-48 * time.Hour).Unix()), Tags: nostr.Tags{{"t", "go"}}, Content: "two days old"}
	require.NoError(t, old.Sign(sk))
	path := filepath.Join(t.TempDir(), "export.jsonl")
	var lines []string
	for _, ev := range []*nostr.Event{note, old} {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	topics := func(db *pgtest.DB, id string) []string {
		rows, err := db.Pool.Query(t.Context(), "SELECT topic_id FROM cn_relay.events_outbox WHERE event_id = $1 ORDER BY topic_id", id)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}

	t.Setenv("CN_RELAY_DEFAULT_TOPIC", "")
	require.NoError(t, os.Unsetenv("CN_RELAY_DEFAULT_TOPIC"))
	without := pgtest.New(t)
	out, err := cnctl(t, "import", "--database-url", without.URL, "--progress", "0", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "line 1: "+protocol.ReasonMissingTopic, "without a default topic the relay refuses it too")
	require.Contains(t, out, "accepted 1, pending 0, duplicate 0, refused 1\n")

	t.Setenv("CN_RELAY_DEFAULT_TOPIC", "Lounge")
	t.Setenv("CN_RELAY_CREATED_AT_LOWER_LIMIT", "24h")
	with := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", with.URL, "--progress", "0", path)
	require.NoError(t, err, out)
	require.Equal(t, []string{"lounge"}, topics(with, note.ID), "stored in the default topic, normalised, with its outbox row")
	require.Contains(t, out, "accepted 1, pending 0, duplicate 0, refused 1\n")
	require.Contains(t, out, "line 2: "+protocol.ReasonPast)
	var own bool
	require.NoError(t, with.Pool.QueryRow(t.Context(), "SELECT own FROM cn_relay.event_topics WHERE event_id = $1 AND topic_id = 'lounge'", note.ID).Scan(&own))
	require.False(t, own, "the topic is the default's, not a t tag of the event")
	require.Empty(t, topics(with, old.ID))
}

// TestImportCountsPending: a profile whose author has no post here waits for
// it; the import says so apart from what it accepted, in its summary and its
// JSON, and a profile whose author posts later in the file is accepted.
func TestImportCountsPending(t *testing.T) {
	t.Parallel()
	newcomer, poster := nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()
	at := nostr.Timestamp(time.Now().Add(-time.Hour).Unix())
	var lines []string
	for _, ev := range []*nostr.Event{
		{Kind: 0, CreatedAt: at, Content: `{"name":"newcomer"}`},
		{Kind: 0, CreatedAt: at, Content: `{"name":"poster"}`},
		{Kind: 1, CreatedAt: at + 1, Tags: nostr.Tags{{"t", "go"}}, Content: "first post"},
	} {
		sk := poster
		if ev.Content == `{"name":"newcomer"}` {
			sk = newcomer
		}
		require.NoError(t, ev.Sign(sk))
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		lines = append(lines, string(b))
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	db := pgtest.New(t)
	out, err := cnctl(t, "import", "--database-url", db.URL, "--progress", "0", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "accepted 2, pending 1, duplicate 0, refused 0\n")
	require.Contains(t, out, "  pending 1: profiles and lists of authors with no post here yet")
	require.Equal(t, 1, countRows(t, db, "cn_relay.pending_events"))

	dry := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", dry.URL, "--dry-run", "--json", path)
	require.NoError(t, err, out)
	var st struct{ Accepted, Pending int }
	require.NoError(t, json.NewDecoder(strings.NewReader(out)).Decode(&st), out)
	require.Equal(t, 2, st.Accepted)
	require.Equal(t, 1, st.Pending)

	anyone := pgtest.New(t)
	out, err = cnctl(t, "import", "--database-url", anyone.URL, "--progress", "0", "--identity-writers", "any", path)
	require.NoError(t, err, out)
	require.Contains(t, out, "accepted 3, pending 0, duplicate 0, refused 0\n", "nobody waits when anyone may publish a profile")
}
