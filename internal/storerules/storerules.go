// Package storerules declares, once, the rules an operator sets that decide
// whether the node stores an event and how: its size limits, its created_at
// lower bound, its topics (required or not, the allow-list, the default topic,
// how many), who may publish identity events and how many of a newcomer's may
// wait for its first post.
//
// Every command that stores events takes them from here: the relay, cnctl
// import, cnctl sync and cnctl dev append Flags to their own flags and map them
// with FromFlags, so the same flag and the same environment variable
// (CN_RELAY_*) mean the same rule everywhere, and an import or a sync stores
// exactly what the running relay would. cnctl's tests compare `relay --help`
// with these commands and fail when a relay flag that decides what is stored is
// missing from one of them.
//
// The rules that are not settings (the future created_at skew, the tag value
// length, the topic-exempt kinds) are protocol.DefaultLimits'. The rank gate
// (relay --min-rank) and the connection's checks (rates, AUTH) are not store
// rules: an import and a sync store what the operator chose to move.
package storerules

import (
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
)

// Config is the store's rules (see the package doc). Its zero value is not
// usable: start from Default.
type Config struct {
	// MaxMessageBytes bounds a client message (protocol.Limits.MaxMessageBytes);
	// an imported line is an EVENT message without its 10-byte envelope.
	MaxMessageBytes int
	// MaxContentBytes bounds an event's content.
	MaxContentBytes int
	// MaxTags bounds an event's tags.
	MaxTags int
	// MaxPastAge is the created_at lower limit, as an age
	// (protocol.Limits.MaxPastAge).
	MaxPastAge time.Duration
	// MaxTopics bounds an event's distinct topics (protocol.TopicRules.MaxTopics).
	MaxTopics int
	// RequireTopic refuses events left without a topic
	// (protocol.TopicRules.RequireTopic).
	RequireTopic bool
	// IdentityWriters says whose profiles and lists are published at once.
	IdentityWriters protocol.IdentityWriters
	// DefaultTopic, normalised, is the single-community topic ("" off).
	DefaultTopic string
	// AllowedTopics, normalised, are the only topics stored (nil: every one).
	AllowedTopics map[string]bool
	// Pending bounds newcomers' identity events waiting for their first post.
	Pending store.PendingLimits
}

// Default returns the rules of protocol.DefaultLimits and
// store.DefaultPendingLimits.
func Default() Config {
	l := protocol.DefaultLimits()
	return Config{
		MaxMessageBytes: l.MaxMessageBytes,
		MaxContentBytes: l.MaxContentBytes,
		MaxTags:         l.MaxTags,
		MaxPastAge:      l.MaxPastAge,
		MaxTopics:       l.MaxTopics,
		RequireTopic:    l.RequireTopic,
		IdentityWriters: l.IdentityWriters,
		DefaultTopic:    l.DefaultTopic,
		AllowedTopics:   l.AllowedTopics,
		Pending:         store.DefaultPendingLimits(),
	}
}

// Limits returns base with these rules in place of its own; the limits that
// are not store rules (REQ filters, search) stay base's.
func (c Config) Limits(base protocol.Limits) protocol.Limits {
	base.MaxMessageBytes = c.MaxMessageBytes
	base.MaxContentBytes = c.MaxContentBytes
	base.MaxTags = c.MaxTags
	base.MaxPastAge = c.MaxPastAge
	base.MaxTopics = c.MaxTopics
	base.RequireTopic = c.RequireTopic
	base.IdentityWriters = c.IdentityWriters
	base.DefaultTopic = c.DefaultTopic
	base.AllowedTopics = c.AllowedTopics
	return base
}

// Validate reports every rule that cannot work, joined in one error.
func (c Config) Validate() error {
	return errors.Join(c.Limits(protocol.DefaultLimits()).Validate(), c.Pending.Validate())
}

// Live are the flags of Flags a running relay's configuration reload applies
// (daemon.Live); the others (require-topic, pending-*) need a restart.
var Live = []string{"max-message-bytes", "max-content-bytes", "max-tags", "created-at-lower-limit",
	"max-topics-per-event", "identity-writers", "default-topic", "allowed-topics"}

