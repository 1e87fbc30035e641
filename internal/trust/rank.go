package trust

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Params are the documented knobs of one computation. They are recorded with
// every run (cn_trust.runs.params); changing one changes the scores, never
// their determinism.
type Params struct {
	// Damping: the probability of following an edge rather than teleporting to
	// the seeds (PageRank's d).
	Damping float64 `json:"damping"`
	// Tolerance stops the iteration when the L1 change of the score vector
	// falls below it; MaxIterations caps it.
	Tolerance     float64 `json:"tolerance"`
	MaxIterations int     `json:"max_iterations"`
	// InteractionWeight is the edge weight of one interaction (reply, mention,
	// reaction, repost, zap) from u to v, against 1 for a follow;
	// InteractionCap caps the weight of all interactions from u to v.
	InteractionWeight float64 `json:"interaction_weight"`
	InteractionCap    float64 `json:"interaction_cap"`
	// NegativeWeight scales the mass that mutes and reports take away: a
	// subject's adjusted score is score - NegativeWeight * (sum over muters and
	// reporters u of score(u) / (number of keys u mutes or reports)). A muter
	// pushes on a subject as hard as it would lift it by following it alone.
	// Reports count only from reporters with rank >= 1.
	NegativeWeight float64 `json:"negative_weight"`
	// Decades: rank = 100 + 100/Decades * log10(adjusted / max adjusted),
	// clamped to 1..100 for any positive adjusted score; 0 otherwise (not
	// reached from the seeds, or pushed to the floor).
	Decades float64 `json:"decades"`
	// ReportHalfLife (seconds): a report's weight in risk halves every
	// half-life before as_of. Risk = sum over reports of rank(reporter)/100 *
	// decay, plus 1 * decay per label of the node.
	ReportHalfLife int64 `json:"report_half_life"`
}

// DefaultParams are the trust-v1 defaults.
func DefaultParams() Params {
	return Params{Damping: 0.85, Tolerance: 1e-6, MaxIterations: 100, InteractionWeight: 0.1, InteractionCap: 0.5,
		NegativeWeight: 0.5, Decades: 6, ReportHalfLife: 30 * 86400}
}

// Graph input in compute form: nodes are indexes 0..N-1 in pubkey order.
type Input struct {
	Pubkeys []string // sorted; index = node
	// Follows[u], Mutes[u]: distinct node lists, any order (nil when none).
	Follows, Mutes [][]int32
	// Interactions: (from, to, count) with from != to, any order.
	Interactions []Interaction
	// Reports: one per (report event, subject); Labels: one per node label and subject.
	Reports []Report
	Labels  []Report
	Seeds   []int32 // sorted, distinct; empty: uniform teleport
}

// Interaction is count interactions from node From to node To.
type Interaction struct {
	From, To int32
	Count    int32
}

// Report is one report (or label) of a subject.
type Report struct {
	EventID   string
	Reporter  int32 // -1 for the node's labels
	Subject   int32
	Type      string
	CreatedAt int64
}

// Result is one computation's output, indexed like Input.Pubkeys.
type Result struct {
	Score      []float64 // adjusted score
	Rank       []int16
	Risk       []float64
	Iterations int
	Residual   float64
	Edges      int64
}

const chunk = 1 << 14

