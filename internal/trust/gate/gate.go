// Package gate is the relay's spam gate (relay --min-rank): it admits authors
// by the ranks the trust daemon (internal/trust) writes to cn_trust. It is a
// package of its own so that the relay links a rank lookup, not the web of
// trust's computation and publisher.
package gate

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultRefresh is how often the relay's gate re-reads the ranks.
const DefaultRefresh = 30 * time.Second

// Algorithm names the trust algorithm whose ranks and provider the gate reads;
// internal/trust computes and publishes under this name (trust.Algorithm).
const Algorithm = "trust-v1"

// Gate is the relay's spam gate (relay --min-rank): it admits an author whose
// rank is at least MinRank, a seed of the latest run, or an exempt key (the
// relay's admins and the node key). It reads the ranks written by the trust
// daemon's latest run into memory every refresh, so Admit never touches the
// database. Until a first run exists the gate admits everyone (it cannot tell
// spam from a new community) and says so in the log; identity events (profiles,
// lists) are the relay's to exempt, not the gate's.
//
// MinRank and Exempt may change while the gate runs (SetPolicy, a relay
// configuration reload); they are read under the gate's lock.
type Gate struct {
	Pool    *pgxpool.Pool
	MinRank int           // set before Load; later only through SetPolicy
	Exempt  []string      // set before Load; later only through SetPolicy
	Refresh time.Duration // DefaultRefresh when 0
	Logger  *slog.Logger

	mu       sync.RWMutex
	ready    bool // a run exists
	allowed  map[string]struct{}
	provider string
}

// Run refreshes the gate until ctx is done; call Load once before (the relay
// should not start with a gate it cannot read). Errors keep the last state and
// are logged.
func (g *Gate) Run(ctx context.Context) error {
	logger := g.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	every := g.Refresh
	if every == 0 {
		every = DefaultRefresh
	}
	if min := g.Threshold(); min > 0 && !g.Ready() {
		logger.Warn("relay --min-rank: no trust run yet (is cmd/trust running?); admitting every author until there is one", "min_rank", min)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		was := g.Ready()
		if err := g.Load(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			logger.Error("relay --min-rank: reading ranks failed; keeping the previous ones", "err", err)
			continue
		}
		if min := g.Threshold(); min > 0 && !was && g.Ready() {
			logger.Info("relay --min-rank: ranks available; gate active", "min_rank", min)
		}
	}
}

// Load reads the ranks once.
func (g *Gate) Load(ctx context.Context) error {
	var runs int
	var provider string
	g.mu.RLock()
	minRank, exempt := g.MinRank, g.Exempt
	g.mu.RUnlock()
	allowed := map[string]struct{}{}
	for _, pk := range exempt {
		allowed[pk] = struct{}{}
	}
	if err := g.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT 1 FROM cn_trust.runs LIMIT 1) r),
			coalesce((SELECT pubkey FROM cn_trust.provider WHERE algorithm = $1), '')`, Algorithm).Scan(&runs, &provider); err != nil {
		return fmt.Errorf("read trust state: %w", err)
	}
	if minRank > 0 && runs > 0 {
		rows, err := g.Pool.Query(ctx, `SELECT pubkey FROM cn_trust.scores WHERE rank >= $1 UNION SELECT pubkey FROM cn_trust.seeds`, minRank)
		if err != nil {
			return fmt.Errorf("read ranks: %w", err)
		}
		for rows.Next() {
			var pk string
			if err := rows.Scan(&pk); err != nil {
				return fmt.Errorf("read ranks: %w", err)
			}
			allowed[pk] = struct{}{}
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read ranks: %w", err)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.MinRank != minRank || !slices.Equal(g.Exempt, exempt) {
		return nil // SetPolicy ran meanwhile and loaded its own
	}
	g.ready, g.allowed, g.provider = runs > 0, allowed, provider
	return nil
}

// Policy returns the gate's threshold and exempt keys in force.
func (g *Gate) Policy() (minRank int, exempt []string) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.MinRank, slices.Clone(g.Exempt)
}

// SetPolicy makes minRank and exempt the gate's from now on and loads the
// ranks for them; on error the gate keeps its previous policy and ranks.
func (g *Gate) SetPolicy(ctx context.Context, minRank int, exempt []string) error {
	g.mu.Lock()
	oldRank, oldExempt := g.MinRank, g.Exempt
	g.MinRank, g.Exempt = minRank, slices.Clone(exempt)
	g.mu.Unlock()
	if err := g.Load(ctx); err != nil {
		g.mu.Lock()
		g.MinRank, g.Exempt = oldRank, oldExempt
		g.mu.Unlock()
		return err
	}
	return nil
}

// Ready reports whether a trust run exists (before it, Admit admits all).
func (g *Gate) Ready() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.ready
}

// Admit reports whether pubkey may publish (see Gate).
func (g *Gate) Admit(pubkey string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.MinRank <= 0 || !g.ready {
		return true
	}
	_, ok := g.allowed[pubkey]
	return ok
}

// Ranked reports whether pubkey passes the gate on the strength of a trust run
// (a rank at or above MinRank, a seed, or exempt): false when the gate is off or
// no run is loaded yet, unlike Admit. The relay's store makes such keys members
// (store.Store.SetMemberGate).
func (g *Gate) Ranked(pubkey string) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.allowed[pubkey]
	return g.MinRank > 0 && g.ready && ok
}

// Threshold is the minimum rank (0: the gate is off).
func (g *Gate) Threshold() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.MinRank
}

// Provider is the NIP-85 provider pubkey of trust-v1 ("" until the daemon ran).
func (g *Gate) Provider() string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.provider
}
