package moderation

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// prefilter returns literals (lower case) one of which occurs in every text the
// expression matches, and false when no such set is known. It lets a rule skip
// the regular expression for the many texts that cannot match: the expression
// runs only when the lower-cased text contains one of the literals. The set is
// computed for ASCII literals only, and used on ASCII texts only, where lower
// casing and the expression's case folding agree (in Unicode, (?i)s also
// matches U+017F, which strings.ToLower leaves alone).
func prefilter(expr string) ([]string, bool) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, false
	}
	lits, ok := necessary(re.Simplify())
	if !ok || len(lits) == 0 {
		return nil, false
	}
	return lits, true
}

// necessary is the set of literals one of which every match of re contains.
func necessary(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		s := string(re.Rune)
		if s == "" || !isASCII(s) {
			return nil, false
		}
		return []string{strings.ToLower(s)}, true
	case syntax.OpCapture, syntax.OpPlus:
		return necessary(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return necessary(re.Sub[0])
		}
	case syntax.OpConcat:
		// Any factor's set will do; take the one whose shortest literal is longest.
		var best []string
		bestLen := 0
		for _, sub := range re.Sub {
			if lits, ok := necessary(sub); ok {
				shortest := len(lits[0])
				for _, l := range lits {
					shortest = min(shortest, len(l))
				}
				if shortest > bestLen {
					best, bestLen = lits, shortest
				}
			}
		}
		return best, best != nil
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits, ok := necessary(sub)
			if !ok {
				return nil, false
			}
			all = append(all, lits...)
		}
		return all, true
	}
	return nil, false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
