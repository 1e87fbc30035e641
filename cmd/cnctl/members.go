package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/membership"
	"github.com/kukuri/communitynode/internal/node"
	"github.com/kukuri/communitynode/internal/nodekey"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/internal/store"
)

// membersOpts is one cnctl members call: the NIP-86 method it runs (the same
// code as the relay's), its params, and how to print the result.
type membersOpts struct {
	method  string
	params  []json.RawMessage
	arg     string
	keyFile string
	json    bool
	write   bool
}

// membersCommand is NIP-43 relay membership for operators (docs/membership.md):
// each subcommand runs the relay's NIP-86 method of the same meaning, logged
// in cn_admin.log with the operator's user@host. Changes are signed by the
// node key (NIP-11 self), as the relay signs them.
func membersCommand() *cli.Command {
	keyFlag := &cli.StringFlag{Name: "node-key-file", Value: nodekey.DefaultFile, EnvVars: []string{"CN_NODE_KEY_FILE"}, Usage: "the node key, which signs the 8000/8001/13534/33534/5 a change publishes"}
	jsonFlag := &cli.BoolFlag{Name: "json", Usage: "print the NIP-86 result as JSON"}
	reasonFlag := &cli.StringFlag{Name: "reason", Usage: "why (recorded)"}
	param := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	onePubkey := func(method string, reason bool) func(c *cli.Context) (membersOpts, error) {
		return func(c *cli.Context) (membersOpts, error) {
			if c.NArg() != 1 {
				return membersOpts{}, errors.New("name one pubkey (hex or npub)")
			}
			pk, err := protocol.ParsePubkey(c.Args().First())
			if err != nil {
				return membersOpts{}, err
			}
			o := membersOpts{method: method, params: []json.RawMessage{param(pk)}, arg: pk, keyFile: c.String("node-key-file")}
			if reason && c.String("reason") != "" {
				o.params = append(o.params, param(c.String("reason")))
			}
			return o, nil
		}
	}
	list := func(name, method, usage string) *cli.Command {
		return command[membersOpts]{
			Name: name, Usage: usage, DB: true, Flags: []cli.Flag{jsonFlag},
			Options: func(c *cli.Context) (membersOpts, error) {
				return membersOpts{method: method, json: c.Bool("json")}, nil
			},
			Run: runMembersList,
		}.build()
	}
	change := func(name, method, usage string, reason bool, extra ...cli.Flag) *cli.Command {
		flags := []cli.Flag{keyFlag}
		if reason {
			flags = append(flags, reasonFlag)
		}
		flags = append(flags, extra...)
		return command[membersOpts]{
			Name: name, Usage: usage, ArgsUsage: "PUBKEY", DB: true, Flags: flags,
			Options: func(c *cli.Context) (membersOpts, error) {
				o, err := onePubkey(method, reason)(c)
				if err == nil && len(c.StringSlice("role")) > 0 { // addmember's [pubkey, reason, roles]
					o.params = append(o.params[:1], param(c.String("reason")), param(c.StringSlice("role")))
				}
				return o, err
			},
			Run: func(ctx context.Context, e env, o membersOpts) error {
				if _, err := runMembers(ctx, e, o); err != nil {
					return err
				}
				fmt.Fprintf(e.Out, "members %s %s: done\n", name, o.arg)
				return nil
			},
		}.build()
	}
	return group("members", "NIP-43 relay membership: members, invite codes, pending join requests (docs/membership.md)",
		list("list", "listmembers", "the NIP-43 members (those the node's kind 13534 lists), with how each joined"),
		list("invites", "listinvites", "invite codes: id, issuer, expiry, state (never the code itself)"),
		list("pending", "listpendingmembers", "join requests waiting for an admin (no invite code, rank below --admit-min-rank)"),
		change("add", "addmember", "make a key a member (publishes 8000 and a new 13534)", true,
			&cli.StringSliceFlag{Name: "role", Usage: "also assign this defined role (repeatable; see members roles)"}),
		change("remove", "removemember", "remove a member (publishes 8001 and a new 13534); their later posts are refused in invite mode", true),
		change("admit", "admitmember", "admit a pending join request", false),
		change("deny", "denymember", "drop a pending join request", true),
		command[membersOpts]{
			Name: "invite", Usage: "mint a single-use invite code (printed once; only its hash is stored)", DB: true,
			Flags: []cli.Flag{keyFlag, jsonFlag, &cli.DurationFlag{Name: "ttl", Value: membership.DefaultInviteTTL, Usage: "how long the code stays valid (at most 720h)"}},
			Options: func(c *cli.Context) (membersOpts, error) {
				ttl := c.Duration("ttl")
				if ttl < time.Second || ttl > membership.MaxInviteTTL {
					return membersOpts{}, fmt.Errorf("--ttl: want 1s to 720h, got %s", ttl)
				}
				return membersOpts{method: "mintinvite", params: []json.RawMessage{param(int64(ttl / time.Second))},
					keyFile: c.String("node-key-file"), json: c.Bool("json")}, nil
			},
			Run: func(ctx context.Context, e env, o membersOpts) error {
				res, err := runMembers(ctx, e, o)
				if err != nil {
					return err
				}
				if o.json {
					return json.NewEncoder(e.Out).Encode(res)
				}
				m := res.(membership.Minted)
				fmt.Fprintf(e.Out, "claim   %s\nid      %s\nexpires %s\n", m.Claim, m.ID, time.Unix(m.ExpiresAt, 0).UTC().Format(time.RFC3339))
				return nil
			},
		}.build(),
		command[membersOpts]{
			Name: "revoke", Usage: "revoke an unused invite code, named by the code or its id", ArgsUsage: "CLAIM|ID", DB: true,
			Flags: []cli.Flag{keyFlag},
			Options: func(c *cli.Context) (membersOpts, error) {
				if c.NArg() != 1 {
					return membersOpts{}, errors.New("name one invite code or id")
				}
				return membersOpts{method: "revokeinvite", params: []json.RawMessage{param(c.Args().First())}, arg: c.Args().First(),
					keyFile: c.String("node-key-file")}, nil
			},
			Run: func(ctx context.Context, e env, o membersOpts) error {
				if _, err := runMembers(ctx, e, o); err != nil {
					return err
				}
				fmt.Fprintln(e.Out, "members revoke: done")
				return nil
			},
		}.build(),
		rolesCommand(keyFlag, jsonFlag),
		command[membersOpts]{
			Name: "rebuild", Usage: "recompute membership and roles from the node's stored 8000/8001/33534/5/13534 events and compare them with what the relay keeps; --write replaces it",
			DB: true, Flags: []cli.Flag{keyFlag, &cli.BoolFlag{Name: "write", Usage: "replace the kept registers with the recomputed ones"}},
			Options: func(c *cli.Context) (membersOpts, error) {
				return membersOpts{keyFile: c.String("node-key-file"), write: c.Bool("write")}, nil
			},
			Run: runMembersRebuild,
		}.build(),
	)
}

