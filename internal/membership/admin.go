package membership

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// BadRequest is an admin call with bad parameters (NIP-86 400, cnctl exit 2).
type BadRequest string

func (e BadRequest) Error() string    { return string(e) }
func (e BadRequest) BadRequest() bool { return true }

// AdminMethods are the membership methods (NIP-86; docs/membership.md
// describes params and results).
var AdminMethods = []string{"listmembers", "addmember", "removemember", "mintinvite", "revokeinvite", "listinvites",
	"listpendingmembers", "admitmember", "denymember",
	"listroles", "setrole", "removerole", "assignrole", "unassignrole"}

// Methods lists AdminMethods (relayadmin.Extension).
func (s *Service) Methods() []string { return AdminMethods }

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

// Do runs one membership method as actor (relayadmin.Extension). Changes are
// logged in cn_admin.log in their transaction.
func (s *Service) Do(ctx context.Context, actor, source, method string, params []json.RawMessage) (any, error) {
	str := func(i int, what string, required bool) (string, error) {
		if i >= len(params) {
			if required {
				return "", BadRequest(fmt.Sprintf("%s needs %s", method, what))
			}
			return "", nil
		}
		var v string
		if err := json.Unmarshal(params[i], &v); err != nil {
			return "", BadRequest(fmt.Sprintf("%s: %s must be a string", method, what))
		}
		return v, nil
	}
	pubkey := func() (string, error) {
		pk, err := str(0, "a pubkey", true)
		if err == nil && !isHex64(pk) {
			err = BadRequest(fmt.Sprintf("%s: %q is not a 64-character hex pubkey", method, pk))
		}
		return pk, err
	}
	log := &logRow{method: method, actor: actor, source: source}
	for _, p := range params {
		log.params = append(log.params, p)
	}
	via := ViaAdmin
	if source == "cnctl" {
		via = ViaOperator
	}
	switch method {
	case "listmembers":
		return s.ListMembers(ctx)
	case "listinvites":
		return s.ListInvites(ctx)
	case "listpendingmembers":
		return s.ListPending(ctx)
	case "addmember", "removemember":
		pk, err := pubkey()
		if err != nil {
			return nil, err
		}
		if _, err := str(1, "a reason", false); err != nil {
			return nil, err
		}
		changes := []Change{{Pubkey: pk, Add: method == "addmember", Via: via}}
		if method == "addmember" && len(params) > 2 { // [pubkey, reason, [role ids]]
			var roles []string
			if err := json.Unmarshal(params[2], &roles); err != nil {
				return nil, BadRequest("addmember: roles must be an array of role ids")
			}
			for _, id := range roles {
				changes = append(changes, Change{Op: OpAssign, Pubkey: pk, Role: id})
			}
		}
		_, err = s.change(ctx, log, deletePending(ctx, pk), changes)
		return err == nil, err
	case "listroles":
		return s.ListRoles(ctx)
	case "setrole", "removerole":
		id, err := str(0, "a role id", true)
		if err != nil {
			return nil, err
		}
		if err := ValidRoleID(id); err != nil {
			return nil, BadRequest(method + ": " + err.Error())
		}
		c := Change{Op: OpRemoveRole, Role: id}
		if method == "setrole" {
			c.Op = OpSetRole
			if len(params) > 1 {
				dec := json.NewDecoder(bytes.NewReader(params[1]))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&c.Patch); err != nil {
					return nil, BadRequest("setrole: the second param is an object with string fields label, description, color, order")
				}
			}
			if err := c.Patch.Validate(); err != nil {
				return nil, BadRequest("setrole: " + err.Error())
			}
		}
		_, err = s.change(ctx, log, nil, []Change{c})
		return err == nil, err
	case "assignrole", "unassignrole":
		pk, err := pubkey()
		if err != nil {
			return nil, err
		}
		id, err := str(1, "a role id", true)
		if err != nil {
			return nil, err
		}
		op := OpAssign
		if method == "unassignrole" {
			op = OpUnassign
		}
		_, err = s.change(ctx, log, nil, []Change{{Op: op, Pubkey: pk, Role: id}})
		return err == nil, err
	case "admitmember", "denymember":
		pk, err := pubkey()
		if err != nil {
			return nil, err
		}
		var changes []Change
		if method == "admitmember" {
			changes = []Change{{Pubkey: pk, Add: true, Via: via}}
		}
		_, err = s.change(ctx, log, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, "DELETE FROM cn_relay.membership_pending WHERE pubkey = $1", pk)
			if err == nil && tag.RowsAffected() == 0 {
				return BadRequest(fmt.Sprintf("%s: %s has no pending join request", method, pk))
			}
			return err
		}, changes)
		return err == nil, err
	case "mintinvite":
		ttl := s.ttl()
		if len(params) > 0 {
			var secs int64
			if err := json.Unmarshal(params[0], &secs); err != nil || secs <= 0 || time.Duration(secs)*time.Second > MaxInviteTTL {
				return nil, BadRequest("mintinvite: ttl_seconds must be a positive number of seconds, at most 30 days")
			}
			ttl = time.Duration(secs) * time.Second
		}
		issuer := actor
		if !isHex64(issuer) {
			issuer = s.Self // an operator's invite is the node's
		}
		var m Minted
		_, err := s.change(ctx, log, func(tx pgx.Tx) error {
			claim, id, exp, err := s.mint(ctx, tx, issuer, ttl)
			m = Minted{Claim: claim, ID: id, ExpiresAt: exp.Unix()}
			return err
		}, nil)
		if err != nil {
			return nil, err
		}
		return m, nil
	case "revokeinvite":
		arg, err := str(0, "a claim or an invite id", true)
		if err != nil {
			return nil, err
		}
		_, err = s.change(ctx, log, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE cn_relay.membership_claims SET revoked_at = $3
				WHERE (id = $1 OR hash = $2) AND revoked_at IS NULL AND used_by IS NULL`, arg, HashClaim(arg), s.now())
			if err == nil && tag.RowsAffected() == 0 {
				return BadRequest("revokeinvite: no open invite has that claim or id")
			}
			return err
		}, nil)
		return err == nil, err
	}
	return nil, BadRequest(fmt.Sprintf("unsupported method %q", method))
}

// ListMembers returns the NIP-43 members, sorted by pubkey.
func (s *Service) ListMembers(ctx context.Context) ([]Member, error) {
	rows, err := s.Pool.Query(ctx, `SELECT pubkey, via, at, roles FROM cn_relay.nip43_members WHERE member ORDER BY pubkey`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Member, error) {
		var m Member
		err := r.Scan(&m.Pubkey, &m.Via, &m.Since, &m.Roles)
		if m.Roles == nil {
			m.Roles = []string{}
		}
		return m, err
	})
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

// ListInvites returns the claims' records, newest first.
func (s *Service) ListInvites(ctx context.Context) ([]Invite, error) {
	rows, err := s.Pool.Query(ctx, `SELECT id, issuer, issued_at, expires_at, coalesce(used_by, ''), used_at, revoked_at
		FROM cn_relay.membership_claims ORDER BY issued_at DESC, id`)
	if err != nil {
		return nil, err
	}
	now := s.now()
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Invite, error) {
		var iv Invite
		var issued, expires time.Time
		var used, revoked *time.Time
		if err := r.Scan(&iv.ID, &iv.Issuer, &issued, &expires, &iv.UsedBy, &used, &revoked); err != nil {
			return iv, err
		}
		iv.SetTimes(issued, expires, used, revoked, now)
		return iv, nil
	})
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

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
