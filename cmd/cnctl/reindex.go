package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/indexer"
)

func reindexCommand() *cli.Command {
	return &cli.Command{
		Name:  "reindex",
		Usage: "rebuild the search index from the stored events and switch to it without a gap",
		Description: "Builds a new index beside the current one (searches keep using the current one), catches it up\n" +
			"with the outbox, then swaps the two in one short transaction that waits for the live index-v1\n" +
			"consumer's running batch. The indexer may keep running; it continues on the new index.",
		Flags: []cli.Flag{
			databaseURLFlag(),
			&cli.StringFlag{Name: "kinds", Usage: "comma-separated kinds to index; must match the indexer's --kinds (default: the indexer's default)"},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError{fmt.Errorf("unexpected arguments %q", c.Args().Slice())}
			}
			kinds, err := indexer.ParseKinds(c.String("kinds"))
			if err != nil {
				return usageError{fmt.Errorf("--kinds: %w", err)}
			}
			pool, err := connectPool(c)
			if err != nil {
				return err
			}
			defer pool.Close()
			start := time.Now()
			res, err := indexer.Rebuild(c.Context, pool, indexer.RebuildOptions{Kinds: kinds, RequestedBy: whoAmI(), Logger: textLogger(c)})
			if err != nil {
				return fmt.Errorf("reindex: %w", err)
			}
			fmt.Fprintf(c.App.Writer, "reindexed: %d documents (%d loaded at seq %d, %d outbox rows caught up), %s now continues after seq %d (took %s)\n",
				res.Documents, res.Loaded, res.SnapshotSeq, res.CaughtUp, indexer.ConsumerName, res.SwitchedSeq, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
}
