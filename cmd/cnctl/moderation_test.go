package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestNodeKeyCommands(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "node.key")
	out, err := cnctl(t, "node-key", "generate", "--file", file)
	require.NoError(t, err)
	require.Contains(t, out, "npub1")
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	shown, err := cnctl(t, "node-key", "show", "--file", file)
	require.NoError(t, err)
	require.Contains(t, out, strings.Fields(shown)[1], "show prints the generated pubkey")

	_, err = cnctl(t, "node-key", "generate", "--file", file)
	require.ErrorContains(t, err, "already exists")
	require.Equal(t, 1, exitCode(err))
	_, err = cnctl(t, "node-key", "show", "--file", filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
}

func TestModerationRulesCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	v1 := write("v1.yml", "rules:\n  - {name: casino-spam, kinds: [1], content_regex: '(?i)casino', label: spam, action: label}\n  - {name: reported, min_reports: 3, label: reported, action: hide}\n")
	out, err := cnctl(t, "moderation", "rules", "apply", "--database-url", db.URL, v1)
	require.NoError(t, err)
	require.Contains(t, out, "added     casino-spam (version 1)")
	require.Contains(t, out, "dry run: 2 change(s); add --execute to apply")
	out, err = cnctl(t, "moderation", "rules", "list", "--database-url", db.URL)
	require.NoError(t, err)
	require.NotContains(t, out, "casino-spam", "a dry run changes nothing")

	_, err = cnctl(t, "moderation", "rules", "apply", "--execute", "--database-url", db.URL, v1)
	require.NoError(t, err)
	out, err = cnctl(t, "moderation", "rules", "list", "--database-url", db.URL)
	require.NoError(t, err)
	require.Regexp(t, `casino-spam\s+1\s+content\s+spam\s+label`, out)
	require.Regexp(t, `reported\s+1\s+reports\s+reported\s+hide`, out)

	// Invalid files are refused whole, naming the rule and the reason.
	for _, bad := range []string{
		"rules:\n  - {name: casino-spam, content_regex: '(', label: spam, action: label}\n",
		"rules:\n  - {name: casino-spam, label: spam, action: label, colour: red}\n",
		"rules:\n  - {name: casino-spam, label: spam, action: ban}\n",
	} {
		_, err = cnctl(t, "moderation", "rules", "apply", "--execute", "--database-url", db.URL, write("bad.yml", bad))
		require.Error(t, err)
		require.Equal(t, 1, exitCode(err))
	}
	_, err = cnctl(t, "moderation", "rules", "apply", "--database-url", db.URL, write("bad.yml", "rules:\n  - {name: x, label: spam, action: ban}\n"))
	require.ErrorContains(t, err, `rule "x": unknown action "ban"`)
	out, err = cnctl(t, "moderation", "rules", "list", "--database-url", db.URL)
	require.NoError(t, err)
	require.Regexp(t, `casino-spam\s+1\s`, out, "nothing half-applied")

	// A change bumps the version; --rejudge replays the retained outbox.
	_, err = db.Pool.Exec(context.Background(), "INSERT INTO cn_relay.consumer_offsets (consumer, last_seq) VALUES ('moderation-v1', 0)")
	require.NoError(t, err)
	st := testkit.NewStore(db.Pool)
	note := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "casino"}
	require.NoError(t, note.Sign(nostr.GeneratePrivateKey()))
	_, err = st.Ingest(context.Background(), []*nostr.Event{note})
	require.NoError(t, err)
	_, err = db.Pool.Exec(context.Background(), "UPDATE cn_relay.consumer_offsets SET last_seq = (SELECT max(seq) FROM cn_relay.events_outbox) WHERE consumer = 'moderation-v1'")
	require.NoError(t, err)
	v2 := write("v2.yml", "rules:\n  - {name: casino-spam, kinds: [1], content_regex: '(?i)casino', label: spam, action: hold}\n")
	_, err = cnctl(t, "moderation", "rules", "apply", "--rejudge", "--database-url", db.URL, v2)
	require.Equal(t, 2, exitCode(err), "--rejudge needs --execute")
	out, err = cnctl(t, "moderation", "rules", "apply", "--execute", "--rejudge", "--database-url", db.URL, v2)
	require.NoError(t, err)
	require.Contains(t, out, "changed   casino-spam (version 2)")
	require.Contains(t, out, "removed   reported (version 1)")
	require.Contains(t, out, "rejudge: moderation-v1 moves from seq 1 to 0; 1 retained row(s) will be judged again")

	_, err = cnctl(t, "moderation", "rules", "apply", v2, "--execute", "--database-url", db.URL)
	require.ErrorContains(t, err, "put flags first")
	require.Equal(t, 2, exitCode(err))

	// Operator decisions.
	_, err = cnctl(t, "moderation", "hide", "--database-url", db.URL, note.ID)
	require.Equal(t, 2, exitCode(err), "a hide needs a reason")
	_, err = cnctl(t, "moderation", "hide", "--reason", "x", "--database-url", db.URL, "abc")
	require.Equal(t, 2, exitCode(err))
	out, err = cnctl(t, "moderation", "hide", "--reason", "spam", "--database-url", db.URL, note.ID)
	require.NoError(t, err)
	require.Contains(t, out, note.ID+": hidden")
	out, err = cnctl(t, "moderation", "unhide", "--database-url", db.URL, note.ID)
	require.NoError(t, err)
	require.Contains(t, out, note.ID+": unhidden")
	_, err = cnctl(t, "moderation", "hide", "--reason", "x", "--database-url", db.URL, strings.Repeat("ab", 32))
	require.ErrorContains(t, err, "no such event")
	var actions int
	require.NoError(t, db.Pool.QueryRow(context.Background(),
		"SELECT count(*) FROM cn_moderation.actions WHERE event_id = $1 AND source = 'operator'", note.ID).Scan(&actions))
	require.Equal(t, 2, actions, "who, when, why are recorded")
	out, err = cnctl(t, "moderation", "queue", "--json", "--database-url", db.URL)
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(out))
	out, err = cnctl(t, "moderation", "queue", "--group", "g1", "--database-url", db.URL)
	require.NoError(t, err)
	require.Equal(t, "EVENT  REPORTERS  TYPES  HELD BY  HIDDEN", strings.TrimSpace(out))
	_, err = cnctl(t, "moderation", "queue", "--group", "not a group", "--database-url", db.URL)
	require.ErrorContains(t, err, "--group")
	require.Equal(t, 2, exitCode(err))
	_, err = cnctl(t, "moderation", "rules", "apply", "--database-url", db.URL,
		write("bad-group.yml", "rules:\n  - {name: g, groups: ['no spaces'], label: x, action: label}\n"))
	require.ErrorContains(t, err, "not a NIP-29 group id")
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	st := testkit.NewStore(db.Pool)
	sk := nostr.GeneratePrivateKey()
	note := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"t", "go"}}, Content: "hi"}
	require.NoError(t, note.Sign(sk))
	_, err := st.Ingest(context.Background(), []*nostr.Event{note})
	require.NoError(t, err)
	visible := func() bool {
		evs, err := st.Events(context.Background(), []string{note.ID})
		require.NoError(t, err)
		return len(evs) == 1
	}

	out, err := cnctl(t, "moderation", "ban-pubkey", "--reason", "spam", "--database-url", db.URL, note.PubKey)
	require.NoError(t, err)
	require.Contains(t, out, "ban-pubkey "+note.PubKey+": done")
	require.False(t, visible(), "the ban hides the pubkey's events")
	out, err = cnctl(t, "moderation", "list", "--database-url", db.URL, "banned-pubkeys")
	require.NoError(t, err)
	require.JSONEq(t, `[{"pubkey":"`+note.PubKey+`","reason":"spam"}]`, out)
	_, err = cnctl(t, "moderation", "allow-pubkey", "--database-url", db.URL, note.PubKey)
	require.NoError(t, err)
	require.True(t, visible(), "allowing lifts the ban")

	_, err = cnctl(t, "moderation", "block-ip", "--database-url", db.URL, "not-an-ip")
	require.Equal(t, 2, exitCode(err), "bad input: exit code 2 and one line")
	require.Contains(t, err.Error(), "not an IP address")
	_, err = cnctl(t, "moderation", "disallow-kind", "--database-url", db.URL, "x")
	require.Equal(t, 2, exitCode(err))
	_, err = cnctl(t, "moderation", "list", "--database-url", db.URL, "nope")
	require.Equal(t, 2, exitCode(err))

	out, err = cnctl(t, "moderation", "log", "--database-url", db.URL)
	require.NoError(t, err)
	require.Regexp(t, `cnctl\s+\S+@\S+\s+allowpubkey`, out)
	require.Regexp(t, `cnctl\s+\S+@\S+\s+banpubkey\s+\["`+note.PubKey+`", "spam"\]`, out)
}
