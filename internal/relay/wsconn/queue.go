package wsconn

import "sync"

// queueMinSlots is the ring a queue takes for its first message, from
// ringPools; a drained queue gives its ring back there (one of up to
// queuePooledSlots, grown by a burst such as a query's answer; a larger one
// to the garbage collector), so an idle connection holds no ring, and a
// connection answering REQ after REQ does not allocate a ring for each.
const queueMinSlots = 4

// queuePooledSlots is the largest ring kept in ringPools.
const queuePooledSlots = 256

// ringPools[i] holds free rings of queueMinSlots<<i slots, each with every
// slot zero (as *[]Msg).
var ringPools [ringClasses]sync.Pool

// ringClasses is the number of ring sizes pooled: queueMinSlots doubled up
// to queuePooledSlots.
const ringClasses = 7

// ringClass returns the pool of rings of n slots, or -1 when n is no pooled
// size.
func ringClass(n int) int {
	for i := range ringClasses {
		if queueMinSlots<<i == n {
			return i
		}
	}
	return -1
}

// getRing returns a zeroed ring of n slots (a power of two times
// queueMinSlots), from ringPools when it holds one.
func getRing(n int) []Msg {
	if i := ringClass(n); i >= 0 {
		if r := ringPools[i].Get(); r != nil {
			return *(r.(*[]Msg))
		}
	}
	return make([]Msg, n)
}

// putRing gives a ring whose slots are all zero back to ringPools (to the
// garbage collector when it is larger than queuePooledSlots).
func putRing(ring []Msg) {
	if i := ringClass(len(ring)); i >= 0 {
		ringPools[i].Put(&ring)
	}
}

// releaseRing gives a drained queue's ring back (putRing); its slots are
// zero (pop and popBatch clear them).
func (q *queue) releaseRing() {
	putRing(q.ring)
	q.ring, q.head = nil, 0
}

// Msg is one text message to send: Body alone, or a JSON array whose last
// element is Body: Head (which opens it, as the relay's
// `["EVENT",<quoted id>,`), then Body (shared, never written to: the relay's
// event JSON, held by its event cache or its live fan-out), then the "]" that
// closes it, which the writer adds. So an EVENT is queued and written without
// a copy of its own: the writer sends the parts with one vectored write
// (writeBatch).
type Msg struct {
	Head, Body []byte
}

// Size is the message's length on the wire (the frame's payload).
func (m Msg) Size() int {
	if m.Head == nil {
		return len(m.Body)
	}
	return len(m.Head) + len(m.Body) + 1
}

// Bytes returns the message in one slice: Body, or with a Head a new slice.
func (m Msg) Bytes() []byte {
	if m.Head == nil {
		return m.Body
	}
	b := make([]byte, 0, m.Size())
	return append(append(append(b, m.Head...), m.Body...), ']')
}

// queue is a Writer's FIFO of outgoing messages, bounded by a number of
// messages and by a byte budget: the connection's (see Budget), which the
// queue shares with what else its owner holds for the connection. It is safe
// for any number of producers and one consumer (the writer).
//
// It allocates lazily: an idle queue holds no buffer, the ring grows by
// doubling as messages wait, and a drained queue gives its ring back (see
// queueMinSlots). A message is accepted into an empty queue whatever its size
// (beyond the connection's budget, never beyond the relay's), so no single
// message is undeliverable.
type queue struct {
	maxMsgs, bulkMsgs int     // the message limits of push and pushBulk (three quarters)
	mem               *Budget // the bytes of the queued messages are taken from it

	// ready, if not nil (newQueue), holds a signal (capacity 1) once a
	// message has been pushed. A Writer's queue has none: its writer is
	// kicked after each push instead (Writer.Kick).
	ready chan struct{}

	mu    sync.Mutex
	ring  []Msg         // nil until the first push and after a drain that releases it
	head  int           // index of the oldest message in ring
	n     int           // messages queued
	bytes int           // their total length
	room  chan struct{} // closed at the next pop; made by a pushBulk that found no room
}

// newQueue returns a queue with a budget of its own of maxBytes, which
// signals ready.
func newQueue(maxMsgs, maxBytes int) *queue {
	q := &queue{ready: make(chan struct{}, 1)}
	q.init(maxMsgs, NewBudget(maxBytes, nil))
	return q
}

