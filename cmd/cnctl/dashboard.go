package main

import (
	"fmt"
	"net"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/dashboard"
)

func dashboardCommand() *cli.Command {
	return &cli.Command{
		Name:  "dashboard",
		Usage: "serve the live status page (read-only): outbox, consumers, relays",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:7790", EnvVars: []string{"CN_DASHBOARD_LISTEN"}, Usage: "address of the page; a non-loopback address needs --token-file"},
			&cli.StringSliceFlag{Name: "relay-metrics", EnvVars: []string{"CN_DASHBOARD_RELAY_METRICS"}, Usage: "a relay's /metrics URL (repeatable)"},
			&cli.StringFlag{Name: "token-file", EnvVars: []string{"CN_DASHBOARD_TOKEN_FILE"}, Usage: "file holding a bearer token the page and API then require"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("dashboard takes no arguments")}
			}
			var token string
			if f := c.String("token-file"); f != "" {
				t, err := dashboard.ReadToken(f)
				if err != nil {
					return usageError{err}
				}
				token = t
			}
			if err := dashboard.CheckExposure(c.String("listen"), token); err != nil {
				return usageError{err}
			}
			pool, err := connectPool(c)
			if err != nil {
				return err
			}
			defer pool.Close()
			ln, err := net.Listen("tcp", c.String("listen"))
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "dashboard: http://%s/ (read-only)\n", ln.Addr())
			d := dashboard.New(dashboard.Config{Pool: pool, RelayMetrics: c.StringSlice("relay-metrics"), Listen: ln.Addr().String()})
			return dashboard.Serve(c.Context, ln, d, token)
		},
	}
}
