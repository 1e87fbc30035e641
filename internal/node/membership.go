package node

import (
	"cmp"
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/trust/gate"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// openMembership makes the store keep NIP-43 membership with the node key and
// returns the service that answers join, leave and invite requests and the
// admins' methods; the admins are made members (EnsureAdmins). Admission by
// trust reads ranks as the relay's --min-rank gate does (gate.Gate.Ranked),
// with its own threshold, --admit-min-rank.
func openMembership(ctx context.Context, st *store.Store, pool *pgxpool.Pool, s RelayOptions, admins map[string]bool, logger *slog.Logger) (*membership.Service, *gate.Gate, error) {
	key := s.MembershipKey
	mode := cmp.Or(s.Membership, membership.Open)
	if err := st.SetMembership(store.Membership{Self: key.PubKey, Sign: key.Sign, Mode: mode, Admins: admins}); err != nil {
		return nil, nil, err
	}
	svc := NewMembershipService(pool, st.Publisher(), st.Rules(), key.PubKey, key.Sign, admins)
	svc.Mode, svc.AdmitMinRank, svc.InviteTTL, svc.Logger = mode, s.AdmitMinRank, s.InviteTTL, logger
	svc.ClaimsPerMember, svc.OpenClaims = s.ClaimsPerMember, s.OpenClaims
	// The gate runs even at --admit-min-rank 0 (Ranked is then false for
	// every key: every claimless join waits), so that a reload can set it.
	g := &gate.Gate{Pool: pool, MinRank: s.AdmitMinRank, Logger: logger}
	if err := g.Load(ctx); err != nil {
		return nil, nil, err
	}
	svc.Ranked, svc.Threshold = g.Ranked, g.Threshold
	if err := svc.EnsureAdmins(ctx); err != nil {
		return nil, nil, err
	}
	return svc, g, nil
}

// NewMembershipService returns a membership service whose changes go through
// pub (store.Publisher.MembershipTx, which must have SetMembership) under
// rules; the relay and cnctl members use it.
func NewMembershipService(pool *pgxpool.Pool, pub *store.Publisher, rules protocol.TopicRules, self string, sign func(*nostr.Event) error, admins map[string]bool) *membership.Service {
	return &membership.Service{Pool: pool, Self: self, Sign: sign, Admins: admins,
		Apply: func(ctx context.Context, tx pgx.Tx, changes []membership.Change) ([]membership.Outcome, outbox.Range, error) {
			r, err := pub.MembershipTx(ctx, tx, rules.OrDefault(), changes)
			return r.Outcomes, r.Range, err
		}}
}
