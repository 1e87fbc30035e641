package membership

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// DefaultInviteTTL is how long a claim is valid after it is made.
const DefaultInviteTTL = 24 * time.Hour

// MaxInviteTTL bounds an admin's mintinvite ttl.
const MaxInviteTTL = 30 * 24 * time.Hour

// DefaultClaimsPerMember bounds the open claims (not used, revoked or
// expired) a member has asked for with kind 28935 REQs (Service.ClaimsPerMember).
const DefaultClaimsPerMember = 100

// DefaultOpenClaims bounds the open claims of the whole relay that members'
// kind 28935 REQs may add to (Service.OpenClaims).
const DefaultOpenClaims = 50_000

// ReasonClaimsPerMember is the CLOSED reason of a kind 28935 REQ from a
// member with ClaimsPerMember open claims.
func ReasonClaimsPerMember(n int) string {
	return fmt.Sprintf("restricted: you have %d open invite codes (kind 28935), the most this relay gives one member; one is freed when it is used or expires", n)
}

// ReasonOpenClaims is the CLOSED reason of a kind 28935 REQ while the relay
// has OpenClaims open claims.
func ReasonOpenClaims(n int) string {
	return fmt.Sprintf("restricted: this relay has %d open invite codes (kind 28935), the most it gives out; try again later", n)
}

// RequestWindow is how far a 28934 or 28936's created_at may be from now (NIP-43: "now, plus or minus a few minutes").
const RequestWindow = 10 * time.Minute

// Answers to join and leave requests (NIP-01 OK messages; NIP-43's examples).
const (
	MsgWelcome       = "info: welcome: you are a member of this relay now"
	MsgAlready       = "duplicate: you are already a member of this relay"
	MsgLeft          = "info: you are no longer a member of this relay"
	MsgNotMember     = "duplicate: you are not a member of this relay"
	ReasonBadClaim   = "restricted: that is an invalid invite code"
	ReasonExpired    = "restricted: that invite code is expired"
	ReasonUsed       = "restricted: that invite code was used already (invite codes are single-use)"
	ReasonRevoked    = "restricted: that invite code was revoked"
	ReasonBadTime    = "invalid: a join or leave request's created_at must be within 10 minutes of now (NIP-43)"
	MsgWelcomeOpen   = "info: welcome: this relay is open, you are a member of it now"
	ReasonLeaveAuth  = "auth-required: a leave request (kind 28936) is accepted from its authenticated author (NIP-42), or with the NIP-70 - tag"
	ReasonLeaveOld   = "invalid: this leave request is older than your latest join: sign a new one"
	ReasonInviteAuth = "auth-required: invite codes (kind 28935) are given to authenticated members: authenticate (NIP-42)"
	ReasonInviteNon  = "restricted: only members of this relay may request invite codes (kind 28935)"
	ReasonFailed     = "error: could not process the membership request, try again later"
)

// Apply makes membership changes inside tx (store.Publisher.MembershipTx): the
// node's 8000/8001/13534 and the registers, with the outbox append last.
type Apply func(ctx context.Context, tx pgx.Tx, changes []Change) ([]Outcome, outbox.Range, error)

