package console

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/trust"
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
	// Members is one page of its members, admins and moderators first
	// (more roles first), then by pubkey; MembersNext the cursor of the next
	// page ("" when none), MemberCount how many there are in all.
	Members      []Person `json:"members"`
	MembersNext  string   `json:"members_next"`
	MemberCount  int      `json:"member_count"`
	Pending      []Person `json:"pending"` // join requests waiting for an admin, the first GroupPreview by pubkey
	PendingCount int      `json:"pending_count"`
	Invites      []Invite `json:"invites"` // the newest GroupPreview invite codes
	InviteCount  int      `json:"invite_count"`
	Removed      int      `json:"removed"` // users a 9001 took out
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

// Groups reads one page of groups (their live state, cn_relay.groups), in
// the order of their ids (the table's primary key: a page is an index range
// scan whatever the number of groups). p.After is the id of the last group of
// the page before; p.Q, when given, keeps the groups whose id starts with it
// or whose name holds it (either case). Each group carries its first
// GroupPreview members, pending requests and invite codes, and their counts.
func (c *Console) Groups(ctx context.Context, p PageQuery) (Page[Group], error) {
	if p.After != "" && !groups.ValidID(p.After) {
		return Page[Group]{}, badRequest("after must be a group id (the next cursor of the page before)")
	}
	states, err := groups.LivePage(ctx, c.cfg.Pool, p.After, likePattern(p.Q), p.Limit+1)
	if err != nil {
		return Page[Group]{}, err
	}
	out := Page[Group]{Items: []Group{}}
	if len(states) > p.Limit {
		states = states[:p.Limit]
		out.Next = states[len(states)-1].ID
	}
	for _, s := range states {
		out.Items = append(out.Items, groupView(s, "", GroupPreview))
	}
	if err := c.rankGroups(ctx, out.Items); err != nil {
		return Page[Group]{}, err
	}
	return out, nil
}

// GroupMembers reads one group with a page of its members: membersAfter is
// the members_next cursor of the page before ("" for the first).
func (c *Console) GroupMembers(ctx context.Context, id, membersAfter string, limit int) (Group, error) {
	if !groups.ValidID(id) {
		return Group{}, badRequest("group must be a group id")
	}
	if membersAfter != "" {
		if _, _, ok := parseMemberCursor(membersAfter); !ok {
			return Group{}, badRequest("members_after must be the members_next cursor of the page before")
		}
	}
	s, err := groups.LiveOne(ctx, c.cfg.Pool, id)
	if err != nil {
		return Group{}, err
	}
	if s == nil {
		return Group{}, notFound("no group " + id)
	}
	gs := []Group{groupView(s, membersAfter, limit)}
	if err := c.rankGroups(ctx, gs); err != nil {
		return Group{}, err
	}
	return gs[0], nil
}

// groupView is s as the page shows it, with the page of its members after
// membersAfter (a valid cursor, or "").
func groupView(s *groups.State, membersAfter string, limit int) Group {
	g := Group{ID: s.ID, Name: s.Meta.Name, About: s.Meta.About, Picture: s.Meta.Picture, Banner: s.Meta.Banner, Closed: s.Meta.Closed,
		Restricted: s.Meta.Restricted, Private: s.Meta.Private, Hidden: s.Meta.Hidden, Parent: s.Tree.Parent,
		Children: slices.Clone(s.Tree.Children), Creator: s.Creator, CreatedAt: s.Created.At, Deleted: !s.Deleted.IsZero(),
		Members: []Person{}, Pending: []Person{}, Invites: []Invite{}}
	if !s.Meta.AllKinds {
		g.Kinds = append([]int{}, s.Meta.Kinds...)
	}
	var members []Person
	for pk, m := range s.Members {
		if !m.In {
			g.Removed++
			continue
		}
		members = append(members, Person{Pubkey: pk, Roles: m.Roles, At: m.Stamp.At})
	}
	sort.Slice(members, func(i, j int) bool { return memberBefore(members[i], members[j]) })
	g.MemberCount = len(members)
	if membersAfter != "" {
		n, pk, _ := parseMemberCursor(membersAfter)
		cut := Person{Pubkey: pk, Roles: make([]string, n)}
		members = members[sort.Search(len(members), func(i int) bool { return memberBefore(cut, members[i]) }):]
	}
	if len(members) > limit {
		members = members[:limit]
		last := members[len(members)-1]
		g.MembersNext = strconv.Itoa(len(last.Roles)) + "." + last.Pubkey
	}
	g.Members = append(g.Members, members...)
	pending := s.PendingUsers() // sorted
	g.PendingCount = len(pending)
	for _, pk := range pending[:min(len(pending), GroupPreview)] {
		g.Pending = append(g.Pending, Person{Pubkey: pk, At: s.Requests[pk].At})
	}
	var invites []Invite
	for code, inv := range s.Invites {
		invites = append(invites, Invite{Masked: mask(code), CreatedAt: inv.Stamp.At, Expires: inv.Expires})
	}
	sort.Slice(invites, func(i, j int) bool {
		if invites[i].CreatedAt != invites[j].CreatedAt {
			return invites[i].CreatedAt > invites[j].CreatedAt
		}
		return invites[i].Masked < invites[j].Masked
	})
	g.InviteCount = len(invites)
	g.Invites = append(g.Invites, invites[:min(len(invites), GroupPreview)]...)
	return g
}

