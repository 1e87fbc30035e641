package devnode

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/platform/dbpool"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// The dev node's demo NIP-29 group (make run): created once, by the node key.
const (
	DemoGroupID    = "community"
	DemoGroupName  = "Community"
	demoGroupAbout = "The demo group of make run: open, anyone may join (kind 9021) and post (kind 9 with h=community)."
)

// DemoGroup is what ensureDemoGroup reports.
type DemoGroup struct {
	Created bool   // this call created it
	Deleted bool   // it exists and was deleted (by a 9008): no link
	Naddr   string // naddr of its 39000, with the relay hint
	Ref     string // NIP-29's <host>'<id>
}

// ensureDemoGroup makes the demo group through the store's group path, as
// the relay would (the node's 9007 and 9002, the node's 9000 that makes the
// node admin, the state events 39000-39003, their outbox rows), unless a
// group DemoGroupID exists already (live state in cn_relay.groups), so every
// run after the first changes nothing. relayURL (ws://...) is the hint of the
// naddr.
func ensureDemoGroup(ctx context.Context, dbURL string, key nodekey.Key, rules protocol.TopicRules, relayURL string) (DemoGroup, error) {
	pool, err := dbpool.Open(ctx, dbURL)
	if err != nil {
		return DemoGroup{}, err
	}
	defer pool.Close()
	out := DemoGroup{}
	if u, err := url.Parse(relayURL); err == nil && u.Host != "" {
		out.Ref = u.Host + "'" + DemoGroupID
	}
	if out.Naddr, err = nip19.EncodeEntity(key.PubKey, groups.KindMetadata, DemoGroupID, []string{relayURL}); err != nil {
		return DemoGroup{}, fmt.Errorf("demo group naddr: %w", err)
	}
	s, err := groups.LiveOne(ctx, pool, DemoGroupID)
	if err != nil {
		return DemoGroup{}, err
	}
	if s != nil {
		out.Deleted = !s.Deleted.IsZero()
		return out, nil
	}
	st := store.New(pool, outbox.NewWriter(pool, outbox.WriterConfig{}), rules)
	if err := st.SetGroups(store.Groups{Sign: key.Sign, Policy: groups.Policy{Node: key.PubKey, Creators: groups.CreatorsAdmins}}); err != nil {
		return DemoGroup{}, err
	}
	now := nostr.Now()
	evs := []*nostr.Event{
		{Kind: groups.KindCreateGroup, CreatedAt: now, Tags: nostr.Tags{{"h", DemoGroupID}}},
		{Kind: groups.KindEditMetadata, CreatedAt: now, Tags: nostr.Tags{{"h", DemoGroupID},
			{"name", DemoGroupName}, {"about", demoGroupAbout}}},
	}
	for _, ev := range evs {
		if err := key.Sign(ev); err != nil {
			return DemoGroup{}, fmt.Errorf("sign the demo group's kind %d: %w", ev.Kind, err)
		}
	}
	res, err := st.Ingest(ctx, evs)
	if err != nil {
		return DemoGroup{}, fmt.Errorf("create the demo group: %w", err)
	}
	for i, v := range res {
		if !v.OK {
			return DemoGroup{}, fmt.Errorf("create the demo group: kind %d refused: %s", evs[i].Kind, v.Message)
		}
	}
	out.Created = true
	return out, nil
}

// printDemoGroup tells the developer where the demo group is.
func printDemoGroup(w io.Writer, g DemoGroup) {
	switch {
	case g.Deleted:
		fmt.Fprintf(w, "group: %s was deleted (kind 9008); no demo group\n", DemoGroupID)
	default:
		verb := "exists"
		if g.Created {
			verb = "created"
		}
		fmt.Fprintf(w, "group: %q %s (%s; NIP-29 id %s) %s\n", DemoGroupName, DemoGroupID, verb, g.Ref, g.Naddr)
	}
}