// Service answers NIP-43 requests (join 28934, leave 28936, invite 28935) and
// the admins' membership methods (NIP-86, cnctl members). Every change commits
// through Apply in one transaction with what it uses up (a claim, a pending
// request) and, for an admin's change, its cn_admin.log row.
type Service struct {
	// Mode is the relay's membership mode: in Open mode (or "") every join
	// request is admitted (8000 via open), whatever its claim (see Join).
	Mode   Mode
	Pool   *pgxpool.Pool
	Apply  Apply
	Self   string                   // the node's pubkey
	Sign   func(*nostr.Event) error // signs with the node key (28935)
	Admins map[string]bool          // members from the start (EnsureAdmins)
	// Ranked admits a claimless join at once (a trust-v1 rank at or above
	// AdmitMinRank: gate.Gate.Ranked); nil: every claimless join waits.
	Ranked       func(pubkey string) bool
	AdmitMinRank int
	// Threshold, if set, is AdmitMinRank read at each use (the rank gate's
	// threshold, which a relay configuration reload changes).
	Threshold func() int
	InviteTTL time.Duration // DefaultInviteTTL when 0
	// ClaimsPerMember bounds the open claims (not used, not revoked, not
	// expired) one member's kind 28935 REQs may hold, and OpenClaims those
	// of the relay they may add to (admins' mintinvite included in the
	// count, never refused); 0: DefaultClaimsPerMember, DefaultOpenClaims.
	ClaimsPerMember, OpenClaims int
	Now                         func() time.Time
	Logger                      *slog.Logger
	// Committed, if set, is told the last outbox seq of each change it
	// committed (the relay's writer lease notes it: a REQ answered from
	// memory waits for it).
	Committed func(last int64)
	// Acknowledge, if set, is called after each write's commit and before
	// the client is told of it (a join's OK, a NIP-86 answer, an invite): it
	// holds the answer while the relay may not yet acknowledge writes (the
	// writer lease's Await); an error fails the request (the write may be
	// committed).
	Acknowledge func(ctx context.Context) error

	joins *prometheus.CounterVec
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// minRank is the rank that admits a claimless join at once (0: none does).
func (s *Service) minRank() int {
	if s.Threshold != nil {
		return s.Threshold()
	}
	return s.AdmitMinRank
}

func (s *Service) ttl() time.Duration {
	if s.InviteTTL > 0 {
		return s.InviteTTL
	}
	return DefaultInviteTTL
}

func (s *Service) count(outcome string) {
	if s.joins != nil {
		s.joins.WithLabelValues(outcome).Inc()
	}
}

// Collectors are the service's metrics: cn_relay_members and
// cn_relay_members_pending (read from the database at each scrape) and
// cn_relay_member_joins_total by outcome.
func (s *Service) Collectors() []prometheus.Collector {
	s.joins = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cn_relay_member_joins_total",
		Help: "NIP-43 join and leave requests answered by this relay process, by outcome."}, []string{"outcome"})
	gauge := func(name, help, sql string) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var n int64
			if err := s.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
				return -1
			}
			return float64(n)
		})
	}
	return []prometheus.Collector{s.joins,
		gauge("cn_relay_members", "NIP-43 members (listed in the node's kind 13534); -1 when unreadable.",
			"SELECT count(*) FROM cn_relay.nip43_members WHERE member"),
		gauge("cn_relay_members_pending", "NIP-43 join requests waiting for an admin; -1 when unreadable.",
			"SELECT count(*) FROM cn_relay.membership_pending"),
	}
}

// IsMember reports whether pk is a relay member (docs/membership.md): the
// node, an admin, a NIP-43 member, or, with no NIP-43 register, a member by
// posting or by an operator (cn_relay.members).
func (s *Service) IsMember(ctx context.Context, q pgxQuerier, pk string) (bool, error) {
	if pk == s.Self || s.Admins[pk] {
		return true, nil
	}
	var member bool
	err := q.QueryRow(ctx, `SELECT coalesce((SELECT member FROM cn_relay.nip43_members WHERE pubkey = $1),
		EXISTS (SELECT 1 FROM cn_relay.members WHERE pubkey = $1))`, pk).Scan(&member)
	return member, err
}

type pgxQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// change runs pre (may be nil) and the changes in one transaction, with a
// cn_admin.log row when method is set, then commits and announces.
func (s *Service) change(ctx context.Context, log *logRow, pre func(pgx.Tx) error, changes []Change) ([]Outcome, error) {
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if log != nil {
		params, _ := json.Marshal(log.params)
		if _, err := tx.Exec(ctx, `INSERT INTO cn_admin.log (method, params, actor, source, at) VALUES ($1, $2, $3, $4, $5)`,
			log.method, params, log.actor, log.source, s.now()); err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
	}
	if pre != nil {
		if err := pre(tx); err != nil {
			return nil, err
		}
	}
	var outs []Outcome
	var r outbox.Range
	if len(changes) > 0 {
		if outs, r, err = s.Apply(ctx, tx, changes); err != nil {
			return nil, err
		}
		for i, o := range outs { // (a refused change rolls everything back)
			switch o {
			case NoRole:
				return nil, nip86.Refuse("role %q is not defined (see listroles)", changes[i].Role)
			case NotMember:
				return nil, nip86.Refuse("%s is not a NIP-43 member of this relay", changes[i].Pubkey)
			}
		}
	}
	if err := outbox.Commit(ctx, tx); err != nil {
		return nil, err
	}
	if r.Last > 0 && s.Committed != nil {
		s.Committed(r.Last)
	}
	if r.Last > 0 {
		_, _ = s.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, fmt.Sprint(r.Last))
	}
	if err := s.acknowledge(ctx); err != nil {
		return nil, err
	}
	return outs, nil
}

// acknowledge holds the answer to a committed write (Acknowledge).
func (s *Service) acknowledge(ctx context.Context) error {
	if s.Acknowledge == nil {
		return nil
	}
	if err := s.Acknowledge(ctx); err != nil {
		return fmt.Errorf("committed, not acknowledged: %w", err)
	}
	return nil
}

