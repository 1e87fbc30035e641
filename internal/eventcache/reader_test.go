package eventcache

import (
	"context"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// nextReads is the database behind a Reader: it records the requests it is
// asked and answers them as the primary.
type nextReads struct {
	reqs   []readpath.Request
	counts int
}

func (n *nextReads) Read(_ context.Context, req readpath.Request) (readpath.Result, error) {
	n.reqs = append(n.reqs, req)
	return readpath.Result{Seq: 42, Source: readpath.Primary}, nil
}

func (n *nextReads) Count(context.Context, []nostr.Filter, protocol.Viewer) (int64, error) {
	n.counts++
	return 7, nil
}

// headFeed is an outbox whose head and notifications are fixed.
type headFeed struct{ head, notified int64 }

func (f headFeed) Head(context.Context) (int64, error) { return f.head, nil }
func (f headFeed) Notified() int64                     { return f.notified }

// TestReaderAnswersWhatItHolds: a read the cache holds, once it has applied
// the outbox head, what this process committed and what was notified, is
// the cache's (its JSON, its seq, bounded by Cap, Take never asked); any
// other read, and every count, is Next's, with the request unchanged.
func TestReaderAnswersWhatItHolds(t *testing.T) {
	public := []nostr.Filter{{Kinds: []int{1}, Limit: 10}}
	size := len(`{"id":"`+note("0002", 0).ID+`"}`) + 64 + len("pk")
	cases := []struct {
		name                      string
		filters                   []nostr.Filter
		viewer                    protocol.Viewer
		head, notified, committed int64
		sole                      *int64 // Reader.Sole's floor; nil: not sole
		cap                       int64
		want                      string // hit, miss or behind
		events                    int
		stopped                   bool
	}{
		{name: "held", filters: public, head: 5, want: "hit", events: 2},
		{name: "capped", filters: public, head: 5, cap: int64(size), want: "hit", events: 1, stopped: true},
		{name: "private kinds", filters: []nostr.Filter{{Kinds: []int{4}, Limit: 10}}, viewer: protocol.Viewer{Authed: []string{"pk"}}, head: 5, want: "miss"},
		{name: "search", filters: []nostr.Filter{{Kinds: []int{1}, Search: "x", Limit: 10}}, head: 5, want: "miss"},
		{name: "head ahead", filters: public, head: 6, want: "behind"},
		{name: "notified ahead", filters: public, head: 5, notified: 6, want: "behind"},
		{name: "committed ahead", filters: public, head: 5, committed: 6, want: "behind"},
		// A sole writer reads no head (one ahead is not waited for); its floor
		// is.
		{name: "sole, head ahead", filters: public, head: 6, sole: ptr(int64(5)), want: "hit", events: 2},
		{name: "sole, floor ahead", filters: public, head: 5, sole: ptr(int64(6)), want: "behind"},
		{name: "sole, committed ahead", filters: public, head: 5, sole: ptr(int64(5)), committed: 6, want: "behind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(1<<20, false)
			fill(t, c, 5, note("0002", 100), note("0001", 90))
			next := &nextReads{}
			answers := NewAnswers()
			rd := NewReader(c, next, func() int64 { return tc.committed }, headFeed{tc.head, tc.notified}, nil, answers)
			rd.Wait = 10 * time.Millisecond
			if tc.sole != nil {
				rd.Sole = func() (int64, bool) { return *tc.sole, true }
			}
			took := 0
			req := readpath.Request{Filters: tc.filters, Viewer: tc.viewer, Cap: tc.cap,
				Take: func(int) bool { took++; return true }}
			res, err := rd.Read(context.Background(), req)
			require.NoError(t, err)
			require.EqualValues(t, 1, testutil.ToFloat64(answers.WithLabelValues(tc.want)))
			require.Zero(t, took, "the cache asked Take; only Next may")
			if tc.want != "hit" {
				require.Len(t, next.reqs, 1)
				require.Equal(t, tc.filters, next.reqs[0].Filters)
				require.Equal(t, tc.viewer, next.reqs[0].Viewer)
				require.NotNil(t, next.reqs[0].Take)
				require.Equal(t, tc.cap, next.reqs[0].Cap)
				require.Equal(t, readpath.Primary, res.Source)
				return
			}
			require.Empty(t, next.reqs)
			require.Equal(t, readpath.Cache, res.Source)
			require.EqualValues(t, 5, res.Seq)
			require.Len(t, res.Events, tc.events)
			require.Len(t, res.JSON, tc.events)
			require.Equal(t, `{"id":"`+res.Events[0].ID+`"}`, string(res.JSON[0]))
			require.Equal(t, tc.stopped, res.Stopped)
			n, err := rd.Count(context.Background(), tc.filters, tc.viewer)
			require.NoError(t, err)
			require.EqualValues(t, 7, n)
			require.Equal(t, 1, next.counts)
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestSoleReaderAsksAgainAfterItsWait: a sole writer's read answers with the
// cache's first answer only when the cache had applied everything wanted;
// when it had not, the answer is the cache's after the wait, holding what
// was applied meanwhile (here a commit of this process, applied before Want
// reports it), at the seq wanted.
func TestSoleReaderAsksAgainAfterItsWait(t *testing.T) {
	c := New(1<<20, false)
	fill(t, c, 5, note("0002", 100), note("0001", 90))
	late := note("0003", 110)
	want := func() int64 {
		if c.Stats().Seq < 6 {
			c.Apply([]outbox.Row{{Seq: 6, Op: outbox.OpUpsert, EventID: late.ID}},
				map[string]Loaded{late.ID: {Event: late, JSON: []byte(`{"id":"` + late.ID + `"}`)}}, 6)
		}
		return 6
	}
	next := &nextReads{}
	answers := NewAnswers()
	rd := NewReader(c, next, want, headFeed{5, 0}, nil, answers)
	rd.Wait = time.Second
	rd.Sole = func() (int64, bool) { return 0, true }
	res, err := rd.Read(context.Background(), readpath.Request{Filters: []nostr.Filter{{Kinds: []int{1}, Limit: 10}}})
	require.NoError(t, err)
	require.Empty(t, next.reqs)
	require.Equal(t, readpath.Cache, res.Source)
	require.EqualValues(t, 6, res.Seq)
	require.Len(t, res.Events, 3)
	require.Equal(t, late.ID, res.Events[0].ID)

	// Once applied, the first answer is the answer.
	res, err = rd.Read(context.Background(), readpath.Request{Filters: []nostr.Filter{{Kinds: []int{1}, Limit: 2}}})
	require.NoError(t, err)
	require.EqualValues(t, 6, res.Seq)
	require.Len(t, res.Events, 2)
	require.EqualValues(t, 2, testutil.ToFloat64(answers.WithLabelValues("hit")))
}
