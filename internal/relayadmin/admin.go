package relayadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/groups"
	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// Actor is who makes a change: an admin pubkey through NIP-86 (source "nip86")
// or an operator's user@host through cnctl (source "cnctl").
type Actor struct {
	Name   string
	Source string
}

// Admin makes management changes. It is safe for concurrent use.
type Admin struct {
	Pool  *pgxpool.Pool
	Store *store.Publisher // hides and shows events, and admits keys, through the store path
	// TopicRules are the relay's: allowpubkey publishes the key's pending
	// identity events under them. protocol.DefaultTopicRules when unset.
	TopicRules protocol.TopicRules
	// Rules, if set, are the rules in force, read at each call instead of
	// TopicRules (the relay's store: a configuration reload changes them).
	Rules func() protocol.TopicRules
	Now   func() time.Time
	// Extensions add methods (package membership: the NIP-43 methods, when
	// the node keeps membership).
	Extensions []Extension
	// Committed, if set, is told the last outbox seq of each change it
	// committed (the relay's writer lease notes it: a REQ answered from
	// memory waits for it).
	Committed func(last int64)
	// Acknowledge, if set, is called after each change's commit and before
	// the method answers: it holds the answer while the relay may not yet
	// acknowledge writes (the writer lease's Await), and an error fails the
	// method (the change may be committed).
	Acknowledge func(ctx context.Context) error
}

// Extension is a set of NIP-86 methods declared by the package that owns
// them, served as the relay's own are (nip86.Set). Each commits and logs its
// own changes.
type Extension interface {
	Methods() []nip86.Method
}

// methods are the methods this relay serves: NIP-86's in NIP-86 order, the
// groups' (NIP-29, groups.AdminMethods: always served, as the relay may host
// groups), ReplayMethod, then the Extensions.
func (a *Admin) methods() nip86.Set {
	var s nip86.Set
	add := func(min, max int, do func(context.Context, *nip86.Call) (any, error), names ...string) {
		for _, n := range names {
			s = append(s, nip86.Method{Name: n, Min: min, Max: max, Do: do})
		}
	}
	add(0, 0, a.supportedMethods, "supportedmethods")
	add(1, 2, a.changePubkey, "banpubkey", "unbanpubkey")
	add(0, 0, a.listPubkeys, "listbannedpubkeys")
	add(1, 2, a.changePubkey, "allowpubkey", "unallowpubkey")
	add(0, 0, a.listPubkeys, "listallowedpubkeys")
	add(0, 0, a.listQueue, "listeventsneedingmoderation")
	add(1, 2, a.changeEvent, "allowevent", "unallowevent", "banevent", "unbanevent")
	add(0, 0, a.listEvents, "listbannedevents", "listallowedevents")
	add(1, 1, a.changeInfo, "changerelayname", "changerelaydescription", "changerelayicon")
	add(1, 1, a.changeKind, "allowkind", "disallowkind")
	add(0, 0, a.listKinds, "listallowedkinds", "listdisallowedkinds")
	add(1, 2, a.changeIP, "blockip", "unblockip")
	add(0, 0, a.listIPs, "listblockedips")
	s = append(s, groups.AdminMethods(a.Pool)...)
	add(3, 3, a.replay, ReplayMethod)
	for _, x := range a.Extensions {
		s = append(s, x.Methods()...)
	}
	return s
}

// rules are the topic rules allowpubkey publishes under.
func (a *Admin) rules() protocol.TopicRules {
	if a.Rules != nil {
		return a.Rules().OrDefault()
	}
	return a.TopicRules.OrDefault()
}

// Do runs one method with its NIP-86 parameters and returns its NIP-86 result.
// Every change commits in one transaction with its effects and its log row. A
// call refused for what it asks is a *nip86.BadRequest.
func (a *Admin) Do(ctx context.Context, actor Actor, method string, params []json.RawMessage) (any, error) {
	return a.methods().Do(ctx, actor.Name, actor.Source, method, params)
}

func (a *Admin) supportedMethods(context.Context, *nip86.Call) (any, error) {
	return a.methods().Names(), nil
}

