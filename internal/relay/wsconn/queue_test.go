package wsconn

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestQueueLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name               string
		maxMsgs, maxBytes  int
		sizes              []int // pushed in order until one is refused
		bulk               bool  // pushBulk instead of push
		wantMsgs, wantSize int   // what the queue holds then
	}{
		{"count", 3, 1000, []int{10, 10, 10, 10}, false, 3, 30},
		{"bytes", 100, 100, []int{40, 40, 40}, false, 2, 80},
		{"bytes exactly", 100, 100, []int{40, 60, 1}, false, 2, 100},
		{"oversized into an empty queue", 100, 100, []int{500, 1}, false, 1, 500},
		{"oversized into a busy queue", 100, 100, []int{1, 500}, false, 1, 1},
		{"bulk count at three quarters", 8, 1000, []int{1, 1, 1, 1, 1, 1, 1}, true, 6, 6},
		{"bulk bytes at three quarters", 100, 100, []int{25, 25, 25, 25}, true, 3, 75},
		{"bulk oversized into an empty queue", 100, 100, []int{90, 1}, true, 1, 90},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := newQueue(tc.maxMsgs, tc.maxBytes)
			for i, n := range tc.sizes {
				var ok bool
				if tc.bulk {
					ok, _ = q.pushBulk(plainMsg(make([]byte, n)))
				} else {
					ok = q.push(plainMsg(make([]byte, n)))
				}
				if !ok {
					require.Equal(t, len(tc.sizes)-1, i, "refused before the last message")
					break
				}
			}
			msgs, size := q.size()
			require.Equal(t, tc.wantMsgs, msgs)
			require.Equal(t, tc.wantSize, size)
			// push still has the room pushBulk leaves.
			if tc.bulk && msgs < tc.maxMsgs && size < tc.maxBytes {
				require.True(t, q.push(plainMsg([]byte{0})))
			}
		})
	}
}

func TestQueueFIFO(t *testing.T) {
	t.Parallel()
	q := newQueue(1000, 1<<20)
	next, want := 0, 0
	// Interleave pushes and pops so that the ring wraps around and grows while
	// wrapped.
	for _, step := range []struct{ push, pop int }{{5, 3}, {10, 4}, {30, 20}, {100, 118}, {3, 3}} {
		for range step.push {
			require.True(t, q.push(plainMsg([]byte(strconv.Itoa(next)))))
			next++
		}
		for range step.pop {
			msg, ok := q.pop()
			require.True(t, ok)
			require.Equal(t, strconv.Itoa(want), string(msg.Bytes()))
			want++
		}
	}
	_, ok := q.pop()
	require.False(t, ok, "empty")
	msgs, size := q.size()
	require.Zero(t, msgs)
	require.Zero(t, size)
}

// TestQueueMemory: an idle queue holds no ring, a drained one gives its
// ring back, small or large; popped slots let go of messages.
func TestQueueMemory(t *testing.T) {
	t.Parallel()
	q := newQueue(1000, 1<<20)
	require.Nil(t, q.ring, "allocated before the first message")

	require.True(t, q.push(plainMsg([]byte("a"))))
	require.Len(t, q.ring, queueMinSlots)
	require.True(t, q.push(plainMsg([]byte("b"))))
	_, _ = q.pop()
	require.Zero(t, q.ring[0], "a popped slot still holds its message")
	_, _ = q.pop()
	require.Nil(t, q.ring, "a small ring is kept after the queue drained")

	for range 10 * queueMinSlots {
		require.True(t, q.push(plainMsg([]byte("x"))))
	}
	require.Greater(t, len(q.ring), queueMinSlots)
	for range 10*queueMinSlots - 1 {
		_, _ = q.pop()
	}
	require.NotNil(t, q.ring, "released before the queue drained")
	_, _ = q.pop()
	require.Nil(t, q.ring, "a large ring is kept after the queue drained")
}