// Compute runs the personalised PageRank and the derived ranks and risks.
// Determinism: every per-node sum runs over in-neighbours in ascending node
// order, every vector-wide sum over fixed chunks in order, and no value is
// updated in place during an iteration (Jacobi), so the output depends only on
// the input, never on the number of workers or the order rows were stored in.
func Compute(in *Input, p Params, asOf int64) *Result {
	n := len(in.Pubkeys)
	res := &Result{Score: make([]float64, n), Rank: make([]int16, n), Risk: make([]float64, n)}
	if n == 0 {
		return res
	}
	// Out weight of every node and the in-lists (CSR), follows unweighted.
	outW := make([]float64, n)
	inOff := make([]int64, n+1)
	for u, ts := range in.Follows {
		outW[u] += float64(len(ts))
		for _, v := range ts {
			inOff[v+1]++
		}
		res.Edges += int64(len(ts))
	}
	for v := 0; v < n; v++ {
		inOff[v+1] += inOff[v]
	}
	inSrc := make([]int32, inOff[n])
	fill := slices.Clone(inOff[:n])
	for u, ts := range in.Follows { // ascending u: every in-list ends up sorted
		for _, v := range ts {
			inSrc[fill[v]] = int32(u)
			fill[v]++
		}
	}
	fill = nil
	// Interactions: one weighted edge per (from, to), sorted by (to, from).
	type wedge struct {
		from, to int32
		w        float64
	}
	agg := map[[2]int32]int64{}
	for _, x := range in.Interactions {
		if x.From != x.To {
			agg[[2]int32{x.From, x.To}] += int64(x.Count)
		}
	}
	wedges := make([]wedge, 0, len(agg))
	for k, c := range agg {
		w := math.Min(p.InteractionWeight*float64(c), p.InteractionCap)
		wedges = append(wedges, wedge{k[0], k[1], w})
	}
	slices.SortFunc(wedges, func(a, b wedge) int {
		if a.to != b.to {
			return int(a.to - b.to)
		}
		return int(a.from - b.from)
	})
	for _, e := range wedges {
		outW[e.from] += e.w
	}
	res.Edges += int64(len(wedges))
	wOff := make([]int32, n+1)
	for _, e := range wedges {
		wOff[e.to+1]++
	}
	for v := 0; v < n; v++ {
		wOff[v+1] += wOff[v]
	}

	// Teleport vector.
	tele := make([]float64, n)
	if len(in.Seeds) == 0 {
		for v := range tele {
			tele[v] = 1 / float64(n)
		}
	} else {
		for _, s := range in.Seeds {
			tele[s] = 1 / float64(len(in.Seeds))
		}
	}

	r := slices.Clone(tele)
	next := make([]float64, n)
	unit := make([]float64, n)
	nChunks := (n + chunk - 1) / chunk
	partial := make([]float64, nChunks)
	d := p.Damping
	for it := 1; it <= p.MaxIterations; it++ {
		var dangling float64
		for u := 0; u < n; u++ {
			if outW[u] > 0 {
				unit[u] = r[u] / outW[u]
			} else {
				unit[u] = 0
				dangling += r[u]
			}
		}
		parallelChunks(nChunks, func(ci int) {
			lo, hi := ci*chunk, min((ci+1)*chunk, n)
			var diff float64
			for v := lo; v < hi; v++ {
				var sum float64
				for _, u := range inSrc[inOff[v]:inOff[v+1]] {
					sum += unit[u]
				}
				for _, e := range wedges[wOff[v]:wOff[v+1]] {
					sum += e.w * unit[e.from]
				}
				x := (1-d)*tele[v] + d*(sum+dangling*tele[v])
				next[v] = x
				diff += math.Abs(x - r[v])
			}
			partial[ci] = diff
		})
		var residual float64
		for _, x := range partial {
			residual += x
		}
		r, next = next, r
		res.Iterations, res.Residual = it, residual
		if residual < p.Tolerance {
			break
		}
	}

	// Mutes and reports take mass away (see Params.NegativeWeight).
	neg := make([]float64, n)
	for u, ts := range in.Mutes {
		if len(ts) == 0 {
			continue
		}
		share := r[u] / float64(len(ts))
		for _, v := range ts {
			neg[v] += share
		}
	}
	reported := map[int32][]int32{} // reporter -> distinct subjects (sorted below)
	for _, rep := range in.Reports {
		if rep.Reporter >= 0 && rep.Reporter != rep.Subject {
			reported[rep.Reporter] = append(reported[rep.Reporter], rep.Subject)
		}
	}
	reporters := make([]int32, 0, len(reported))
	for u := range reported {
		reporters = append(reporters, u)
	}
	slices.Sort(reporters)
	preRank := ranks(r, p) // reporters count only when ranked
	for _, u := range reporters {
		if preRank[u] < 1 {
			continue
		}
		subs := reported[u]
		slices.Sort(subs)
		subs = slices.Compact(subs)
		share := r[u] / float64(len(subs))
		for _, v := range subs {
			neg[v] += share
		}
	}
	for v := 0; v < n; v++ {
		res.Score[v] = max(0, r[v]-p.NegativeWeight*neg[v])
	}
	res.Rank = ranks(res.Score, p)

	// Risk: reports weighted by the reporter's rank, decayed to as_of; in a
	// fixed order (subject, event id).
	all := append(slices.Clone(in.Reports), in.Labels...)
	slices.SortFunc(all, func(a, b Report) int {
		if a.Subject != b.Subject {
			return int(a.Subject - b.Subject)
		}
		if c := compareStrings(a.EventID, b.EventID); c != 0 {
			return c
		}
		return int(a.Reporter - b.Reporter)
	})
	for _, rep := range all {
		w := 1.0
		if rep.Reporter >= 0 {
			w = float64(res.Rank[rep.Reporter]) / 100
		}
		res.Risk[rep.Subject] += w * decay(asOf-rep.CreatedAt, p.ReportHalfLife)
	}
	return res
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decay is 0.5^(age/halfLife); a report from the future counts fully.
func decay(age, halfLife int64) float64 {
	if age <= 0 || halfLife <= 0 {
		return 1
	}
	return math.Exp2(-float64(age) / float64(halfLife))
}

// ranks maps scores to 0..100 (see Params.Decades).
func ranks(score []float64, p Params) []int16 {
	out := make([]int16, len(score))
	var top float64
	for _, s := range score {
		top = max(top, s)
	}
	if top <= 0 {
		return out
	}
	for v, s := range score {
		if s <= 0 {
			continue
		}
		x := math.Round(100 + 100/p.Decades*math.Log10(s/top))
		out[v] = int16(min(100, max(1, x)))
	}
	return out
}

// parallelChunks calls f for every chunk index, on every core.
func parallelChunks(nChunks int, f func(ci int)) {
	workers := min(runtime.GOMAXPROCS(0), nChunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ci := int(next.Add(1) - 1)
				if ci >= nChunks {
					return
				}
				f(ci)
			}
		}()
	}
	wg.Wait()
}
