package groups

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nbd-wtf/go-nostr"
)

// Who reads a withheld event (Decision.Withhold), as the relay serves them to
// a REQ (never COUNT, search, NIP-77, export, the outbox or its consumers):
//
//   - a 9009 (create-invite) of group G: a member of G whose roles carry
//     CreateInvite, the node key and the relay's admins (master);
//   - a 9021 with a code of group G: a member of G whose roles carry PutUser
//     (who may answer it with a 9000), master, and its own author.
//
// The rule is read from the group's state at each read, so a member whose
// roles are taken away (or who is removed) reads none of them from then on.

// WithheldReader is who asks for withheld events: the keys a connection
// authenticated as (NIP-42), and whether one of them is the node key or a
// relay admin (master: every group's).
type WithheldReader struct {
	Keys   []string
	Master bool
}

// WithheldGrant is what a reader may read of one group's withheld events of
// one kind: all of them, or (All false) those by Authors, the reader's own
// keys.
type WithheldGrant struct {
	Group   string
	Kind    int
	All     bool
	Authors []string
}

// withheldPrivilege is the privilege that reads every withheld event of kind.
func withheldPrivilege(kind int) (Privilege, bool) {
	switch kind {
	case KindCreateInvite:
		return CreateInvite, true
	case KindJoinRequest:
		return PutUser, true
	}
	return "", false
}

// GrantOf returns what r may read of group s's (nil: unknown) withheld
// events of kind, and false for nothing.
func (r WithheldReader) GrantOf(s *State, kind int) (WithheldGrant, bool) {
	what, ok := withheldPrivilege(kind)
	if !ok || len(r.Keys) == 0 && !r.Master {
		return WithheldGrant{}, false
	}
	g := WithheldGrant{Kind: kind}
	if s != nil {
		g.Group = s.ID
	}
	if r.Master {
		g.All = true
		return g, true
	}
	if s != nil {
		for _, k := range r.Keys {
			if may(s.RolesOf(k), what) {
				g.All = true
				return g, true
			}
		}
	}
	if kind != KindJoinRequest {
		return WithheldGrant{}, false
	}
	g.Authors = slices.Clone(r.Keys)
	return g, true
}

// MayRead reports whether r may read ev, a withheld event of group s (nil:
// unknown).
func (r WithheldReader) MayRead(s *State, ev *nostr.Event) bool {
	g, ok := r.GrantOf(s, ev.Kind)
	return ok && (g.All || slices.Contains(g.Authors, ev.PubKey))
}

// WithheldKindsOf returns the kinds of withheld events f can match (none
// for a filter that names no group with #h, or has a NIP-50 search: withheld
// events are read by group only, and never searched).
func WithheldKindsOf(f nostr.Filter) []int {
	if f.Search != "" || len(f.Tags["h"]) == 0 {
		return nil
	}
	var out []int
	for _, k := range []int{KindCreateInvite, KindJoinRequest} {
		if len(f.Kinds) == 0 || slices.Contains(f.Kinds, k) {
			out = append(out, k)
		}
	}
	return out
}

// ReadWithheld returns the withheld events (cn_relay.group_withheld) that
// match f and that r may read, newest first (ties: lowest id), at most
// f.Limit of them (none for LimitZero). It reads the states of the groups f
// names (#h), then the rows their grants allow; a filter that can match no
// withheld event (WithheldKindsOf) costs no query.
func ReadWithheld(ctx context.Context, q Querier, f nostr.Filter, r WithheldReader) ([]*nostr.Event, error) {
	kinds := WithheldKindsOf(f)
	if len(kinds) == 0 || f.LimitZero || len(r.Keys) == 0 && !r.Master {
		return nil, nil
	}
	ids := f.Tags["h"]
	states := map[string]*State{}
	rows, err := q.Query(ctx, `SELECT cn_relay.group_state(g) FROM cn_relay.groups g WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read withheld group events: %w", err)
	}
	if err := scanStates(states, "read withheld group events")(rows); err != nil {
		rows.Close()
		return nil, err
	}
	rows.Close()
	var gIDs, gAuthors []string
	var gKinds []int32
	for _, id := range ids {
		s := states[id]
		if s == nil {
			continue // (no withheld event of a group that does not exist)
		}
		for _, k := range kinds {
			g, ok := r.GrantOf(s, k)
			switch {
			case !ok:
			case g.All:
				gIDs, gKinds, gAuthors = append(gIDs, id), append(gKinds, int32(k)), append(gAuthors, "")
			default:
				for _, a := range g.Authors {
					gIDs, gKinds, gAuthors = append(gIDs, id), append(gKinds, int32(k)), append(gAuthors, a)
				}
			}
		}
	}
	if len(gIDs) == 0 {
		return nil, nil
	}
	since, until := int64(0), int64(1<<62)
	if f.Since != nil {
		since = int64(*f.Since)
	}
	if f.Until != nil {
		until = int64(*f.Until)
	}
	// The limit is the filter's when SQL checks all of it (its tags other
	// than h are checked here, after the read).
	limit := int64(f.Limit)
	for name := range f.Tags {
		if name != "h" {
			limit = 0
		}
	}
	if limit <= 0 {
		limit = 1 << 62
	}
	var authors, eventIDs []string // (nil: any)
	if f.Authors != nil {
		authors = f.Authors
	}
	if f.IDs != nil {
		eventIDs = f.IDs
	}
	// (a grant row is (group, kind, author) with author '' for all; a group
	// and kind have either one '' row or rows of distinct authors, so no
	// event is read twice)
	rows, err = q.Query(ctx, `SELECT w.event FROM cn_relay.group_withheld w
		JOIN unnest($1::text[], $2::int[], $3::text[]) AS g(group_id, kind, author)
			ON w.group_id = g.group_id AND w.kind = g.kind AND (g.author = '' OR w.pubkey = g.author)
		WHERE ($4::text[] IS NULL OR w.pubkey = ANY($4)) AND ($5::text[] IS NULL OR w.id = ANY($5))
			AND w.created_at >= $6 AND w.created_at <= $7
		ORDER BY w.created_at DESC, w.id LIMIT $8`,
		gIDs, gKinds, gAuthors, authors, eventIDs, since, until, limit)
	if err != nil {
		return nil, fmt.Errorf("read withheld group events: %w", err)
	}
	defer rows.Close()
	var out []*nostr.Event
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("read withheld group events: %w", err)
		}
		ev := &nostr.Event{}
		if err := json.Unmarshal([]byte(raw), ev); err != nil {
			return nil, fmt.Errorf("read withheld group event: %w", err)
		}
		if f.Matches(ev) && (f.Limit <= 0 || len(out) < f.Limit) {
			out = append(out, ev)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read withheld group events: %w", err)
	}
	return out, nil
}
