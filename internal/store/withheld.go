package store

import (
	"context"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/groups"
)

// GroupWithheld reads the withheld NIP-29 group events (invite codes: a
// 9009, a 9021 with a code) that match f and that r may read
// (groups.ReadWithheld), newest first, at most f.Limit.
func (s *Reader) GroupWithheld(ctx context.Context, f nostr.Filter, r groups.WithheldReader) ([]*nostr.Event, error) {
	return groups.ReadWithheld(ctx, s.pool, f, r)
}

// GroupState reads group id's state as the relay keeps it (nil: no such
// group).
func (s *Reader) GroupState(ctx context.Context, id string) (*groups.State, error) {
	return groups.LiveOne(ctx, s.pool, id)
}