// memberBefore is the order of a group's members: more roles first, then by
// pubkey.
func memberBefore(a, b Person) bool {
	if len(a.Roles) != len(b.Roles) {
		return len(a.Roles) > len(b.Roles)
	}
	return a.Pubkey < b.Pubkey
}

// parseMemberCursor reads a members_next cursor: the number of roles of the
// page's last member, a dot, its pubkey.
func parseMemberCursor(s string) (int, string, bool) {
	a, pk, ok := strings.Cut(s, ".")
	n, err := strconv.Atoi(a)
	if !ok || err != nil || n < 0 || n > 64 || !isPubkey(pk) {
		return 0, "", false
	}
	return n, pk, true
}

// rankGroups fills in the trust ranks of the people gs show.
func (c *Console) rankGroups(ctx context.Context, gs []Group) error {
	var who []string
	for _, g := range gs {
		for _, m := range g.Members {
			who = append(who, m.Pubkey)
		}
		for _, m := range g.Pending {
			who = append(who, m.Pubkey)
		}
	}
	ranks, err := c.ranks(ctx, who)
	if err != nil {
		return err
	}
	for i := range gs {
		for j := range gs[i].Members {
			gs[i].Members[j].Rank = ranks[gs[i].Members[j].Pubkey]
		}
		for j := range gs[i].Pending {
			gs[i].Pending[j].Rank = ranks[gs[i].Pending[j].Pubkey]
		}
	}
	return nil
}

// mask keeps a code's first four characters: enough to tell codes apart, not
// enough to use one.
func mask(code string) string {
	if len(code) <= 4 {
		return "…"
	}
	return code[:4] + "…"
}

// ranks returns the trust-v1 ranks of pks that have one (trust.Ranks).
func (c *Console) ranks(ctx context.Context, pks []string) (map[string]*int, error) {
	rs, err := trust.Ranks(ctx, c.cfg.Pool, pks)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*int, len(rs))
	for pk, r := range rs {
		out[pk] = &r
	}
	return out, nil
}

// Member is one member of the community.
type Member struct {
	Person
	FirstEvent string `json:"first_event_id"`
	Status     string `json:"status,omitempty"` // "banned" or "allowed" (NIP-86 lists), else ""
}

// Members reads one page of the community's members
// (store.CommunityMembersPage: the keys whose first event was stored, and
// the allowed ones), newest first (joined_at, then pubkey, both
// descending), each with the NIP-86 list it is on (relayadmin.PubkeyStatuses)
// and its rank. p.After is the page before's next cursor; p.Q, when given,
// keeps the pubkeys that start with it (hex).
func (c *Console) Members(ctx context.Context, p PageQuery) (Page[Member], error) {
	after, afterPK, err := timeAfter(p.After, isPubkey)
	if err != nil {
		return Page[Member]{}, err
	}
	if p.Q != "" && !isHex(p.Q, 64) {
		return Page[Member]{}, badRequest("q must be the start of a pubkey in lower-case hex")
	}
	rows, err := store.CommunityMembersPage(ctx, c.cfg.Pool, p.Limit+1, p.Q, after, afterPK)
	if err != nil {
		return Page[Member]{}, err
	}
	page := Page[Member]{}
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		page.Next = timeCursor(rows[p.Limit-1].JoinedAt, rows[p.Limit-1].Pubkey)
	}
	pks := make([]string, len(rows))
	for i, m := range rows {
		pks[i] = m.Pubkey
	}
	statuses, err := relayadmin.PubkeyStatuses(ctx, c.cfg.Pool, pks)
	if err != nil {
		return Page[Member]{}, err
	}
	ranks, err := c.ranks(ctx, pks)
	if err != nil {
		return Page[Member]{}, err
	}
	for _, m := range rows {
		page.Items = append(page.Items, Member{Person: Person{Pubkey: m.Pubkey, At: m.JoinedAt.Unix(), Rank: ranks[m.Pubkey]},
			FirstEvent: m.FirstEvent, Status: statuses[m.Pubkey]})
	}
	if page.Items == nil {
		page.Items = []Member{}
	}
	return page, nil
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

