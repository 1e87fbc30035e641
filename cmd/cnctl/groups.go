package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/groups"
)

type groupShowOpts struct{ id string }

type groupRebuildOpts struct{ write bool }

func groupsCommand() *cli.Command {
	return group("groups", "NIP-29 relay-based groups: their state as the relay keeps it (cn_relay.groups) and as the stored events make it",
		command[struct{}]{
			Name:  "list",
			Usage: "list the groups: members, pending join requests, flags",
			DB:    true,
			Run: func(ctx context.Context, e env, _ struct{}) error {
				live, err := groups.Live(ctx, e.Pool)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tMEMBERS\tPENDING\tFLAGS")
				for _, id := range slices.Sorted(maps.Keys(live)) {
					s := live[id]
					fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\n", id, s.Meta.Name, len(s.MemberList()), len(s.PendingUsers()), flags(s))
				}
				return w.Flush()
			},
		}.build(),
		command[groupShowOpts]{
			Name:      "show",
			Usage:     "show one group: metadata, members and their roles, pending join requests, invite codes",
			ArgsUsage: "<group id>",
			DB:        true,
			Options:   oneGroupArg,
			Run: func(ctx context.Context, e env, o groupShowOpts) error {
				live, err := groups.Live(ctx, e.Pool)
				if err != nil {
					return err
				}
				s := live[o.id]
				if s == nil {
					return fmt.Errorf("no group %q", o.id)
				}
				w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(w, "id\t%s\nname\t%s\nabout\t%s\npicture\t%s\nflags\t%s\ncreated\t%d by %s\n",
					s.ID, s.Meta.Name, s.Meta.About, s.Meta.Picture, flags(s), s.Created.At, s.Creator)
				if !s.Meta.AllKinds {
					fmt.Fprintf(w, "supported kinds\t%v\n", s.Meta.Kinds)
				}
				for _, pk := range s.MemberList() {
					fmt.Fprintf(w, "member\t%s\t%s\n", pk, strings.Join(s.RolesOf(pk), ","))
				}
				for _, pk := range s.PendingUsers() {
					fmt.Fprintf(w, "pending\t%s\tsince %d\n", pk, s.Requests[pk].At)
				}
				for _, code := range slices.Sorted(maps.Keys(s.Invites)) {
					inv := s.Invites[code]
					fmt.Fprintf(w, "invite\t%s\tcreated %d", code, inv.Stamp.At)
					if inv.Expires != 0 {
						fmt.Fprintf(w, ", expires %d", inv.Expires)
					}
					fmt.Fprintln(w)
				}
				return w.Flush()
			},
		}.build(),
		command[groupShowOpts]{
			Name:      "members",
			Usage:     "list one group's members with their roles, its pending join requests, and how many invite codes it has",
			ArgsUsage: "<group id>",
			Description: "One line per member (status member, roles, the created_at of the 9000 that added them) and per pending\n" +
				"join request (status pending, the created_at of the 9021), then a summary line. Invite codes are\n" +
				"counted, not shown (they are secrets; `groups show` prints them). Exit 1 for an unknown group.",
			DB:      true,
			Options: oneGroupArg,
			Run: func(ctx context.Context, e env, o groupShowOpts) error {
				s, err := groups.LiveOne(ctx, e.Pool, o.id)
				if err != nil {
					return err
				}
				if s == nil {
					return fmt.Errorf("no group %q", o.id)
				}
				w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "PUBKEY\tSTATUS\tROLES\tSINCE")
				members, pending := s.MemberList(), s.PendingUsers()
				for _, pk := range members {
					fmt.Fprintf(w, "%s\tmember\t%s\t%d\n", pk, cmp.Or(strings.Join(s.RolesOf(pk), ","), "-"), s.Members[pk].Stamp.At)
				}
				for _, pk := range pending {
					fmt.Fprintf(w, "%s\tpending\t-\t%d\n", pk, s.Requests[pk].At)
				}
				if err := w.Flush(); err != nil {
					return err
				}
				state := ""
				if !s.Deleted.IsZero() {
					state = " (deleted)"
				}
				_, err = fmt.Fprintf(e.Out, "group %s%s: %d members, %d pending join requests, %d invite codes\n",
					s.ID, state, len(members), len(pending), len(s.Invites))
				return err
			},
		}.build(),
		command[groupRebuildOpts]{
			Name:  "rebuild",
			Usage: "recompute every group's state from the stored events and compare it with the live state (exit 1 when they differ, unless --write)",
			Description: "The state of a group is a projection of the group events the relay accepted (cn_relay.events in the group's scope, " +
				"hidden ones included, and cn_relay.group_withheld). --write replaces the live states that differ, holding each group's lock; " +
				"the groups' state events (39000-39003) are not republished: they follow the group's next accepted event.",
			Flags:   []cli.Flag{&cli.BoolFlag{Name: "write", Usage: "replace the live states that differ with the rebuilt ones"}},
			DB:      true,
			Options: func(c *cli.Context) (groupRebuildOpts, error) { return groupRebuildOpts{write: c.Bool("write")}, nil },
			Run: func(ctx context.Context, e env, o groupRebuildOpts) error {
				tx, err := e.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
				if err != nil {
					return err
				}
				defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
				stored, err := groups.Stored(ctx, tx)
				if err != nil {
					return err
				}
				live, err := groups.Live(ctx, tx)
				if err != nil {
					return err
				}
				rebuilt := groups.Project(stored)
				diff := groups.Diff(live, rebuilt)
				fmt.Fprintf(e.Out, "%d groups from %d stored group events; %d differ from the live state\n", len(rebuilt), len(stored), len(diff))
				for _, id := range diff {
					fmt.Fprintf(e.Out, "differs: %s\n", id)
				}
				if len(diff) == 0 {
					return nil
				}
				if !o.write {
					return fmt.Errorf("%d groups differ (run again with --write to replace them)", len(diff))
				}
				// A new transaction: the read one was a snapshot; Replace
				// locks each group, so live batches wait for it.
				if err := tx.Rollback(ctx); err != nil {
					return err
				}
				return pgx.BeginFunc(ctx, e.Pool, func(wtx pgx.Tx) error {
					fix := map[string]*groups.State{}
					for _, id := range diff {
						if s := rebuilt[id]; s != nil {
							fix[id] = s
						}
					}
					if err := groups.Replace(ctx, wtx, fix); err != nil {
						return err
					}
					fmt.Fprintf(e.Out, "replaced %d group states\n", len(fix))
					return nil
				})
			},
		}.build(),
	)
}

// flags lists a group's flags for people.
func flags(s *groups.State) string {
	var out []string
	if !s.Deleted.IsZero() {
		out = append(out, "deleted")
	}
	if s.Meta.Closed {
		out = append(out, "closed")
	}
	if s.Meta.Restricted {
		out = append(out, "restricted")
	}
	if len(out) == 0 {
		return "open"
	}
	return strings.Join(out, ",")
}

// oneGroupArg reads the commands' one argument, a group id.
func oneGroupArg(c *cli.Context) (groupShowOpts, error) {
	if c.NArg() != 1 {
		return groupShowOpts{}, errors.New("name one group id")
	}
	return groupShowOpts{id: c.Args().First()}, nil
}
