package negentropy

import (
	"errors"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
	lib "github.com/nbd-wtf/go-nostr/nip77/negentropy"
)

// MinFrameLimit is the smallest frame limit the library accepts; smaller
// limits are raised to it.
const MinFrameLimit = 4096

// ErrPanic is wrapped by the error a Server returns when the library panicked.
// The session it happened in must be dropped; nothing else is affected.
var ErrPanic = errors.New("negentropy library panicked")

// ErrBadItem is returned by NewServer and NewClient for an item whose id is not
// 64 lowercase hex characters or whose created_at is negative or at least 2^62
// (the library encodes timestamps as unsigned deltas and panics otherwise).
var ErrBadItem = errors.New("bad negentropy item")

func checkItem(it Item) error {
	if !IsID(it.ID) {
		return fmt.Errorf("%w: id %q is not 64 lowercase hex characters", ErrBadItem, truncateID(it.ID))
	}
	if it.CreatedAt < 0 || uint64(it.CreatedAt) >= maxVarint {
		return fmt.Errorf("%w: created_at %d of %s out of range", ErrBadItem, it.CreatedAt, it.ID)
	}
	return nil
}

// Item is one element of the reconciled set: an event's created_at and id.
type Item struct {
	CreatedAt nostr.Timestamp
	ID        string
}

// Server is the relay's side of one NIP-77 session over a fixed set of items.
// Its methods must not be called concurrently.
type Server struct {
	neg *lib.Negentropy
}

// NewServer returns a session over items (in any order, without duplicates)
// whose answers stay within about frameLimit bytes of binary message (hex
// doubles that on the wire); a limit below MinFrameLimit, 0 included, is
// raised to it. It fails, without panicking, on an item id that is not 64
// lowercase hex characters.
func NewServer(items []Item, frameLimit int) (s *Server, err error) {
	frameLimit = max(frameLimit, MinFrameLimit)
	for _, it := range items {
		if err := checkItem(it); err != nil {
			return nil, err
		}
	}
	defer recoverInto(&err)
	return &Server{neg: lib.New(newSorted(items), frameLimit)}, nil
}

// ServerItemBytes is what a Server made by NewServer holds per item.
const ServerItemBytes = sortedItemBytes

// NewTreeServer returns a session over the items of st, a window of a tree
// snapshot (Snapshot.Window), which must not change while the session lasts;
// frameLimit is handled as in NewServer.
func NewTreeServer(st lib.Storage, frameLimit int) (s *Server, err error) {
	frameLimit = max(frameLimit, MinFrameLimit)
	defer recoverInto(&err)
	return &Server{neg: lib.New(st, frameLimit)}, nil
}

// Reconcile answers one client message: it checks msg (Check) and, only when it
// is well formed, runs the library on it. The answer is never empty: a server
// always replies, if only to say that everything matched. A message of another
// protocol version (ErrUnsupportedVersion) is answered VersionReply, as the
// protocol asks. Any error ends the session: the caller answers NEG-ERR and
// drops the Server.
func (s *Server) Reconcile(msg string) (out string, err error) {
	if err := Check(msg); err != nil {
		if errors.Is(err, ErrUnsupportedVersion) {
			return VersionReply, nil // the library would too; the session goes on
		}
		return "", err
	}
	defer recoverInto(&err)
	out, err = s.neg.Reconcile(msg)
	if err != nil {
		return "", fmt.Errorf("reconcile: %w", err)
	}
	return out, nil
}

// recoverInto turns a panic of the library into an error wrapping ErrPanic.
func recoverInto(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrPanic, p)
	}
}

func truncateID(id string) string {
	if len(id) > 80 {
		return id[:80] + "…"
	}
	return id
}
