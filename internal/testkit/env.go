package testkit

import (
	"os"
	"strconv"
	"testing"
)

// EnvInt is the positive integer in the environment variable name (a
// benchmark's size, CN_BENCH_*), or def when it is unset or empty. Any other
// value fails tb: a typo must not silently run the default size.
func EnvInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