func (a *Admin) listPubkeys(ctx context.Context, c *nip86.Call) (any, error) {
	return a.list(ctx, "SELECT pubkey, reason FROM cn_admin.pubkeys WHERE status = $1 ORDER BY pubkey", "pubkey",
		strings.TrimSuffix(strings.TrimPrefix(c.Method, "list"), "pubkeys"))
}

func (a *Admin) listEvents(ctx context.Context, c *nip86.Call) (any, error) {
	return a.list(ctx, "SELECT event_id, reason FROM cn_admin.events WHERE status = $1 ORDER BY event_id", "id",
		strings.TrimSuffix(strings.TrimPrefix(c.Method, "list"), "events"))
}

func (a *Admin) listIPs(ctx context.Context, _ *nip86.Call) (any, error) {
	return a.list(ctx, "SELECT prefix, reason FROM cn_admin.ips WHERE $1 = $1 ORDER BY prefix", "ip", "")
}

func (a *Admin) listKinds(ctx context.Context, c *nip86.Call) (any, error) {
	return a.kinds(ctx, c.Method == "listallowedkinds")
}

func (a *Admin) listQueue(ctx context.Context, _ *nip86.Call) (any, error) {
	items, err := moderation.Queue(ctx, a.Pool, 500)
	if err != nil {
		return nil, err
	}
	out := []map[string]string{}
	for _, it := range items {
		out = append(out, map[string]string{"id": it.EventID, "reason": queueReason(it)})
	}
	return out, nil
}

// change is the method that runs the change its params describe with commit
// and answers true; the params are read before anything is written.
type change func(context.Context, pgx.Tx) (outbox.Range, error)

func (a *Admin) run(ctx context.Context, c *nip86.Call, ch change) (any, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if err := a.commit(ctx, Actor{Name: c.Actor, Source: c.Source}, c.Method, c.Raw, ch); err != nil {
		return nil, err
	}
	return true, nil
}

func (a *Admin) changePubkey(ctx context.Context, c *nip86.Call) (any, error) {
	pk, reason := c.Hex64(0, "pubkey"), c.OptString(1, "reason")
	return a.run(ctx, c, func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
		return a.pubkey(ctx, tx, c.Method, pk, reason, Actor{Name: c.Actor, Source: c.Source})
	})
}

func (a *Admin) changeEvent(ctx context.Context, c *nip86.Call) (any, error) {
	id, reason := c.Hex64(0, "event id"), c.OptString(1, "reason")
	return a.run(ctx, c, func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
		return a.event(ctx, tx, c.Method, id, reason, Actor{Name: c.Actor, Source: c.Source})
	})
}

func (a *Admin) changeKind(ctx context.Context, c *nip86.Call) (any, error) {
	kind := c.Kind(0)
	return a.run(ctx, c, func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
		_, err := tx.Exec(ctx, `INSERT INTO cn_admin.kinds (kind, allowed, actor, at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (kind) DO UPDATE SET allowed = excluded.allowed, actor = excluded.actor, at = excluded.at`,
			kind, c.Method == "allowkind", c.Actor, a.now())
		return outbox.Range{}, err
	})
}

func (a *Admin) changeIP(ctx context.Context, c *nip86.Call) (any, error) {
	prefix, err := parsePrefix(c.String(0, "ip address"))
	if err != nil {
		c.Fail("%v", err)
	}
	reason := c.OptString(1, "reason")
	return a.run(ctx, c, func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
		var err error
		if c.Method == "blockip" {
			_, err = tx.Exec(ctx, `INSERT INTO cn_admin.ips (prefix, reason, actor, at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (prefix) DO UPDATE SET reason = excluded.reason, actor = excluded.actor, at = excluded.at`,
				prefix.String(), reason, c.Actor, a.now())
		} else {
			_, err = tx.Exec(ctx, "DELETE FROM cn_admin.ips WHERE prefix = $1", prefix.String())
		}
		return outbox.Range{}, err
	})
}

func (a *Admin) changeInfo(ctx context.Context, c *nip86.Call) (any, error) {
	value := c.String(0, "value")
	field := strings.TrimPrefix(c.Method, "changerelay")
	return a.run(ctx, c, func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
		_, err := tx.Exec(ctx, `INSERT INTO cn_admin.info (field, value, actor, at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (field) DO UPDATE SET value = excluded.value, actor = excluded.actor, at = excluded.at`,
			field, value, c.Actor, a.now())
		return outbox.Range{}, err
	})
}

