package membership

import (
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
)

// AdminMethods names the membership methods (NIP-86; docs/membership.md
// describes params and results), in the order Service.Methods declares them.
var AdminMethods = nip86.Set(new(Service).Methods()).Names()

// Methods are the membership methods, run by s (relayadmin.Extension; cnctl
// members runs them through Do). They read the params they need and ignore
// any others (nip86.AnyParams). Changes are logged in cn_admin.log in their
// transaction.
func (s *Service) Methods() []nip86.Method {
	var out []nip86.Method
	add := func(do func(context.Context, *nip86.Call) (any, error), names ...string) {
		for _, n := range names {
			out = append(out, nip86.Method{Name: n, Max: nip86.AnyParams, Do: do})
		}
	}
	add(func(ctx context.Context, _ *nip86.Call) (any, error) { return s.ListMembers(ctx) }, "listmembers")
	add(s.changeMember, "addmember", "removemember")
	add(s.mintInvite, "mintinvite")
	add(s.revokeInvite, "revokeinvite")
	add(func(ctx context.Context, _ *nip86.Call) (any, error) { return s.ListInvites(ctx) }, "listinvites")
	add(func(ctx context.Context, _ *nip86.Call) (any, error) { return s.ListPending(ctx) }, "listpendingmembers")
	add(s.decidePending, "admitmember", "denymember")
	add(func(ctx context.Context, _ *nip86.Call) (any, error) { return s.ListRoles(ctx) }, "listroles")
	add(s.changeRole, "setrole", "removerole")
	add(s.assignRole, "assignrole", "unassignrole")
	return out
}

// Do runs one membership method as actor from source ("nip86" or "cnctl").
// A call refused for what it asks is a *nip86.BadRequest.
func (s *Service) Do(ctx context.Context, actor, source, method string, params []json.RawMessage) (any, error) {
	return nip86.Set(s.Methods()).Do(ctx, actor, source, method, params)
}

// logOf is the cn_admin.log row of c.
func logOf(c *nip86.Call) *logRow {
	log := &logRow{method: c.Method, actor: c.Actor, source: c.Source}
	for _, p := range c.Raw {
		log.params = append(log.params, p)
	}
	return log
}

// viaOf is how c makes a member: an operator's (cnctl) or an admin's.
func viaOf(c *nip86.Call) string {
	if c.Source == "cnctl" {
		return ViaOperator
	}
	return ViaAdmin
}

// done answers a change: true, or its error.
func done(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return true, nil
}

