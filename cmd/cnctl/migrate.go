package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/dbroles"
	"github.com/kukuri/communitynode/schema"
)

type migrateOpts struct {
	roles bool
	rc    dbroles.Config
}

func (o migrateOpts) Validate() error { return o.rc.Validate() }

func migrateCommand() *cli.Command {
	return command[migrateOpts]{
		Name:  "migrate",
		Usage: "apply the schema migrations this binary carries (a no-op when up to date), then (re)grant the service roles",
		DB:    true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "roles", Value: true, EnvVars: []string{"CN_ROLES"},
				Usage: "create the NOLOGIN service roles and rebuild their grants (needs a superuser or CREATEROLE); --roles=false skips it"},
			&cli.StringFlag{Name: "role-prefix", Value: dbroles.DefaultPrefix, EnvVars: []string{"CN_ROLE_PREFIX"},
				Usage: "prefix of the service role names"},
		},
		Options: func(c *cli.Context) (migrateOpts, error) {
			return migrateOpts{roles: c.Bool("roles"), rc: dbroles.Config{Prefix: c.String("role-prefix")}}, nil
		},
		Run:         migrate,
		Subcommands: []*cli.Command{migrateStatusCommand()},
	}.build()
}

// migrate applies the migrations and the roles on one connection of the pool
// (schema.Migrate holds its lock on that session).
func migrate(ctx context.Context, e env, o migrateOpts) error {
	pc, err := e.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer pc.Release()
	conn := pc.Conn()
	applied, err := schema.Migrate(ctx, conn)
	for _, m := range applied {
		fmt.Fprintf(e.Out, "applied %04d_%s\n", m.Version, m.Name)
	}
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintln(e.Out, "schema is up to date")
	}
	if !o.roles {
		return nil
	}
	if err := dbroles.Apply(ctx, conn, o.rc); err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "roles granted: %s owns the schema; %s\n", o.rc.Role(dbroles.Operator),
		strings.Join([]string{o.rc.Role(dbroles.Relay), o.rc.Role(dbroles.Indexer), o.rc.Role(dbroles.Moderator),
			o.rc.Role(dbroles.Trust), o.rc.Role(dbroles.Dashboard)}, ", "))
	return nil
}

func migrateStatusCommand() *cli.Command {
	return command[struct{}]{
		Name:  "status",
		Usage: "list the migrations and whether each is applied",
		DB:    true,
		Run: func(ctx context.Context, e env, _ struct{}) error {
			pc, err := e.Pool.Acquire(ctx)
			if err != nil {
				return fmt.Errorf("connect to database: %w", err)
			}
			defer pc.Release()
			rows, unknown, err := schema.Status(ctx, pc.Conn())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
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
				fmt.Fprintf(e.Out, "%d pending: run cnctl migrate\n", pending)
			}
			return nil
		},
	}.build()
}
