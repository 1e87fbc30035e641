package trust

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
)

type setKey struct {
	author int32
	kind   int
}

type set struct {
	sourceID  string
	createdAt int64
	targets   []int32
}

type source struct {
	author     int32
	etype      int16
	createdAt  int64
	targets    []int32
	amountMsat int64
	reportType string
}

// counters are the NIP-85 counts of one subject (deltas while applying).
type counters struct {
	followers, posts, replies, reactions, reportsRecd, reportsSent int64
	zapCntRecd, zapAmtRecd, zapCntSent, zapAmtSent                 int64
	firstSeen                                                      int64 // 0: none
}

// apply applies ops in order to the overlay b read, and returns the counter
// changes and the sets it changed. It reads and writes nothing but b: the
// same ops on the same overlay give the same result.
func (b *batch) apply(g *Graph, ops []op) (map[int32]*counters, map[setKey]bool) {
	evs, srcs, sets, setBySource, ids := b.evs, b.srcs, b.sets, b.setBySource, b.ids
	// Apply in order against the overlay.
	delta := map[int32]*counters{}
	d := func(id int32) *counters {
		c := delta[id]
		if c == nil {
			c = &counters{}
			delta[id] = c
		}
		return c
	}
	seen := func(id int32, at int64) {
		c := d(id)
		if c.firstSeen == 0 || at < c.firstSeen {
			c.firstSeen = at
		}
	}
	changedSets := map[setKey]bool{}
	for _, o := range ops {
		if !o.upsert {
			if s := srcs[o.id]; s != nil {
				s.count(d, -1)
				srcs[o.id] = nil
			}
			if k, ok := setBySource[o.id]; ok {
				if cur := sets[k]; cur != nil && cur.sourceID == o.id {
					if k.kind == 3 {
						for _, t := range cur.targets {
							d(t).followers--
						}
					}
					sets[k] = nil
					changedSets[k] = true
				}
				delete(setBySource, o.id)
			}
			continue
		}
		ev := evs[o.id]
		if ev == nil {
			continue // gone from events (never happens for an upsert row of a stored event)
		}
		author := ids[ev.PubKey]
		if ev.Kind == 3 || ev.Kind == 10000 {
			k := setKey{author, ev.Kind}
			cur := sets[k]
			if cur != nil && (cur.createdAt > int64(ev.CreatedAt) || (cur.createdAt == int64(ev.CreatedAt) && cur.sourceID <= ev.ID)) {
				continue // the row holds this version or a newer one
			}
			next := &set{sourceID: ev.ID, createdAt: int64(ev.CreatedAt), targets: idList(ids, subjectsOf(ev), author)}
			if ev.Kind == 3 {
				var old []int32
				if cur != nil {
					old = cur.targets
				}
				diffSorted(old, next.targets, func(t int32) { d(t).followers-- }, func(t int32) { d(t).followers++ })
			}
			if cur != nil {
				delete(setBySource, cur.sourceID)
			}
			sets[k], setBySource[ev.ID], changedSets[k] = next, k, true
			seen(author, int64(ev.CreatedAt))
			continue
		}
		if _, ok := srcs[o.id]; ok && srcs[o.id] != nil {
			continue // applied already
		}
		s := g.sourceOf(ev, ids)
		if s == nil {
			continue
		}
		s.count(d, 1)
		if s.etype != etLabel {
			seen(s.author, s.createdAt)
		}
		srcs[o.id] = s
	}
	return delta, changedSets
}

// count adds (sign 1) or removes (-1) what s contributes to the counters.
func (s *source) count(d func(int32) *counters, sign int64) {
	switch s.etype {
	case etPost:
		d(s.author).posts += sign
	case etReply:
		d(s.author).replies += sign
	case etReaction:
		for _, t := range s.targets {
			d(t).reactions += sign
		}
	case etZap:
		for _, t := range s.targets {
			d(t).zapCntRecd += sign
			d(t).zapAmtRecd += sign * s.amountMsat
		}
		d(s.author).zapCntSent += sign
		d(s.author).zapAmtSent += sign * s.amountMsat
	case etReport:
		for _, t := range s.targets {
			d(t).reportsRecd += sign
		}
		d(s.author).reportsSent += sign
	}
}

// sourceOf turns a stored event into its graph row (nil: not graph input).
func (g *Graph) sourceOf(ev *nostr.Event, ids map[string]int32) *source {
	author := ids[ev.PubKey]
	s := &source{author: author, createdAt: int64(ev.CreatedAt), targets: idList(ids, subjectsOf(ev), author)}
	switch ev.Kind {
	case 1:
		s.etype = etPost
		if ev.Tags.GetFirst([]string{"e", ""}) != nil {
			s.etype = etReply
		}
	case 1111:
		s.etype = etReply
	case 7:
		s.etype = etReaction
	case 6, 16:
		s.etype = etRepost
	case 9735:
		s.etype = etZap
		sender, amount := zapSender(ev)
		if sender == "" {
			return nil // not a zap receipt we can attribute
		}
		s.author, s.amountMsat = ids[sender], amount
		s.targets = idList(ids, subjectsOf(ev), s.author)
	case 1984:
		s.etype = etReport
		s.reportType = reportType(ev)
		if len(s.targets) > 1 {
			s.targets = idList(ids, subjectsOf(ev)[:1], author) // NIP-56: the first p tag is the subject
		}
	case 1985:
		if ev.PubKey != g.NodePubKey {
			return nil
		}
		s.etype = etLabel
	default:
		return nil
	}
	return s
}

// subjectsOf returns the pubkeys of ev's p tags (well-formed, in tag order).
func subjectsOf(ev *nostr.Event) []string {
	var out []string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && protocol.IsHex64(t[1]) {
			out = append(out, t[1])
		}
	}
	return out
}

// zapSender reads the NIP-57 zap request embedded in a receipt: its author and
// its amount tag (millisats; 0 when absent).
func zapSender(ev *nostr.Event) (string, int64) {
	desc := ev.Tags.GetFirst([]string{"description", ""})
	if desc == nil || len(*desc) < 2 {
		return "", 0
	}
	var req struct {
		PubKey string     `json:"pubkey"`
		Tags   [][]string `json:"tags"`
	}
	if json.Unmarshal([]byte((*desc)[1]), &req) != nil || !protocol.IsHex64(req.PubKey) {
		return "", 0
	}
	var amount int64
	for _, t := range req.Tags {
		if len(t) >= 2 && t[0] == "amount" {
			if v, err := strconv.ParseInt(t[1], 10, 64); err == nil && v > 0 {
				amount = v
			}
		}
	}
	return req.PubKey, amount
}

// ReportTypes are NIP-56's report types; anything else counts as "other".
var ReportTypes = []string{"nudity", "malware", "profanity", "illegal", "spam", "impersonation", "other"}

func reportType(ev *nostr.Event) string {
	for _, name := range []string{"p", "e"} {
		for _, t := range ev.Tags {
			if len(t) >= 3 && t[0] == name && slices.Contains(ReportTypes, t[2]) {
				return t[2]
			}
		}
	}
	return "other"
}

// idList maps pubkeys to sorted, distinct ids, leaving out self.
func idList(ids map[string]int32, keys []string, self int32) []int32 {
	out := make([]int32, 0, len(keys))
	for _, k := range keys {
		if id, ok := ids[k]; ok && id != self {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// diffSorted calls gone for every element of a not in b and added for every
// element of b not in a (both sorted, distinct).
func diffSorted(a, b []int32, gone, added func(int32)) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			gone(a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			added(b[j])
			j++
		default:
			i++
			j++
		}
	}
}