type logRow struct {
	method, actor, source string
	params                []any
}

// EnsureAdmins makes every admin without a NIP-43 register a member (8000
// via operator), so that they are listed and can invite. An admin who left
// (an 8001) stays out of the list (an admin still writes).
func (s *Service) EnsureAdmins(ctx context.Context) error {
	var changes []Change
	for pk := range s.Admins {
		var known bool
		if err := s.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM cn_relay.nip43_members WHERE pubkey = $1)", pk).Scan(&known); err != nil {
			return err
		}
		if !known {
			changes = append(changes, Change{Pubkey: pk, Add: true, Via: ViaOperator})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	_, err := s.change(ctx, nil, nil, changes)
	return err
}

func (s *Service) timely(ev *nostr.Event) bool {
	d := s.now().Sub(ev.CreatedAt.Time())
	return d <= RequestWindow && d >= -RequestWindow
}

// Join answers a 28934 (verified, and past the admission chain): a listed
// member gets OK true MsgAlready; a valid claim makes the author a member
// (the claim is used up). In open mode every other join is admitted
// (joinOpen). In invite mode a bad claim is refused restricted; without a
// claim, a key the trust gate ranks is admitted at once, any other waits for
// an admin (restricted: pending ...).
func (s *Service) Join(ctx context.Context, ev *nostr.Event) (bool, string) {
	if !s.timely(ev) {
		s.count("refused")
		return false, ReasonBadTime
	}
	member, err := s.IsMember(ctx, s.Pool, ev.PubKey)
	if err != nil {
		return s.failed("join", err)
	}
	if member && (s.Mode == InviteOnly || s.listed(ctx, ev.PubKey)) {
		s.count("already")
		return true, MsgAlready
	}
	if claim := Claim(ev); claim != "" {
		var why protocol.Reason
		_, err := s.change(ctx, nil, func(tx pgx.Tx) error {
			var err error
			why, err = useClaim(ctx, tx, claim, ev.PubKey, s.now())
			if err == nil && !why.Code.IsZero() {
				return errRefused
			}
			return err
		}, []Change{{Pubkey: ev.PubKey, Add: true, Via: ViaClaim}})
		switch {
		case errors.Is(err, errRefused) && s.Mode != InviteOnly:
			return s.joinOpen(ctx, ev) // (open: a bad code refuses no one)
		case errors.Is(err, errRefused):
			if why.Code == RefuseExpired.Code {
				s.count("expired_claim")
			} else {
				s.count("bad_claim")
			}
			return false, why.Text
		case err != nil:
			return s.failed("join", err)
		}
		s.count("claim")
		return true, MsgWelcome
	}
	if s.Mode != InviteOnly {
		return s.joinOpen(ctx, ev)
	}
	if s.Ranked != nil && s.Ranked(ev.PubKey) {
		if _, err := s.change(ctx, nil, deletePending(ctx, ev.PubKey), []Change{{Pubkey: ev.PubKey, Add: true, Via: ViaTrust}}); err != nil {
			return s.failed("join", err)
		}
		s.count("trust")
		return true, fmt.Sprintf("info: welcome: admitted at once, your web-of-trust rank (trust-v1) is at least %d", s.minRank())
	}
	raw, _ := json.Marshal(ev)
	if _, err := s.Pool.Exec(ctx, `INSERT INTO cn_relay.membership_pending (pubkey, event_id, event, requested_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (pubkey) DO UPDATE SET event_id = excluded.event_id, event = excluded.event, requested_at = excluded.requested_at`,
		ev.PubKey, ev.ID, raw, s.now()); err != nil {
		return s.failed("join", err)
	}
	if err := s.acknowledge(ctx); err != nil {
		return s.failed("join", err)
	}
	s.count("pending")
	return false, s.pendingReason()
}

// joinOpen admits the author of a 28934 to a relay in open mode, where
// anyone may post: it is listed in the 13534 (8000 via open), as an admitted
// member is, so that apps that join by NIP-43 (and show the members) see the
// relay as any other. A valid claim is used up first (Join: via claim); a
// missing, empty or bad one refuses no one: no answer in open mode is a
// refusal, which apps that treat a refusal naming an invite code as final
// would show as "join rejected" (issue 48).
func (s *Service) joinOpen(ctx context.Context, ev *nostr.Event) (bool, string) {
	if _, err := s.change(ctx, nil, deletePending(ctx, ev.PubKey), []Change{{Pubkey: ev.PubKey, Add: true, Via: ViaOpen}}); err != nil {
		return s.failed("join", err)
	}
	s.count("open")
	return true, MsgWelcomeOpen
}