// changeMember runs addmember [pubkey, reason, [role ids]] and removemember
// [pubkey, reason].
func (s *Service) changeMember(ctx context.Context, c *nip86.Call) (any, error) {
	pk := c.Pubkey(0)
	c.Text(1, "a reason", false)
	var roles []string
	if c.Method == "addmember" {
		c.Decode(2, &roles, "addmember: roles must be an array of role ids")
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	changes := []Change{{Pubkey: pk, Add: c.Method == "addmember", Via: viaOf(c)}}
	for _, id := range roles {
		changes = append(changes, Change{Op: OpAssign, Pubkey: pk, Role: id})
	}
	_, err := s.change(ctx, logOf(c), deletePending(ctx, pk), changes)
	return done(err)
}

// changeRole runs setrole [role id, {label, description, color, order}] and
// removerole [role id].
func (s *Service) changeRole(ctx context.Context, c *nip86.Call) (any, error) {
	id := c.Text(0, "a role id", true)
	if err := c.Err(); err != nil {
		return nil, err
	}
	if err := ValidRoleID(id); err != nil {
		return nil, nip86.Refuse("%s: %v", c.Method, err)
	}
	ch := Change{Op: OpRemoveRole, Role: id}
	if c.Method == "setrole" {
		ch.Op = OpSetRole
		c.Decode(1, &ch.Patch, "setrole: the second param is an object with string fields label, description, color, order")
		if err := c.Err(); err != nil {
			return nil, err
		}
		if err := ch.Patch.Validate(); err != nil {
			return nil, nip86.Refuse("setrole: %v", err)
		}
	}
	_, err := s.change(ctx, logOf(c), nil, []Change{ch})
	return done(err)
}

// assignRole runs assignrole and unassignrole [pubkey, role id].
func (s *Service) assignRole(ctx context.Context, c *nip86.Call) (any, error) {
	pk, id := c.Pubkey(0), c.Text(1, "a role id", true)
	if err := c.Err(); err != nil {
		return nil, err
	}
	op := OpAssign
	if c.Method == "unassignrole" {
		op = OpUnassign
	}
	_, err := s.change(ctx, logOf(c), nil, []Change{{Op: op, Pubkey: pk, Role: id}})
	return done(err)
}

// decidePending runs admitmember and denymember [pubkey]: the key's pending
// join request is taken (a key with none is a bad request), and admitmember
// makes it a member.
func (s *Service) decidePending(ctx context.Context, c *nip86.Call) (any, error) {
	pk := c.Pubkey(0)
	if err := c.Err(); err != nil {
		return nil, err
	}
	var changes []Change
	if c.Method == "admitmember" {
		changes = []Change{{Pubkey: pk, Add: true, Via: viaOf(c)}}
	}
	_, err := s.change(ctx, logOf(c), func(tx pgx.Tx) error {
		taken, err := takePending(ctx, tx, pk)
		if err == nil && !taken {
			return nip86.Refuse("%s: %s has no pending join request", c.Method, pk)
		}
		return err
	}, changes)
	return done(err)
}

// mintInvite runs mintinvite [ttl_seconds]: a claim issued by the admin (an
// operator's by the node), valid for ttl_seconds or the relay's InviteTTL.
func (s *Service) mintInvite(ctx context.Context, c *nip86.Call) (any, error) {
	ttl := s.ttl()
	var secs int64
	if c.Decode(0, &secs, mintTTLProblem) {
		if c.Err() == nil && (secs <= 0 || time.Duration(secs)*time.Second > MaxInviteTTL) {
			c.Fail(mintTTLProblem)
		}
		ttl = time.Duration(secs) * time.Second
	}
	if err := c.Err(); err != nil {
		return nil, err
	}
	issuer := c.Actor
	if !protocol.IsHex64(issuer) {
		issuer = s.Self // an operator's invite is the node's
	}
	var m Minted
	_, err := s.change(ctx, logOf(c), func(tx pgx.Tx) error {
		claim, id, exp, err := s.mint(ctx, tx, issuer, ttl)
		m = Minted{Claim: claim, ID: id, ExpiresAt: exp.Unix()}
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	return m, nil
}

const mintTTLProblem = "mintinvite: ttl_seconds must be a positive number of seconds, at most 30 days"

// revokeInvite runs revokeinvite [claim or invite id].
func (s *Service) revokeInvite(ctx context.Context, c *nip86.Call) (any, error) {
	arg := c.Text(0, "a claim or an invite id", true)
	if err := c.Err(); err != nil {
		return nil, err
	}
	_, err := s.change(ctx, logOf(c), func(tx pgx.Tx) error {
		revoked, err := revokeClaim(ctx, tx, arg, s.now())
		if err == nil && !revoked {
			return nip86.Refuse("revokeinvite: no open invite has that claim or id")
		}
		return err
	}, nil)
	return done(err)
}

// Member is one row of listmembers.
type Member struct {
	Pubkey string   `json:"pubkey"`
	Via    string   `json:"via"`
	Since  int64    `json:"since"`
	Roles  []string `json:"roles"` // role ids, sorted
}

// Invite is one row of listinvites (never the claim itself).
type Invite struct {
	ID        string `json:"id"`
	Issuer    string `json:"issuer"`
	IssuedAt  int64  `json:"issued_at"`
	ExpiresAt int64  `json:"expires_at"`
	State     string `json:"state"`
	UsedBy    string `json:"used_by"`
	UsedAt    int64  `json:"used_at"`
}

// Pending is one row of listpendingmembers.
type Pending struct {
	Pubkey      string `json:"pubkey"`
	RequestedAt int64  `json:"requested_at"`
	Rank        *int   `json:"rank"`
	EventID     string `json:"event_id"`
}

// Minted is mintinvite's result.
type Minted struct {
	Claim     string `json:"claim"`
	ID        string `json:"id"`
	ExpiresAt int64  `json:"expires_at"`
}

// ListMembers returns the NIP-43 members, sorted by pubkey (MembersPage, unbounded).
func (s *Service) ListMembers(ctx context.Context) ([]Member, error) {
	out, err := MembersPage(ctx, s.Pool, "", math.MaxInt64)
	if out == nil {
		out = []Member{}
	}
	return out, err
}

// ListRoles returns the defined roles, by order (those without one last), then id.
func (s *Service) ListRoles(ctx context.Context) ([]Role, error) {
	rows, err := s.Pool.Query(ctx, `SELECT id, label, description, color, ord, at, event_id FROM cn_relay.nip43_roles
		ORDER BY nullif(ord, '')::bigint NULLS LAST, id`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Role, error) {
		var x Role
		err := r.Scan(&x.ID, &x.Label, &x.Description, &x.Color, &x.Order, &x.At, &x.EventID)
		return x, err
	})
	if out == nil {
		out = []Role{}
	}
	return out, err
}

// SetTimes fills the invite's times and its state from its claim's record:
// used, else revoked, else expired (at now), else open.
func (iv *Invite) SetTimes(issued, expires time.Time, used, revoked *time.Time, now time.Time) {
	iv.IssuedAt, iv.ExpiresAt = issued.Unix(), expires.Unix()
	switch {
	case used != nil:
		iv.State, iv.UsedAt = "used", used.Unix()
	case revoked != nil:
		iv.State = "revoked"
	case !expires.After(now):
		iv.State = "expired"
	default:
		iv.State = "open"
	}
}

// ListInvites returns the claims' records, newest first (InvitesPage, unbounded).
func (s *Service) ListInvites(ctx context.Context) ([]Invite, error) {
	out, _, err := InvitesPage(ctx, s.Pool, nil, "", math.MaxInt64, s.now())
	if out == nil {
		out = []Invite{}
	}
	return out, err
}

// ListPending returns the join requests waiting for an admin, oldest first,
// with each key's trust-v1 rank when it has one.
func (s *Service) ListPending(ctx context.Context) ([]Pending, error) {
	rows, err := s.Pool.Query(ctx, `SELECT p.pubkey, p.requested_at, sc.rank::int, p.event_id FROM cn_relay.membership_pending p
		LEFT JOIN cn_trust.scores sc ON sc.pubkey = p.pubkey ORDER BY p.requested_at, p.pubkey`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Pending, error) {
		var p Pending
		var at time.Time
		err := r.Scan(&p.Pubkey, &at, &p.Rank, &p.EventID)
		p.RequestedAt = at.Unix()
		return p, err
	})
	if out == nil {
		out = []Pending{}
	}
	return out, err
}
