package textsearch

import "strings"

// Match reports whether content matches q: the answer Postgres gives to
// Analyze(content)::tsvector @@ q.TSQuery()::tsquery, computed without a database
// round trip (the relay matches live events against NIP-50 subscriptions with
// it). Every positive term must occur (a phrase: its lexemes at consecutive
// positions; a prefix operand: any lexeme starting with it) and no negated term
// may. The zero Query matches nothing.
func (q Query) Match(content string) bool {
	if len(q.terms) == 0 || q.terms[0].neg {
		return false
	}
	s := normalize(content, maxContentBytes, maxNormalizedBytes)
	a := analyzers.Get().(*analyzer)
	defer a.release()
	a.tokenize(s)
	positions := make(map[string][]int32, len(a.toks))
	for _, t := range a.toks {
		ps := positions[t.lex]
		if len(ps) < maxPositionsPerLex && (len(ps) == 0 || ps[len(ps)-1] != t.pos) {
			positions[t.lex] = append(ps, t.pos)
		}
	}
	for _, t := range q.terms {
		if phraseOccurs(t.toks, positions) == t.neg {
			return false
		}
	}
	return true
}

// phraseOccurs reports whether toks occur at consecutive positions.
func phraseOccurs(toks []qtok, positions map[string][]int32) bool {
	starts := operandPositions(toks[0], positions)
	for i := 1; i < len(toks) && len(starts) > 0; i++ {
		next := operandPositions(toks[i], positions)
		kept := starts[:0:0]
		for _, p := range starts {
			if contains(next, p+int32(i)) {
				kept = append(kept, p)
			}
		}
		starts = kept
	}
	return len(starts) > 0
}

// operandPositions returns the positions of one operand: its lexeme, or with
// prefix every lexeme starting with it.
func operandPositions(t qtok, positions map[string][]int32) []int32 {
	if !t.prefix {
		return positions[t.lex]
	}
	var out []int32
	for lex, ps := range positions {
		if strings.HasPrefix(lex, t.lex) {
			out = append(out, ps...)
		}
	}
	return out
}

func contains(ps []int32, p int32) bool {
	for _, x := range ps {
		if x == p {
			return true
		}
	}
	return false
}
