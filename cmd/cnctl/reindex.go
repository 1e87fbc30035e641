package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/indexer"
)

type reindexOpts struct{ kinds []int }

func reindexCommand() *cli.Command {
	return command[reindexOpts]{
		Name:  "reindex",
		Usage: "rebuild the search index from the stored events and switch to it without a gap",
		Description: "Builds a new index beside the current one (searches keep using the current one), catches it up\n" +
			"with the outbox, then swaps the two in one short transaction that waits for the live index-v1\n" +
			"consumer's running batch. The indexer may keep running; it continues on the new index.",
		DB: true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kinds", Usage: "comma-separated kinds to index; must match the indexer's --kinds (default: the indexer's default)"},
		},
		Options: func(c *cli.Context) (reindexOpts, error) {
			kinds, err := indexer.ParseKinds(c.String("kinds"))
			if err != nil {
				return reindexOpts{}, fmt.Errorf("--kinds: %w", err)
			}
			return reindexOpts{kinds: kinds}, nil
		},
		Run: func(ctx context.Context, e env, o reindexOpts) error {
			start := time.Now()
			res, err := indexer.Rebuild(ctx, e.Pool, indexer.RebuildOptions{Kinds: o.kinds, RequestedBy: whoAmI(), Logger: e.Logger})
			if err != nil {
				return fmt.Errorf("reindex: %w", err)
			}
			fmt.Fprintf(e.Out, "reindexed: %d documents (%d loaded at seq %d, %d outbox rows caught up), %s now continues after seq %d (took %s)\n",
				res.Documents, res.Loaded, res.SnapshotSeq, res.CaughtUp, indexer.ConsumerName, res.SwitchedSeq, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}.build()
}