// init sets up an empty queue whose messages are taken from mem, without ready.
func (q *queue) init(maxMsgs int, mem *Budget) {
	q.maxMsgs, q.bulkMsgs, q.mem = maxMsgs, maxMsgs-maxMsgs/4, mem
}

// push appends msg unless that would exceed a limit; it never blocks.
func (q *queue) push(msg Msg) bool { return q.tryPush(msg) == Taken }

// tryPush is push saying whose limit refused msg, if any.
func (q *queue) tryPush(msg Msg) TakeResult {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushLocked(msg, q.maxMsgs, q.mem.limit)
}

// pushBulk appends msg unless that would take the connection past three
// quarters of a limit, leaving the rest to push. When it does not, it returns a
// channel that is closed at the writer's next pop: the caller retries then, and
// no wake-up is ever missed.
func (q *queue) pushBulk(msg Msg) (bool, <-chan struct{}) {
	r, room := q.tryPushBulk(msg)
	return r == Taken, room
}

// tryPushBulk is pushBulk saying whose limit refused msg, if any.
func (q *queue) tryPushBulk(msg Msg) (TakeResult, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.pushLocked(msg, q.bulkMsgs, q.mem.BulkLimit())
	if r == Taken {
		return Taken, nil
	}
	if q.room == nil {
		q.room = make(chan struct{})
	}
	return r, q.room
}

func (q *queue) pushLocked(msg Msg, maxMsgs int, maxBytes int64) TakeResult {
	if q.n > 0 && q.n+1 > maxMsgs {
		return ConnFull
	}
	if r := q.mem.Take(msg.Size(), maxBytes, q.n == 0); r != Taken {
		return r
	}
	if q.n == len(q.ring) {
		q.grow()
	}
	q.ring[(q.head+q.n)%len(q.ring)] = msg
	q.n++
	q.bytes += msg.Size()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return Taken
}

// grow doubles the ring (or takes the first one; rings from ringPools), keeping the
// FIFO order.
func (q *queue) grow() {
	if q.ring == nil {
		q.ring, q.head = getRing(queueMinSlots), 0
		return
	}
	ring := getRing(2 * len(q.ring))
	for i := range q.n {
		ring[i] = q.ring[(q.head+i)%len(q.ring)]
	}
	old := q.ring
	clear(old)
	q.ring, q.head = ring, 0
	putRing(old)
}

// pop removes and returns the oldest message; false means the queue is empty.
func (q *queue) pop() (Msg, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return Msg{}, false
	}
	msg := q.ring[q.head]
	q.ring[q.head] = Msg{}
	q.head = (q.head + 1) % len(q.ring)
	q.n--
	q.bytes -= msg.Size()
	q.mem.Give(msg.Size())
	if q.n == 0 {
		q.releaseRing()
	}
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	return msg, true
}

// popBatch removes the oldest messages, at least one, while their total length
// stays within maxBytes (a longer first message goes alone), and appends them
// to dst[:0]; n is their total length. Unlike pop, it leaves their bytes taken
// from the budget: the caller gives them back with sent(n) once written, so
// that a batch on its way to the socket counts against the connection as it
// did in the queue. An empty queue returns no message.
func (q *queue) popBatch(dst []Msg, maxBytes int) (msgs []Msg, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	msgs = dst[:0]
	for q.n > 0 {
		msg := q.ring[q.head]
		if len(msgs) > 0 && n+msg.Size() > maxBytes {
			break
		}
		msgs = append(msgs, msg)
		n += msg.Size()
		q.ring[q.head] = Msg{}
		q.head = (q.head + 1) % len(q.ring)
		q.n--
		q.bytes -= msg.Size()
	}
	if q.n == 0 {
		q.releaseRing()
	}
	return msgs, n
}

// sent gives back the n bytes of a batch from popBatch, now written (or
// dropped), and wakes a pushBulk waiting for room.
func (q *queue) sent(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mem.Give(n)
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}

// size returns the number of queued messages and their total length.
func (q *queue) size() (msgs, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n, q.bytes
}

// clear drops every queued message and gives their bytes back: the connection
// is closing and will send none of them.
func (q *queue) clear() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.mem.Give(q.bytes)
	clear(q.ring)
	q.releaseRing()
	q.n, q.bytes = 0, 0
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
}
