package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/nodekey"
)

type nodeKeyOpts struct{ file string }

func nodeKeyCommand() *cli.Command {
	flags := func() []cli.Flag {
		return []cli.Flag{&cli.StringFlag{Name: "file", Value: nodekey.DefaultFile, EnvVars: []string{"CN_NODE_KEY_FILE"}, Usage: "the node key file"}}
	}
	options := func(c *cli.Context) (nodeKeyOpts, error) { return nodeKeyOpts{file: c.String("file")}, nil }
	return group("node-key", "the node's own key, which signs its labels and assertions",
		command[nodeKeyOpts]{
			Name:    "generate",
			Usage:   "create a new node key (mode 0600); never overwrites one",
			Flags:   flags(),
			Options: options,
			Run: func(_ context.Context, e env, o nodeKeyOpts) error {
				k, err := nodekey.Generate(o.file)
				if errors.Is(err, nodekey.ErrExists) {
					return fmt.Errorf("%w (remove it yourself if you really mean to replace the node's identity)", err)
				}
				if err != nil {
					return err
				}
				fmt.Fprintf(e.Out, "created %s\npubkey %s\nnpub   %s\n", o.file, k.PubKey, k.Npub())
				return nil
			},
		}.build(),
		command[nodeKeyOpts]{
			Name:    "show",
			Usage:   "print the node's public key (hex and npub)",
			Flags:   flags(),
			Options: options,
			Run: func(_ context.Context, e env, o nodeKeyOpts) error {
				k, err := nodekey.Load(o.file)
				if err != nil {
					return err
				}
				fmt.Fprintf(e.Out, "pubkey %s\nnpub   %s\n", k.PubKey, k.Npub())
				return nil
			},
		}.build(),
	)
}