// runMembers runs one membership method as this operator, with the node key.
func runMembers(ctx context.Context, e env, o membersOpts) (any, error) {
	key, err := nodekey.Load(o.keyFile)
	if err != nil {
		return nil, err
	}
	pub := store.NewPublisher()
	if err := pub.SetMembership(store.Membership{Self: key.PubKey, Sign: key.Sign, Mode: membership.Open}); err != nil {
		return nil, err
	}
	svc := node.NewMembershipService(e.Pool, pub, protocol.DefaultTopicRules(), key.PubKey, key.Sign, nil)
	res, err := svc.Do(ctx, whoAmI(), "cnctl", o.method, o.params)
	var bad *nip86.BadRequest
	if errors.As(err, &bad) {
		return nil, usageError{errors.New(bad.Reason)} // (without "bad request: ", as cnctl members has always said)
	}
	return res, err
}

func runMembersList(ctx context.Context, e env, o membersOpts) error {
	svc := &membership.Service{Pool: e.Pool}
	res, err := svc.Do(ctx, whoAmI(), "cnctl", o.method, nil)
	if err != nil {
		return err
	}
	if o.json {
		return json.NewEncoder(e.Out).Encode(res)
	}
	w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	at := func(u int64) string {
		if u == 0 {
			return "-"
		}
		return time.Unix(u, 0).UTC().Format(time.RFC3339)
	}
	switch rows := res.(type) {
	case []membership.Member:
		fmt.Fprintln(w, "PUBKEY\tVIA\tSINCE\tROLES")
		for _, m := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.Pubkey, m.Via, at(m.Since), strings.Join(m.Roles, ","))
		}
	case []membership.Role:
		fmt.Fprintln(w, "ID\tLABEL\tCOLOR\tORDER\tDESCRIPTION")
		for _, r := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Label, r.Color, r.Order, r.Description)
		}
	case []membership.Invite:
		fmt.Fprintln(w, "ID\tSTATE\tISSUER\tEXPIRES\tUSED BY")
		for _, iv := range rows {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", iv.ID, iv.State, iv.Issuer, at(iv.ExpiresAt), iv.UsedBy)
		}
	case []membership.Pending:
		fmt.Fprintln(w, "PUBKEY\tREQUESTED\tRANK")
		for _, p := range rows {
			rank := "-"
			if p.Rank != nil {
				rank = fmt.Sprint(*p.Rank)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", p.Pubkey, at(p.RequestedAt), rank)
		}
	}
	return w.Flush()
}

func runMembersRebuild(ctx context.Context, e env, o membersOpts) error {
	key, err := nodekey.Load(o.keyFile)
	if err != nil {
		return err
	}
	projected, n, err := membership.StoredState(ctx, e.Pool, key.PubKey)
	if err != nil {
		return err
	}
	live, err := membership.LiveState(ctx, e.Pool)
	if err != nil {
		return err
	}
	diff := projected.Diff(live)
	fmt.Fprintf(e.Out, "%d events, %d roles, %d keys, %d differ\n", n, len(projected.Roles), len(projected.Registers), len(diff))
	for _, line := range diff {
		fmt.Fprintf(e.Out, "  %s\n", line)
	}
	if !o.write || len(diff) == 0 {
		return nil
	}
	tx, err := e.Pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := membership.Replace(ctx, tx, key.PubKey, projected); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	fmt.Fprintln(e.Out, "replaced")
	return nil
}

