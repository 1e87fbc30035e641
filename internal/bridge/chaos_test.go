package bridge

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/testkit"
)

// TestChaos runs cmd/bridge as real processes on a seeded schedule (a killed
// bridge keeps its lease for 5 s, so the next one may start as a standby): each round
// starts a bridge, ingests events (deletions, several topics, profiles),
// SIGKILLs it at a random point, and in some rounds stops the NATS server for
// longer than the stream's duplicate window (1 s) while events arrive, then
// restarts it on its store. 10,000 events in 6 rounds (make test-long; about a
// minute); 2,000 in 2 rounds with -short (make test). Afterwards the stream's
// message ids equal the outbox's seqs, each once, in order.
func TestChaos(t *testing.T) {
	const seed = 2211
	events, rounds := 10_000, 6
	if testing.Short() {
		events, rounds = 2_000, 2
	}
	bin := filepath.Join(t.TempDir(), "bridge")
	build := exec.Command("go", "build", "-o", bin, "github.com/kukuri/communitynode/cmd/bridge")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())

	ctx := context.Background()
	db := pgtest.New(t)
	ns := startNATS(t)
	cfg := testConfig()
	// The stream exists before the first bridge, with a 1 s duplicate window;
	// the bridge uses an existing stream as it is.
	js, err := jetstream.New(connect(t, ns.url()))
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.Stream, Subjects: []string{cfg.SubjectPrefix + ".>"},
		Storage: jetstream.FileStorage, Duplicates: cfg.DuplicateWindow})
	require.NoError(t, err)

	logs, err := os.Create(filepath.Join(t.TempDir(), "bridge.log"))
	require.NoError(t, err)
	defer func() {
		if t.Failed() {
			data, _ := os.ReadFile(logs.Name())
			t.Logf("bridge logs:\n%s", data)
		}
	}()
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "--database-url", db.URL, "--nats-url", ns.url(), "--stream", cfg.Stream,
			"--subject-prefix", cfg.SubjectPrefix, "--listen", "127.0.0.1:0", "--batch-size", "200", "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = logs, logs
		require.NoError(t, cmd.Start())
		// Killed as the test ends too, so a failed round leaves no bridge
		// holding the test database's connections.
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		})
		return cmd
	}
	kill := func(cmd *exec.Cmd) {
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
	}

	rng := rand.New(rand.NewPCG(seed, 0))
	st := newStore(db)
	per := events / rounds
	for round := range rounds {
		p := start()
		ingest(t, st, rng, per/2)
		if rng.IntN(2) == 0 { // NATS down past the duplicate window while events arrive
			ns.stop()
			ingest(t, st, rng, per-per/2)
			time.Sleep(cfg.DuplicateWindow + 200*time.Millisecond) // time passing, not synchronisation
			ns.start()
		} else {
			ingest(t, st, rng, per-per/2)
		}
		// Kill it at a random point: after it has published a random part of
		// what is pending (or at once).
		target := offset(t, db.Pool) + int64(rng.IntN(per))
		deadline := time.Now().Add(time.Duration(rng.IntN(6000)) * time.Millisecond)
		for offset(t, db.Pool) < target && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // polling the offset
		}
		kill(p)
		t.Logf("round %d: killed at offset %d (stream ends at %d)", round, offset(t, db.Pool), streamLastID(t, ns.url(), cfg))
	}
	ingest(t, st, rng, events-rounds*per)
	p := start()
	defer kill(p)
	testkit.WaitCaughtUp(t, db.Pool, ConsumerName)
	requireStreamEqualsOutbox(t, db.Pool, ns.url(), cfg)
}