// TestQueueSignals: a push signals ready (coalescing); a pop closes the channel
// a refused pushBulk returned.
func TestQueueSignals(t *testing.T) {
	t.Parallel()
	q := newQueue(4, 1000)
	require.Empty(t, q.ready)
	require.True(t, q.push(plainMsg([]byte("a"))))
	require.True(t, q.push(plainMsg([]byte("b"))))
	require.Len(t, q.ready, 1)
	<-q.ready

	require.True(t, q.push(plainMsg([]byte("c"))))
	ok, room := q.pushBulk(plainMsg([]byte("d")))
	require.False(t, ok)
	_, again := q.pushBulk(plainMsg([]byte("d")))
	require.Equal(t, room, again, "waiters share one channel")
	select {
	case <-room:
		t.Fatal("room before a pop")
	default:
	}
	_, _ = q.pop()
	select {
	case <-room:
	default:
		t.Fatal("no room after a pop")
	}
	ok, _ = q.pushBulk(plainMsg([]byte("d")))
	require.True(t, ok)
}

// TestQueueConcurrent: producers using push and pushBulk and one consumer;
// every message arrives once, each producer's in its order, and the queue never
// holds more than its limits.
func TestQueueConcurrent(t *testing.T) {
	t.Parallel()
	const (
		producers = 4
		each      = 2000
		maxMsgs   = 64
		maxBytes  = 2000
	)
	q := newQueue(maxMsgs, maxBytes)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				msg := fmt.Appendf(nil, "%d:%d:%s", p, i, bytes.Repeat([]byte("x"), i%40))
				for {
					if p%2 == 0 {
						ok, room := q.pushBulk(plainMsg(msg))
						if ok {
							break
						}
						<-room
					} else if q.push(plainMsg(msg)) {
						break
					} else {
						time.Sleep(time.Microsecond)
					}
				}
			}
		}()
	}
	next := make([]int, producers)
	deadline := time.After(time.Minute)
	for got := 0; got < producers*each; {
		msgs, size := q.size()
		require.LessOrEqual(t, msgs, maxMsgs)
		require.LessOrEqual(t, size, maxBytes)
		msg, ok := q.pop()
		if !ok {
			select {
			case <-q.ready:
			case <-deadline:
				t.Fatalf("stuck after %d messages", got)
			}
			continue
		}
		var p, i int
		_, err := fmt.Sscanf(string(msg.Bytes()), "%d:%d:", &p, &i)
		require.NoError(t, err)
		require.Equal(t, next[p], i, "producer %d out of order", p)
		next[p]++
		got++
	}
	wg.Wait()
	_, ok := q.pop()
	require.False(t, ok)
}

// TestQueueBatchHeldUntilSent: popBatch takes messages in order up to its
// byte bound (a longer first one alone), and their bytes stay taken from the
// budget, with a pushBulk waiting for room, until sent gives them back.
func TestQueueBatchHeldUntilSent(t *testing.T) {
	t.Parallel()
	q := newQueue(100, 100)
	for _, n := range []int{30, 30, 15} {
		require.True(t, q.push(plainMsg(bytes.Repeat([]byte{byte(n)}, n))))
	}
	msgs, n := q.popBatch(nil, 60)
	require.Len(t, msgs, 2)
	require.Equal(t, 60, n)
	require.Equal(t, byte(30), msgs[0].Body[0])
	require.Equal(t, int64(75), q.mem.Held(), "a popped batch still counts until sent")
	ok, room := q.pushBulk(plainMsg(make([]byte, 10))) // 75 + 10 > three quarters of 100
	require.False(t, ok)
	select {
	case <-room:
		t.Fatal("room signalled before the batch was sent")
	default:
	}
	q.sent(n)
	<-room
	require.Equal(t, int64(15), q.mem.Held())
	msgs, n = q.popBatch(msgs, 1) // the first message goes whatever its length
	require.Len(t, msgs, 1)
	require.Equal(t, 15, n)
	q.sent(n)
	msgs, n = q.popBatch(msgs, 60)
	require.Empty(t, msgs)
	require.Zero(t, n)
	require.Zero(t, q.mem.Held())
}

// plainMsg is a message of one slice.
func plainMsg(b []byte) Msg { return Msg{Body: b} }
