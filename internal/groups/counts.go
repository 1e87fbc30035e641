package groups

import (
	"context"
	"fmt"
	"strings"
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

// Result labels of ResultLabel besides the NIP-01 prefixes.
const (
	ResultAccepted = "accepted"
	ResultPending  = "pending"
)

// reasonLabels names each refusal of Decide for the group events counter
// (bounded: one label per reason, never the message).
var reasonLabels = map[string]string{
	ReasonNoGroups:    "no_groups",
	ReasonStateKind:   "state_kind",
	ReasonNoHTag:      "no_h_tag",
	ReasonManyHTags:   "many_h_tags",
	ReasonBadID:       "bad_id",
	ReasonUnknown:     "unknown_group",
	ReasonDeleted:     "deleted_group",
	ReasonDeletedID:   "deleted_id",
	ReasonExists:      "exists",
	ReasonMember:      "already_member",
	ReasonNotMember:   "not_member",
	ReasonRestricted:  "members_only",
	ReasonPrivate:     "private_members_only",
	ReasonManyParents: "many_parents",
	ReasonBadParent:   "bad_parent",
	ReasonBadChild:    "bad_child",
	ReasonDupChild:    "duplicate_child",
	ReasonSelfParent:  "self_parent",
	ReasonCycle:       "cycle",
	ReasonNoPinTarget: "no_pin_target",
	ReasonPinKind:     "pin_kind",
	ReasonBadPrevious: "bad_previous",
	ReasonLivekit:     "livekit_unsupported",
	ReasonBadKinds:    "bad_supported_kinds",
	ReasonNoUsers:     "no_users",
	ReasonNoCode:      "no_code",
	ReasonNoTargets:   "no_targets",
	ReasonTargetKind:  "target_kind",
	ReasonStale:       "stale",
	ReasonPending:     ResultPending,
	ReasonPendingCode: ResultPending,
}

// nip01Prefixes are NIP-01's machine-readable prefixes.
var nip01Prefixes = map[string]bool{"duplicate": true, "pow": true, "blocked": true, "rate-limited": true,
	"invalid": true, "restricted": true, "auth-required": true, "mute": true, "error": true}

// ResultLabel is the label of a group event's answer: accepted (OK true with
// no message, or a duplicate answered OK), pending (a join request kept for
// review), one label per refusal of Decide (role, unsupported_kind,
// kind_not_supported for the formatted ones), or else the NIP-01 prefix of
// the message (rate-limited, invalid, error, ... from the checks before the
// group's) or "other".
func ResultLabel(ok bool, msg string) string {
	if l, found := reasonLabels[msg]; found {
		return l
	}
	switch {
	case strings.HasPrefix(msg, "restricted: your roles in this group do not allow"):
		return "role"
	case strings.HasPrefix(msg, "restricted: moderation kind "):
		return "unsupported_kind"
	case strings.HasPrefix(msg, "restricted: this group does not accept kind"):
		return "kind_not_supported"
	case ok:
		return ResultAccepted
	}
	if prefix, _, found := strings.Cut(msg, ":"); found && nip01Prefixes[prefix] {
		return prefix
	}
	return "other"
}
