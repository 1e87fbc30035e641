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
	return scanEvents(q.Query(ctx, `SELECT `+schema.EventColumns+` FROM cn_relay.events e
		WHERE e.pubkey = $1 AND e.kind = ANY($2) ORDER BY e.created_at, e.id`, self, []int{KindAdd, KindRemove}))
}

// StoredRoles returns the node's stored 33534 events and its deletions (kind
// 5) that address a 33534, whatever their visibility: what ProjectRoles folds.
func StoredRoles(ctx context.Context, q Querier, self string) ([]*nostr.Event, error) {
	return scanEvents(q.Query(ctx, `SELECT `+schema.EventColumns+` FROM cn_relay.events e
		WHERE e.pubkey = $1 AND (e.kind = $2 OR e.kind = 5 AND EXISTS (SELECT 1 FROM jsonb_array_elements(e.tags) t
			WHERE t->>0 = 'a' AND starts_with(t->>1, $2::text || ':')))
		ORDER BY e.created_at, e.id`, self, KindRole))
}

// StoredList returns the node's newest stored 13534 (later created_at, ties
// to the lower id), or nil.
func StoredList(ctx context.Context, q Querier, self string) (*nostr.Event, error) {
	evs, err := scanEvents(q.Query(ctx, `SELECT `+schema.EventColumns+` FROM cn_relay.events e
		WHERE e.pubkey = $1 AND e.kind = $2 ORDER BY e.created_at DESC, e.id LIMIT 1`, self, KindMembers))
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	return evs[0], nil
}

func scanEvents(rows pgx.Rows, err error) ([]*nostr.Event, error) {
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

// State is NIP-43 membership as the relay keeps it: the registers
// (cn_relay.nip43_members), the defined roles (cn_relay.nip43_roles) and the
// members' roles (cn_relay.nip43_members.roles; members without roles left
// out).
type State struct {
	Registers map[string]Register
	Roles     map[string]Role
	Assigned  map[string][]string
}

// LiveState reads the state the relay kept.
func LiveState(ctx context.Context, q Querier) (State, error) {
	regs, err := Live(ctx, q)
	if err != nil {
		return State{}, err
	}
	st := State{Registers: regs, Roles: map[string]Role{}, Assigned: map[string][]string{}}
	rows, err := q.Query(ctx, `SELECT id, label, description, color, ord, at, event_id FROM cn_relay.nip43_roles`)
	if err != nil {
		return State{}, fmt.Errorf("read roles: %w", err)
	}
	for rows.Next() {
		var r Role
		if err := rows.Scan(&r.ID, &r.Label, &r.Description, &r.Color, &r.Order, &r.At, &r.EventID); err != nil {
			rows.Close()
			return State{}, fmt.Errorf("read roles: %w", err)
		}
		st.Roles[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return State{}, fmt.Errorf("read roles: %w", err)
	}
	rows, err = q.Query(ctx, `SELECT pubkey, roles FROM cn_relay.nip43_members WHERE cardinality(roles) > 0`)
	if err != nil {
		return State{}, fmt.Errorf("read members' roles: %w", err)
	}
	for rows.Next() {
		var pk string
		var ids []string
		if err := rows.Scan(&pk, &ids); err != nil {
			rows.Close()
			return State{}, fmt.Errorf("read members' roles: %w", err)
		}
		st.Assigned[pk] = ids
	}
	return st, rows.Err()
}

// StoredState recomputes the state from the node's stored events: the
// registers from its 8000/8001 (Project), the roles from its 33534 and their
// deletions (ProjectRoles), the members' roles from its newest 13534
// (ProjectAssignments). It returns how many events it read.
func StoredState(ctx context.Context, q Querier, self string) (State, int, error) {
	evs, err := Stored(ctx, q, self)
	if err != nil {
		return State{}, 0, err
	}
	roleEvs, err := StoredRoles(ctx, q, self)
	if err != nil {
		return State{}, 0, err
	}
	list, err := StoredList(ctx, q, self)
	if err != nil {
		return State{}, 0, err
	}
	st := State{Registers: Project(self, evs), Roles: ProjectRoles(self, roleEvs)}
	st.Assigned = ProjectAssignments(list, st.Registers, st.Roles)
	n := len(evs) + len(roleEvs)
	if list != nil {
		n++
	}
	return st, n, nil
}

// Diff describes, one line each, where live differs from st (keys, role ids,
// keys' roles), sorted within each part.
func (st State) Diff(live State) []string {
	var out []string
	for _, pk := range Diff(live.Registers, st.Registers) {
		out = append(out, fmt.Sprintf("register %s: kept %+v, recomputed %+v", pk, live.Registers[pk], st.Registers[pk]))
	}
	for _, id := range DiffRoles(live.Roles, st.Roles) {
		out = append(out, fmt.Sprintf("role %s: kept %+v, recomputed %+v", id, live.Roles[id], st.Roles[id]))
	}
	for _, pk := range DiffAssignments(live.Assigned, st.Assigned) {
		out = append(out, fmt.Sprintf("roles of %s: kept %v, recomputed %v", pk, live.Assigned[pk], st.Assigned[pk]))
	}
	return out
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

// Replace writes st as the live state inside tx (cnctl members rebuild
// --write), holding the effective-key lock of the node's 13534 as every other
// writer does. The 13534 is not re-signed: the next change does.
func Replace(ctx context.Context, tx pgx.Tx, self string, st State) error {
	projected := st.Registers
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
	for pk, ids := range st.Assigned {
		if _, err := tx.Exec(ctx, `UPDATE cn_relay.nip43_members SET roles = $2 WHERE pubkey = $1`, pk, ids); err != nil {
			return fmt.Errorf("replace members' roles: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, "DELETE FROM cn_relay.nip43_roles"); err != nil {
		return fmt.Errorf("replace roles: %w", err)
	}
	for _, r := range st.Roles {
		if _, err := tx.Exec(ctx, `INSERT INTO cn_relay.nip43_roles (id, label, description, color, ord, at, event_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			r.ID, r.Label, r.Description, r.Color, r.Order, r.At, r.EventID); err != nil {
			return fmt.Errorf("replace roles: %w", err)
		}
	}
	return nil
}