// Flags are the rules' command-line flags, with the relay's names, defaults
// and environment variables (`relay --help` lists them too).
func Flags() []cli.Flag {
	d := Default()
	return []cli.Flag{
		&cli.IntFlag{Name: "max-message-bytes", Value: d.MaxMessageBytes, EnvVars: []string{"CN_RELAY_MAX_MESSAGE_BYTES"},
			Usage: "largest client message (cnctl import: a line plus 10 bytes)"},
		&cli.IntFlag{Name: "max-content-bytes", Value: d.MaxContentBytes, EnvVars: []string{"CN_RELAY_MAX_CONTENT_BYTES"},
			Usage: "largest event content"},
		&cli.IntFlag{Name: "max-tags", Value: d.MaxTags, EnvVars: []string{"CN_RELAY_MAX_TAGS"},
			Usage: "most tags per event"},
		&cli.DurationFlag{Name: "created-at-lower-limit", Value: d.MaxPastAge, EnvVars: []string{"CN_RELAY_CREATED_AT_LOWER_LIMIT"},
			Usage: "refuse events whose created_at is further in the past than this (NIP-11 created_at_lower_limit; the default, 20 years, refuses 1970 and negative timestamps)"},
		&cli.IntFlag{Name: "max-topics-per-event", Value: d.MaxTopics, EnvVars: []string{"CN_RELAY_MAX_TOPICS_PER_EVENT"},
			Usage: "most distinct topics (t tags) per event; each costs an outbox row every consumer processes (an event inheriting more keeps the first ones)"},
		&cli.BoolFlag{Name: "require-topic", Value: d.RequireTopic, EnvVars: []string{"CN_RELAY_REQUIRE_TOPIC"},
			Usage: "refuse events that have no topic: no t tag, nothing stored to inherit one from, and not an identity kind (0, 3, 10000-19999)"},
		&cli.StringFlag{Name: "identity-writers", Value: string(d.IdentityWriters), EnvVars: []string{"CN_RELAY_IDENTITY_WRITERS"},
			Usage: "whose profiles and lists are published at once: members (authors who have posted in a topic here, or were admitted; a newcomer's wait, answered \"pending:\", until its first post) or any"},
		&cli.StringFlag{Name: "default-topic", EnvVars: []string{"CN_RELAY_DEFAULT_TOPIC"},
			Usage: "single-community mode: events with no topic and nothing to inherit go to this topic instead of being refused (default: off)"},
		&cli.StringSliceFlag{Name: "allowed-topics", EnvVars: []string{"CN_RELAY_ALLOWED_TOPICS"},
			Usage: "the only topics accepted (comma separated; default: all)"},
		&cli.IntFlag{Name: "pending-per-key", Value: d.Pending.PerKey, EnvVars: []string{"CN_RELAY_PENDING_PER_KEY"},
			Usage: "profiles and lists (effective keys) one newcomer may have waiting for its first post"},
		&cli.Int64Flag{Name: "pending-max", Value: d.Pending.Max, EnvVars: []string{"CN_RELAY_PENDING_MAX"},
			Usage: "newcomers' profiles and lists that may wait in all (beyond: rate-limited)"},
		&cli.DurationFlag{Name: "pending-max-age", Value: d.Pending.MaxAge, EnvVars: []string{"CN_RELAY_PENDING_MAX_AGE"},
			Usage: "how long a newcomer's profile or list waits for its first post before the relay deletes it"},
	}
}

// FromFlags maps Flags, as c parsed them, onto a Config and validates it.
func FromFlags(c *cli.Context) (Config, error) {
	r := Config{
		MaxMessageBytes: c.Int("max-message-bytes"),
		MaxContentBytes: c.Int("max-content-bytes"),
		MaxTags:         c.Int("max-tags"),
		MaxPastAge:      c.Duration("created-at-lower-limit"),
		MaxTopics:       c.Int("max-topics-per-event"),
		RequireTopic:    c.Bool("require-topic"),
		Pending: store.PendingLimits{PerKey: c.Int("pending-per-key"), Max: c.Int64("pending-max"),
			MaxAge: c.Duration("pending-max-age")},
	}
	var err error
	if r.IdentityWriters, err = protocol.ParseIdentityWriters(c.String("identity-writers")); err != nil {
		return r, err
	}
	if t := c.String("default-topic"); t != "" {
		if r.DefaultTopic = protocol.NormalizeTopic(t); r.DefaultTopic == "" {
			return r, fmt.Errorf("--default-topic %q normalises to nothing", t)
		}
	}
	if topics := c.StringSlice("allowed-topics"); len(topics) > 0 {
		r.AllowedTopics = make(map[string]bool, len(topics))
		for _, t := range topics {
			if n := protocol.NormalizeTopic(t); n != "" {
				r.AllowedTopics[n] = true
			}
		}
	}
	return r, r.Validate()
}
