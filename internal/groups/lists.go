package groups

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MemberLists bounds how often the node re-signs a large group's member
// list. A 39002 lists every member, so re-signing it for each addition
// writes the whole list again (its JSON, one tag row per member, their WAL):
// one key adding members one by one to a group of N would make the
// database write O(N) bytes per addition. So a group with more than Above
// members gets at most one new 39002 per Every: a change that comes sooner
// is in the group's state at once (who may read and write, roles, 39001)
// and in the next list, which the node signs when Every has passed since
// the last one (Store.RenderDueLists; cn_relay.groups.list_due, migration
// 0036). Smaller groups, a group's first list, and every other state event
// are signed in the batch that changed them.
type MemberLists struct {
	// Every is the least time between two member lists of a group above
	// Above members; zero signs one per change whatever the size.
	Every time.Duration
	// Above is the member count above which lists are spaced by Every.
	Above int
}

// The defaults of MemberLists (relay flags --group-member-list-*): a list
// of 500 members is about 35 KB of JSON and 500 tag rows.
const (
	DefaultListEvery = 2 * time.Second
	DefaultListAbove = 500
)

// Defer reports whether the member list of a group of members members,
// whose newest list is dated last, waits (and until when) instead of being
// signed at now.
func (l MemberLists) Defer(members int, last, now time.Time) (time.Time, bool) {
	if l.Every <= 0 || members <= l.Above {
		return time.Time{}, false
	}
	due := last.Add(l.Every)
	return due, due.After(now)
}

// QueueListsDue queues, in the transaction of the batch that decided it,
// when each group of due gets its deferred member list (the earliest time
// wins), and that the groups of signed have theirs. Queue it after
// QueueSave, which makes a new group's row.
func QueueListsDue(b *pgx.Batch, due map[string]time.Time, signed []string) {
	if len(due) > 0 {
		ids, at := make([]string, 0, len(due)), make([]time.Time, 0, len(due))
		for id, t := range due {
			ids, at = append(ids, id), append(at, t)
		}
		b.Queue(`UPDATE cn_relay.groups g SET list_due = u.due
			FROM unnest($1::text[], $2::timestamptz[]) AS u(id, due)
			WHERE g.id = u.id AND (g.list_due IS NULL OR g.list_due > u.due)`, ids, at)
	}
	if len(signed) > 0 {
		b.Queue(`UPDATE cn_relay.groups SET list_due = NULL WHERE id = ANY($1) AND list_due IS NOT NULL`, signed)
	}
}

// ListsDue returns up to limit groups whose deferred member list is due at
// at, the longest waiting first (index groups_list_due, migration 0036).
func ListsDue(ctx context.Context, q Querier, at time.Time, limit int) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT id FROM cn_relay.groups WHERE list_due <= $1 ORDER BY list_due LIMIT $2`, at, limit)
	if err != nil {
		return nil, fmt.Errorf("read the member lists due: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the member lists due: %w", err)
	}
	return ids, nil
}
