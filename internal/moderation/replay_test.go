package moderation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

const replayRules = `
rules:
  - {name: casino, kinds: [1], content_regex: "(?i)casino", label: spam, action: label}
  - {name: pills, keywords: [pills], label: spam, action: hold, expire: 720h}
  - {name: rude, keywords: [rude], topics: [b], label: profanity, action: hide}
  - {name: two-reports, min_reports: 2, report_types: [spam], label: reported, action: hide}
  - {name: three-any, min_reports: 3, report_window: 1h, label: reported, action: hold}
`

// TestReplayAndCrashEndInTheSameState: the moderator's state after a live run,
// after a replay from seq 0, and after a replay whose batches fail half-way and
// whose process stops and restarts, is one and the same (canonical dump).
func TestReplayAndCrashEndInTheSameState(t *testing.T) {
	t.Parallel()
	n := newTestNode(t)
	n.batch = 37 // many batches, cut anywhere
	n.applyRules(t, replayRules)
	// Member lists re-signed per added member and removed when superseded
	// (issue 47): upsert rows whose events are gone when replayed. (Another
	// key than the moderator's, which skips its own events before loading.)
	testkit.HostGroups(t, n.store, testkit.GroupOpts{})
	n.startModerator(t)
	testkit.GroupFlood(t, n.store, "flood", 5, nostr.Now()-100_000)

	rng := rand.New(rand.NewPCG(3, 5))
	var authors []author
	for range 8 {
		authors = append(authors, newAuthor(t))
	}
	var notes, reports []*nostr.Event
	words := []string{"hello", "casino", "pills", "rude", "channels", "music"}
	base := nostr.Timestamp(1_700_000_000)
	ingest := func(evs ...*nostr.Event) {
		res, err := n.store.Ingest(context.Background(), evs)
		require.NoError(t, err)
		for i, r := range res {
			require.True(t, r.OK, "event %d: %s", i, r.Message)
		}
	}
	for i := range 400 {
		a := authors[rng.IntN(len(authors))]
		var ev *nostr.Event
		switch x := rng.IntN(10); {
		case x < 6 || len(notes) < 5:
			topic := []string{"a", "b"}[rng.IntN(2)]
			ev = sign(t, a, 1, base+nostr.Timestamp(i), nostr.Tags{{"t", topic}},
				fmt.Sprintf("%s %s %d", words[rng.IntN(len(words))], words[rng.IntN(len(words))], i))
			notes = append(notes, ev)
		case x < 9:
			target := notes[rng.IntN(len(notes))]
			typ := []string{"spam", "nudity", "other"}[rng.IntN(3)]
			ev = sign(t, a, 1984, base+nostr.Timestamp(i), nostr.Tags{{"e", target.ID, typ}, {"p", target.PubKey}}, "")
			reports = append(reports, ev)
		default:
			// The author deletes one of their notes, or withdraws a report.
			pool := notes
			if rng.IntN(2) == 0 {
				pool = reports
			}
			own := pool[rng.IntN(len(pool))]
			for _, aa := range authors {
				if aa.pk == own.PubKey {
					a = aa
				}
			}
			ev = sign(t, a, 5, base+nostr.Timestamp(i), nostr.Tags{{"e", own.ID}}, "")
		}
		ingest(ev)
	}
	n.sync(t, ConsumerName)
	live := dump(t, n)
	require.Contains(t, live, "labels ")
	require.Contains(t, live, "hide")
	require.Contains(t, live, "retracted_by=")

	// A replay from 0.
	n.stopMod()
	resetTo(t, n, 0)
	n.startModerator(t)
	n.sync(t, ConsumerName)
	require.Equal(t, live, dump(t, n), "replay from 0")

	// A replay whose batches fail after doing their work (rolled back), with the
	// process stopped and restarted in the middle.
	n.stopMod()
	resetTo(t, n, 0)
	var calls atomic.Int64
	n.wrap = func(h consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
			if err := h.Handle(ctx, tx, rows); err != nil {
				return err
			}
			if calls.Add(1)%3 == 1 {
				return errors.New("crash after the batch's writes, before its commit")
			}
			return nil
		})
	}
	n.startModerator(t)
	require.Eventually(t, func() bool { return calls.Load() >= 4 }, waitLong, pollEvery)
	n.stopMod()
	n.startModerator(t)
	n.sync(t, ConsumerName)
	require.Equal(t, live, dump(t, n), "crashes mid-batch")
}

func sign(t *testing.T, a author, kind int, at nostr.Timestamp, tags nostr.Tags, content string) *nostr.Event {
	t.Helper()
	ev := &nostr.Event{Kind: kind, CreatedAt: at, Tags: tags, Content: content}
	require.NoError(t, ev.Sign(a.sk))
	return ev
}

// resetTo moves moderation-v1 back to seq (the consumer is stopped).
func resetTo(t *testing.T, n *testNode, seq int64) {
	t.Helper()
	plan, err := consumer.PlanReset(context.Background(), n.db.Pool, ConsumerName, consumer.ResetTarget{Seq: &seq})
	require.NoError(t, err)
	require.NoError(t, consumer.ExecuteReset(context.Background(), n.db.Pool, plan, true, "test"))
}

// dump is the canonical state of moderation: its tables without times, and the
// visibility of every event (hides, labels, retractions).
func dump(t *testing.T, n *testNode) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []struct{ name, sql string }{
		{"labels", "SELECT label_id, target_id, rule, rule_version, label, coalesce(retracted_by, ''), seq FROM cn_moderation.labels ORDER BY label_id"},
		{"reports", "SELECT report_id, target, target_kind, target_pubkey, reporter, report_type, created_at, seq, coalesce(withdrawn_seq, 0) FROM cn_moderation.reports ORDER BY report_id, target"},
		{"actions", "SELECT event_id, action, source, actor, reason FROM cn_moderation.actions ORDER BY event_id, action, actor"},
		{"events", "SELECT id, kind, pubkey = $1, coalesce(deleted_reason, ''), is_effective FROM cn_relay.events ORDER BY id"},
	} {
		var rows pgx.Rows
		var err error
		if strings.Contains(q.sql, "$1") {
			rows, err = n.db.Pool.Query(context.Background(), q.sql, n.key.PubKey)
		} else {
			rows, err = n.db.Pool.Query(context.Background(), q.sql)
		}
		require.NoError(t, err)
		for rows.Next() {
			vals, err := rows.Values()
			require.NoError(t, err)
			fmt.Fprintf(&b, "%s %v\n", q.name, vals)
			if q.name == "labels" && vals[5] != "" {
				b.WriteString("retracted_by=\n")
			}
		}
		require.NoError(t, rows.Err())
	}
	return b.String()
}