// commit runs change with its log row and the version bump in one transaction,
// then announces the outbox rows it appended (hides and shows).
func (a *Admin) commit(ctx context.Context, actor Actor, method string, params []json.RawMessage, change change) error {
	tx, err := a.Pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	logParams, _ := json.Marshal(params)
	if params == nil {
		logParams = []byte("[]")
	}
	// The log row and the version bump come first: the change's outbox append,
	// if any, must be the transaction's last statement.
	if _, err := tx.Exec(ctx, `INSERT INTO cn_admin.log (method, params, actor, source, at) VALUES ($1, $2, $3, $4, $5)`,
		method, logParams, actor.Name, actor.Source, a.now()); err != nil {
		return fmt.Errorf("%s: log: %w", method, err)
	}
	if _, err := tx.Exec(ctx, "UPDATE cn_admin.state SET version = version + 1"); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	r, err := change(ctx, tx)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if err := outbox.Commit(ctx, tx); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	if r.Last > 0 && a.Committed != nil {
		a.Committed(r.Last)
	}
	if r.Last > 0 {
		// A wake-up only: consumers and relays also poll.
		_, _ = a.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, fmt.Sprint(r.Last))
	}
	if a.Acknowledge != nil {
		if err := a.Acknowledge(ctx); err != nil {
			return fmt.Errorf("%s: committed, not acknowledged: %w", method, err)
		}
	}
	return nil
}

