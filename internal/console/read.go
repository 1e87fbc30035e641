package console

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/pkg/consumer"
)

// Group is one group as the groups page shows it.
type Group struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	About      string   `json:"about"`
	Picture    string   `json:"picture"`
	Banner     string   `json:"banner"`
	Closed     bool     `json:"closed"`
	Restricted bool     `json:"restricted"`
	Private    bool     `json:"private"`            // only members read its events
	Hidden     bool     `json:"hidden"`             // only members read its metadata
	Parent     string   `json:"parent,omitempty"`   // its parent group (NIP-29 subgroups); "": a root
	Children   []string `json:"children,omitempty"` // its subgroups, in order (a 9002 must list them all)
	Kinds      []int    `json:"supported_kinds"`    // null: every kind; []: none but the group's own kinds
	Creator    string   `json:"creator"`
	CreatedAt  int64    `json:"created_at"`
	Deleted    bool     `json:"deleted"`
	Members    []Person `json:"members"`
	Pending    []Person `json:"pending"` // join requests waiting for an admin
	Invites    []Invite `json:"invites"`
	Removed    int      `json:"removed"` // users a 9001 took out
}

// Person is a pubkey with what the page shows next to it.
type Person struct {
	Pubkey string   `json:"pubkey"`
	Roles  []string `json:"roles,omitempty"`
	At     int64    `json:"at"`             // when they joined, or asked to
	Rank   *int     `json:"rank,omitempty"` // trust-v1 rank (0..100); absent: never ranked
}

// Invite is an invite code, masked: only its first four characters.
type Invite struct {
	Masked    string `json:"code_masked"`
	CreatedAt int64  `json:"created_at"`
	Expires   int64  `json:"expires,omitempty"` // the 9009's own NIP-40 expiration
}

// Groups reads every group's live state (groups.Live), newest first.
func (c *Console) Groups(ctx context.Context) ([]Group, error) {
	states, err := groups.Live(ctx, c.cfg.Pool)
	if err != nil {
		return nil, err
	}
	var who []string
	for _, s := range states {
		who = append(who, slices.Collect(maps.Keys(s.Members))...)
		who = append(who, s.PendingUsers()...)
	}
	ranks, err := c.ranks(ctx, who)
	if err != nil {
		return nil, err
	}
	out := []Group{}
	for _, s := range states {
		g := Group{ID: s.ID, Name: s.Meta.Name, About: s.Meta.About, Picture: s.Meta.Picture, Banner: s.Meta.Banner, Closed: s.Meta.Closed,
			Restricted: s.Meta.Restricted, Private: s.Meta.Private, Hidden: s.Meta.Hidden, Parent: s.Tree.Parent,
			Children: slices.Clone(s.Tree.Children), Creator: s.Creator, CreatedAt: s.Created.At, Deleted: !s.Deleted.IsZero(),
			Members: []Person{}, Pending: []Person{}, Invites: []Invite{}}
		if !s.Meta.AllKinds {
			g.Kinds = append([]int{}, s.Meta.Kinds...)
		}
		for pk, m := range s.Members {
			if !m.In {
				g.Removed++
				continue
			}
			g.Members = append(g.Members, Person{Pubkey: pk, Roles: m.Roles, At: m.Stamp.At, Rank: ranks[pk]})
		}
		for _, pk := range s.PendingUsers() {
			g.Pending = append(g.Pending, Person{Pubkey: pk, At: s.Requests[pk].At, Rank: ranks[pk]})
		}
		for code, inv := range s.Invites {
			g.Invites = append(g.Invites, Invite{Masked: mask(code), CreatedAt: inv.Stamp.At, Expires: inv.Expires})
		}
		sort.Slice(g.Members, func(i, j int) bool {
			if len(g.Members[i].Roles) != len(g.Members[j].Roles) {
				return len(g.Members[i].Roles) > len(g.Members[j].Roles)
			}
			return g.Members[i].Pubkey < g.Members[j].Pubkey
		})
		sort.Slice(g.Invites, func(i, j int) bool { return g.Invites[i].CreatedAt > g.Invites[j].CreatedAt })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt > out[j].CreatedAt
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// mask keeps a code's first four characters: enough to tell codes apart, not
// enough to use one.
func mask(code string) string {
	if len(code) <= 4 {
		return "…"
	}
	return code[:4] + "…"
}

// ranks returns the trust-v1 ranks of pks that have one.
func (c *Console) ranks(ctx context.Context, pks []string) (map[string]*int, error) {
	out := map[string]*int{}
	if len(pks) == 0 {
		return out, nil
	}
	rows, err := c.cfg.Pool.Query(ctx, "SELECT pubkey, rank FROM cn_trust.scores WHERE pubkey = ANY($1)", pks)
	if err != nil {
		return nil, fmt.Errorf("read trust ranks: %w", err)
	}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var pk string
		var rank int16
		if err := row.Scan(&pk, &rank); err != nil {
			return struct{}{}, err
		}
		r := int(rank)
		out[pk] = &r
		return struct{}{}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read trust ranks: %w", err)
	}
	return out, nil
}

// Member is one member of the community.
type Member struct {
	Person
	FirstEvent string `json:"first_event_id"`
	Status     string `json:"status,omitempty"` // "banned" or "allowed" (NIP-86 lists), else ""
}

// Members reads the community's members (cn_relay.members: the keys whose
// first event was stored, and the allowed ones), newest first, at most 500.
func (c *Console) Members(ctx context.Context) ([]Member, error) {
	rows, err := c.cfg.Pool.Query(ctx, `SELECT m.pubkey, extract(epoch FROM m.joined_at)::bigint, m.first_event_id, coalesce(p.status, '')
		FROM cn_relay.members m LEFT JOIN cn_admin.pubkeys p ON p.pubkey = m.pubkey
		ORDER BY m.joined_at DESC, m.pubkey LIMIT 500`)
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Member, error) {
		var m Member
		err := row.Scan(&m.Pubkey, &m.At, &m.FirstEvent, &m.Status)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}
	pks := make([]string, len(out))
	for i, m := range out {
		pks[i] = m.Pubkey
	}
	ranks, err := c.ranks(ctx, pks)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Rank = ranks[out[i].Pubkey]
	}
	if out == nil {
		out = []Member{}
	}
	return out, nil
}

