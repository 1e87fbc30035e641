package main

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/console"
	"github.com/kukuri/communitynode/internal/dashboard"
	"github.com/kukuri/communitynode/internal/node"
)

type dashboardOpts struct {
	listen, token, relayURL string
	relayMetrics            []string
}

// Validate refuses to serve the page off loopback without a token.
func (o dashboardOpts) Validate() error { return dashboard.CheckExposure(o.listen, o.token) }

func dashboardCommand() *cli.Command {
	return command[dashboardOpts]{
		Name:  "dashboard",
		Usage: "serve the live status page (read-only): outbox, consumers, relays",
		DB:    true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Value: node.DefaultDashboardListen, EnvVars: []string{"CN_DASHBOARD_LISTEN"}, Usage: "address of the page; a non-loopback address needs --token-file"},
			&cli.StringSliceFlag{Name: "relay-metrics", EnvVars: []string{"CN_DASHBOARD_RELAY_METRICS"}, Usage: "a relay's /metrics URL (repeatable)"},
			&cli.StringFlag{Name: "relay-url", EnvVars: []string{"CN_DASHBOARD_RELAY_URL"}, Usage: "the relay's ws:// or wss:// URL as admins' browsers reach it: serves the console (/console/) that signs and sends admins' changes there"},
			&cli.StringFlag{Name: "token-file", EnvVars: []string{"CN_DASHBOARD_TOKEN_FILE"}, Usage: "file holding a bearer token the page and API then require (mode 600: a file group or others can read is refused)"},
		},
		Options: func(c *cli.Context) (dashboardOpts, error) {
			o := dashboardOpts{listen: c.String("listen"), relayMetrics: c.StringSlice("relay-metrics"), relayURL: c.String("relay-url")}
			if u := o.relayURL; u != "" && !strings.HasPrefix(u, "ws://") && !strings.HasPrefix(u, "wss://") {
				return o, fmt.Errorf("--relay-url %q: want a ws:// or wss:// URL", u)
			}
			if f := c.String("token-file"); f != "" {
				t, err := dashboard.ReadToken(f)
				if err != nil {
					return o, err
				}
				o.token = t
			}
			return o, nil
		},
		Run: func(ctx context.Context, e env, o dashboardOpts) error {
			ln, err := net.Listen("tcp", o.listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.Out, "dashboard: http://%s/ (read-only)\n", ln.Addr())
			cfg := dashboard.Config{Pool: e.Pool, RelayMetrics: o.relayMetrics, Listen: ln.Addr().String()}
			if o.relayURL != "" {
				cfg.Console = console.New(console.Config{Pool: e.Pool, RelayURL: o.relayURL, Logger: e.Logger}).Handler("/console/")
				fmt.Fprintf(e.Out, "console: http://%s/console/ (changes are signed in the browser and checked by %s)\n", ln.Addr(), o.relayURL)
			}
			d := dashboard.New(cfg)
			return dashboard.Serve(ctx, ln, d, o.token)
		},
	}.build()
}