// pubkey bans, unbans, allows or unallows a pubkey. A ban hides the pubkey's
// stored events (remembering which); lifting it (unban or allow) shows exactly
// those again. Allowing also makes the pubkey a member (cn_relay.members), so it
// may publish profiles and lists at once.
func (a *Admin) pubkey(ctx context.Context, tx pgx.Tx, method, pk, reason string, actor Actor) (outbox.Range, error) {
	var status string
	err := tx.QueryRow(ctx, "SELECT status FROM cn_admin.pubkeys WHERE pubkey = $1 FOR UPDATE", pk).Scan(&status)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return outbox.Range{}, err
	}
	set := func(to string) error {
		_, err := tx.Exec(ctx, `INSERT INTO cn_admin.pubkeys (pubkey, status, reason, actor, at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (pubkey) DO UPDATE SET status = excluded.status, reason = excluded.reason, actor = excluded.actor, at = excluded.at`,
			pk, to, reason, actor.Name, a.now())
		return err
	}
	remove := func(if_ string) error {
		_, err := tx.Exec(ctx, "DELETE FROM cn_admin.pubkeys WHERE pubkey = $1 AND status = $2", pk, if_)
		return err
	}
	switch method {
	case "banpubkey":
		if err := set("banned"); err != nil {
			return outbox.Range{}, err
		}
		// Every version not deleted yet, replaced ones too: none may come back.
		rows, err := tx.Query(ctx, "SELECT e.id FROM cn_relay.events e WHERE e.pubkey = $1 AND "+schema.NotDeletedSQL+" ORDER BY e.id", pk)
		if err != nil {
			return outbox.Range{}, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return outbox.Range{}, err
		}
		// Record what the ban hides (every visible event of pk, read under the
		// row lock above) before the store appends to the outbox, which must come last.
		if _, err := tx.Exec(ctx, `INSERT INTO cn_admin.ban_hides (pubkey, event_id)
			SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, pk, ids); err != nil {
			return outbox.Range{}, err
		}
		p, err := a.Store.ModerateTx(ctx, tx, ids, nil)
		return p.Range, err
	case "unbanpubkey":
		if status != "banned" {
			return outbox.Range{}, nil
		}
		if err := remove("banned"); err != nil {
			return outbox.Range{}, err
		}
		return a.showBanned(ctx, tx, pk)
	case "allowpubkey":
		if err := set("allowed"); err != nil {
			return outbox.Range{}, err
		}
		// An allowed key is a member: its pending profile and lists are
		// published now, with whatever a ban of it had hidden.
		var unhide []string
		if status == "banned" {
			var err error
			if unhide, err = a.banHides(ctx, tx, pk); err != nil {
				return outbox.Range{}, err
			}
		}
		p, err := a.Store.AdmitTx(ctx, tx, a.rules(), []string{pk}, unhide)
		return p.Range, err
	default: // unallowpubkey
		return outbox.Range{}, remove("allowed")
	}
}

// showBanned shows again the events a ban of pk hid.
func (a *Admin) showBanned(ctx context.Context, tx pgx.Tx, pk string) (outbox.Range, error) {
	ids, err := a.banHides(ctx, tx, pk)
	if err != nil || len(ids) == 0 {
		return outbox.Range{}, err
	}
	p, err := a.Store.ModerateTx(ctx, tx, nil, ids)
	return p.Range, err
}

// banHides forgets and returns (sorted) the events a ban of pk hid.
func (a *Admin) banHides(ctx context.Context, tx pgx.Tx, pk string) ([]string, error) {
	rows, err := tx.Query(ctx, "DELETE FROM cn_admin.ban_hides WHERE pubkey = $1 RETURNING event_id", pk)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	slices.Sort(ids)
	return ids, err
}

// event bans (hides), unbans (shows), allows (shows, and moderation rules leave
// it alone) or unallows an event. Bans and allows are operator decisions for
// the moderator too (cn_moderation.actions).
func (a *Admin) event(ctx context.Context, tx pgx.Tx, method, id, reason string, actor Actor) (outbox.Range, error) {
	var status string
	err := tx.QueryRow(ctx, "SELECT status FROM cn_admin.events WHERE event_id = $1 FOR UPDATE", id).Scan(&status)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return outbox.Range{}, err
	}
	var hide, unhide []string
	switch method {
	case "banevent", "allowevent":
		to, decision := "banned", "hide"
		if method == "allowevent" {
			to, decision = "allowed", "unhide"
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_admin.events (event_id, status, reason, actor, at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (event_id) DO UPDATE SET status = excluded.status, reason = excluded.reason, actor = excluded.actor, at = excluded.at`,
			id, to, reason, actor.Name, a.now()); err != nil {
			return outbox.Range{}, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_moderation.actions (event_id, action, source, actor, reason, at)
			VALUES ($1, $2, 'operator', $3, $4, $5)`, id, decision, actor.Name, reason, a.now()); err != nil {
			return outbox.Range{}, err
		}
		if method == "banevent" {
			hide = []string{id}
		} else {
			unhide = []string{id} // whatever hid it (this ban, a rule, an operator)
		}
	case "unbanevent":
		if status != "banned" {
			return outbox.Range{}, nil
		}
		if _, err := tx.Exec(ctx, "DELETE FROM cn_admin.events WHERE event_id = $1", id); err != nil {
			return outbox.Range{}, err
		}
		unhide = []string{id}
	default: // unallowevent
		if status == "allowed" {
			_, err := tx.Exec(ctx, "DELETE FROM cn_admin.events WHERE event_id = $1", id)
			return outbox.Range{}, err
		}
		return outbox.Range{}, nil
	}
	p, err := a.Store.ModerateTx(ctx, tx, hide, unhide)
	return p.Range, err
}

func (a *Admin) list(ctx context.Context, sql, key, status string) (any, error) {
	rows, err := a.Pool.Query(ctx, sql, status)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (map[string]string, error) {
		var k, reason string
		err := row.Scan(&k, &reason)
		return map[string]string{key: k, "reason": reason}, err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []map[string]string{}
	}
	return out, nil
}

func (a *Admin) kinds(ctx context.Context, allowed bool) (any, error) {
	rows, err := a.Pool.Query(ctx, "SELECT kind FROM cn_admin.kinds WHERE allowed = $1 ORDER BY kind", allowed)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []int32{}
	}
	return out, nil
}

func (a *Admin) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// queueReason says why an event is in the moderation queue.
func queueReason(it moderation.QueueItem) string {
	var parts []string
	if it.Reporters > 0 {
		var types []string
		for t, n := range it.Reports {
			types = append(types, fmt.Sprintf("%s:%d", t, n))
		}
		slices.Sort(types)
		parts = append(parts, fmt.Sprintf("reported by %d (%s)", it.Reporters, strings.Join(types, ", ")))
	}
	if len(it.Held) > 0 {
		parts = append(parts, "held by rule "+strings.Join(it.Held, ", "))
	}
	return strings.Join(parts, "; ")
}
