package devnode

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nbd-wtf/go-nostr"
	"github.com/stretchr/testify/require"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/internal/storerules"
	"github.com/kukuri/communitynode/internal/testkit"
	"github.com/kukuri/communitynode/schema"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestRunMigratesAndStopsOnCancel(t *testing.T) {
	url := pgtest.EmptyDatabase(t)
	keyFile := filepath.Join(t.TempDir(), "node.key")
	blobs := filepath.Join(t.TempDir(), "blobs")
	var out testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{DatabaseURL: url, Out: &out, RelayListen: "127.0.0.1:0", RelayMetricsListen: "127.0.0.1:0", IndexerListen: "127.0.0.1:0",
			ModeratorListen: "127.0.0.1:0", TrustListen: "127.0.0.1:0", DashboardListen: "127.0.0.1:0", NodeKeyFile: keyFile,
			NATSListen: "127.0.0.1:0", BridgeListen: "127.0.0.1:0", BlossomDir: blobs})
	}()
	require.Eventually(t, func() bool { return bytes.Contains([]byte(out.String()), []byte("node is up")) },
		30*time.Second, 20*time.Millisecond)
	require.Contains(t, out.String(), "applied migration 0001_outbox_foundation")
	require.Contains(t, out.String(), "created the node key "+keyFile)
	require.Contains(t, out.String(), "moderator: http://")
	require.Contains(t, out.String(), "trust: http://")
	require.Contains(t, out.String(), "dashboard: http://")
	require.Regexp(t, `group: "Community" community \(created; NIP-29 id 127\.0\.0\.1:0'community\) naddr1`, out.String())
	require.Contains(t, out.String(), "console: http://", "make run prints the console's URL")
	require.Regexp(t, `blossom: http://127\.0\.0\.1:\d+/upload \(media for members.*blobs in `+regexp.QuoteMeta(blobs), out.String(), "make run prints Blossom's URL")
	require.DirExists(t, filepath.Join(blobs, "tmp"))
	require.Contains(t, out.String(), "topic policy: posts need a t tag", "the URLs are followed by the topic policy a client author must know")

	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), "SELECT count(*) FROM cn_meta.schema_migrations").Scan(&n))
	all, err := schema.Migrations()
	require.NoError(t, err)
	require.Equal(t, len(all), n, "every migration applied")

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("dev node did not stop")
	}
}

func TestOptionsValidate(t *testing.T) {
	require.Error(t, Options{}.Validate())
	require.Error(t, Options{DataDir: "x", NATSListen: "nope"}.Validate())
	require.Error(t, Options{DataDir: "x", Port: 70000}.Validate())
	require.NoError(t, Options{DataDir: "x"}.Validate())
}

// TestEveryDevOptionReachesADaemon sets each Options field in turn and
// checks that the daemons' options change: a field that no daemon receives (as
// --admin-pubkeys and --dashboard-listen once were) fails here.
func TestEveryDevOptionReachesADaemon(t *testing.T) {
	t.Parallel()
	key, err := nodekey.Generate(filepath.Join(t.TempDir(), "node.key"))
	require.NoError(t, err)
	pk := strings.Repeat("ab", 32)
	singleCommunity := storerules.Default()
	singleCommunity.DefaultTopic = "general"
	samples := map[string]any{
		"RelayListen":        "127.0.0.1:1",
		"RelayMetricsListen": "127.0.0.1:6",
		"RelayPublicURLs":    []string{"wss://dev.example.org"},
		"IndexerListen":      "127.0.0.1:2",
		"ModeratorListen":    "127.0.0.1:3",
		"TrustListen":        "127.0.0.1:4",
		"DashboardListen":    "127.0.0.1:5",
		"AdminPubkeys":       []string{pk},
		"Seeds":              []string{pk},
		"Rules":              &singleCommunity,
		"Membership":         membership.InviteOnly,
		"NATSURL":            "nats://elsewhere:4222",
		"BridgeListen":       "127.0.0.1:7",
		"NoBridge":           true,
		"BlossomDir":         "/tmp/elsewhere/blobs",
	}
	// Run itself consumes these before it builds the daemons.
	consumedByRun := map[string]bool{"DatabaseURL": true, "DataDir": true, "Port": true, "NodeKeyFile": true, "Logger": true, "Out": true, "Reload": true,
		"NATSListen": true} // the embedded NATS server's address: the bridge gets the server's URL once it runs
	strip := func(d daemons) daemons {
		d.relay.Logger, d.indexer.Logger, d.moderator.Logger, d.trust.Logger = nil, nil, nil, nil
		if d.bridge != nil {
			b := *d.bridge
			b.Logger = nil
			d.bridge = &b
		}
		return d
	}
	base, err := build(Options{}, "postgres://x", key)
	require.NoError(t, err)
	fields := reflect.TypeFor[Options]()
	for i := range fields.NumField() {
		name := fields.Field(i).Name
		if consumedByRun[name] {
			continue
		}
		sample, ok := samples[name]
		require.True(t, ok, "Options.%s: add a sample value here (and make sure a daemon receives it)", name)
		var cfg Options
		reflect.ValueOf(&cfg).Elem().Field(i).Set(reflect.ValueOf(sample))
		got, err := build(cfg, "postgres://x", key)
		require.NoError(t, err, name)
		require.NotEqual(t, strip(base), strip(got), "Options.%s reaches no daemon", name)
	}
}

