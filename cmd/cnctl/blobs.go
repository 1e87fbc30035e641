package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/blossom"
	"github.com/kukuri/communitynode/internal/protocol"
)

// blobsCommand is Blossom media for operators (docs/media.md).
func blobsCommand() *cli.Command {
	return group("blobs", "Blossom media: list blobs, hide, unhide and purge them (docs/media.md)",
		blobsListCommand(), blobDecideCommand("hide"), blobDecideCommand("unhide"), blobDecideCommand("purge"))
}

type blobsListOpts struct {
	owner            string
	hidden, json, by bool
	limit            int
}

func blobsListCommand() *cli.Command {
	return command[blobsListOpts]{
		Name:  "list",
		Usage: "stored blobs, largest first, with their owners and open reports (--uploaders: the keys holding the most bytes)",
		DB:    true,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "owner", Usage: "only this key's blobs (hex or npub)"},
			&cli.BoolFlag{Name: "hidden", Usage: "only hidden blobs"},
			&cli.BoolFlag{Name: "uploaders", Usage: "list the keys holding the most bytes instead"},
			&cli.IntFlag{Name: "limit", Value: 100, Usage: "most rows"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per row"},
		},
		Options: func(c *cli.Context) (blobsListOpts, error) {
			o := blobsListOpts{hidden: c.Bool("hidden"), json: c.Bool("json"), by: c.Bool("uploaders"), limit: c.Int("limit")}
			if s := c.String("owner"); s != "" {
				pk, err := protocol.ParsePubkey(s)
				if err != nil {
					return o, fmt.Errorf("--owner: %w", err)
				}
				o.owner = pk
			}
			if o.limit < 1 {
				return o, errors.New("--limit must be at least 1")
			}
			return o, nil
		},
		Run: blobsList,
	}.build()
}

func blobsList(ctx context.Context, e env, o blobsListOpts) error {
	db := &blossom.DB{Pool: e.Pool}
	if o.by {
		us, err := db.TopUploaders(ctx, o.limit)
		if err != nil {
			return err
		}
		if o.json {
			enc := json.NewEncoder(e.Out)
			for _, u := range us {
				if err := enc.Encode(map[string]any{"pubkey": u.Pubkey, "bytes": u.Bytes, "blobs": u.Blobs}); err != nil {
					return err
				}
			}
			return nil
		}
		w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "PUBKEY\tBYTES\tBLOBS")
		for _, u := range us {
			fmt.Fprintf(w, "%s\t%d\t%d\n", u.Pubkey, u.Bytes, u.Blobs)
		}
		return w.Flush()
	}
	bs, err := db.All(ctx, o.owner, o.hidden, o.limit)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(e.Out)
		for _, b := range bs {
			if err := enc.Encode(map[string]any{"sha256": b.SHA256, "size": b.Size, "type": b.Type, "created": b.Created.Unix(),
				"hidden": b.Hidden, "owners": b.Owners, "reports": b.Reports}); err != nil {
				return err
			}
		}
		return nil
	}
	w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SHA256\tSIZE\tTYPE\tOWNERS\tREPORTS\tHIDDEN")
	for _, b := range bs {
		fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%d\t%s\n", b.SHA256, b.Size, b.Type, len(b.Owners), b.Reports, b.Hidden)
	}
	return w.Flush()
}

type blobDecideOpts struct{ hash, reason, dir string }

func blobDecideCommand(name string) *cli.Command {
	usage := map[string]string{
		"hide":   "stop serving a blob (451), keep it out of lists and refuse its re-upload; record why",
		"unhide": "serve a hidden blob again (a purged one is forgotten and may be uploaded again)",
		"purge":  "delete a blob's file and every claim on it, and keep it hidden so that it cannot come back (needs --blossom-dir)",
	}[name]
	flags := []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why (recorded in cn_blossom.log)", Required: name == "hide"}}
	if name == "purge" {
		flags = append(flags, &cli.StringFlag{Name: "blossom-dir", EnvVars: []string{"CN_RELAY_BLOSSOM_DIR"}, Required: true,
			Usage: "the relay's --blossom-dir, where the blob's file is"})
	}
	return command[blobDecideOpts]{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "SHA256",
		DB:        true,
		Flags:     flags,
		Options: func(c *cli.Context) (blobDecideOpts, error) {
			h := strings.ToLower(c.Args().First())
			if c.NArg() != 1 || !protocol.IsHex64(h) {
				return blobDecideOpts{}, fmt.Errorf("blobs %s needs one blob hash (64 hex characters)", name)
			}
			return blobDecideOpts{hash: h, reason: c.String("reason"), dir: c.String("blossom-dir")}, nil
		},
		Run: func(ctx context.Context, e env, o blobDecideOpts) error {
			db := &blossom.DB{Pool: e.Pool, Files: blossom.Files{Dir: o.dir}}
			if name == "purge" {
				if err := db.Files.Check(); err != nil {
					return err
				}
			}
			var changed bool
			var freed int64
			var err error
			switch name {
			case "hide":
				changed, err = db.Hide(ctx, o.hash, whoAmI(), o.reason)
			case "unhide":
				changed, err = db.Unhide(ctx, o.hash, whoAmI())
			case "purge":
				freed, err = db.Purge(ctx, o.hash, whoAmI(), o.reason)
				changed = err == nil
			}
			if errors.Is(err, blossom.ErrNotFound) {
				return fmt.Errorf("blob %s is not stored", o.hash)
			}
			if err != nil {
				return err
			}
			switch {
			case name == "purge":
				fmt.Fprintf(e.Out, "%s: purged (%d bytes freed; kept hidden)\n", o.hash, freed)
			case changed:
				fmt.Fprintf(e.Out, "%s: %s by %s\n", o.hash, map[string]string{"hide": "hidden", "unhide": "served again"}[name], whoAmI())
			default:
				fmt.Fprintf(e.Out, "%s: already %s\n", o.hash, map[string]string{"hide": "hidden", "unhide": "served"}[name])
			}
			return nil
		},
	}.build()
}
