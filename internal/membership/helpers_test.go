package membership_test

import (
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relay"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/internal/testkit"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const waitTimeout = 20 * time.Second

// env is a real relay (relay.New, a WebSocket listener, the store on a
// pgtest database) with NIP-43 membership and NIP-86 management.
type env struct {
	db       *pgtest.DB
	st       *store.Store
	svc      *membership.Service
	node     nodekey.Key
	admin    string // secret key
	url, api string
	reg      *prometheus.Registry
}

type opts struct {
	mode   membership.Mode
	db     *pgtest.DB // nil: a new database
	admin  string     // nil: a new key
	ranked func(string) bool
	rank   int
	node   nodekey.Key // zero: a new key
	// maxSubs, claimsPerMember and openClaims: the relay's
	// MaxSubscriptions and the Service's claim caps (zero: the defaults).
	maxSubs, claimsPerMember, openClaims int
}

func start(t *testing.T, o opts) *env {
	t.Helper()
	db := o.db
	if db == nil {
		db = pgtest.New(t)
	}
	admin := o.admin
	if admin == "" {
		admin = nostr.GeneratePrivateKey()
	}
	nodeKey, err := o.node, error(nil)
	if nodeKey.PubKey == "" {
		nodeKey, err = nodekey.FromSecret(nostr.GeneratePrivateKey())
		require.NoError(t, err)
	}
	w := testkit.RunWriter(t, db.Pool)

	cfg := relay.DefaultConfig()
	cfg.Listen = ""
	cfg.EventRatePerIP, cfg.EventRatePerPubkey, cfg.ReqRatePerIP = relay.Rate{}, relay.Rate{}, relay.Rate{}
	cfg.IngestTimeout, cfg.QueryTimeout = time.Minute, time.Minute
	cfg.Info.Self, cfg.Membership = nodeKey.PubKey, string(o.mode)
	if o.maxSubs > 0 {
		cfg.MaxSubscriptions = o.maxSubs
	}
	st := store.New(db.Pool, w, cfg.Limits.TopicRules)
	adminPK := testkit.Pub(admin)
	admins := map[string]bool{adminPK: true}
	require.NoError(t, st.SetMembership(store.Membership{Self: nodeKey.PubKey, Sign: nodeKey.Sign, Mode: o.mode, Admins: admins}))
	svc := node.NewMembershipService(db.Pool, st.Publisher(), st.Rules(), nodeKey.PubKey, nodeKey.Sign, admins)
	svc.Mode, svc.Ranked, svc.AdmitMinRank = o.mode, o.ranked, o.rank
	svc.ClaimsPerMember, svc.OpenClaims = o.claimsPerMember, o.openClaims
	reg := prometheus.NewRegistry()
	reg.MustRegister(svc.Collectors()...)
	require.NoError(t, svc.EnsureAdmins(context.Background()))
	api := &relayadmin.API{Admin: &relayadmin.Admin{Pool: db.Pool, Store: st.Publisher(), TopicRules: st.Rules(),
		Extensions: []relayadmin.Extension{svc}}, Admins: admins}
	r, err := relay.New(cfg, relay.Deps{Store: st, Feed: relay.NewPGFeed(db.Pool, nil), Registerer: reg, Gatherer: reg,
		Management: api, Members: svc})
	require.NoError(t, err)
	api.Audience = r.Audience
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	addr := ln.Addr().String()
	return &env{db: db, st: st, svc: svc, node: nodeKey, admin: admin, url: "ws://" + addr, api: "http://" + addr, reg: reg}
}

// note is a kind 1 in topic "go".
func note(t *testing.T, sk, content string) *nostr.Event {
	return testkit.SignNow(t, sk, 1, nostr.Tags{{"t", "go"}}, content)
}

// nip86 calls a NIP-86 method as sk and returns the HTTP status and body.
func (e *env) nip86(t *testing.T, sk, method string, params ...any) (int, map[string]json.RawMessage) {
	t.Helper()
	status, b := testkit.NIP86(t, e.api, sk, method, params...)
	var out map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &out), string(b))
	return status, out
}

// verifyNodeEvent checks that ev is the node's, validly signed, with the NIP-70 `-` tag.
func (e *env) verifyNodeEvent(t *testing.T, ev *nostr.Event) {
	t.Helper()
	require.Equal(t, e.node.PubKey, ev.PubKey)
	ok, err := ev.CheckSignature()
	require.NoError(t, err)
	require.True(t, ok, "kind %d signature", ev.Kind)
	require.True(t, ev.CheckID())
	require.True(t, protocol.Protected(ev), "kind %d lacks the - tag", ev.Kind)
}

// memberList returns the member tags of the node's current 13534, verified.
func (e *env) memberList(t *testing.T, c *testkit.Client) []string {
	t.Helper()
	evs, reason := c.Req("list", map[string]any{"kinds": []int{membership.KindMembers}, "authors": []string{e.node.PubKey}})
	require.Empty(t, reason)
	require.Len(t, evs, 1)
	e.verifyNodeEvent(t, evs[0])
	var out []string
	for _, tag := range evs[0].Tags {
		if len(tag) >= 2 && tag[0] == "member" {
			out = append(out, tag[1])
		}
	}
	return out
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// metric reads a gauge, or a counter's outcome label, from the relay's registry.
func metric(t *testing.T, e *env, name, outcome string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if outcome == "" {
				return m.GetGauge().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no metric %s %s", name, outcome)
	return 0
}