// Report is one entry of the moderation queue with what an admin needs to
// decide: the event, who reported it and how much the node trusts them, and
// the labels the node published about it.
type Report struct {
	moderation.QueueItem
	Event     *ReportedEvent `json:"event"` // nil: not stored (a report about an event the node never had)
	Group     string         `json:"group,omitempty"`
	Reporters []Reporter     `json:"reporter_list"`
	Labels    []Label        `json:"labels"`
}

// ReportedEvent is the reported event, its content cut to 500 characters.
type ReportedEvent struct {
	ID        string `json:"id"`
	Pubkey    string `json:"pubkey"`
	Kind      int    `json:"kind"`
	CreatedAt int64  `json:"created_at"`
	Content   string `json:"content"`
	Hidden    bool   `json:"hidden"`
	Deleted   bool   `json:"deleted"`
}

// Reporter is one open report.
type Reporter struct {
	Pubkey   string `json:"pubkey"`
	Type     string `json:"type"`
	At       int64  `json:"at"`
	RankThen int    `json:"rank_then"`      // the reporter's rank when the report arrived (0: unranked)
	RankNow  *int   `json:"rank,omitempty"` // their rank now
	ReportID string `json:"report_id"`
}

// Label is a NIP-32 label the node published about the event.
type Label struct {
	Label     string `json:"label"`
	Rule      string `json:"rule"`
	ID        string `json:"id"`
	Retracted bool   `json:"retracted"`
}

