package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"
)

// A configuration reload (SIGHUP under Main, or a caller of Reloader.Reload)
// rebuilds a daemon's configuration exactly as its start did: the same
// command line, parsed again by a fresh App from the same constructor, so the
// environment and --config are read again with the same precedence (command
// line, environment, file, default) and the same validation. The new flag
// values are compared with the running ones:
//
//   - a changed flag of the daemon's Live set is applied (the daemon's apply
//     function takes the new options and installs their live parts);
//   - a changed flag outside it needs a restart: it is reported, and the
//     running value stays (and is reported again by the next reload).
//
// A configuration that does not parse or validate (YAML error, unknown key,
// invalid value) is refused whole: nothing is applied, the error is logged on
// one line, and cn_config_reload_failures_total counts it. Each applied reload
// adds one to cn_config_generation (1 at start) and logs one line naming what
// changed and what needs a restart.

// Live is the set of a daemon's flags whose changes a reload applies to the
// running daemon; every other flag needs a restart.
type Live map[string]bool

// NewLive returns the set of names.
func NewLive(names ...string) Live {
	l := Live{}
	for _, n := range names {
		l[n] = true
	}
	return l
}

// Class says "live" or "restart" for flag name.
func (l Live) Class(name string) string {
	if l[name] {
		return "live"
	}
	return "restart"
}

// Values are a parse's flag values as text, by flag name.
type Values map[string]string

// FlagValues returns the value of every flag of c's command (a daemon's: its
// App's; --config and --help excepted) as text: slices joined with commas.
func FlagValues(c *cli.Context) Values {
	v := Values{}
	flags := c.App.Flags
	if c.Command != nil && len(c.Command.Flags) > 0 {
		flags = c.Command.Flags
	}
	for _, f := range flags {
		name := f.Names()[0]
		if name == "help" || name == "config" {
			continue
		}
		switch x := c.Value(name).(type) {
		case cli.StringSlice:
			v[name] = strings.Join(x.Value(), ",")
		case []string:
			v[name] = strings.Join(x, ",")
		default:
			if s, ok := f.(cli.DocGenerationSliceFlag); ok && s.IsSliceFlag() {
				v[name] = strings.Join(c.StringSlice(name), ",")
				continue
			}
			v[name] = fmt.Sprint(x)
		}
	}
	return v
}

type reloadKey struct{}

type reloadContext struct {
	newApp   func(stdout, stderr io.Writer) *cli.App
	args     []string
	requests <-chan struct{}
}

// WithReload returns ctx carrying what a reload needs: the App constructor and
// the command line the daemon was started with, and the channel of reload
// requests (nil: none but Reloader.Reload's). Main sets it (SIGHUP); tests
// running an App in process set it themselves.
func WithReload(ctx context.Context, newApp func(stdout, stderr io.Writer) *cli.App, args []string, requests <-chan struct{}) context.Context {
	return context.WithValue(ctx, reloadKey{}, reloadContext{newApp: newApp, args: slices.Clone(args), requests: requests})
}

type reparseKey struct{}

// ReparseHook returns, when ctx is a reload's parse (NewSource), what the
// command's action must call with its parsed context instead of running:
// commands not built by App (cnctl dev) check it after their own validation.
func ReparseHook(ctx context.Context) (func(*cli.Context) error, bool) {
	f, ok := ctx.Value(reparseKey{}).(func(*cli.Context) error)
	return f, ok
}

// Source is how a daemon's configuration is built again: the cmd layer makes
// it (NewSource) and the composition root (internal/node) runs it with a
// Reloader. Its zero value reloads nothing (Parse nil).
type Source[T any] struct {
	// Requests are the reload requests (SIGHUP); nil: none.
	Requests <-chan struct{}
	// Parse builds the options again as start did, with their flag values.
	Parse func(ctx context.Context) (T, Values, error)
	// Running are the flag values the daemon started with.
	Running Values
	// Live are the flags a reload applies.
	Live Live
	// Level is the logger's level (--log-level, live for every daemon).
	Level *slog.LevelVar
}

