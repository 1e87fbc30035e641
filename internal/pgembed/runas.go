package pgembed

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// account is the OS account that runs initdb, pg_ctl and postgres.
type account struct {
	name     string
	uid, gid uint32
	switchTo bool // true when running as root: switch to uid/gid for every command
}

// runAsAccount returns the current user, or for root the "postgres" account
// (else "nobody"), since PostgreSQL refuses to run as root.
func runAsAccount() (account, error) {
	if os.Geteuid() != 0 {
		a := account{name: "uid " + strconv.Itoa(os.Geteuid()), uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}
		if u, err := user.Current(); err == nil {
			a.name = u.Username
		}
		return a, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return account{name: name, uid: uint32(uid), gid: uint32(gid), switchTo: true}, nil
	}
	return account{}, fmt.Errorf("running as root, but neither a %q nor a %q account exists to run PostgreSQL as", "postgres", "nobody")
}

// command builds a command that runs as the account, in dir, with PG*
// environment variables removed so they cannot redirect the tools.
func (a account) command(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if a.switchTo {
		// Groups is empty, so supplementary groups are dropped.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid}}
	}
	return cmd
}

// chown gives path (and everything below it if recursive) to the account.
// It does nothing unless we switch accounts.
func (a account) chown(path string, recursive bool) error {
	if !a.switchTo {
		return nil
	}
	if !recursive {
		if err := os.Lchown(path, int(a.uid), int(a.gid)); err != nil {
			return fmt.Errorf("chown %s to %s: %w", path, a.name, err)
		}
		return nil
	}
	return filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, int(a.uid), int(a.gid)); err != nil {
			return fmt.Errorf("chown %s to %s: %w", p, a.name, err)
		}
		return nil
	})
}

// checkTraverse verifies that the account can search every directory from
// / down to dir. Supplementary groups are dropped when switching, so only
// owner, primary group and other bits count.
func (a account) checkTraverse(dir string) error {
	if !a.switchTo {
		return nil
	}
	for p := dir; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", p, err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		var bit fs.FileMode = 0o001
		switch {
		case st.Uid == a.uid:
			bit = 0o100
		case st.Gid == a.gid:
			bit = 0o010
		}
		if fi.Mode().Perm()&bit == 0 {
			return fmt.Errorf("account %q (PostgreSQL cannot run as root) cannot traverse %s (mode %v, owner uid %d) on the way to %s; use a directory outside it or chmod o+x it",
				a.name, p, fi.Mode().Perm(), st.Uid, dir)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}
