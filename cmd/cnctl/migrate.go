package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/schema"
)

func migrateCommand() *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "apply the schema migrations this binary carries (a no-op when up to date), then (re)grant the service roles",
		Flags: []cli.Flag{databaseURLFlag(),
			&cli.BoolFlag{Name: "roles", Value: true, EnvVars: []string{"CN_ROLES"},
				Usage: "create the NOLOGIN service roles and rebuild their grants (needs a superuser or CREATEROLE); --roles=false skips it"},
			&cli.StringFlag{Name: "role-prefix", Value: dbroles.DefaultPrefix, EnvVars: []string{"CN_ROLE_PREFIX"},
				Usage: "prefix of the service role names"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("migrate: unexpected argument %q", c.Args().First())}
			}
			rc := dbroles.Config{Prefix: c.String("role-prefix")}
			if err := rc.Validate(); err != nil {
				return usageError{err}
			}
			conn, err := connect(c)
			if err != nil {
				return err
			}
			defer closeConn(c.Context, conn)
			applied, err := schema.Migrate(c.Context, conn)
			for _, m := range applied {
				fmt.Fprintf(c.App.Writer, "applied %04d_%s\n", m.Version, m.Name)
			}
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(c.App.Writer, "schema is up to date")
			}
			if !c.Bool("roles") {
				return nil
			}
			if err := dbroles.Apply(c.Context, conn, rc); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "roles granted: %s owns the schema; %s\n", rc.Role(dbroles.Operator),
				strings.Join([]string{rc.Role(dbroles.Relay), rc.Role(dbroles.Indexer), rc.Role(dbroles.Moderator),
					rc.Role(dbroles.Trust), rc.Role(dbroles.Dashboard)}, ", "))
			return nil
		},
		Subcommands: []*cli.Command{{
			Name:  "status",
			Usage: "list the migrations and whether each is applied",
			Flags: []cli.Flag{databaseURLFlag()},
			Action: func(c *cli.Context) error {
				conn, err := connect(c)
				if err != nil {
					return err
				}
				defer closeConn(c.Context, conn)
				rows, unknown, err := schema.Status(c.Context, conn)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
				pending := 0
				for _, r := range rows {
					at := "pending"
					if r.AppliedAt != nil {
						at = r.AppliedAt.UTC().Format(time.RFC3339)
					} else {
						pending++
					}
					fmt.Fprintf(tw, "%04d\t%s\t%s\n", r.Version, r.Name, at)
				}
				for _, a := range unknown {
					fmt.Fprintf(tw, "%04d\t%s\t%s (unknown to this binary)\n", a.Version, a.Name, a.AppliedAt.UTC().Format(time.RFC3339))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if pending > 0 {
					fmt.Fprintf(c.App.Writer, "%d pending: run cnctl migrate\n", pending)
				}
				return nil
			},
		}},
	}
}