// Reports reads one page of the moderation queue (moderation.QueuePage, the
// newest report first, then by event id): every item for group "", the items
// about events of one group (their h tag) for its id, the items about events
// outside any group for "node". p.After is the page before's next cursor.
func (c *Console) Reports(ctx context.Context, group string, p PageQuery) (Page[Report], error) {
	if group != "" && group != "node" && !groups.ValidID(group) {
		return Page[Report]{}, badRequest("group must be a group id, or node")
	}
	var afterAt *int64
	var afterID string
	if p.After != "" {
		at, id, ok := strings.Cut(p.After, ".")
		n, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || !isHex(id, 64) {
			return Page[Report]{}, badRequest("after must be the next cursor of the page before")
		}
		afterAt, afterID = &n, id
	}
	items, err := moderation.QueuePage(ctx, c.cfg.Pool, p.Limit+1, group, afterAt, afterID)
	if err != nil {
		return Page[Report]{}, err
	}
	page := Page[Report]{}
	if len(items) > p.Limit {
		items = items[:p.Limit]
		last := items[len(items)-1]
		page.Next = strconv.FormatInt(last.LastAt, 10) + "." + last.EventID
	}
	page.Items, err = c.reports(ctx, items)
	return page, err
}

// reports completes queue items with their events, reporters and labels.
func (c *Console) reports(ctx context.Context, items []moderation.QueueItem) ([]Report, error) {
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
	evs, err := store.EventSummaries(ctx, c.cfg.Pool, ids, 500)
	if err != nil {
		return nil, err
	}
	for _, e := range evs {
		r := &out[byID[e.ID]]
		r.Event = &ReportedEvent{ID: e.ID, Pubkey: e.Pubkey, Kind: e.Kind, CreatedAt: e.CreatedAt, Content: e.Content, Hidden: e.Hidden, Deleted: e.Deleted}
		r.Group = e.Group
	}
	reports, err := moderation.OpenReports(ctx, c.cfg.Pool, ids)
	if err != nil {
		return nil, err
	}
	var reporters []string
	for _, rp := range reports {
		r := &out[byID[rp.Target]]
		r.Reporters = append(r.Reporters, Reporter{Pubkey: rp.Reporter, Type: rp.Type, At: rp.At, RankThen: rp.RankThen, ReportID: rp.ReportID})
		reporters = append(reporters, rp.Reporter)
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
	labels, err := moderation.LabelsOf(ctx, c.cfg.Pool, ids)
	if err != nil {
		return nil, err
	}
	for _, l := range labels {
		r := &out[byID[l.Target]]
		r.Labels = append(r.Labels, Label{Label: l.Label, Rule: l.Rule, ID: l.ID, Retracted: l.Retracted})
	}
	return out, nil
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

// NIP43View is the relay's NIP-43 roles, and how many members, pending
// join requests and open invites it has; the lists themselves are read a
// page at a time (NIP43Members, NIP43Pending, NIP43Invites).
type NIP43View struct {
	Roles        []membership.Role `json:"roles"` // the relay's roles (33534), in display order
	MemberCount  int               `json:"member_count"`
	PendingCount int               `json:"pending_count"`
	OpenInvites  int               `json:"open_invites"`
}

// NIP43 reads the NIP-43 roles (membership.Service.ListRoles, read-only) and
// the lists' counts.
func (c *Console) NIP43(ctx context.Context) (NIP43View, error) {
	s := &membership.Service{Pool: c.cfg.Pool}
	var v NIP43View
	var err error
	if v.Roles, err = s.ListRoles(ctx); err != nil {
		return v, fmt.Errorf("read NIP-43 roles: %w", err)
	}
	n, err := membership.ReadCounts(ctx, c.cfg.Pool)
	if err != nil {
		return v, err
	}
	v.MemberCount, v.PendingCount, v.OpenInvites = n.Members, n.Pending, n.OpenInvites
	return v, nil
}

// NIP43Members reads one page of the NIP-43 members (membership.MembersPage:
// as listmembers returns them), by pubkey; p.After is the last pubkey of the
// page before.
func (c *Console) NIP43Members(ctx context.Context, p PageQuery) (Page[membership.Member], error) {
	if p.After != "" && !isPubkey(p.After) {
		return Page[membership.Member]{}, badRequest("after must be the next cursor of the page before (a pubkey)")
	}
	out, err := membership.MembersPage(ctx, c.cfg.Pool, p.After, p.Limit+1)
	if err != nil {
		return Page[membership.Member]{}, err
	}
	return pageOf(out, p.Limit, func(i int) string { return out[i].Pubkey }), nil
}

// NIP43Pending reads one page of the NIP-43 join requests waiting for an
// admin (membership.PendingPage: as listpendingmembers returns them),
// oldest first, with each key's trust-v1 rank.
func (c *Console) NIP43Pending(ctx context.Context, p PageQuery) (Page[membership.Pending], error) {
	after, afterPK, err := timeAfter(p.After, isPubkey)
	if err != nil {
		return Page[membership.Pending]{}, err
	}
	out, times, err := membership.PendingPage(ctx, c.cfg.Pool, after, afterPK, p.Limit+1)
	if err != nil {
		return Page[membership.Pending]{}, err
	}
	page := pageOf(out, p.Limit, func(i int) string { return timeCursor(times[i], out[i].Pubkey) })
	pks := make([]string, len(page.Items))
	for i, x := range page.Items {
		pks[i] = x.Pubkey
	}
	ranks, err := c.ranks(ctx, pks)
	if err != nil {
		return Page[membership.Pending]{}, err
	}
	for i := range page.Items {
		page.Items[i].Rank = ranks[page.Items[i].Pubkey]
	}
	return page, nil
}

// NIP43Invites reads one page of the NIP-43 invites (membership.InvitesPage:
// as listinvites returns them, never a claim), newest first (issued_at, then
// id, both descending).
func (c *Console) NIP43Invites(ctx context.Context, p PageQuery) (Page[membership.Invite], error) {
	after, afterID, err := timeAfter(p.After, isToken)
	if err != nil {
		return Page[membership.Invite]{}, err
	}
	out, times, err := membership.InvitesPage(ctx, c.cfg.Pool, after, afterID, p.Limit+1, time.Now())
	if err != nil {
		return Page[membership.Invite]{}, err
	}
	return pageOf(out, p.Limit, func(i int) string { return timeCursor(times[i], out[i].ID) }), nil
}

// MediaView is the Media page: the keys holding the most Blossom bytes, and
// the blobs hidden or named by open reports (package blossom reads both).
type MediaView struct {
	Uploaders []MediaUploader `json:"uploaders"`
	Blobs     []MediaBlob     `json:"blobs"`
}

// MediaUploader is a key and what its claims add up to.
type MediaUploader struct {
	Pubkey string `json:"pubkey"`
	Bytes  int64  `json:"bytes"`
	Blobs  int    `json:"blobs"`
}

// MediaBlob is a blob an operator should look at.
type MediaBlob struct {
	SHA256  string   `json:"sha256"`
	Size    int64    `json:"size"`
	Type    string   `json:"type"`
	Created int64    `json:"created_at"`
	Reports int      `json:"reports"` // open NIP-56 reports naming it
	Owners  []string `json:"owners"`
	Hidden  string   `json:"hidden"` // why it is hidden; "": served
}

// Media reads the top limit uploaders (blossom.DB.TopUploaders) and flagged
// blobs (blossom.DB.Flagged): top lists, not pages.
func (c *Console) Media(ctx context.Context, limit int) (MediaView, error) {
	db := &blossom.DB{Pool: c.cfg.Pool}
	ups, err := db.TopUploaders(ctx, limit)
	if err != nil {
		return MediaView{}, err
	}
	flagged, err := db.Flagged(ctx, limit)
	if err != nil {
		return MediaView{}, fmt.Errorf("flagged blobs: %w", err)
	}
	v := MediaView{Uploaders: make([]MediaUploader, 0, len(ups)), Blobs: make([]MediaBlob, 0, len(flagged))}
	for _, u := range ups {
		v.Uploaders = append(v.Uploaders, MediaUploader{Pubkey: u.Pubkey, Bytes: u.Bytes, Blobs: u.Blobs})
	}
	for _, b := range flagged {
		owners := b.Owners
		if owners == nil {
			owners = []string{}
		}
		v.Blobs = append(v.Blobs, MediaBlob{SHA256: b.SHA256, Size: b.Size, Type: b.Type, Created: b.Created.Unix(),
			Reports: b.Reports, Owners: owners, Hidden: b.Hidden})
	}
	return v, nil
}