// Reports reads the moderation queue (moderation.Queue, at most 200 items):
// every item for group "", the items about events of one group for its id, the
// items about events outside any group for "node".
func (c *Console) Reports(ctx context.Context, group string) ([]Report, error) {
	if group != "" && group != "node" && !groups.ValidID(group) {
		return nil, badRequest("group must be a group id, or node")
	}
	items, err := moderation.Queue(ctx, c.cfg.Pool, 200)
	if err != nil {
		return nil, err
	}
	out := []Report{}
	ids := make([]string, 0, len(items))
	byID := map[string]int{}
	for _, it := range items {
		byID[it.EventID] = len(out)
		ids = append(ids, it.EventID)
		out = append(out, Report{QueueItem: it, Reporters: []Reporter{}, Labels: []Label{}})
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := c.cfg.Pool.Query(ctx, `SELECT e.id, e.pubkey, e.kind, e.created_at, left(e.content, 500),
			coalesce(e.deleted_reason = 'moderation', false), e.deleted_at IS NOT NULL,
			coalesce((SELECT t->>1 FROM jsonb_array_elements(e.tags) t WHERE t->>0 = 'h' LIMIT 1), '')
		FROM cn_relay.events e WHERE e.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read reported events: %w", err)
	}
	if _, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var ev ReportedEvent
		var g string
		if err := row.Scan(&ev.ID, &ev.Pubkey, &ev.Kind, &ev.CreatedAt, &ev.Content, &ev.Hidden, &ev.Deleted, &g); err != nil {
			return struct{}{}, err
		}
		r := &out[byID[ev.ID]]
		r.Event, r.Group = &ev, g
		return struct{}{}, nil
	}); err != nil {
		return nil, fmt.Errorf("read reported events: %w", err)
	}
	rows, err = c.cfg.Pool.Query(ctx, `SELECT target, reporter, report_type, created_at, reporter_rank, report_id
		FROM cn_moderation.reports WHERE target = ANY($1) AND target_kind = 'event' AND withdrawn_seq IS NULL
		ORDER BY created_at DESC, reporter`, ids)
	if err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	var reporters []string
	if _, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var target string
		var rp Reporter
		var rank int16
		if err := row.Scan(&target, &rp.Pubkey, &rp.Type, &rp.At, &rank, &rp.ReportID); err != nil {
			return struct{}{}, err
		}
		rp.RankThen = int(rank)
		r := &out[byID[target]]
		r.Reporters = append(r.Reporters, rp)
		reporters = append(reporters, rp.Pubkey)
		return struct{}{}, nil
	}); err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	ranks, err := c.ranks(ctx, reporters)
	if err != nil {
		return nil, err
	}
	for i := range out {
		for j := range out[i].Reporters {
			out[i].Reporters[j].RankNow = ranks[out[i].Reporters[j].Pubkey]
		}
	}
	rows, err = c.cfg.Pool.Query(ctx, `SELECT target_id, label, rule || '@' || rule_version, label_id, retracted_by IS NOT NULL
		FROM cn_moderation.labels WHERE target_id = ANY($1) ORDER BY seq`, ids)
	if err != nil {
		return nil, fmt.Errorf("read labels: %w", err)
	}
	if _, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var target string
		var l Label
		if err := row.Scan(&target, &l.Label, &l.Rule, &l.ID, &l.Retracted); err != nil {
			return struct{}{}, err
		}
		r := &out[byID[target]]
		r.Labels = append(r.Labels, l)
		return struct{}{}, nil
	}); err != nil {
		return nil, fmt.Errorf("read labels: %w", err)
	}
	if group == "" {
		return out, nil
	}
	kept := []Report{}
	for _, r := range out {
		if (group == "node" && r.Group == "") || (group != "node" && r.Group == group) {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// Listed is one entry of a NIP-86 list.
type Listed struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// PolicyView is the relay's management state (relayadmin.Load), as lists.
type PolicyView struct {
	Version         int64             `json:"version"`
	BannedPubkeys   []Listed          `json:"banned_pubkeys"`
	AllowedPubkeys  []Listed          `json:"allowed_pubkeys"`
	BannedEvents    []Listed          `json:"banned_events"`
	AllowedEvents   []Listed          `json:"allowed_events"`
	AllowedKinds    []int             `json:"allowed_kinds"`
	DisallowedKinds []int             `json:"disallowed_kinds"`
	BlockedIPs      []Listed          `json:"blocked_ips"`
	Info            map[string]string `json:"info"`
}

// Policy reads the management state every relay process enforces.
func (c *Console) Policy(ctx context.Context) (PolicyView, error) {
	s, err := relayadmin.Load(ctx, c.cfg.Pool)
	if err != nil {
		return PolicyView{}, err
	}
	list := func(m map[string]string) []Listed {
		out := []Listed{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, Listed{Key: k, Reason: m[k]})
		}
		return out
	}
	v := PolicyView{Version: s.Version, BannedPubkeys: list(s.BannedPubkeys), AllowedPubkeys: list(s.AllowedPubkeys),
		BannedEvents: list(s.BannedEvents), AllowedEvents: list(s.AllowedEvents),
		AllowedKinds: slices.Sorted(maps.Keys(s.AllowedKinds)), DisallowedKinds: slices.Sorted(maps.Keys(s.DisallowedKinds)),
		BlockedIPs: []Listed{}, Info: s.Info}
	if v.AllowedKinds == nil {
		v.AllowedKinds = []int{}
	}
	if v.DisallowedKinds == nil {
		v.DisallowedKinds = []int{}
	}
	for p, reason := range s.BlockedIPs {
		v.BlockedIPs = append(v.BlockedIPs, Listed{Key: p.String(), Reason: reason})
	}
	sort.Slice(v.BlockedIPs, func(i, j int) bool { return v.BlockedIPs[i].Key < v.BlockedIPs[j].Key })
	return v, nil
}

// BacklogView is the consumers (cnctl status) with their parked rows.
type BacklogView struct {
	HeadSeq     int64                            `json:"head_seq"`
	Consumers   []consumer.ConsumerStatus        `json:"consumers"`
	DeadLetters map[string][]consumer.DeadLetter `json:"dead_letters"` // by consumer, the 50 oldest
}

// Backlog reads every consumer and its oldest dead letters.
func (c *Console) Backlog(ctx context.Context) (BacklogView, error) {
	st, err := consumer.ReadStatus(ctx, c.cfg.Pool)
	if err != nil {
		return BacklogView{}, err
	}
	v := BacklogView{HeadSeq: st.HeadSeq, Consumers: st.Consumers, DeadLetters: map[string][]consumer.DeadLetter{}}
	if v.Consumers == nil {
		v.Consumers = []consumer.ConsumerStatus{}
	}
	for _, cs := range st.Consumers {
		if cs.DeadLetters == 0 {
			continue
		}
		dl, err := consumer.ListDeadLetters(ctx, c.cfg.Pool, cs.Consumer, 50)
		if err != nil {
			return v, fmt.Errorf("dead letters of %s: %w", cs.Consumer, err)
		}
		v.DeadLetters[cs.Consumer] = dl
	}
	return v, nil
}

// NIP43View is the relay's NIP-43 membership as the NIP-86 list methods
// return it (listmembers, listpendingmembers, listinvites; the same code,
// membership.Service, read-only). Invites never carry their claim.
type NIP43View struct {
	Roles   []membership.Role    `json:"roles"` // the relay's roles (33534), in display order
	Members []membership.Member  `json:"members"`
	Pending []membership.Pending `json:"pending"`
	Invites []membership.Invite  `json:"invites"`
}

// NIP43 reads the NIP-43 roles, members, pending join requests and invites.
func (c *Console) NIP43(ctx context.Context) (NIP43View, error) {
	s := &membership.Service{Pool: c.cfg.Pool}
	var v NIP43View
	var err error
	if v.Roles, err = s.ListRoles(ctx); err != nil {
		return v, fmt.Errorf("read NIP-43 roles: %w", err)
	}
	if v.Members, err = s.ListMembers(ctx); err != nil {
		return v, fmt.Errorf("read NIP-43 members: %w", err)
	}
	if v.Pending, err = s.ListPending(ctx); err != nil {
		return v, fmt.Errorf("read NIP-43 join requests: %w", err)
	}
	if v.Invites, err = s.ListInvites(ctx); err != nil {
		return v, fmt.Errorf("read NIP-43 invites: %w", err)
	}
	return v, nil
}
