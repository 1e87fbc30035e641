package membership

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The reads below are the lists of listmembers, listpendingmembers and
// listinvites a page at a time, for the console: keyset paging (a cursor
// is the sort key of a page's last row), so a page costs the same wherever
// it is in the list. The cursor's condition is in a statement only when
// there is a cursor: behind an OR, a cached generic plan would filter the
// index scan from the list's start instead of starting at the cursor.

// Counts is how many NIP-43 members, join requests waiting for an admin
// and open invites (neither used, revoked nor expired) there are.
type Counts struct {
	Members, Pending, OpenInvites int
}

// ReadCounts reads Counts in one statement.
func ReadCounts(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) (Counts, error) {
	var c Counts
	err := q.QueryRow(ctx, `SELECT (SELECT count(*) FROM cn_relay.nip43_members WHERE member),
		(SELECT count(*) FROM cn_relay.membership_pending),
		(SELECT count(*) FROM cn_relay.membership_claims WHERE used_by IS NULL AND revoked_at IS NULL AND expires_at > now())`).
		Scan(&c.Members, &c.Pending, &c.OpenInvites)
	if err != nil {
		return c, fmt.Errorf("count NIP-43 lists: %w", err)
	}
	return c, nil
}

// MembersPage reads at most limit NIP-43 members (as ListMembers returns
// them) by pubkey, after the pubkey after ("" from the first).
func MembersPage(ctx context.Context, q Querier, after string, limit int) ([]Member, error) {
	rows, err := q.Query(ctx, `SELECT pubkey, via, at, roles FROM cn_relay.nip43_members
		WHERE member AND pubkey > $1 ORDER BY pubkey LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read NIP-43 members: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Member, error) {
		var m Member
		err := r.Scan(&m.Pubkey, &m.Via, &m.Since, &m.Roles)
		if m.Roles == nil {
			m.Roles = []string{}
		}
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("read NIP-43 members: %w", err)
	}
	return out, nil
}

// PendingPage reads at most limit join requests waiting for an admin,
// oldest first (requested_at, then pubkey), after the cursor (after,
// afterPK) when after is not nil; at holds each one's requested_at whole
// (the cursor's precision). Rank is left nil: trust.Ranks owns it.
func PendingPage(ctx context.Context, q Querier, after *time.Time, afterPK string, limit int) (out []Pending, at []time.Time, err error) {
	cursor, args := "", []any{limit}
	if after != nil {
		cursor, args = "WHERE (p.requested_at, p.pubkey) > ($2, $3)", append(args, *after, afterPK)
	}
	rows, err := q.Query(ctx, `SELECT p.pubkey, p.requested_at, p.event_id FROM cn_relay.membership_pending p `+cursor+`
		ORDER BY p.requested_at, p.pubkey LIMIT $1`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("read NIP-43 join requests: %w", err)
	}
	out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Pending, error) {
		var x Pending
		var t time.Time
		err := r.Scan(&x.Pubkey, &t, &x.EventID)
		x.RequestedAt = t.Unix()
		at = append(at, t)
		return x, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read NIP-43 join requests: %w", err)
	}
	return out, at, nil
}

// InvitesPage reads at most limit invites (as ListInvites returns them,
// never a claim), newest first (issued_at, then id, both descending), after
// the cursor (after, afterID) when after is not nil; their states are as of
// now. issued holds each one's issued_at whole (the cursor's precision).
func InvitesPage(ctx context.Context, q Querier, after *time.Time, afterID string, limit int, now time.Time) (out []Invite, issued []time.Time, err error) {
	cursor, args := "", []any{limit}
	if after != nil {
		cursor, args = "WHERE (issued_at, id) < ($2, $3)", append(args, *after, afterID)
	}
	rows, err := q.Query(ctx, `SELECT id, issuer, issued_at, expires_at, coalesce(used_by, ''), used_at, revoked_at
		FROM cn_relay.membership_claims `+cursor+`
		ORDER BY issued_at DESC, id DESC LIMIT $1`, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("read NIP-43 invites: %w", err)
	}
	out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Invite, error) {
		var iv Invite
		var at, expires time.Time
		var used, revoked *time.Time
		if err := r.Scan(&iv.ID, &iv.Issuer, &at, &expires, &iv.UsedBy, &used, &revoked); err != nil {
			return iv, err
		}
		issued = append(issued, at)
		iv.SetTimes(at, expires, used, revoked, now)
		return iv, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read NIP-43 invites: %w", err)
	}
	return out, issued, nil
}

// ChangeMark is a marker that moves whenever NIP-43 join requests or invites
// change (requests: count and newest; invites: count, revoked, used), for
// pages that re-read them when it does. Its form is not a promise: compare it
// with an earlier mark, never parse it.
func ChangeMark(ctx context.Context, q Querier) (string, error) {
	rows, err := q.Query(ctx, `SELECT (SELECT count(*) || ':' || coalesce(max(requested_at)::text, '') FROM cn_relay.membership_pending) || '/' ||
		(SELECT count(*) || ':' || count(revoked_at) || ':' || count(used_at) FROM cn_relay.membership_claims)`)
	if err != nil {
		return "", fmt.Errorf("membership change mark: %w", err)
	}
	return pgx.CollectExactlyOneRow(rows, pgx.RowTo[string])
}
