package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/internal/store"
)

// adminCommands are the NIP-86 changes for operators without a NIP-86 client:
// each runs the same code as the relay's NIP-86 method it names, recorded in
// cn_admin.log with the operator's user@host.
func adminCommands() []*cli.Command {
	type spec struct {
		name, method, arg, usage string
		reason                   bool
	}
	specs := []spec{
		{"ban-pubkey", "banpubkey", "PUBKEY", "refuse a pubkey's events on every relay and hide its stored ones", true},
		{"unban-pubkey", "unbanpubkey", "PUBKEY", "lift a pubkey's ban (its events hidden by the ban come back)", true},
		{"allow-pubkey", "allowpubkey", "PUBKEY", "put a pubkey on the allow list (lifts a ban; makes it a member)", true},
		{"unallow-pubkey", "unallowpubkey", "PUBKEY", "take a pubkey off the allow list", true},
		{"ban-event", "banevent", "EVENT_ID", "refuse an event and hide it if stored", true},
		{"unban-event", "unbanevent", "EVENT_ID", "lift an event's ban and show it again", true},
		{"allow-event", "allowevent", "EVENT_ID", "put an event on the allow list (shows it; rules leave it alone)", true},
		{"unallow-event", "unallowevent", "EVENT_ID", "take an event off the allow list", true},
		{"allow-kind", "allowkind", "KIND", "accept a kind (once any kind is allowed, only allowed kinds are accepted)", false},
		{"disallow-kind", "disallowkind", "KIND", "refuse a kind", false},
		{"block-ip", "blockip", "IP|CIDR", "refuse connections from an address or prefix and close the open ones", true},
		{"unblock-ip", "unblockip", "IP|CIDR", "accept connections from an address or prefix again", false},
	}
	var cmds []*cli.Command
	for _, sp := range specs {
		var flags []cli.Flag
		if sp.reason {
			flags = append(flags, &cli.StringFlag{Name: "reason", Usage: "why (recorded)"})
		}
		cmds = append(cmds, command[adminOpts]{
			Name: sp.name, Usage: sp.usage, ArgsUsage: sp.arg, DB: true, Flags: flags,
			Options: func(c *cli.Context) (adminOpts, error) {
				if c.NArg() != 1 {
					return adminOpts{}, fmt.Errorf("%s needs one %s", sp.name, sp.arg)
				}
				arg := c.Args().First()
				var first json.RawMessage
				if sp.arg == "KIND" {
					k, err := strconv.Atoi(arg)
					if err != nil {
						return adminOpts{}, fmt.Errorf("%s: %q is not a kind number", sp.name, arg)
					}
					first, _ = json.Marshal(k)
				} else {
					first, _ = json.Marshal(arg)
				}
				o := adminOpts{method: sp.method, params: []json.RawMessage{first}, arg: arg}
				if sp.reason && c.String("reason") != "" {
					r, _ := json.Marshal(c.String("reason"))
					o.params = append(o.params, r)
				}
				return o, nil
			},
			Run: func(ctx context.Context, e env, o adminOpts) error {
				if _, err := runAdmin(ctx, e, o); err != nil {
					return err
				}
				fmt.Fprintf(e.Out, "%s %s: done (every relay applies it within a second)\n", sp.name, o.arg)
				return nil
			},
		}.build())
	}
	lists := map[string]string{
		"banned-pubkeys": "listbannedpubkeys", "allowed-pubkeys": "listallowedpubkeys",
		"banned-events": "listbannedevents", "allowed-events": "listallowedevents",
		"allowed-kinds": "listallowedkinds", "disallowed-kinds": "listdisallowedkinds", "blocked-ips": "listblockedips",
	}
	cmds = append(cmds, command[adminOpts]{
		Name:      "list",
		Usage:     "print a management list as JSON: banned-pubkeys, allowed-pubkeys, banned-events, allowed-events, allowed-kinds, disallowed-kinds, blocked-ips",
		ArgsUsage: "LIST",
		DB:        true,
		Options: func(c *cli.Context) (adminOpts, error) {
			method, ok := lists[c.Args().First()]
			if c.NArg() != 1 || !ok {
				return adminOpts{}, errors.New("list needs one of: banned-pubkeys, allowed-pubkeys, banned-events, allowed-events, allowed-kinds, disallowed-kinds, blocked-ips")
			}
			return adminOpts{method: method}, nil
		},
		Run: func(ctx context.Context, e env, o adminOpts) error {
			result, err := runAdmin(ctx, e, o)
			if err != nil {
				return err
			}
			return json.NewEncoder(e.Out).Encode(result)
		},
	}.build(), command[adminLogOpts]{
		Name:  "log",
		Usage: "management actions (NIP-86 and cnctl), newest first: who, when, what",
		DB:    true,
		Flags: []cli.Flag{&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many"}},
		Options: func(c *cli.Context) (adminLogOpts, error) {
			if c.Int("limit") < 1 {
				return adminLogOpts{}, errors.New("--limit must be at least 1")
			}
			return adminLogOpts{limit: c.Int("limit")}, nil
		},
		Run: adminLog,
	}.build())
	return cmds
}

// adminOpts is one management method call: the method, its NIP-86 params, and
// the argument as typed (for the reply).
type adminOpts struct {
	method string
	params []json.RawMessage
	arg    string
}

type adminLogOpts struct{ limit int }

// runAdmin runs one management method as this operator. A request the method
// refuses (a bad pubkey, address or kind) is a usage error.
func runAdmin(ctx context.Context, e env, o adminOpts) (any, error) {
	a := &relayadmin.Admin{Pool: e.Pool, Store: store.NewPublisher(), TopicRules: protocol.DefaultTopicRules()}
	result, err := a.Do(ctx, relayadmin.Actor{Name: whoAmI(), Source: "cnctl"}, o.method, o.params)
	if errors.As(err, new(*nip86.BadRequest)) {
		return nil, usageError{err}
	}
	return result, err
}

func adminLog(ctx context.Context, e env, o adminLogOpts) error {
	rows, err := e.Pool.Query(ctx, `SELECT at, source, actor, method, params::text FROM cn_admin.log
		ORDER BY id DESC LIMIT $1`, o.limit)
	if err != nil {
		return err
	}
	defer rows.Close()
	w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "AT\tSOURCE\tACTOR\tMETHOD\tPARAMS")
	for rows.Next() {
		var at any
		var source, actor, method, params string
		if err := rows.Scan(&at, &source, &actor, &method, &params); err != nil {
			return err
		}
		fmt.Fprintf(w, "%v\t%s\t%s\t%s\t%s\n", at, source, actor, method, params)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}