// NewSource returns the Source of the daemon c runs: build maps a parse onto
// its options, as the daemon's action did at start. Without WithReload on c's
// context the Source has no requests and Parse fails.
func NewSource[T any](c *cli.Context, live Live, build func(*cli.Context) (T, error)) Source[T] {
	rc, _ := c.Context.Value(reloadKey{}).(reloadContext)
	level, _ := c.App.Metadata[levelKey].(*slog.LevelVar)
	s := Source[T]{Requests: rc.requests, Running: FlagValues(c), Live: live, Level: level}
	s.Parse = func(ctx context.Context) (T, Values, error) {
		var out T
		var values Values
		if rc.newApp == nil {
			return out, nil, errors.New("this process cannot reload its configuration (started without daemon.Main)")
		}
		var buildErr error
		app := rc.newApp(io.Discard, io.Discard)
		err := app.RunContext(context.WithValue(ctx, reparseKey{}, func(c *cli.Context) error {
			values = FlagValues(c)
			out, buildErr = build(c)
			return buildErr
		}), rc.args)
		if err == nil {
			err = buildErr
		}
		return out, values, err
	}
	return s
}

// Reloader runs a daemon's reloads; see the comment at the top of this file.
type Reloader[T any] struct {
	name   string
	src    Source[T]
	apply  func(next T) error
	logger *slog.Logger

	generation prometheus.Gauge
	failures   prometheus.Counter

	mu      sync.Mutex // one reload at a time
	running Values
	gen     int
}

// NewReloader returns the Reloader of daemon name, registering
// cn_config_generation and cn_config_reload_failures_total with reg. apply
// installs the live parts of a new configuration; an error from it refuses the
// reload whole (apply must then have changed nothing).
func NewReloader[T any](name string, src Source[T], apply func(next T) error, reg prometheus.Registerer, logger *slog.Logger) *Reloader[T] {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Reloader[T]{name: name, src: src, apply: apply, logger: logger, running: maps.Clone(src.Running),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cn_config_generation",
			Help: "The running configuration's generation: 1 at start, +1 per applied reload (SIGHUP)."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cn_config_reload_failures_total",
			Help: "Configuration reloads refused whole (the file or a value did not parse or validate); the running configuration stayed."}),
	}
	r.generation.Set(1)
	r.gen = 1
	if reg != nil {
		reg.MustRegister(r.generation, r.failures)
	}
	return r
}

// Result is what one applied reload did.
type Result struct {
	Generation   int
	Changed      []string // live flags applied
	NeedsRestart []string // changed flags that need a restart; their running values stay
}

// Run serves reload requests until ctx is done.
func (r *Reloader[T]) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-r.src.Requests:
			if !ok {
				<-ctx.Done()
				return nil
			}
			_, _ = r.Reload(ctx) // logged and counted there
		}
	}
}

// Reload reads the configuration again and applies its live changes; on error
// nothing changed.
func (r *Reloader[T]) Reload(ctx context.Context) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res, err := r.reload(ctx)
	if err != nil {
		r.failures.Inc()
		r.logger.Error(r.name+": configuration reload refused; the running configuration stays", "err", err.Error())
		return Result{}, err
	}
	r.gen++
	r.generation.Set(float64(r.gen))
	res.Generation = r.gen
	r.logger.Info(r.name+": configuration reloaded", "generation", res.Generation,
		"changed", strings.Join(res.Changed, ","), "needs_restart", strings.Join(res.NeedsRestart, ","))
	// The level changes after the line above, which is logged at the old one.
	if r.src.Level != nil && slices.Contains(res.Changed, "log-level") {
		var level slog.Level
		if err := level.UnmarshalText([]byte(strings.ToUpper(r.running["log-level"]))); err == nil {
			r.src.Level.Set(level)
		}
	}
	return res, nil
}

func (r *Reloader[T]) reload(ctx context.Context) (Result, error) {
	if r.src.Parse == nil {
		return Result{}, errors.New("reload not available")
	}
	next, values, err := r.src.Parse(ctx)
	if err != nil {
		return Result{}, err
	}
	var res Result
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if values[name] == r.running[name] {
			continue
		}
		switch {
		case name == "log-level":
			res.Changed = append(res.Changed, name)
		case r.src.Live[name]:
			res.Changed = append(res.Changed, name)
		default:
			res.NeedsRestart = append(res.NeedsRestart, name) // never its value: URLs hold passwords
		}
	}
	if r.apply != nil {
		if err := r.apply(next); err != nil {
			return Result{}, err
		}
	}
	for _, name := range res.Changed {
		r.running[name] = values[name]
	}
	return res, nil
}

// Generation is the running configuration's generation.
func (r *Reloader[T]) Generation() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}
