package membership

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/schema"
)

// Querier runs queries: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Live returns the registers as the relay keeps them (cn_relay.nip43_members).
func Live(ctx context.Context, q Querier) (map[string]Register, error) {
	rows, err := q.Query(ctx, `SELECT pubkey, member, at, event_id, via FROM cn_relay.nip43_members`)
	if err != nil {
		return nil, fmt.Errorf("read membership: %w", err)
	}
	defer rows.Close()
	out := map[string]Register{}
	for rows.Next() {
		var pk string
		var r Register
		if err := rows.Scan(&pk, &r.Member, &r.At, &r.ID, &r.Via); err != nil {
			return nil, fmt.Errorf("read membership: %w", err)
		}
		out[pk] = r
	}
	return out, rows.Err()
}

// Stored returns the node's stored 8000 and 8001 events (self's), whatever
// their visibility: what Project folds.
func Stored(ctx context.Context, q Querier, self string) ([]*nostr.Event, error) {
	rows, err := q.Query(ctx, `SELECT `+schema.EventColumns+` FROM cn_relay.events e
		WHERE e.pubkey = $1 AND e.kind = ANY($2) ORDER BY e.created_at, e.id`, self, []int{KindAdd, KindRemove})
	if err != nil {
		return nil, fmt.Errorf("read membership events: %w", err)
	}
	defer rows.Close()
	var out []*nostr.Event
	for rows.Next() {
		ev := &nostr.Event{}
		var tags []byte
		var at int64
		if err := rows.Scan(&ev.ID, &ev.PubKey, &at, &ev.Kind, &tags, &ev.Content, &ev.Sig); err != nil {
			return nil, fmt.Errorf("read membership events: %w", err)
		}
		ev.CreatedAt = nostr.Timestamp(at)
		if err := json.Unmarshal(tags, &ev.Tags); err != nil {
			return nil, fmt.Errorf("read membership event %s: tags: %w", ev.ID, err)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

// Diff lists the keys whose live register differs from the projected one.
func Diff(live, projected map[string]Register) []string {
	keys := map[string]bool{}
	for k := range live {
		keys[k] = true
	}
	for k := range projected {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if live[k] != projected[k] {
			out = append(out, k)
		}
	}
	return out
}

// Replace writes projected as the live registers inside tx (cnctl members
// rebuild --write), holding the effective-key lock of the node's 13534 as
// every other writer does. The 13534 is not re-signed: the next change does.
func Replace(ctx context.Context, tx pgx.Tx, self string, projected map[string]Register) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock("+schema.EffectiveKeyLockSQL+")", fmt.Sprintf("%d:%s", KindMembers, self)); err != nil {
		return fmt.Errorf("lock membership: %w", err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM cn_relay.nip43_members"); err != nil {
		return fmt.Errorf("replace membership: %w", err)
	}
	for pk, r := range projected {
		if _, err := tx.Exec(ctx, `INSERT INTO cn_relay.nip43_members (pubkey, member, at, event_id, via) VALUES ($1, $2, $3, $4, $5)`,
			pk, r.Member, r.At, r.ID, r.Via); err != nil {
			return fmt.Errorf("replace membership: %w", err)
		}
	}
	return nil
}
