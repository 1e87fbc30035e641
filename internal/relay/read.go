package relay

import (
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/readpath"
)

// servedJSON holds what the reads of a REQ's stored part said of its events
// besides the events themselves: each one's JSON (readpath.Result.JSON, or
// the event cache's) and which filters' own answers held it
// (readpath.Result.From). It is keyed by the events' pointers, so that it
// follows them through the handoff's merge. A servedJSON is used by one
// goroutine at a time.
type servedJSON struct {
	json map[*nostr.Event][]byte
	from map[*nostr.Event]uint64
}

// add records the JSON and filters of res's events.
func (sv *servedJSON) add(res readpath.Result) {
	if sv.json == nil && len(res.JSON) > 0 {
		sv.json = make(map[*nostr.Event][]byte, len(res.Events))
	}
	for i, ev := range res.Events {
		if i < len(res.JSON) && res.JSON[i] != nil {
			sv.Put(ev, res.JSON[i])
		}
		if i < len(res.From) && res.From[i] != 0 {
			if sv.from == nil {
				sv.from = make(map[*nostr.Event]uint64)
			}
			sv.from[ev] = res.From[i]
		}
	}
}

// Take returns ev's JSON and forgets it; nil for an event it has none of, or
// once taken.
func (sv *servedJSON) Take(ev *nostr.Event) []byte {
	if sv == nil {
		return nil
	}
	js := sv.json[ev]
	delete(sv.json, ev)
	return js
}

// JSON returns ev's JSON as Take does, but keeps it.
func (sv *servedJSON) JSON(ev *nostr.Event) []byte {
	if sv == nil {
		return nil
	}
	return sv.json[ev]
}

// Put records js as ev's JSON.
func (sv *servedJSON) Put(ev *nostr.Event, js []byte) {
	if sv.json == nil {
		sv.json = make(map[*nostr.Event][]byte)
	}
	sv.json[ev] = js
}

// From returns which filters of a read of several (2 to 64) held ev in their
// own answer (readpath.Result.From): bit i for filters[i]; 0 for any other
// event.
func (sv *servedJSON) From(ev *nostr.Event) uint64 {
	if sv == nil {
		return 0
	}
	return sv.from[ev]
}
