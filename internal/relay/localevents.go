package relay

import (
	"sync"

	"github.com/nbd-wtf/go-nostr"
)

// localEventsMax bounds the events localEvents holds: the events committed
// between two reads of the follower, which takes them all at each read. A
// follower that falls behind (the database slow or down) stops taking; then
// further events are not kept, and the follower loads them, as it loads
// every other process's events.
const localEventsMax = 4096

// localEvents hands the follower the events this process's batches have just
// stored, so that it fans them out without loading them back from the
// database (Store.Events): the follower still reads every outbox row, in seq
// order, and loads whatever its rows name that is not here.
//
// Promise: an event is kept only once its batch committed (Ingest returned)
// and it was stored by that batch (OK true without a message: not a
// duplicate, not pending, not withheld); an event id names one content (the
// id is its hash), and this is the event as stored. Safe for concurrent use.
type localEvents struct {
	mu  sync.Mutex
	evs map[string]*nostr.Event
}

// add keeps the events of a committed batch that the batch stored.
func (l *localEvents) add(evs []*nostr.Event, results []IngestResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, ev := range evs {
		r := results[i]
		if !r.OK || r.Message != "" || r.Withheld || len(l.evs) >= localEventsMax {
			continue
		}
		if l.evs == nil {
			l.evs = make(map[string]*nostr.Event, len(evs))
		}
		l.evs[ev.ID] = ev
	}
}

// take returns the events kept so far and forgets them. The follower takes
// them after each read: those whose rows the read returned are fanned out
// from memory, the others (rows not read yet, or read before they were
// handed over) are dropped and their events loaded when their rows are read.
func (l *localEvents) take() map[string]*nostr.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	evs := l.evs
	l.evs = nil
	return evs
}

// giveBack keeps again what take returned, for a read that found no rows
// (within the same bound as add).
func (l *localEvents) giveBack(evs map[string]*nostr.Event) {
	if len(evs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.evs == nil {
		l.evs = evs
		return
	}
	for id, ev := range evs {
		if len(l.evs) >= localEventsMax {
			return
		}
		l.evs[id] = ev
	}
}