// listed reports whether pk has a NIP-43 register that makes it a member (an
// 8000): a member by posting only (open mode) is not listed in the 13534.
func (s *Service) listed(ctx context.Context, pk string) bool {
	if pk == s.Self {
		return true
	}
	var listed bool
	err := s.Pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM cn_relay.nip43_members WHERE pubkey = $1 AND member)", pk).Scan(&listed)
	return err == nil && listed
}

func (s *Service) pendingReason() string {
	if min := s.minRank(); s.Ranked != nil && min > 0 {
		return fmt.Sprintf("restricted: pending review: no invite code and a web-of-trust rank below %d; your join request is kept for the relay's admins", min)
	}
	return "restricted: pending review: no invite code; your join request is kept for the relay's admins"
}

var errRefused = errors.New("refused")

func (s *Service) failed(what string, err error) (bool, string) {
	if s.Logger != nil {
		s.Logger.Error("NIP-43 "+what+" failed", "err", err)
	}
	return false, ReasonFailed
}

// deletePending drops pk's pending join request, if any (a join, a leave or
// an admin's change settles it).
func deletePending(ctx context.Context, pk string) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		_, err := takePending(ctx, tx, pk)
		return err
	}
}

// takePending deletes pk's pending join request and reports whether there
// was one.
func takePending(ctx context.Context, tx pgx.Tx, pk string) (bool, error) {
	tag, err := tx.Exec(ctx, "DELETE FROM cn_relay.membership_pending WHERE pubkey = $1", pk)
	return err == nil && tag.RowsAffected() > 0, err
}

// revokeClaim revokes the open claim (not used, not revoked) named by its
// text or its id, at at, and reports whether there was one.
func revokeClaim(ctx context.Context, tx pgx.Tx, claimOrID string, at time.Time) (bool, error) {
	tag, err := tx.Exec(ctx, `UPDATE cn_relay.membership_claims SET revoked_at = $3
		WHERE (id = $1 OR hash = $2) AND revoked_at IS NULL AND used_by IS NULL`, claimOrID, HashClaim(claimOrID), at)
	return err == nil && tag.RowsAffected() > 0, err
}

// Leave answers a 28936: the member is removed (8001, a new 13534). It is
// honoured only when it cannot be replayed by someone else: it carries the
// NIP-70 - tag (the relay's admission then required its author's AUTH), or
// byAuthor (the connection is authenticated as its author; apps often send
// it without the tag). A leave older than the key's latest join (when its
// 8000 was stored) never removes it, so an old leave sent again after a
// rejoin removes no one; a leave is honoured only within RequestWindow of
// its created_at anyway.
func (s *Service) Leave(ctx context.Context, ev *nostr.Event, byAuthor bool) (bool, string) {
	if !protectedTag(ev) && !byAuthor {
		s.count("refused")
		return false, ReasonLeaveAuth
	}
	if !s.timely(ev) {
		s.count("refused")
		return false, ReasonBadTime
	}
	// When the latest join was stored (the 8000's ingested_at, the server's
	// clock): its created_at may run ahead of the clock, as a key's node
	// events are stamped a second apart.
	var joined int64
	err := s.Pool.QueryRow(ctx, `SELECT coalesce((SELECT floor(extract(epoch FROM e.ingested_at))::bigint
		FROM cn_relay.nip43_members m JOIN cn_relay.events e ON e.id = m.event_id WHERE m.pubkey = $1 AND m.member), 0)`, ev.PubKey).Scan(&joined)
	if err != nil {
		return s.failed("leave", err)
	}
	if int64(ev.CreatedAt) < joined {
		s.count("refused")
		return false, ReasonLeaveOld
	}
	outs, err := s.change(ctx, nil, deletePending(ctx, ev.PubKey), []Change{{Pubkey: ev.PubKey, Via: ViaRequest}})
	if err != nil {
		return s.failed("leave", err)
	}
	if outs[0] == Already {
		return true, MsgNotMember
	}
	s.count("left")
	return true, MsgLeft
}

