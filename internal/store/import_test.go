package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// TestImportWritesWhatIngestWrites: Import (COPY) and Ingest (INSERT ...
// unnest), given the same batches, answer the same verdicts and leave the same
// rows in every table the store writes, column by column (but the clock's),
// and the same outbox rows in the same seq order. The batches mix what the
// plan decides: replaceable and addressable versions (newer, older, in one
// batch and across batches, ties), NIP-09 deletions by id and by address
// (before and after their targets, in the target's batch), duplicates (in a
// batch and of stored events, of deleted ones), pending identity events and
// their promotion, inherited topics, hashtags of identity events, NIP-40
// expiration, tags the tag table skips (t, long values, repeats) and refused
// events.
func TestImportWritesWhatIngestWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keys := []string{nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey(), nostr.GeneratePrivateKey()}
	pub := func(i int) string { pk, _ := nostr.GetPublicKey(keys[i]); return pk }
	sign := func(author, kind int, at nostr.Timestamp, tags nostr.Tags, content string) *nostr.Event {
		ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
		require.NoError(t, ev.Sign(keys[author]))
		return ev
	}
	now := nostr.Timestamp(time.Now().Unix())
	long := strings.Repeat("x", 1100)

	note := sign(0, 1, base, nostr.Tags{topic("go"), topic("Rust"), {"p", pub(1)}, {"p", pub(1)}, {"r", long},
		{"expiration", fmt.Sprint(now + 3600)}}, "a note")
	gone := sign(0, 1, base+1, nostr.Tags{topic("go")}, "deleted in its own batch")
	goneDel := sign(0, 5, base+2, nostr.Tags{{"e", gone.ID}}, "")
	p1 := sign(0, 0, base, nostr.Tags{topic("Profiles")}, `{"name":"v1"}`)
	p2 := sign(0, 0, base+5, nil, `{"name":"v2"}`)
	article := sign(0, 30023, base, nostr.Tags{{"d", "doc"}, topic("go")}, "article v1")
	article2 := sign(0, 30023, base+3, nostr.Tags{{"d", "doc"}, topic("go")}, "article v2")
	carolProfile := sign(2, 0, base, nil, `{"name":"carol"}`) // pending: carol is no member yet
	noTopic := sign(1, 1, base, nil, "refused: no topic")
	batch1 := []*nostr.Event{note, gone, goneDel, p2, p1, article, carolProfile, noTopic, note}

	reply := sign(1, 1, base+10, nostr.Tags{{"e", note.ID, "", "reply"}, {"p", pub(0)}}, "inherits go and rust")
	carolPost := sign(2, 1, base+11, nostr.Tags{topic("zig")}, "carol's first post publishes her profile")
	pOld := sign(0, 0, base-5, nil, `{"name":"older, stored not effective"}`)
	p3 := sign(0, 0, base+20, nil, `{"name":"v3"}`)
	tieA := sign(1, 10002, base, nostr.Tags{topic("go"), {"r", "wss://a"}}, "")
	tieB := sign(1, 10002, base, nostr.Tags{topic("go"), {"r", "wss://b"}}, "")
	addrDel := sign(0, 5, base+30, nostr.Tags{{"a", "30023:" + pub(0) + ":doc"}}, "")
	batch2 := []*nostr.Event{reply, carolPost, article2, pOld, p3, tieA, tieB, addrDel, note}

	early := sign(1, 1, base+40, nostr.Tags{topic("go")}, "deleted before it arrives")
	earlyDel := sign(1, 5, base+41, nostr.Tags{{"e", early.ID}, {"e", reply.ID}}, "")
	follows := sign(1, 3, base+42, nostr.Tags{{"p", pub(0)}, {"p", pub(2)}, {"p", pub(0)}}, "")
	p2Del := sign(0, 5, base+43, nostr.Tags{{"e", p3.ID}}, "the previous version comes back")
	batch3 := []*nostr.Event{earlyDel, early, follows, p2Del, gone, reply, article}

	batches := [][]*nostr.Event{batch1, batch2, batch3}
	run := func(bulk bool) (*pgtest.DB, [][]protocol.Verdict) {
		db := pgtest.New(t)
		s := New(db.Pool, outbox.NewWriter(db.Pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
		var verdicts [][]protocol.Verdict
		for _, b := range batches {
			ingest := s.Ingest
			if bulk {
				ingest = s.Import
			}
			v, err := ingest(ctx, b)
			require.NoError(t, err)
			verdicts = append(verdicts, v)
		}
		return db, verdicts
	}
	ingested, wantVerdicts := run(false)
	imported, gotVerdicts := run(true)
	require.Equal(t, wantVerdicts, gotVerdicts)

	want := dumpTables(t, ingested)
	require.Equal(t, want, dumpTables(t, imported))
	// The batches reach what they are meant to (else the comparison proves less).
	for _, s := range []string{
		`"scope": false`, // a hashtag of an identity event
		`"name": "r"`,    // a tag row
		`"deleted_reason": "nip09"`,
		`"expires_at": ` + fmt.Sprint(now+3600),
		`"is_effective": false`,
		`"effective_key": "30023:`,
		`"first_event_id": "` + carolPost.ID,
		`"op": "delete"`,
	} {
		require.Contains(t, want, s)
	}
	require.Contains(t, want, `"id": "`+carolProfile.ID, "the pending profile was published")
	require.NotContains(t, want, `"id": "`+noTopic.ID)
}

// dumpTables describes every row of the tables the store writes, every column
// but the clock's (ingested_at, deleted_at as a flag, joined_at, received_at),
// each table in its key's order, the outbox in seq order without the seq
// values themselves.
func dumpTables(t *testing.T, db *pgtest.DB) string {
	t.Helper()
	var out []string
	for _, q := range []string{
		`SELECT jsonb_pretty(to_jsonb(e) - 'ingested_at' - 'deleted_at' || jsonb_build_object('deleted', e.deleted_at IS NOT NULL))
			FROM cn_relay.events e ORDER BY id`,
		`SELECT jsonb_pretty(to_jsonb(x)) FROM cn_relay.event_topics x ORDER BY event_id, topic_id, scope`,
		`SELECT jsonb_pretty(to_jsonb(x)) FROM cn_relay.event_tags x ORDER BY event_id, name, value`,
		`SELECT jsonb_pretty(to_jsonb(x)) FROM cn_relay.deletion_targets x ORDER BY target, pubkey, deletion_id`,
		`SELECT jsonb_pretty(to_jsonb(x) - 'joined_at') FROM cn_relay.members x ORDER BY pubkey`,
		`SELECT jsonb_pretty(to_jsonb(x) - 'received_at') FROM cn_relay.pending_events x ORDER BY id`,
		`SELECT jsonb_pretty(to_jsonb(x) - 'seq' - 'ingested_at') FROM cn_relay.events_outbox x ORDER BY seq`,
	} {
		rows, err := db.Pool.Query(context.Background(), q)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err, q)
		out = append(out, q)
		out = append(out, lines...)
	}
	return strings.Join(out, "\n")
}
