package protocol

import (
	"errors"
	"fmt"
	"time"

	"github.com/nbd-wtf/go-nostr/nip11"
)

// Limits are the relay's protocol limits (also published in NIP-11 `limitation`, see
// Limitation). A Limits value is read-only once in use: its maps are shared by copies
// and read concurrently.
//
// A numeric limit that is zero or negative disables that check; Validate rejects such
// a configuration, so a relay that validates its config always runs with every limit.
type Limits struct {
	// MaxMessageBytes bounds one WebSocket message (default 131072). A larger message
	// is refused with a NOTICE; the relay's socket read limit must therefore be set
	// above it (or the message read through a LimitReader) so the NOTICE can be sent.
	MaxMessageBytes int
	// MaxContentBytes bounds an event's content in bytes (default 65536).
	MaxContentBytes int
	// MaxTags bounds the number of tags of an event (default 2000).
	MaxTags int
	// MaxTagValueBytes bounds, in bytes, the first value of every single-letter tag
	// (the tags relays index, NIP-01), a normalised topic, and every #x value of a
	// filter (default 1024). 1024 keeps an index entry far below Postgres' B-tree limit
	// of about 2700 bytes and is what strfry uses; other tag elements (for example the
	// zap request JSON in a NIP-57 `description` tag) are bounded only by
	// MaxMessageBytes.
	MaxTagValueBytes int
	// MaxFutureSkew: an event whose created_at is further than this in the future is
	// invalid (default 15m).
	MaxFutureSkew time.Duration
	// MaxPastAge: an event whose created_at is further than this in the past is
	// invalid (default 20 years: a created_at of 0, 1 or -5 is refused, and every
	// real Nostr event, the first ones are from November 2020, is welcome until
	// 2040). NIP-11 publishes it as created_at_lower_limit, in seconds.
	MaxPastAge time.Duration
	// MaxFilters bounds the filters of one REQ or COUNT (default 10).
	MaxFilters int
	// MaxFilterValues bounds each list of a filter: ids, authors, kinds and every #x
	// (default 500).
	MaxFilterValues int
	// MaxLimit caps a filter's `limit` (default 500); larger values are lowered, not
	// refused.
	MaxLimit int
	// DefaultLimit is the limit of a filter without one (default 100).
	DefaultLimit int
	// MaxSubIDBytes bounds a subscription id in bytes (NIP-01 says 64 characters;
	// counting bytes is stricter for non-ASCII ids). Default 64.
	MaxSubIDBytes int
	// TopicRules are the community's topic rules (see TopicRules).
	TopicRules
	// Search enables NIP-50 `search` in filters (default true: the node's indexer
	// keeps the index the relay searches). Off, such a filter gets ReasonFilterSearch.
	Search bool
	// MaxSearchBytes bounds a filter's `search` string (default 256).
	MaxSearchBytes int
}

// DefaultMaxPastAge is the default Limits.MaxPastAge: 20 years of 365 days.
const DefaultMaxPastAge = 20 * 365 * 24 * time.Hour

// DefaultLimits returns the limits documented on each Limits field.
func DefaultLimits() Limits {
	return Limits{
		MaxMessageBytes:  131072,
		MaxContentBytes:  65536,
		MaxTags:          2000,
		MaxTagValueBytes: 1024,
		MaxFutureSkew:    15 * time.Minute,
		MaxPastAge:       DefaultMaxPastAge,
		MaxFilters:       10,
		MaxFilterValues:  500,
		MaxLimit:         500,
		DefaultLimit:     100,
		MaxSubIDBytes:    64,
		TopicRules:       DefaultTopicRules(),
		Search:           true,
		MaxSearchBytes:   256,
	}
}

// Validate reports a configuration error: a limit that is not positive, a default
// limit above the cap, or an allowed topic that is not in normalised form (it could
// never match).
func (l Limits) Validate() error {
	var errs []error
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %d", name, v))
		}
	}
	positive("MaxMessageBytes", l.MaxMessageBytes)
	positive("MaxContentBytes", l.MaxContentBytes)
	positive("MaxTags", l.MaxTags)
	positive("MaxTagValueBytes", l.MaxTagValueBytes)
	positive("MaxFilters", l.MaxFilters)
	positive("MaxFilterValues", l.MaxFilterValues)
	positive("MaxLimit", l.MaxLimit)
	positive("DefaultLimit", l.DefaultLimit)
	positive("MaxSubIDBytes", l.MaxSubIDBytes)
	if l.MaxFutureSkew <= 0 {
		errs = append(errs, fmt.Errorf("MaxFutureSkew must be positive, got %s", l.MaxFutureSkew))
	}
	if l.MaxPastAge <= 0 {
		errs = append(errs, fmt.Errorf("MaxPastAge must be positive, got %s", l.MaxPastAge))
	}
	if l.MaxTopics <= 0 {
		errs = append(errs, fmt.Errorf("MaxTopics must be positive, got %d", l.MaxTopics))
	}
	if l.DefaultLimit > l.MaxLimit {
		errs = append(errs, fmt.Errorf("DefaultLimit %d is above MaxLimit %d", l.DefaultLimit, l.MaxLimit))
	}
	if _, err := ParseIdentityWriters(string(l.IdentityWriters)); err != nil {
		errs = append(errs, err)
	}
	if t := l.DefaultTopic; t != "" {
		if n := NormalizeTopic(t); n != t {
			errs = append(errs, fmt.Errorf("default topic %q is not normalised (want %q)", t, n))
		} else if !l.Enabled(t) {
			errs = append(errs, fmt.Errorf("default topic %q is not an allowed topic", t))
		}
	}
	for topic := range l.AllowedTopics {
		if n := NormalizeTopic(topic); n == "" || n != topic {
			errs = append(errs, fmt.Errorf("allowed topic %q is not normalised (want %q)", topic, n))
		}
	}
	return errors.Join(errs...)
}

// Limitation returns the NIP-11 `limitation` object for these limits. RestrictedWrites
// is set when events need a topic or topics are restricted; the relay sets the fields
// it owns (AuthRequired, MaxSubscriptions, ...) itself.
func (l Limits) Limitation() nip11.RelayLimitationDocument {
	return nip11.RelayLimitationDocument{
		MaxMessageLength: l.MaxMessageBytes,
		MaxFilters:       l.MaxFilters,
		MaxLimit:         l.MaxLimit,
		MaxSubidLength:   l.MaxSubIDBytes,
		MaxEventTags:     l.MaxTags,
		MaxContentLength: l.MaxContentBytes,
		RestrictedWrites: l.RequireTopic || l.AllowedTopics != nil,
	}
}

// Verdict is a relay's answer to one EVENT: the OK flag and the NIP-01 message
// (with its machine-readable prefix, or "" for a plain acceptance).
type Verdict struct {
	OK      bool
	Message string
	// Code names a refusal for metrics and tests (see Code): set by the
	// packages that declare their refusals, zero for an acceptance and for
	// refusals not declared yet.
	Code Code
	// Withheld: the event was kept, for the first time, withheld from the
	// shared read paths (a NIP-29 invite code: groups.Decision.Withhold), so
	// the relay that took it delivers it live to the subscriptions allowed
	// to read it (it has no outbox row).
	Withheld bool
}
