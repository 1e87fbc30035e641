package store

import "context"

// rowBudgetKey carries a Query's row budget in its context.
type rowBudgetKey struct{}

// WithRowBudget returns a context under which Query asks take(n) before it
// decodes each row, n being the row's size on the wire (about its JSON size);
// under WithServed, n is what the row holds once read (see Served).
// When take refuses, Query stops reading (the rest of that filter's rows and
// any further filter are skipped) and returns what it read so far, without an
// error. A relay uses it to hold no more rows for a client than its memory
// budget allows; take runs on the goroutine that called Query.
func WithRowBudget(ctx context.Context, take func(n int) bool) context.Context {
	return context.WithValue(ctx, rowBudgetKey{}, take)
}

// rowBudget returns ctx's row budget, or nil.
func rowBudget(ctx context.Context) func(int) bool {
	take, _ := ctx.Value(rowBudgetKey{}).(func(int) bool)
	return take
}

// rowSize is what a row costs against a row budget: its raw values' length.
func rowSize(raw [][]byte) int {
	n := 0
	for _, v := range raw {
		n += len(v)
	}
	return n
}
