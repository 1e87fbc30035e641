package writerlease

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// process names one process so that another process on the same machine
// and in the same PID namespace can tell for certain that it has ended:
// the boot (boot_id), the PID namespace (its nsfs inode), the PID and the
// process's start time (clock ticks after boot, /proc/<pid>/stat field 22).
// The zero value names nothing.
type process struct {
	boot  string
	pidNS uint64
	pid   int
	start uint64
}

// self names this process, or the zero value if /proc does not show it
// consistently (not Linux, /proc of another PID namespace, not mounted).
func self() process {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return process{}
	}
	ns, err := pidNamespace()
	if err != nil {
		return process{}
	}
	pid := os.Getpid()
	statPID, _, start, err := stat("self")
	if err != nil || statPID != pid {
		return process{}
	}
	return process{boot: strings.TrimSpace(string(boot)), pidNS: ns, pid: pid, start: start}
}

// ended reports whether p has certainly ended, as seen from this process
// (here, this process's own identity): only when both run in the same boot
// and PID namespace, and p's PID names no process (kill(pid, 0): ESRCH), a
// zombie with no thread left (it runs no more code), or a process started
// at another time (the PID was reused). Any doubt (another machine or namespace, /proc
// unreadable, hidden by hidepid, no permission) is false: p may be alive.
func (here process) ended(p process) bool {
	if here.boot == "" || p.boot == "" || p.boot != here.boot || p.pidNS != here.pidNS || p.pid <= 0 {
		return false
	}
	// The PID namespace's inode names one namespace among those alive; if
	// p's namespace ended and ours reuses its inode, p has ended too, and
	// every answer below is on the safe side or right.
	if err := syscall.Kill(p.pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	pid, state, start, err := stat(strconv.Itoa(p.pid))
	if err != nil || pid != p.pid {
		return false
	}
	if start != p.start {
		return true // the PID names a later process
	}
	// A zombie has ended, unless its leader thread alone exited while
	// others run (its status then counts them).
	return (state == "Z" || state == "X") && threads(p.pid) == 1
}

// threads is the thread count in /proc/<pid>/status (0: unknown).
func threads(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0
			}
			return n
		}
	}
	return 0
}

func pidNamespace() (uint64, error) {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return 0, err
	}
	var ino uint64
	if _, err := fmt.Sscanf(link, "pid:[%d]", &ino); err != nil {
		return 0, fmt.Errorf("pid namespace %q: %w", link, err)
	}
	return ino, nil
}

// stat reads /proc/<which>/stat: the PID, the state and the start time.
func stat(which string) (pid int, state string, start uint64, err error) {
	b, err := os.ReadFile("/proc/" + which + "/stat")
	if err != nil {
		return 0, "", 0, err
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 1 || closing < open {
		return 0, "", 0, fmt.Errorf("/proc/%s/stat: unexpected %q", which, s)
	}
	if pid, err = strconv.Atoi(strings.TrimSpace(s[:open])); err != nil {
		return 0, "", 0, err
	}
	// After the command: field 3 (state) on; the start time is field 22.
	f := strings.Fields(s[closing+1:])
	if len(f) < 20 {
		return 0, "", 0, fmt.Errorf("/proc/%s/stat: %d fields", which, len(f)+2)
	}
	if start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return 0, "", 0, err
	}
	return pid, f[0], start, nil
}
