package wsconn

import "sync/atomic"

// Budget bounds the bytes held for a connection, or for every connection
// together: the relay gives each connection one (Config.SendQueueBytes) whose
// parent is the relay's (Config.TotalQueueBytes), so that N connections hold
// at most that much together, however many they are. A Writer charges the
// bytes of every queued message to its connection's budget, and so to the
// parent, until the message is written (or dropped); the owner charges what
// else it holds for the connection (the relay: live events held while a query
// runs, stored events a query has read and not yet queued).
//
// The limits are hard: a take that would exceed either one fails, and the
// caller decides what that means (a live event: the client is too slow; a
// query row: the query stops; a query result: wait for room). The one
// exception is force, which the Writer's queue uses for a message into an
// empty queue (every message must be deliverable): it may exceed the
// budget's own limit by that message, never the parent's.
//
// Whoever waits for room (the relay's query results) asks for a channel
// (WhenGiven) that the next give closes, so that bytes given back by any
// connection wake it.
//
// A Budget is used in place (Init), never copied.
type Budget struct {
	limit  int64
	used   atomic.Int64
	parent *Budget
	// given is the channel whenGiven handed out, nil when none is waited on;
	// the next give closes it.
	given atomic.Pointer[chan struct{}]
}

// NewBudget returns a budget of limit bytes drawing on parent (nil: none).
func NewBudget(limit int, parent *Budget) *Budget {
	return &Budget{limit: int64(limit), parent: parent}
}

// Init sets up an unused budget of limit bytes drawing on parent (nil: none).
func (b *Budget) Init(limit int64, parent *Budget) { b.limit, b.parent = limit, parent }

// TakeResult says whether a take succeeded and, if not, whose limit refused it.
type TakeResult int

const (
	Taken     TakeResult = iota
	ConnFull             // the budget's own limit (or the part of it asked for)
	RelayFull            // the parent's limit
)

func (r TakeResult) String() string {
	switch r {
	case Taken:
		return "taken"
	case ConnFull:
		return "connection memory budget full"
	}
	return "relay memory budget full"
}

// Take reserves n bytes if that keeps b at or under limit (b.Limit() or a
// part of it) and its parent under its own limit; force skips b's own check.
func (b *Budget) Take(n int, limit int64, force bool) TakeResult {
	for {
		u := b.used.Load()
		if !force && u+int64(n) > limit {
			return ConnFull
		}
		if b.used.CompareAndSwap(u, u+int64(n)) {
			break
		}
	}
	if b.parent != nil && b.parent.Take(n, b.parent.limit, false) != Taken {
		b.used.Add(-int64(n))
		return RelayFull
	}
	return Taken
}

// Give returns n bytes taken before (to the parent too), and closes the
// channel WhenGiven handed out, if any.
func (b *Budget) Give(n int) {
	if n == 0 {
		return
	}
	b.used.Add(-int64(n))
	if p := b.given.Load(); p != nil && b.given.CompareAndSwap(p, nil) {
		close(*p)
	}
	if b.parent != nil {
		b.parent.Give(n)
	}
}

// WhenGiven returns a channel closed by the next give (of any bytes) after
// this call. A waiter asks for it before it tries to take again, so that no
// give between its try and its wait goes unseen.
func (b *Budget) WhenGiven() <-chan struct{} {
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

// Waited reports whether a channel WhenGiven handed out is still open (no
// give has come since).
func (b *Budget) Waited() bool { return b.given.Load() != nil }

// Held returns the bytes taken and not given back.
func (b *Budget) Held() int64 { return b.used.Load() }

// Limit is the budget's own limit in bytes.
func (b *Budget) Limit() int64 { return b.limit }

// BulkLimit is what query results (the Writer's PushBulk) may fill of b:
// three quarters, leaving the rest to live traffic.
func (b *Budget) BulkLimit() int64 { return b.limit - b.limit/4 }