// Invite makes a claim for the first member among authed (the connection's
// authenticated keys) and returns the signed 28935 carrying it, or the
// CLOSED reason.
func (s *Service) Invite(ctx context.Context, authed []string) (*nostr.Event, string) {
	if len(authed) == 0 {
		return nil, ReasonInviteAuth
	}
	issuer := ""
	for _, pk := range authed {
		ok, err := s.IsMember(ctx, s.Pool, pk)
		if err != nil {
			_, why := s.failed("invite", err)
			return nil, why
		}
		if ok {
			issuer = pk
			break
		}
	}
	if issuer == "" {
		return nil, ReasonInviteNon
	}
	ev, why, err := s.mintCapped(ctx, issuer)
	if err != nil {
		_, why := s.failed("invite", err)
		return nil, why
	}
	if ev != nil {
		if err := s.acknowledge(ctx); err != nil {
			_, why := s.failed("invite", err)
			return nil, why
		}
	}
	return ev, why
}

// mintCapped mints and signs a claim for issuer in one transaction, holding
// schema.ClaimsLock so that the caps (ClaimsPerMember, OpenClaims) hold
// across relay processes; or returns why not. A claim is stored only with
// its signed 28935.
func (s *Service) mintCapped(ctx context.Context, issuer string) (*nostr.Event, string, error) {
	perMember, perRelay := cmp.Or(s.ClaimsPerMember, DefaultClaimsPerMember), cmp.Or(s.OpenClaims, DefaultOpenClaims)
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return nil, "", err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// The counts read the partial indexes of migration 0034 whatever the
	// statistics say (autovacuum may be off), and stop at the caps.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1), set_config('enable_seqscan', 'off', true)", schema.ClaimsLock); err != nil {
		return nil, "", fmt.Errorf("claims lock: %w", err)
	}
	var mine, all int
	if err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM (SELECT 1 FROM cn_relay.membership_claims
				WHERE issuer = $1 AND expires_at > $2 AND used_by IS NULL AND revoked_at IS NULL LIMIT $3) m),
			(SELECT count(*) FROM (SELECT 1 FROM cn_relay.membership_claims
				WHERE expires_at > $2 AND used_by IS NULL AND revoked_at IS NULL LIMIT $4) a)`,
		issuer, s.now(), perMember, perRelay).Scan(&mine, &all); err != nil {
		return nil, "", fmt.Errorf("count open claims: %w", err)
	}
	switch {
	case mine >= perMember:
		return nil, ReasonClaimsPerMember(perMember), nil
	case all >= perRelay:
		return nil, ReasonOpenClaims(perRelay), nil
	}
	claim, _, _, err := s.mint(ctx, tx, issuer, s.ttl())
	if err != nil {
		return nil, "", err
	}
	ev := InviteEvent(claim, s.now().Unix())
	if err := s.Sign(ev); err != nil {
		return nil, "", err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, "", err
	}
	return ev, "", nil
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// mint stores a new claim's hash and returns the claim, its id and expiry.
func (s *Service) mint(ctx context.Context, db execer, issuer string, ttl time.Duration) (claim, id string, expires time.Time, err error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", time.Time{}, err
	}
	claim = hex.EncodeToString(b[:])
	hash := HashClaim(claim)
	now := s.now()
	expires = now.Add(ttl)
	_, err = db.Exec(ctx, `INSERT INTO cn_relay.membership_claims (id, hash, issuer, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		hash[:16], hash, issuer, now, expires)
	return claim, hash[:16], expires, err
}

// HashClaim is what is stored of a claim: its SHA-256, hex.
func HashClaim(claim string) string {
	sum := sha256.Sum256([]byte(claim))
	return hex.EncodeToString(sum[:])
}

// useClaim uses up claim for pk, or returns why it cannot be used.
func useClaim(ctx context.Context, tx pgx.Tx, claim, pk string, now time.Time) (protocol.Reason, error) {
	hash := HashClaim(claim)
	tag, err := tx.Exec(ctx, `UPDATE cn_relay.membership_claims SET used_by = $2, used_at = $3
		WHERE hash = $1 AND used_by IS NULL AND revoked_at IS NULL AND expires_at > $3`, hash, pk, now)
	if err != nil {
		return protocol.Reason{}, err
	}
	if tag.RowsAffected() == 1 {
		return protocol.Reason{}, nil
	}
	var used, revoked bool
	var expires time.Time
	err = tx.QueryRow(ctx, `SELECT used_by IS NOT NULL, revoked_at IS NOT NULL, expires_at FROM cn_relay.membership_claims WHERE hash = $1`, hash).
		Scan(&used, &revoked, &expires)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return RefuseBadClaim, nil
	case err != nil:
		return protocol.Reason{}, err
	case revoked:
		return RefuseRevoked, nil
	case used:
		return RefuseUsed, nil
	}
	return RefuseExpired, nil
}

func protectedTag(ev *nostr.Event) bool {
	for _, t := range ev.Tags {
		if len(t) >= 1 && t[0] == "-" {
			return true
		}
	}
	return false
}