// TestDevPublishesToItsEmbeddedJetStream: the dev node starts an embedded NATS
// server with JetStream and the bridge; an event the node stores is read from
// the stream, by a NATS client of its own, at the URL and on the stream the
// node printed, and the bridge is a registered consumer (cnctl status lists it).
func TestDevPublishesToItsEmbeddedJetStream(t *testing.T) {
	url := pgtest.EmptyDatabase(t)
	var out testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{DatabaseURL: url, DataDir: filepath.Join(t.TempDir(), "pg"), Out: &out,
			RelayListen: "127.0.0.1:0", RelayMetricsListen: "127.0.0.1:0", IndexerListen: "127.0.0.1:0", ModeratorListen: "127.0.0.1:0",
			TrustListen: "127.0.0.1:0", DashboardListen: "127.0.0.1:0", BridgeListen: "127.0.0.1:0", NATSListen: "127.0.0.1:0",
			NodeKeyFile: filepath.Join(t.TempDir(), "node.key")})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("dev node did not stop")
		}
		require.Contains(t, out.String(), "embedded nats-server stopped")
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "node is up") }, 30*time.Second, 20*time.Millisecond)
	natsURL := regexp.MustCompile(`(?m)^nats: (nats://127\.0\.0\.1:\d+) \(embedded nats-server .* with JetStream, store in (.*)\)$`).FindStringSubmatch(out.String())
	require.NotNil(t, natsURL, "the NATS URL is printed:\n%s", out.String())
	require.Contains(t, out.String(), "bridge: stream "+node.DefaultBridgeStream+" on "+natsURL[1]+", subjects "+node.DefaultBridgeSubjectPrefix+".<topic token> (consumer bridge-v1")

	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	defer pool.Close()
	st := testkit.NewStore(pool)
	ev := &nostr.Event{Kind: 1, CreatedAt: nostr.Now(), Content: "hello dev stream", Tags: nostr.Tags{{"t", "dev"}}}
	require.NoError(t, ev.Sign(nostr.GeneratePrivateKey()))
	res, err := st.Ingest(context.Background(), []*nostr.Event{ev})
	require.NoError(t, err)
	require.True(t, res[0].OK, res[0].Message)

	nc, err := nats.Connect(natsURL[1])
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	var msg *jetstream.RawStreamMsg
	require.Eventually(t, func() bool {
		s, err := js.Stream(rctx, node.DefaultBridgeStream)
		if err != nil {
			return false
		}
		msg, err = s.GetLastMsgForSubject(rctx, node.DefaultBridgeSubjectPrefix+".dev")
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the event reaches the stream")
	var seq int64
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT seq FROM cn_relay.events_outbox WHERE event_id = $1", ev.ID).Scan(&seq))
	require.Equal(t, strconv.FormatInt(seq, 10), msg.Header.Get(jetstream.MsgIDHeader), "message id = outbox seq")
	var got nostr.Event
	require.NoError(t, json.Unmarshal(msg.Data, &got))
	require.Equal(t, ev.ID, got.ID)
	ok, err := got.CheckSignature()
	require.NoError(t, err)
	require.True(t, ok, "the payload is the signed event")

	var registered bool
	require.NoError(t, pool.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM cn_relay.consumer_offsets WHERE consumer = 'bridge-v1')").Scan(&registered))
	require.True(t, registered, "the bridge is a registered consumer (cnctl status and the status page list it)")
}
