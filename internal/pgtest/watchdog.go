package pgtest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

// module marks the goroutines worth printing: those with a frame of ours.
const module = "kukuri/communitynode/"

// testFrame finds the test functions in a goroutine's stack.
var testFrame = regexp.MustCompile(`\.(Test\w+)(?:\.func\d+)*\(`)

// armWatchdog makes a test binary that is about to reach go test's -timeout
// say which tests hang, in the last lines it prints: go test's own timeout
// panic dumps every goroutine (an embedded nats-server has hundreds), and CI
// shows only the tail of the log, so the test's name scrolled out of sight.
// Shortly before the timeout this prints only the goroutines with a frame of
// this module, then one line naming the tests still running, and exits 2
// (go test reports the package as failed). No timeout (-test.timeout 0): no
// watchdog. Call it after flag.Parse.
func armWatchdog() {
	f := flag.Lookup("test.timeout")
	if f == nil {
		return
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return
	}
	timeout, _ := g.Get().(time.Duration)
	if timeout <= 0 {
		return
	}
	margin := min(timeout/10, 30*time.Second)
	time.AfterFunc(timeout-margin, func() {
		stacks, tests := ourGoroutines()
		stacks = strings.TrimSpace(stacks)
		fmt.Fprintf(os.Stderr, "\n%s\n\npgtest: watchdog: still running %s into -test.timeout %s, in %s; the goroutines above are this module's\n",
			stacks, timeout-margin, timeout, strings.Join(tests, ", "))
		os.Exit(2)
	})
}

// ourGoroutines returns the stacks of the goroutines with a frame of this
// module, and the test functions among their frames.
func ourGoroutines() (string, []string) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out bytes.Buffer
	seen := map[string]bool{}
	for _, gr := range bytes.Split(buf, []byte("\n\n")) {
		if !bytes.Contains(gr, []byte(module)) {
			continue
		}
		out.Write(gr)
		out.WriteString("\n\n")
		for _, m := range testFrame.FindAllSubmatch(gr, -1) {
			if name := string(m[1]); name != "TestMain" {
				seen[name] = true
			}
		}
	}
	tests := make([]string, 0, len(seen))
	for name := range seen {
		tests = append(tests, name)
	}
	sort.Strings(tests)
	if len(tests) == 0 {
		tests = []string{"no test function's frame (a cleanup or TestMain)"}
	}
	return out.String(), tests
}
