package groups

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/protocol"
)

// Counts is what the relay's group metrics report: the groups by their flags
// (FlagsOf), the members and the pending join requests of the groups that
// exist (not deleted).
type Counts struct {
	Groups  map[string]int
	Members int
	Pending int
}

// Flag values of FlagsOf: every group has exactly one, so they add up to the
// number of groups.
const (
	FlagsOpen             = "open"
	FlagsClosed           = "closed"
	FlagsRestricted       = "restricted"
	FlagsClosedRestricted = "closed_restricted"
	FlagsDeleted          = "deleted"
	// FlagsUncreated: a state with no 9007 (only rebuilt, never live; kept
	// so that the counts still add up).
	FlagsUncreated = "uncreated"
)

// FlagsOf names the flags of s as one value: deleted, else uncreated, else
// open, closed, restricted or closed_restricted.
func FlagsOf(s *State) string {
	switch {
	case !s.Deleted.IsZero():
		return FlagsDeleted
	case s.Created.IsZero():
		return FlagsUncreated
	case s.Meta.Closed && s.Meta.Restricted:
		return FlagsClosedRestricted
	case s.Meta.Closed:
		return FlagsClosed
	case s.Meta.Restricted:
		return FlagsRestricted
	}
	return FlagsOpen
}

// CountsOf counts states (the reference for CountLive, which counts in the
// database).
func CountsOf(states map[string]*State) Counts {
	c := Counts{Groups: map[string]int{}}
	for _, s := range states {
		c.Groups[FlagsOf(s)]++
		if s.Exists() {
			c.Members += len(s.MemberList())
			c.Pending += len(s.PendingUsers())
		}
	}
	return c
}

// countSQL is CountsOf over cn_relay.groups and its users' rows
// (cn_relay.group_users), in the database: a scrape must
// not decode every member of every group. Its pending test is State.Pending
// (a request newer than the user's last 9000/9001, and not a member);
// TestGroupCounts and TestGroupRebuildEqualsLive (internal/store) keep the
// two equal.
const countSQL = `WITH g AS (
	SELECT id,
		CASE WHEN coalesce(state->'deleted'->>'id', '') <> '' THEN 'deleted'
			WHEN coalesce(state->'created'->>'id', '') = '' THEN 'uncreated'
			WHEN (state->'meta'->>'closed')::bool AND (state->'meta'->>'restricted')::bool THEN 'closed_restricted'
			WHEN (state->'meta'->>'closed')::bool THEN 'closed'
			WHEN (state->'meta'->>'restricted')::bool THEN 'restricted'
			ELSE 'open' END AS flags
	FROM cn_relay.groups)
SELECT flags, count(*),
	coalesce(sum((SELECT count(*) FROM cn_relay.group_users u WHERE u.group_id = g.id AND (u.member->>'in')::bool))
		FILTER (WHERE flags NOT IN ('deleted', 'uncreated')), 0),
	coalesce(sum((SELECT count(*) FROM cn_relay.group_users u WHERE u.group_id = g.id AND u.request IS NOT NULL
			AND NOT coalesce((u.member->>'in')::bool, false)
			AND (u.request->>'at')::bigint > coalesce((u.member->'stamp'->>'at')::bigint, 0)))
		FILTER (WHERE flags NOT IN ('deleted', 'uncreated')), 0)
FROM g GROUP BY flags`

// CountLive counts the live groups (cn_relay.groups) as CountsOf would.
func CountLive(ctx context.Context, q Querier) (Counts, error) {
	rows, err := q.Query(ctx, countSQL)
	if err != nil {
		return Counts{}, fmt.Errorf("count groups: %w", err)
	}
	defer rows.Close()
	c := Counts{Groups: map[string]int{}}
	for rows.Next() {
		var flags string
		var n, members, pending int
		if err := rows.Scan(&flags, &n, &members, &pending); err != nil {
			return Counts{}, fmt.Errorf("count groups: %w", err)
		}
		c.Groups[flags], c.Members, c.Pending = n, c.Members+members, c.Pending+pending
	}
	if err := rows.Err(); err != nil {
		return Counts{}, fmt.Errorf("count groups: %w", err)
	}
	return c, nil
}

// Result labels of ResultLabel besides the codes' labels and prefixes.
const (
	ResultAccepted = "accepted"
	ResultPending  = "pending" // the label of the pending review codes (reasons.go)
)

// ResultLabel is the label of a group event's answer, from its code (never
// its text): the code's label for a declared refusal (reasons.go: one per
// reason, pending for a join request kept for review), accepted for OK true,
// else the code's NIP-01 prefix (a refusal not declared in a table yet, from
// the checks before the group's: rate-limited, invalid, error, ...) or
// "other".
func ResultLabel(ok bool, code protocol.Code) string {
	switch {
	case code.Label != "":
		return code.Label
	case ok:
		return ResultAccepted
	case code.Prefix != "":
		return code.Prefix
	}
	return "other"
}

// ChangedAt is when a group's live state last changed (the newest
// cn_relay.groups.updated_at, unix microseconds; 0 with no groups): a change
// marker for pages that re-read the groups when it moves.
func ChangedAt(ctx context.Context, q Querier) (int64, error) {
	rows, err := q.Query(ctx, `SELECT coalesce((SELECT (extract(epoch FROM max(updated_at)) * 1e6)::bigint FROM cn_relay.groups), 0)`)
	if err != nil {
		return 0, fmt.Errorf("groups changed at: %w", err)
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
}
