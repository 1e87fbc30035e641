package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// FailurePolicy says what happens to a row whose handler keeps failing.
type FailurePolicy string

const (
	// PolicyHalt stops the consumer before the row: Run returns ErrHalted.
	PolicyHalt FailurePolicy = "halt"
	// PolicyPark moves the row to the dead-letter table and goes on.
	PolicyPark FailurePolicy = "park"
)

// Config tunes a Consumer. Zero values take the defaults shown.
type Config struct {
	Name            string        // required: "index-v1", "moderation-v1", ...
	BatchSize       int           // rows per handler call; 500
	PollInterval    time.Duration // longest idle wait between polls; 1s
	MinPollInterval time.Duration // first idle wait after work; 50ms (capped at PollInterval)
	DisableListen   bool          // poll only (tests, benchmarks, poolers without LISTEN)
	LeaseTTL        time.Duration // how long a lease lasts without renewal; 5s
	MaxAttempts     int           // handler attempts before split / park / halt; 5
	RetryBase       time.Duration // first retry delay; 100ms
	RetryMax        time.Duration // longest retry delay; 30s
	Policy          FailurePolicy // PolicyHalt
	// SynchronousCommit makes each offset commit wait for its WAL flush. Off by
	// default: the offset and the handler's same-transaction effects commit together,
	// so a crash can only lose both (they are applied again from the outbox), never
	// one of them; waiting for the disk on every batch buys nothing but latency.
	// A batch whose handler appended outbox rows (outbox.Append: the node's
	// labels and assertions) commits synchronously whatever this says, because
	// those rows are visible to everyone once committed (see outbox.AppendedSetting).
	SynchronousCommit bool
	OwnerID           string // identifies this instance; host:pid:random
	Logger            *slog.Logger
	Registerer        prometheus.Registerer // may be nil
}

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

func (c *Config) setDefaults() {
	if c.BatchSize == 0 {
		c.BatchSize = 500
	}
	if c.PollInterval == 0 {
		c.PollInterval = time.Second
	}
	if c.MinPollInterval == 0 {
		c.MinPollInterval = 50 * time.Millisecond
	}
	c.MinPollInterval = min(c.MinPollInterval, c.PollInterval)
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 5 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.RetryBase == 0 {
		c.RetryBase = 100 * time.Millisecond
	}
	if c.RetryMax == 0 {
		c.RetryMax = 30 * time.Second
	}
	if c.Policy == "" {
		c.Policy = PolicyHalt
	}
	if c.OwnerID == "" {
		host, _ := os.Hostname()
		c.OwnerID = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), randomHex(4))
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports a configuration the runtime cannot use.
func (c Config) Validate() error {
	var errs []error
	if !namePattern.MatchString(c.Name) {
		errs = append(errs, fmt.Errorf("consumer name %q: want lower-case letters, digits, '.', '_' or '-'", c.Name))
	}
	if c.BatchSize < 0 || c.BatchSize > 100_000 {
		errs = append(errs, fmt.Errorf("batch size %d out of range 1..100000", c.BatchSize))
	}
	if c.PollInterval < 0 || c.MinPollInterval < 0 || c.RetryBase < 0 || c.RetryMax < 0 {
		errs = append(errs, errors.New("intervals must not be negative"))
	}
	if c.LeaseTTL != 0 && c.LeaseTTL < 500*time.Millisecond {
		errs = append(errs, fmt.Errorf("lease TTL %v is below 500ms", c.LeaseTTL))
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("max attempts %d is negative", c.MaxAttempts))
	}
	if c.Policy != "" && c.Policy != PolicyHalt && c.Policy != PolicyPark {
		errs = append(errs, fmt.Errorf("failure policy %q: want halt or park", c.Policy))
	}
	return errors.Join(errs...)
}
