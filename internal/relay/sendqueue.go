package relay

import "sync"

const (
	// queueMinSlots is the ring a queue allocates for its first message.
	queueMinSlots = 8
	// queueKeepSlots is the largest ring a drained queue keeps; a larger one is
	// released, so that a burst does not pin memory on an idle connection.
	queueKeepSlots = 32
)

// sendQueue is a connection's FIFO of outgoing messages, bounded by a number of
// messages and by their total size in bytes. It is safe for any number of
// producers and one consumer (the writer).
//
// It allocates lazily: an idle queue holds no buffer, the ring grows by doubling
// as messages wait, and a drained queue gives back a ring larger than
// queueKeepSlots. A message is accepted into an empty queue whatever its size, so
// no single message is undeliverable.
type sendQueue struct {
	maxMsgs, maxBytes   int // the limits of push
	bulkMsgs, bulkBytes int // the limits of pushBulk: three quarters of the above

	// ready holds a signal (capacity 1) once a message has been pushed; the writer
	// waits on it when the queue is empty.
	ready chan struct{}

	mu    sync.Mutex
	ring  [][]byte      // nil until the first push and after a drain that releases it
	head  int           // index of the oldest message in ring
	n     int           // messages queued
	bytes int           // their total length
	room  chan struct{} // closed at the next pop; made by a pushBulk that found no room
}

func newSendQueue(maxMsgs, maxBytes int) *sendQueue {
	return &sendQueue{
		maxMsgs:   maxMsgs,
		maxBytes:  maxBytes,
		bulkMsgs:  maxMsgs - maxMsgs/4,
		bulkBytes: maxBytes - maxBytes/4,
		ready:     make(chan struct{}, 1),
	}
}

// push appends msg unless that would exceed a limit; it never blocks.
func (q *sendQueue) push(msg []byte) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushLocked(msg, q.maxMsgs, q.maxBytes)
}

// pushBulk appends msg unless that would exceed three quarters of a limit, leaving
// the rest to push. When it does not, it returns a channel that is closed at the
// writer's next pop: the caller retries then, and no wake-up is ever missed.
func (q *sendQueue) pushBulk(msg []byte) (bool, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pushLocked(msg, q.bulkMsgs, q.bulkBytes) {
		return true, nil
	}
	if q.room == nil {
		q.room = make(chan struct{})
	}
	return false, q.room
}

func (q *sendQueue) pushLocked(msg []byte, maxMsgs, maxBytes int) bool {
	if q.n > 0 && (q.n+1 > maxMsgs || q.bytes+len(msg) > maxBytes) {
		return false
	}
	if q.n == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.n)%len(q.ring)] = msg
	q.n++
	q.bytes += len(msg)
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

// grow doubles the ring (or allocates the first one), keeping the FIFO order.
func (q *sendQueue) grow() {
	ring := make([][]byte, max(queueMinSlots, 2*len(q.ring)))
	for i := range q.n {
		ring[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	q.ring, q.head = ring, 0
}

// pop removes and returns the oldest message; false means the queue is empty.
func (q *sendQueue) pop() ([]byte, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return nil, false
	}
	msg := q.ring[q.head]
	q.ring[q.head] = nil
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	q.bytes -= len(msg)
	if q.n == 0 {
		q.head = 0
		if len(q.ring) > queueKeepSlots {
			q.ring = nil
		}
	}
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	return msg, true
}

// size returns the number of queued messages and their total length.
func (q *sendQueue) size() (msgs, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n, q.bytes
}
