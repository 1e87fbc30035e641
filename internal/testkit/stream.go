package testkit

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StreamReadTimeout bounds StreamMsgs.
const StreamReadTimeout = 60 * time.Second

// StreamMsgs returns every message of the JetStream stream name on the NATS
// server at url, in stream order, read one by one by stream sequence from the
// first to the last. It fails t, by name, when the server does not answer
// within StreamReadTimeout.
//
// It reads by sequence, not through a consumer: an ordered consumer's fetch
// that times out ends its batch without an error and its re-creation retries
// forever, so a loop over it could wait until go test's timeout.
func StreamMsgs(t testing.TB, url, name string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StreamReadTimeout)
	defer cancel()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("testkit: connect %s: %v", url, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("testkit: stream %s: %v", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatalf("testkit: stream %s info: %v", name, err)
	}
	st := info.State
	if st.Msgs == 0 {
		return nil
	}
	out := make([]*jetstream.RawStreamMsg, 0, st.Msgs)
	for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("testkit: stream %s, message %d of %d..%d: %v", name, seq, st.FirstSeq, st.LastSeq, err)
		}
		out = append(out, m)
	}
	if uint64(len(out)) != st.Msgs {
		t.Fatalf("testkit: stream %s holds %d messages but sequences %d..%d", name, st.Msgs, st.FirstSeq, st.LastSeq)
	}
	return out
}