// rolesCommand is NIP-43 roles for operators: each subcommand runs the
// relay's NIP-86 method of the same meaning (listroles, setrole, removerole,
// assignrole, unassignrole). Roles are for clients to display; this relay
// gives them no access effect.
func rolesCommand(keyFlag, jsonFlag cli.Flag) *cli.Command {
	param := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	done := func(ctx context.Context, e env, o membersOpts) error {
		if _, err := runMembers(ctx, e, o); err != nil {
			return err
		}
		fmt.Fprintf(e.Out, "members roles %s: done\n", o.arg)
		return nil
	}
	roleID := func(c *cli.Context, i int) (string, error) {
		id := c.Args().Get(i)
		if err := membership.ValidRoleID(id); err != nil {
			return "", err
		}
		return id, nil
	}
	assign := func(name, method, usage string) *cli.Command {
		return command[membersOpts]{
			Name: name, Usage: usage, ArgsUsage: "PUBKEY ROLE", DB: true, Flags: []cli.Flag{keyFlag},
			Options: func(c *cli.Context) (membersOpts, error) {
				if c.NArg() != 2 {
					return membersOpts{}, errors.New("name one pubkey (hex or npub) and one role id")
				}
				pk, err := protocol.ParsePubkey(c.Args().First())
				if err != nil {
					return membersOpts{}, err
				}
				id, err := roleID(c, 1)
				if err != nil {
					return membersOpts{}, err
				}
				return membersOpts{method: method, params: []json.RawMessage{param(pk), param(id)}, arg: name + " " + pk + " " + id,
					keyFile: c.String("node-key-file")}, nil
			},
			Run: done,
		}.build()
	}
	fields := []string{"label", "description", "color", "order"}
	setFlags := []cli.Flag{keyFlag,
		&cli.StringFlag{Name: "label", Usage: "the role's label (\"\": none)"},
		&cli.StringFlag{Name: "description", Usage: "the role's description (\"\": none)"},
		&cli.StringFlag{Name: "color", Usage: "a hue from 0 to 360 (\"\": none)"},
		&cli.StringFlag{Name: "order", Usage: "an integer, for clients' display order (\"\": none)"},
	}
	return group("roles", "NIP-43 roles (kind 33534) and who has them; no access effect here (docs/membership.md)",
		command[membersOpts]{
			Name: "list", Usage: "the defined roles", DB: true, Flags: []cli.Flag{jsonFlag},
			Options: func(c *cli.Context) (membersOpts, error) {
				return membersOpts{method: "listroles", json: c.Bool("json")}, nil
			},
			Run: runMembersList,
		}.build(),
		command[membersOpts]{
			Name: "set", Usage: "define a role or change the fields given (publishes its 33534)", ArgsUsage: "ID", DB: true, Flags: setFlags,
			Options: func(c *cli.Context) (membersOpts, error) {
				if c.NArg() != 1 {
					return membersOpts{}, errors.New("name one role id")
				}
				id, err := roleID(c, 0)
				if err != nil {
					return membersOpts{}, err
				}
				var patch membership.RolePatch
				for _, f := range fields {
					if !c.IsSet(f) {
						continue
					}
					v := c.String(f)
					switch f {
					case "label":
						patch.Label = &v
					case "description":
						patch.Description = &v
					case "color":
						patch.Color = &v
					case "order":
						patch.Order = &v
					}
				}
				if err := patch.Validate(); err != nil {
					return membersOpts{}, err
				}
				return membersOpts{method: "setrole", params: []json.RawMessage{param(id), param(patch)}, arg: "set " + id,
					keyFile: c.String("node-key-file")}, nil
			},
			Run: done,
		}.build(),
		command[membersOpts]{
			Name: "remove", Usage: "remove a role (publishes the NIP-09 deletion of its 33534) and take it off every member", ArgsUsage: "ID", DB: true,
			Flags: []cli.Flag{keyFlag},
			Options: func(c *cli.Context) (membersOpts, error) {
				if c.NArg() != 1 {
					return membersOpts{}, errors.New("name one role id")
				}
				id, err := roleID(c, 0)
				if err != nil {
					return membersOpts{}, err
				}
				return membersOpts{method: "removerole", params: []json.RawMessage{param(id)}, arg: "remove " + id, keyFile: c.String("node-key-file")}, nil
			},
			Run: done,
		}.build(),
		assign("assign", "assignrole", "give a NIP-43 member a defined role (publishes a new 13534)"),
		assign("unassign", "unassignrole", "take a role from a member (publishes a new 13534)"),
	)
}
