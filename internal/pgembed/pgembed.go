package pgembed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// superuser is the cluster's superuser role (initdb -U).
const superuser = "postgres"

// confName is our settings file inside DataDir, included from postgresql.conf
// and rewritten on every start.
const confName = "pgembed.conf"

const includeLine = "include_if_exists = '" + confName + "'"

// Config says where the server keeps its data and how it listens.
type Config struct {
	DataDir   string       // required; created if missing; reused across runs if it already holds a cluster (PG_VERSION present)
	Port      int          // 0 = pick a free TCP port on 127.0.0.1 (a reused DataDir keeps its last port if still free)
	BinDir    string       // optional; directory holding initdb/pg_ctl/postgres; empty = discover
	Ephemeral bool         // test mode: fsync=off, synchronous_commit=off, full_page_writes=off, initdb --no-sync
	Logger    *slog.Logger // may be nil (then discard)
	// Settings are extra postgresql.conf lines ("name = value"), written with
	// the others on every start (e.g. a standby's recovery_min_apply_delay).
	Settings []string
}

// Server is a running PostgreSQL server started by Start.
type Server struct {
	dataDir string
	binDir  string
	port    int
	acct    account
	log     *slog.Logger

	mu      sync.Mutex
	stopped bool
}

// Start initialises cfg.DataDir if needed and starts a server on it. It
// returns once a connection to the "postgres" database succeeds.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("pgembed: Config.DataDir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("pgembed: data dir: %w", err)
	}
	binDir := cfg.BinDir
	if binDir == "" {
		if binDir, err = discoverBinDir(ctx, log); err != nil {
			return nil, fmt.Errorf("pgembed: %w", err)
		}
	} else if !hasTools(binDir) {
		return nil, fmt.Errorf("pgembed: BinDir %s does not contain initdb, pg_ctl and postgres", binDir)
	}
	acct, err := runAsAccount()
	if err != nil {
		return nil, fmt.Errorf("pgembed: %w", err)
	}
	s := &Server{dataDir: dataDir, binDir: binDir, acct: acct, log: log}
	if err := s.start(ctx, cfg); err != nil {
		return nil, fmt.Errorf("pgembed: start server in %s: %w", dataDir, err)
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, cfg Config) error {
	if err := os.MkdirAll(filepath.Dir(s.dataDir), 0o755); err != nil {
		return fmt.Errorf("create parent dir: %w", err)
	}
	for _, dir := range []string{filepath.Dir(s.dataDir), s.binDir} {
		if err := s.acct.checkTraverse(dir); err != nil {
			return err
		}
	}
	_, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION"))
	fresh := errors.Is(err, os.ErrNotExist)
	if !fresh && err != nil {
		return fmt.Errorf("check for existing cluster: %w", err)
	}
	if fresh {
		if err := os.MkdirAll(s.dataDir, 0o700); err != nil {
			return fmt.Errorf("create data dir: %w", err)
		}
	}
	if err := s.acct.chown(s.dataDir, fresh); err != nil {
		return err
	}
	if pid := runningPid(s.dataDir); pid != 0 {
		return fmt.Errorf("data directory %s is in use by pid %d", s.dataDir, pid)
	}

	if fresh {
		if err := s.initdb(ctx, cfg.Ephemeral); err != nil {
			return err
		}
	}
	s.port = cfg.Port
	if s.port == 0 {
		if old := recordedPort(s.dataDir); old != 0 && !fresh && portFree(old) {
			s.port = old
		} else if s.port, err = freePort(); err != nil {
			return err
		}
	}
	if err := s.writeConf(cfg.Ephemeral, cfg.Settings); err != nil {
		return err
	}

	logFile := s.logPath()
	if _, err := os.Stat(logFile); err == nil {
		if err := s.acct.chown(logFile, false); err != nil {
			return err
		}
	}
	s.log.Info("starting embedded postgres", "datadir", s.dataDir, "port", s.port,
		"bindir", s.binDir, "account", s.acct.name, "reused", !fresh)
	out, err := s.pgctl(ctx, "start", "-w", "-t", "60", "-l", logFile)
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s%s", err, out, s.logTail())
	}
	if err := waitReady(ctx, s.URL("postgres")); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = s.pgctl(stopCtx, "stop", "-m", "immediate", "-w")
		return fmt.Errorf("%w%s", err, s.logTail())
	}
	return nil
}

