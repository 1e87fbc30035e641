package negentropy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/negentropy"
)

// fuzzItems is a fixed set the fuzzed messages are reconciled against: ties on
// timestamps, so that bounds with id prefixes matter.
func fuzzItems() []negentropy.Item {
	items := make([]negentropy.Item, 200)
	for i := range items {
		id := []byte(strings.Repeat("0", 64))
		const digits = "0123456789abcdef"
		for j := 0; j < 8; j++ {
			id[j] = digits[(i*7+j*13)%16]
		}
		id[63] = digits[i%16]
		id[62] = digits[(i/16)%16]
		items[i] = negentropy.Item{CreatedAt: nostr.Timestamp(1000 + i%5), ID: string(id)}
	}
	return items
}

// FuzzServerReconcile: whatever a client sends, a Server never panics, and the
// library never panics under it (ErrPanic would mean Check let through a
// message the library cannot read). A message Check accepts gets a reply.
func FuzzServerReconcile(f *testing.F) {
	for _, msg := range crashers {
		f.Add(msg)
	}
	cl, err := negentropy.NewClient(fuzzItems()[:150], 0)
	if err != nil {
		f.Fatal(err)
	}
	start, err := cl.Start()
	cl.Close()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		start,
		"61",
		"6100000" + "0",
		"61" + "00" + "00" + "01" + strings.Repeat("cd", 16),
		"61" + "00" + "00" + "02" + "01" + strings.Repeat("ab", 32),
		"61" + "05" + "02" + "abcd" + "00",
		"61" + "05" + "21" + strings.Repeat("00", 33) + "00",
		"62",
		"",
		"zz",
		"61" + strings.Repeat("ff", 40),
	} {
		f.Add(seed)
	}
	items := fuzzItems()
	tree := negentropy.NewTree()
	for _, it := range items {
		id, _ := negentropy.ParseID(it.ID)
		tree.Insert(int64(it.CreatedAt), id)
	}
	snap := tree.Snapshot()
	f.Fuzz(func(t *testing.T, msg string) {
		for _, limit := range []int{0, 4096} {
			srv, err := negentropy.NewServer(items, limit)
			if err != nil {
				t.Fatal(err)
			}
			// The same items served from a tree snapshot: the same answer.
			tsrv, err := negentropy.NewTreeServer(snap.Window(0, snap.Len()), limit)
			if err != nil {
				t.Fatal(err)
			}
			out, err := srv.Reconcile(msg)
			tout, terr := tsrv.Reconcile(msg)
			if errors.Is(terr, negentropy.ErrPanic) {
				t.Fatalf("library panicked over the tree on a checked message %q: %v", msg, terr)
			}
			if tout != out || (terr == nil) != (err == nil) {
				t.Fatalf("tree server answered %q (%v), sorted server %q (%v), to %q", tout, terr, out, err, msg)
			}
			if errors.Is(err, negentropy.ErrPanic) {
				t.Fatalf("library panicked on a checked message %q: %v", msg, err)
			}
			cerr := negentropy.Check(msg)
			if errors.Is(cerr, negentropy.ErrUnsupportedVersion) {
				// The protocol's answer to another version, and nothing else.
				if err != nil || out != negentropy.VersionReply {
					t.Fatalf("another version %q got %q, %v; want %q", msg, out, err, negentropy.VersionReply)
				}
				continue
			}
			checked := cerr == nil
			if err != nil && !checked {
				continue
			}
			if err == nil && !checked {
				t.Fatalf("Reconcile accepted a message Check refuses: %q", msg)
			}
			if err == nil && negentropy.Check(out) != nil {
				t.Fatalf("the reply %q is not a well-formed message", out)
			}
		}
	})
}
