package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/kukuri/communitynode/schema"
)

// StoredRule is a rule in cn_moderation.rules.
type StoredRule struct {
	Rule
	Version   int
	UpdatedAt time.Time
}

// Change is one difference between the stored rule set and a rules file.
type Change struct {
	Name    string `json:"name"`
	Change  string `json:"change"` // added, changed, removed, unchanged
	Version int    `json:"version"`
}

// ListRules returns the stored rules in file order.
func ListRules(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]StoredRule, error) {
	rows, err := q.Query(ctx, "SELECT spec, version, updated_at FROM cn_moderation.rules ORDER BY position, name")
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredRule, error) {
		var sr StoredRule
		var spec []byte
		if err := row.Scan(&spec, &sr.Version, &sr.UpdatedAt); err != nil {
			return sr, err
		}
		return sr, json.Unmarshal(spec, &sr.Rule)
	})
	if err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	return out, nil
}

// ApplyRules makes rules the stored rule set, in one transaction: new rules get
// version 1, changed ones their next version, missing ones are removed. With
// execute false nothing is written and the changes are only reported. actor
// (user@host) is recorded with every change.
func ApplyRules(ctx context.Context, pool *pgxpool.Pool, rules []Rule, actor string, execute bool) ([]Change, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("apply rules: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.ModerationRulesLock); err != nil {
		return nil, fmt.Errorf("apply rules: %w", err)
	}
	stored, err := ListRules(ctx, tx)
	if err != nil {
		return nil, err
	}
	byName := map[string]StoredRule{}
	for _, sr := range stored {
		byName[sr.Name] = sr
	}
	now := time.Now()
	var changes []Change
	var b pgx.Batch
	record := func(name string, version int, change string, spec []byte) {
		changes = append(changes, Change{Name: name, Change: change, Version: version})
		if change != "unchanged" {
			b.Queue(`INSERT INTO cn_moderation.rule_changes (name, version, change, spec, changed_by, changed_at)
				VALUES ($1, $2, $3, $4, $5, $6)`, name, version, change, spec, actor, now)
		}
	}
	for i, r := range rules {
		spec := r.Spec()
		old, ok := byName[r.Name]
		delete(byName, r.Name)
		switch {
		case !ok:
			record(r.Name, 1, "added", spec)
			b.Queue(`INSERT INTO cn_moderation.rules (name, version, position, spec, updated_at) VALUES ($1, 1, $2, $3, $4)`,
				r.Name, i, spec, now)
		case !bytes.Equal(old.Spec(), spec):
			record(r.Name, old.Version+1, "changed", spec)
			b.Queue(`UPDATE cn_moderation.rules SET version = $2, position = $3, spec = $4, updated_at = $5 WHERE name = $1`,
				r.Name, old.Version+1, i, spec, now)
		default:
			record(r.Name, old.Version, "unchanged", nil)
			b.Queue(`UPDATE cn_moderation.rules SET position = $2 WHERE name = $1`, r.Name, i)
		}
	}
	for _, sr := range stored {
		if _, gone := byName[sr.Name]; gone {
			record(sr.Name, sr.Version, "removed", nil)
			b.Queue(`DELETE FROM cn_moderation.rules WHERE name = $1`, sr.Name)
		}
	}
	if !execute {
		return changes, nil
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return nil, fmt.Errorf("apply rules: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("apply rules: %w", err)
	}
	return changes, nil
}