func (s *Server) initdb(ctx context.Context, ephemeral bool) error {
	args := []string{"-D", s.dataDir, "-U", superuser, "--auth=trust", "--encoding=UTF8", "--locale=C"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	s.log.Info("initialising database cluster", "datadir", s.dataDir, "account", s.acct.name)
	out, err := s.acct.command(ctx, s.dataDir, filepath.Join(s.binDir, "initdb"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, lastLines(out, 20))
	}
	return nil
}

// writeConf writes our settings file and makes postgresql.conf include it.
func (s *Server) writeConf(ephemeral bool, settings []string) error {
	conf := fmt.Sprintf(`# Written by pgembed on every start; edits are overwritten.
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = ''
max_connections = 200
shared_buffers = '128MB'
`, s.port)
	if ephemeral {
		conf += "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n"
	}
	for _, line := range settings {
		conf += line + "\n"
	}
	path := filepath.Join(s.dataDir, confName)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := s.acct.chown(path, false); err != nil {
		return err
	}
	main := filepath.Join(s.dataDir, "postgresql.conf")
	b, err := os.ReadFile(main)
	if err != nil {
		return fmt.Errorf("read postgresql.conf: %w", err)
	}
	if bytes.Contains(b, []byte(includeLine)) {
		return nil
	}
	f, err := os.OpenFile(main, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("open postgresql.conf: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n%s\n", includeLine)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("append to postgresql.conf: %w", err)
	}
	return nil
}

func (s *Server) pgctl(ctx context.Context, args ...string) ([]byte, error) {
	args = append(args, "-D", s.dataDir)
	return s.acct.command(ctx, s.dataDir, filepath.Join(s.binDir, "pg_ctl"), args...).CombinedOutput()
}

func (s *Server) logPath() string { return filepath.Join(s.dataDir, "server.log") }

// logTail returns the last lines of the server log, formatted for an error.
func (s *Server) logTail() string {
	f, err := os.Open(s.logPath())
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 16<<10 {
		_, _ = f.Seek(-16<<10, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return "\nserver log " + s.logPath() + ":\n" + lastLines(b, 20)
}

// BaseBackup copies the running server into dataDir, which must not exist
// or be empty, as a streaming standby's data directory (pg_basebackup -R:
// standby.signal and primary_conninfo pointing at this server). Start on
// dataDir then runs the standby: a hot standby that replays this server's
// WAL, read-only. dataDir's parent must be traversable by the run-as account
// (see Root in the package doc).
func (s *Server) BaseBackup(ctx context.Context, dataDir string) error {
	dataDir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("pgembed: data dir: %w", err)
	}
	if err := s.acct.checkTraverse(filepath.Dir(dataDir)); err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("pgembed: create standby data dir: %w", err)
	}
	if err := s.acct.chown(dataDir, false); err != nil {
		return err
	}
	out, err := s.acct.command(ctx, dataDir, filepath.Join(s.binDir, "pg_basebackup"), "-D", dataDir, "-R", "-X", "stream",
		"-c", "fast", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", superuser).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgembed: pg_basebackup: %w\n%s", err, lastLines(out, 20))
	}
	return nil
}

// URL returns a connection URL for dbname as the superuser (no password).
func (s *Server) URL(dbname string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, url.PathEscape(dbname))
}

// Port returns the TCP port the server listens on at 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down (pg_ctl stop -m fast). Calling it again is a no-op.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.log.Info("stopping embedded postgres", "datadir", s.dataDir, "port", s.port)
	out, err := s.pgctl(ctx, "stop", "-m", "fast", "-w", "-t", "60")
	if err != nil && runningPid(s.dataDir) != 0 {
		return fmt.Errorf("pgembed: pg_ctl stop: %w\n%s%s", err, out, s.logTail())
	}
	s.stopped = true
	return nil
}

// Crash stops the server as a crash would (pg_ctl stop -m immediate: every
// server process exits at once, with no checkpoint and no WAL written past
// what was already written), for tests of what survives a crash. Start on the
// same DataDir then runs crash recovery. Calling Stop or Crash afterwards is a
// no-op.
func (s *Server) Crash(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return nil
	}
	s.log.Info("crashing embedded postgres", "datadir", s.dataDir, "port", s.port)
	out, err := s.pgctl(ctx, "stop", "-m", "immediate", "-w", "-t", "60")
	if err != nil && runningPid(s.dataDir) != 0 {
		return fmt.Errorf("pgembed: pg_ctl stop -m immediate: %w\n%s%s", err, out, s.logTail())
	}
	s.stopped = true
	return nil
}

// Promote ends a standby's recovery (pg_ctl promote -w): it then accepts
// writes as a primary.
func (s *Server) Promote(ctx context.Context) error {
	out, err := s.pgctl(ctx, "promote", "-w", "-t", "60")
	if err != nil {
		return fmt.Errorf("pgembed: pg_ctl promote: %w\n%s%s", err, out, s.logTail())
	}
	return nil
}

// waitReady polls until a pgx connection succeeds, bounded by ctx and 60s.
func waitReady(ctx context.Context, connURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, connURL)
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for server to accept connections: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runningPid returns the pid in DataDir/postmaster.pid if that process is
// alive, else 0 (no or stale pid file).
func runningPid(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		return pid
	}
	return 0
}

var portRE = regexp.MustCompile(`(?m)^port = (\d+)$`)

// recordedPort returns the port written to our settings file last time, or 0.
func recordedPort(dataDir string) int {
	b, err := os.ReadFile(filepath.Join(dataDir, confName))
	if err != nil {
		return 0
	}
	m := portRE.FindSubmatch(b)
	if m == nil {
		return 0
	}
	port, _ := strconv.Atoi(string(m[1]))
	return port
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
