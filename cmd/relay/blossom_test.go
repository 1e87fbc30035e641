package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/platform/ratelimit"
)

// TestBlossomFlags: Blossom is off without --blossom-dir; its flags reach the
// relay's options; bad values are refused.
func TestBlossomFlags(t *testing.T) {
	run := func(args ...string) (node.RelayOptions, error) {
		app := newApp(io.Discard, io.Discard)
		var got node.RelayOptions
		app.Action = func(c *cli.Context) error {
			var err error
			got, err = relayOptions(c)
			return err
		}
		err := app.RunContext(context.Background(), append([]string{"relay", "--database-url", "postgres://x"}, args...))
		return got, err
	}
	got, err := run()
	require.NoError(t, err)
	require.Nil(t, got.Blossom, "off by default")

	t.Setenv("CN_RELAY_BLOSSOM_QUOTA_BLOBS", "7")
	got, err = run("--blossom-dir", "/srv/blobs", "--blossom-listen", "127.0.0.1:1", "--blossom-url", "https://media.example",
		"--blossom-max-blob-bytes", "10", "--blossom-quota-bytes", "-1", "--blossom-upload-timeout", "1m", "--blossom-types", "image/*,Application/PDF",
		"--blossom-upload-rate-ip", "0", "--blossom-request-rate-ip", "2.5", "--blossom-request-burst-ip", "9", "--blossom-mirror-private")
	require.NoError(t, err)
	require.Equal(t, &node.BlossomOptions{Dir: "/srv/blobs", Listen: "127.0.0.1:1", PublicURL: "https://media.example",
		MaxBlobBytes: 10, QuotaBytes: -1, QuotaBlobs: 7, UploadTimeout: time.Minute, Types: []string{"image/*", "application/pdf"},
		UploadRatePerIP:  ratelimit.Rate{PerSecond: -1, Burst: node.DefaultBlossomUploadRatePerIP.Burst},
		RequestRatePerIP: ratelimit.Rate{PerSecond: 2.5, Burst: 9}, MirrorPrivate: true}, got.Blossom)
	got, err = run("--blossom-dir", "/b")
	require.NoError(t, err)
	require.Equal(t, node.DefaultBlossomUploadRatePerIP, got.Blossom.UploadRatePerIP, "per-address limits are on by default")
	require.Equal(t, node.DefaultBlossomRequestRatePerIP, got.Blossom.RequestRatePerIP)
	require.False(t, got.Blossom.MirrorPrivate, "mirrors fetch from public addresses only by default")

	for _, bad := range [][]string{
		{"--blossom-listen", "127.0.0.1:1"},
		{"--blossom-dir", "/b", "--blossom-max-blob-bytes", "0"},
		{"--blossom-dir", "/b", "--blossom-quota-bytes", "0"},
		{"--blossom-dir", "/b", "--blossom-types", "images"},
		{"--blossom-dir", "/b", "--blossom-upload-rate-ip", "-1"},
		{"--blossom-dir", "/b", "--blossom-request-burst-ip", "0"},
	} {
		_, err := run(bad...)
		require.Error(t, err, bad)
	}
}
