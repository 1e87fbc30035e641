package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/consumer"
)

func moderationCommand() *cli.Command {
	return group("moderation", "moderation rules, the report queue, operator decisions, bans (the NIP-86 actions) and their log",
		append([]*cli.Command{
			group("rules", "the rule set the moderator applies", rulesApplyCommand(), rulesListCommand()),
			queueCommand(),
			decideCommand("hide", "hide an event from readers (REQ, COUNT, search, live) and record why"),
			decideCommand("unhide", "show an event hidden by moderation again"),
			decideCommand("dismiss", "take an event off the queue without acting on it"),
		}, adminCommands()...)...)
}

type rulesApplyOpts struct {
	rules            []moderation.Rule
	execute, rejudge bool
}

func rulesApplyCommand() *cli.Command {
	return command[rulesApplyOpts]{
		Name:      "apply",
		Usage:     "make a rules file (YAML) the rule set: prints the changes; --execute applies them",
		ArgsUsage: "FILE",
		DB:        true,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "execute", Usage: "apply the changes (default: only show them)"},
			&cli.BoolFlag{Name: "rejudge", Usage: "after applying, replay the retained outbox through the new rules (moves moderation-v1 to the earliest retained row)"},
		},
		Options: func(c *cli.Context) (rulesApplyOpts, error) {
			o := rulesApplyOpts{execute: c.Bool("execute"), rejudge: c.Bool("rejudge")}
			if c.NArg() != 1 {
				return o, errors.New("rules apply needs one rules file")
			}
			if o.rejudge && !o.execute {
				return o, errors.New("--rejudge needs --execute")
			}
			data, err := os.ReadFile(c.Args().First())
			if err != nil {
				return o, failure{err}
			}
			if o.rules, err = moderation.ParseFile(data); err != nil {
				return o, failure{err}
			}
			return o, nil
		},
		Run: rulesApply,
	}.build()
}

func rulesApply(ctx context.Context, e env, o rulesApplyOpts) error {
	changes, err := moderation.ApplyRules(ctx, e.Pool, o.rules, whoAmI(), o.execute)
	if err != nil {
		return err
	}
	changed := 0
	for _, ch := range changes {
		if ch.Change != "unchanged" {
			changed++
		}
		fmt.Fprintf(e.Out, "%-9s %s (version %d)\n", ch.Change, ch.Name, ch.Version)
	}
	if !o.execute {
		fmt.Fprintf(e.Out, "dry run: %d change(s); add --execute to apply\n", changed)
		return nil
	}
	fmt.Fprintf(e.Out, "applied %d change(s); the moderator uses them from its next batch\n", changed)
	if !o.rejudge {
		return nil
	}
	plan, err := consumer.PlanReset(ctx, e.Pool, moderation.ConsumerName, consumer.ResetTarget{Earliest: true})
	if errors.Is(err, consumer.ErrUnknownConsumer) {
		fmt.Fprintln(e.Out, "rejudge: the moderator has not run yet; it will apply the rules to everything when it starts")
		return nil
	}
	if err != nil {
		return err
	}
	if err := consumer.ExecuteReset(ctx, e.Pool, plan, true, whoAmI()); err != nil {
		return err
	}
	fmt.Fprintf(e.Out, "rejudge: %s moves from seq %d to %d; %d retained row(s) will be judged again\n",
		moderation.ConsumerName, plan.From, plan.To, plan.Replay)
	return nil
}

type jsonOpt struct{ json bool }

func rulesListCommand() *cli.Command {
	return command[jsonOpt]{
		Name:    "list",
		Usage:   "the rules in force, with their versions",
		DB:      true,
		Flags:   []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "one JSON object per rule"}},
		Options: func(c *cli.Context) (jsonOpt, error) { return jsonOpt{c.Bool("json")}, nil },
		Run: func(ctx context.Context, e env, o jsonOpt) error {
			rules, err := moderation.ListRules(ctx, e.Pool)
			if err != nil {
				return err
			}
			if o.json {
				enc := json.NewEncoder(e.Out)
				for _, r := range rules {
					if err := enc.Encode(map[string]any{"rule": r.Rule, "version": r.Version, "updated_at": r.UpdatedAt}); err != nil {
						return err
					}
				}
				return nil
			}
			w := tabwriter.NewWriter(e.Out, 0, 4, 2, ' ', 0)
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
	}.build()
}

type queueOpts struct {
	limit int
	group string
	json  bool
}

func queueCommand() *cli.Command {
	return command[queueOpts]{
		Name:  "queue",
		Usage: "events waiting for a decision (open reports, held by a rule), newest report first",
		DB:    true,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most this many events"},
			&cli.StringFlag{Name: "group", Usage: "only events sent to this NIP-29 group (its id)"},
			&cli.BoolFlag{Name: "json", Usage: "one JSON object per event"},
		},
		Options: func(c *cli.Context) (queueOpts, error) {
			if c.Int("limit") < 1 {
				return queueOpts{}, errors.New("--limit must be at least 1")
			}
			if g := c.String("group"); g != "" && !groups.ValidID(g) {
				return queueOpts{}, fmt.Errorf("--group: %q is not a group id (1 to 64 of a-z, A-Z, 0-9, - and _)", g)
			}
			return queueOpts{limit: c.Int("limit"), group: c.String("group"), json: c.Bool("json")}, nil
		},
		Run: func(ctx context.Context, e env, o queueOpts) error {
			items, err := moderation.GroupQueue(ctx, e.Pool, o.limit, o.group)
			if err != nil {
				return err
			}
			if o.json {
				return printJSONLines(e.Out, items)
			}
			return writeQueue(e.Out, items)
		},
	}.build()
}

func writeQueue(out io.Writer, items []moderation.QueueItem) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "EVENT\tREPORTERS\tTYPES\tHELD BY\tHIDDEN")
	for _, it := range items {
		var types []string
		for t, n := range it.Reports {
			types = append(types, fmt.Sprintf("%s:%d", t, n))
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%t\n", it.EventID, it.Reporters, strings.Join(types, ","), strings.Join(it.Held, ","), it.Hidden)
	}
	return w.Flush()
}

type decideOpts struct{ eventID, reason string }

// decideCommand is an operator's decision on one event: hide, unhide or dismiss.
func decideCommand(name, usage string) *cli.Command {
	return command[decideOpts]{
		Name:      name,
		Usage:     usage,
		ArgsUsage: "EVENT_ID",
		DB:        true,
		Flags:     []cli.Flag{&cli.StringFlag{Name: "reason", Usage: "why (recorded with the decision)", Required: name == "hide"}},
		Options: func(c *cli.Context) (decideOpts, error) {
			id := c.Args().First()
			if c.NArg() != 1 || !protocol.IsHex64(id) {
				return decideOpts{}, fmt.Errorf("%s needs one event id (64 hex characters)", name)
			}
			return decideOpts{eventID: id, reason: c.String("reason")}, nil
		},
		Run: func(ctx context.Context, e env, o decideOpts) error {
			st := store.NewPublisher()
			outcome, err := moderation.Decide(ctx, e.Pool, st, o.eventID, name, whoAmI(), o.reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(e.Out, "%s: %s (recorded as %s by %s)\n", o.eventID, outcome, name, whoAmI())
			return nil
		},
	}.build()
}
