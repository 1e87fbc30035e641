package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin"
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
		flags := []cli.Flag{databaseURLFlag()}
		if sp.reason {
			flags = append(flags, &cli.StringFlag{Name: "reason", Usage: "why (recorded)"})
		}
		cmds = append(cmds, &cli.Command{
			Name: sp.name, Usage: sp.usage, ArgsUsage: sp.arg, Flags: flags,
			Action: func(c *cli.Context) error {
				if err := flagsFirst(c); err != nil {
					return err
				}
				if c.NArg() != 1 {
					return usageError{fmt.Errorf("%s needs one %s", sp.name, sp.arg)}
				}
				var first json.RawMessage
				if sp.arg == "KIND" {
					k, err := strconv.Atoi(c.Args().First())
					if err != nil {
						return usageError{fmt.Errorf("%s: %q is not a kind number", sp.name, c.Args().First())}
					}
					first, _ = json.Marshal(k)
				} else {
					first, _ = json.Marshal(c.Args().First())
				}
				params := []json.RawMessage{first}
				if sp.reason && c.String("reason") != "" {
					r, _ := json.Marshal(c.String("reason"))
					params = append(params, r)
				}
				_, err := runAdmin(c, sp.method, params)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "%s %s: done (every relay applies it within a second)\n", sp.name, c.Args().First())
				return nil
			},
		})
	}
	lists := map[string]string{
		"banned-pubkeys": "listbannedpubkeys", "allowed-pubkeys": "listallowedpubkeys",
		"banned-events": "listbannedevents", "allowed-events": "listallowedevents",
		"allowed-kinds": "listallowedkinds", "disallowed-kinds": "listdisallowedkinds", "blocked-ips": "listblockedips",
	}
	cmds = append(cmds, &cli.Command{
		Name:      "list",
		Usage:     "print a management list as JSON: banned-pubkeys, allowed-pubkeys, banned-events, allowed-events, allowed-kinds, disallowed-kinds, blocked-ips",
		ArgsUsage: "LIST",
		Flags:     []cli.Flag{databaseURLFlag()},
		Action: func(c *cli.Context) error {
			method, ok := lists[c.Args().First()]
			if c.NArg() != 1 || !ok {
				return usageError{errors.New("list needs one of: banned-pubkeys, allowed-pubkeys, banned-events, allowed-events, allowed-kinds, disallowed-kinds, blocked-ips")}
			}
			result, err := runAdmin(c, method, nil)
			if err != nil {
				return err
			}
			return json.NewEncoder(c.App.Writer).Encode(result)
		},
	}, &cli.Command{
		Name:  "log",
		Usage: "management actions (NIP-86 and cnctl), newest first: who, when, what",
		Flags: []cli.Flag{databaseURLFlag(), &cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many"}},
		Action: func(c *cli.Context) error {
			pool, err := connectPool(c)
			if err != nil {
				return err
			}
			defer pool.Close()
			rows, err := pool.Query(c.Context, `SELECT at, source, actor, method, params::text FROM cn_admin.log
				ORDER BY id DESC LIMIT $1`, c.Int("limit"))
			if err != nil {
				return err
			}
			defer rows.Close()
			w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
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
		},
	})
	return cmds
}

// runAdmin runs one management method as this operator.
func runAdmin(c *cli.Context, method string, params []json.RawMessage) (any, error) {
	pool, err := connectPool(c)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	a := &relayadmin.Admin{Pool: pool, Store: store.New(pool, nil, protocol.DefaultTopicRules())}
	result, err := a.Do(c.Context, relayadmin.Actor{Name: whoAmI(), Source: "cnctl"}, method, params)
	if errors.Is(err, relayadmin.ErrBadRequest) {
		return nil, usageError{err}
	}
	return result, err
}
