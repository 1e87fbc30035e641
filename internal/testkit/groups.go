package testkit

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// GroupOpts says how a store hosts NIP-29 groups (HostGroups). The zero
// value is a fresh node key and a policy under which anyone may create a
// group.
type GroupOpts struct {
	// Node is the node key, which signs the groups' state events (zero: a
	// fresh key).
	Node nodekey.Key
	// Policy decides; its Node is set to Node's pubkey, and an empty
	// Creators is groups.CreatorsAny.
	Policy groups.Policy
	// Admission is store.Groups.Admission (nil: groups.AdmitOpen).
	Admission func(pubkey string) groups.Admission
}

// HostGroups makes st host NIP-29 groups as o says (store.Store.SetGroups),
// fails t if the store refuses the configuration, and returns the node key.
// It is the one place tests set groups up, so that a change of how a store
// is told to host them is made here.
func HostGroups(t testing.TB, st *store.Store, o GroupOpts) nodekey.Key {
	t.Helper()
	node := o.Node
	if node.PubKey == "" {
		var err error
		if node, err = nodekey.FromSecret(nostr.GeneratePrivateKey()); err != nil {
			t.Fatalf("testkit: node key: %v", err)
		}
	}
	pol := o.Policy
	pol.Node = node.PubKey
	if pol.Creators == "" {
		pol.Creators = groups.CreatorsAny
	}
	if err := st.SetGroups(store.Groups{Sign: node.Sign, Policy: pol, Admission: o.Admission}); err != nil {
		t.Fatalf("testkit: host groups: %v", err)
	}
	return node
}

// NewStore is a store on pool with a default outbox writer and the default
// topic rules: what most tests ingest through.
func NewStore(pool *pgxpool.Pool) *store.Store {
	return store.New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), protocol.DefaultTopicRules())
}
