package relay

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultConfig().Validate())
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"listen", func(c *Config) { c.Listen = "nope" }, "listen address"},
		{"public url scheme", func(c *Config) { c.PublicURLs = []string{"ftp://relay.example.com"} }, "the scheme must be"},
		{"public url without host", func(c *Config) { c.PublicURLs = []string{"wss://relay.example.com", "wss://"} }, "missing host"},
		{"not loopback, no public url", func(c *Config) { c.Listen = "0.0.0.0:7777" }, "is not loopback and no public URL is set"},
		{"all interfaces, no public url", func(c *Config) { c.Listen = ":7777" }, "is not loopback and no public URL is set"},
		{"batch size", func(c *Config) { c.BatchMaxEvents = 0 }, "batch max events"},
		{"batch delay", func(c *Config) { c.BatchMaxDelay = 0 }, "batch max delay"},
		{"queue", func(c *Config) { c.SendQueueSize = 0 }, "send queue size"},
		{"queue bytes", func(c *Config) { c.SendQueueBytes = 0 }, "send queue bytes"},
		{"queue bytes vs message", func(c *Config) { c.SendQueueBytes = c.Limits.MaxMessageBytes - 1 }, "at least the max message bytes"},
		{"ping vs read", func(c *Config) { c.PingInterval = time.Minute; c.ReadTimeout = time.Minute }, "ping interval"},
		{"rate burst", func(c *Config) { c.EventRatePerIP = Rate{PerSecond: 1} }, "burst must be at least 1"},
		{"auth required but off", func(c *Config) { c.Auth.Enabled, c.Auth.RequiredForWrites = false, true }, "not enabled"},
		{"limits", func(c *Config) { c.Limits.DefaultLimit = c.Limits.MaxLimit + 1 }, "DefaultLimit"},
		{"pubkey", func(c *Config) { c.Info.PubKey = "npub1..." }, "pubkey"},
	}
	for _, tc := range cases {
		cfg := DefaultConfig()
		tc.edit(&cfg)
		err := cfg.Validate()
		require.Error(t, err, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	public := DefaultConfig()
	public.Listen, public.PublicURLs = "0.0.0.0:7777", []string{"wss://relay.example.com", "wss://nostr.example.com"}
	require.NoError(t, public.Validate(), "any address behind configured public URLs")
}
