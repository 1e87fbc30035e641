package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
)

func moderationCommand() *cli.Command {
	decide := func(name, usage string) *cli.Command {
		return &cli.Command{
			Name:      name,
			Usage:     usage,
			ArgsUsage: "EVENT_ID",
			Flags:     []cli.Flag{databaseURLFlag(), &cli.StringFlag{Name: "reason", Usage: "why (recorded with the decision)", Required: name == "hide"}},
			Action: func(c *cli.Context) error {
				if err := flagsFirst(c); err != nil {
					return err
				}
				id := c.Args().First()
				if c.NArg() != 1 || len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
					return usageError{fmt.Errorf("%s needs one event id (64 hex characters)", name)}
				}
				pool, err := connectPool(c)
				if err != nil {
					return err
				}
				defer pool.Close()
				st := store.New(pool, nil, protocol.DefaultTopicRules())
				outcome, err := moderation.Decide(c.Context, pool, st, id, name, whoAmI(), c.String("reason"))
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "%s: %s (recorded as %s by %s)\n", id, outcome, name, whoAmI())
				return nil
			},
		}
	}
	return &cli.Command{
		Name:  "moderation",
		Usage: "moderation rules, the report queue, operator decisions, bans (the NIP-86 actions) and their log",
		Subcommands: append([]*cli.Command{
			{
				Name:  "rules",
				Usage: "the rule set the moderator applies",
				Subcommands: []*cli.Command{
					{
						Name:      "apply",
						Usage:     "make a rules file (YAML) the rule set: prints the changes; --execute applies them",
						ArgsUsage: "FILE",
						Flags: []cli.Flag{
							databaseURLFlag(),
							&cli.BoolFlag{Name: "execute", Usage: "apply the changes (default: only show them)"},
							&cli.BoolFlag{Name: "rejudge", Usage: "after applying, replay the retained outbox through the new rules (moves moderation-v1 to the earliest retained row)"},
						},
						Action: rulesApply,
					},
					{
						Name:  "list",
						Usage: "the rules in force, with their versions",
						Flags: []cli.Flag{databaseURLFlag(), &cli.BoolFlag{Name: "json", Usage: "one JSON object per rule"}},
						Action: func(c *cli.Context) error {
							pool, err := connectPool(c)
							if err != nil {
								return err
							}
							defer pool.Close()
							rules, err := moderation.ListRules(c.Context, pool)
							if err != nil {
								return err
							}
							if c.Bool("json") {
								enc := json.NewEncoder(c.App.Writer)
								for _, r := range rules {
									if err := enc.Encode(map[string]any{"rule": r.Rule, "version": r.Version, "updated_at": r.UpdatedAt}); err != nil {
										return err
									}
								}
								return nil
							}
							w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
							fmt.Fprintln(w, "NAME\tVERSION\tKIND\tLABEL\tACTION\tUPDATED")
							for _, r := range rules {
								kind := "content"
								if r.IsReportRule() {
									kind = "reports"
								}
								fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", r.Name, r.Version, kind, r.Label, r.Action, r.UpdatedAt.UTC().Format("2006-01-02 15:04:05Z"))
							}
							return w.Flush()
						},
					},
				},
			},
			{
				Name:  "queue",
				Usage: "events waiting for a decision (open reports, held by a rule), newest report first",
				Flags: []cli.Flag{
					databaseURLFlag(),
					&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many events"},
					&cli.BoolFlag{Name: "json", Usage: "one JSON object per event"},
				},
				Action: func(c *cli.Context) error {
					if c.Int("limit") < 1 {
						return usageError{errors.New("--limit must be at least 1")}
					}
					pool, err := connectPool(c)
					if err != nil {
						return err
					}
					defer pool.Close()
					items, err := moderation.Queue(c.Context, pool, c.Int("limit"))
					if err != nil {
						return err
					}
					if c.Bool("json") {
						enc := json.NewEncoder(c.App.Writer)
						for _, it := range items {
							if err := enc.Encode(it); err != nil {
								return err
							}
						}
						return nil
					}
					w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
					fmt.Fprintln(w, "EVENT\tREPORTERS\tTYPES\tHELD BY\tHIDDEN")
					for _, it := range items {
						var types []string
						for t, n := range it.Reports {
							types = append(types, fmt.Sprintf("%s:%d", t, n))
						}
						fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%t\n", it.EventID, it.Reporters, strings.Join(types, ","), strings.Join(it.Held, ","), it.Hidden)
					}
					return w.Flush()
				},
			},
			decide("hide", "hide an event from readers (REQ, COUNT, search, live) and record why"),
			decide("unhide", "show an event hidden by moderation again"),
			decide("dismiss", "take an event off the queue without acting on it"),
		}, adminCommands()...),
	}
}

// flagsFirst refuses flags written after the arguments (the command-line
// parser stops at the first argument), saying where they go.
func flagsFirst(c *cli.Context) error {
	args := c.Args().Slice()
	for i, a := range args {
		if i > 0 && strings.HasPrefix(a, "-") {
			return usageError{fmt.Errorf("flag %s after the arguments: put flags first (cnctl %s [flags] %s)",
				a, c.Command.FullName(), c.Command.ArgsUsage)}
		}
	}
	return nil
}

func rulesApply(c *cli.Context) error {
	if err := flagsFirst(c); err != nil {
		return err
	}
	if c.NArg() != 1 {
		return usageError{errors.New("rules apply needs one rules file")}
	}
	if c.Bool("rejudge") && !c.Bool("execute") {
		return usageError{errors.New("--rejudge needs --execute")}
	}
	data, err := os.ReadFile(c.Args().First())
	if err != nil {
		return err
	}
	rules, err := moderation.ParseFile(data)
	if err != nil {
		return err
	}
	pool, err := connectPool(c)
	if err != nil {
		return err
	}
	defer pool.Close()
	changes, err := moderation.ApplyRules(c.Context, pool, rules, whoAmI(), c.Bool("execute"))
	if err != nil {
		return err
	}
	changed := 0
	for _, ch := range changes {
		if ch.Change != "unchanged" {
			changed++
		}
		fmt.Fprintf(c.App.Writer, "%-9s %s (version %d)\n", ch.Change, ch.Name, ch.Version)
	}
	if !c.Bool("execute") {
		fmt.Fprintf(c.App.Writer, "dry run: %d change(s); add --execute to apply\n", changed)
		return nil
	}
	fmt.Fprintf(c.App.Writer, "applied %d change(s); the moderator uses them from its next batch\n", changed)
	if !c.Bool("rejudge") {
		return nil
	}
	plan, err := consumer.PlanReset(c.Context, pool, moderation.ConsumerName, consumer.ResetTarget{Earliest: true})
	if errors.Is(err, consumer.ErrUnknownConsumer) {
		fmt.Fprintln(c.App.Writer, "rejudge: the moderator has not run yet; it will apply the rules to everything when it starts")
		return nil
	}
	if err != nil {
		return err
	}
	if err := consumer.ExecuteReset(c.Context, pool, plan, true, whoAmI()); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "rejudge: %s moves from seq %d to %d; %d retained row(s) will be judged again\n",
		moderation.ConsumerName, plan.From, plan.To, plan.Replay)
	return nil
}
