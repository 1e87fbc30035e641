package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/nodekey"
)

func nodeKeyFileFlag() cli.Flag {
	return &cli.StringFlag{Name: "file", Value: nodekey.DefaultFile, EnvVars: []string{"CN_NODE_KEY_FILE"}, Usage: "the node key file"}
}

func nodeKeyCommand() *cli.Command {
	return &cli.Command{
		Name:  "node-key",
		Usage: "the node's own key, which signs its labels and assertions",
		Subcommands: []*cli.Command{
			{
				Name:  "generate",
				Usage: "create a new node key (mode 0600); never overwrites one",
				Flags: []cli.Flag{nodeKeyFileFlag()},
				Action: func(c *cli.Context) error {
					k, err := nodekey.Generate(c.String("file"))
					if errors.Is(err, nodekey.ErrExists) {
						return fmt.Errorf("%w (remove it yourself if you really mean to replace the node's identity)", err)
					}
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "created %s\npubkey %s\nnpub   %s\n", c.String("file"), k.PubKey, k.Npub())
					return nil
				},
			},
			{
				Name:  "show",
				Usage: "print the node's public key (hex and npub)",
				Flags: []cli.Flag{nodeKeyFileFlag()},
				Action: func(c *cli.Context) error {
					k, err := nodekey.Load(c.String("file"))
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "pubkey %s\nnpub   %s\n", k.PubKey, k.Npub())
					return nil
				},
			},
		},
	}
}
