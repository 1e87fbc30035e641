package bulk

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/store"
)

// Export writes the events a REQ with filter f would return (see
// store.Export: visible ones, oldest first, any number) to w as JSON Lines,
// one NIP-01 event object per line, and returns how many it wrote. The output
// is buffered; it is flushed before Export returns.
func Export(ctx context.Context, st *store.Reader, f nostr.Filter, w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var n int64
	err := st.Export(ctx, f, func(ev *nostr.Event) error {
		b, err := ev.MarshalJSON()
		if err != nil {
			return fmt.Errorf("encode event %s: %w", ev.ID, err)
		}
		if _, err := bw.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("write: %w", err)
	}
	return n, nil
}
