package writerlease

import (
	"fmt"
	"strconv"
	"strings"
)

// holderKey is a run's row key: host:pid:random, and, when this process
// can name itself (process), "|boot|pidns|pid|start" after it, so that a
// relay on the same machine and PID namespace can tell that the run's
// process has ended (ended).
func holderKey(host string, pid int, random string, p process) string {
	k := fmt.Sprintf("%s:%d:%s", host, pid, random)
	if p.boot != "" {
		k += fmt.Sprintf("|%s|%d|%d|%d", p.boot, p.pidNS, p.pid, p.start)
	}
	return k
}

// holderProcess is the process a row key names (the zero value: none).
func holderProcess(key string) process {
	f := strings.Split(key, "|")
	if len(f) != 5 || f[1] == "" {
		return process{}
	}
	ns, err1 := strconv.ParseUint(f[2], 10, 64)
	pid, err2 := strconv.Atoi(f[3])
	start, err3 := strconv.ParseUint(f[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return process{}
	}
	return process{boot: f[1], pidNS: ns, pid: pid, start: start}
}
