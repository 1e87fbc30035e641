package relay

import "sync/atomic"

// budget bounds the bytes the relay holds for its clients. Each connection has
// one (Config.SendQueueBytes) that covers everything held for it: its send
// queue, the live events its subscriptions hold while their queries run, and
// the stored events its queries have read and not yet queued. Every connection's
// budget draws on the relay's (Config.TotalQueueBytes), so that N connections
// hold at most that much together, however many they are.
//
// The limits are hard: a take that would exceed either one fails, and the
// caller decides what that means (a live event: the client is too slow; a
// query row: the query stops; a query result: wait for room). The one
// exception is force, which sendQueue uses for a message into an empty queue
// (every message must be deliverable): it may exceed the connection's limit by
// that message, never the relay's.
//
// Whoever waits for room (a query result: enqueueBulk) asks for a channel
// (whenGiven) that the next give closes, so that bytes given back by any
// connection wake it.
type budget struct {
	limit  int64
	used   atomic.Int64
	parent *budget
	// given is the channel whenGiven handed out, nil when none is waited on;
	// the next give closes it.
	given atomic.Pointer[chan struct{}]
}

func newBudget(limit int, parent *budget) *budget {
	return &budget{limit: int64(limit), parent: parent}
}

// takeResult says whether a take succeeded and, if not, whose limit refused it.
type takeResult int

const (
	taken     takeResult = iota
	connFull             // the connection's own limit (or the given part of it)
	relayFull            // the relay-wide limit
)

func (r takeResult) String() string {
	switch r {
	case taken:
		return "taken"
	case connFull:
		return "connection memory budget full"
	}
	return "relay memory budget full"
}

// take reserves n bytes if that keeps b at or under limit (b.limit or a part of
// it) and its parent under its own limit; force skips b's own check.
func (b *budget) take(n int, limit int64, force bool) takeResult {
	for {
		u := b.used.Load()
		if !force && u+int64(n) > limit {
			return connFull
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			break
		}
	}
	if b.parent != nil && b.parent.take(n, b.parent.limit, false) != taken {
		b.used.Add(-int64(n))
		return relayFull
	}
	return taken
}

// give returns n bytes taken before.
func (b *budget) give(n int) {
	if n == 0 {
		return
	}
	b.used.Add(-int64(n))
	if p := b.given.Load(); p != nil && b.given.CompareAndSwap(p, nil) {
		close(*p)
	}
	if b.parent != nil {
		b.parent.give(n)
	}
}

// whenGiven returns a channel closed by the next give (of any bytes) after
// this call. A waiter asks for it before it tries to take again, so that no
// give between its try and its wait goes unseen.
func (b *budget) whenGiven() <-chan struct{} {
	for {
		if p := b.given.Load(); p != nil {
			return *p
		}
		ch := make(chan struct{})
		if b.given.CompareAndSwap(nil, &ch) {
			return ch
		}
	}
}

// held returns the bytes taken and not given back.
func (b *budget) held() int64 { return b.used.Load() }

// bulkLimit is what query results may fill of b: three quarters, leaving the
// rest to live traffic.
func (b *budget) bulkLimit() int64 { return b.limit - b.limit/4 }
