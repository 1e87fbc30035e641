package relayadmin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/moderation"
	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/store"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// ErrBadRequest marks a call with an unknown method or bad parameters (HTTP
// 400, cnctl exit code 2).
var ErrBadRequest = errors.New("bad request")

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
	Now        func() time.Time
	// Extensions add methods (package membership: the NIP-43 methods).
	Extensions []Extension
}

// Extension is a set of NIP-86 methods served by another package. Its Do
// logs and commits its own changes; an error with a BadRequest() true method
// is a bad request (HTTP 400, cnctl exit code 2).
type Extension interface {
	Methods() []string
	Do(ctx context.Context, actor, source, method string, params []json.RawMessage) (any, error)
}

// Methods are the NIP-86 methods this relay supports, in NIP-86 order.
var Methods = []string{
	"supportedmethods",
	"banpubkey", "unbanpubkey", "listbannedpubkeys",
	"allowpubkey", "unallowpubkey", "listallowedpubkeys",
	"listeventsneedingmoderation",
	"allowevent", "unallowevent", "banevent", "unbanevent", "listbannedevents", "listallowedevents",
	"changerelayname", "changerelaydescription", "changerelayicon",
	"allowkind", "disallowkind", "listallowedkinds", "listdisallowedkinds",
	"blockip", "unblockip", "listblockedips",
	"listgroups", "listgroupmembers", // NIP-29, this relay's own (groups.go)
	ReplayMethod, // not in NIP-86: replay.go
}

// Do runs one method with its NIP-86 parameters and returns its NIP-86 result.
// Every change commits in one transaction with its effects and its log row.
func (a *Admin) Do(ctx context.Context, actor Actor, method string, params []json.RawMessage) (any, error) {
	for _, x := range a.Extensions {
		if slices.Contains(x.Methods(), method) {
			res, err := x.Do(ctx, actor.Name, actor.Source, method, params)
			var bad interface{ BadRequest() bool }
			if errors.As(err, &bad) && bad.BadRequest() {
				return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
			}
			return res, err
		}
	}
	if !slices.Contains(Methods, method) {
		return nil, fmt.Errorf("%w: unsupported method %q", ErrBadRequest, method)
	}
	if result, ok, err := a.groupRead(ctx, method, params); ok {
		return result, err
	}
	if err := checkArity(method, len(params)); err != nil {
		return nil, err
	}
	p := paramReader{params: params}
	switch method {
	case "supportedmethods":
		all := slices.Clone(Methods)
		for _, x := range a.Extensions {
			all = append(all, x.Methods()...)
		}
		return all, nil
	case ReplayMethod:
		return a.replay(ctx, actor, params)
	case "listbannedpubkeys", "listallowedpubkeys":
		return a.list(ctx, "SELECT pubkey, reason FROM cn_admin.pubkeys WHERE status = $1 ORDER BY pubkey", "pubkey",
			strings.TrimSuffix(strings.TrimPrefix(method, "list"), "pubkeys"))
	case "listbannedevents", "listallowedevents":
		return a.list(ctx, "SELECT event_id, reason FROM cn_admin.events WHERE status = $1 ORDER BY event_id", "id",
			strings.TrimSuffix(strings.TrimPrefix(method, "list"), "events"))
	case "listblockedips":
		return a.list(ctx, "SELECT prefix, reason FROM cn_admin.ips WHERE $1 = $1 ORDER BY prefix", "ip", "")
	case "listallowedkinds", "listdisallowedkinds":
		return a.kinds(ctx, method == "listallowedkinds")
	case "listeventsneedingmoderation":
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
	// Changes.
	var change func(context.Context, pgx.Tx) (outbox.Range, error)
	switch method {
	case "banpubkey", "unbanpubkey", "allowpubkey", "unallowpubkey":
		pk, reason := p.hex64(0, "pubkey"), p.optString(1)
		change = func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
			return a.pubkey(ctx, tx, method, pk, reason, actor)
		}
	case "banevent", "unbanevent", "allowevent", "unallowevent":
		id, reason := p.hex64(0, "event id"), p.optString(1)
		change = func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
			return a.event(ctx, tx, method, id, reason, actor)
		}
	case "allowkind", "disallowkind":
		kind := p.kind(0)
		change = func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
			_, err := tx.Exec(ctx, `INSERT INTO cn_admin.kinds (kind, allowed, actor, at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (kind) DO UPDATE SET allowed = excluded.allowed, actor = excluded.actor, at = excluded.at`,
				kind, method == "allowkind", actor.Name, a.now())
			return outbox.Range{}, err
		}
	case "blockip", "unblockip":
		prefix, err := parsePrefix(p.string(0, "ip address"))
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		reason := p.optString(1)
		change = func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
			var err error
			if method == "blockip" {
				_, err = tx.Exec(ctx, `INSERT INTO cn_admin.ips (prefix, reason, actor, at) VALUES ($1, $2, $3, $4)
					ON CONFLICT (prefix) DO UPDATE SET reason = excluded.reason, actor = excluded.actor, at = excluded.at`,
					prefix.String(), reason, actor.Name, a.now())
			} else {
				_, err = tx.Exec(ctx, "DELETE FROM cn_admin.ips WHERE prefix = $1", prefix.String())
			}
			return outbox.Range{}, err
		}
	case "changerelayname", "changerelaydescription", "changerelayicon":
		value := p.string(0, "value")
		field := strings.TrimPrefix(method, "changerelay")
		change = func(ctx context.Context, tx pgx.Tx) (outbox.Range, error) {
			_, err := tx.Exec(ctx, `INSERT INTO cn_admin.info (field, value, actor, at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (field) DO UPDATE SET value = excluded.value, actor = excluded.actor, at = excluded.at`,
				field, value, actor.Name, a.now())
			return outbox.Range{}, err
		}
	}
	if p.err != nil {
		return nil, p.err
	}
	if err := a.commit(ctx, actor, method, params, change); err != nil {
		return nil, err
	}
	return true, nil
}

// commit runs change with its log row and the version bump in one transaction,
// then announces the outbox rows it appended (hides and shows).
func (a *Admin) commit(ctx context.Context, actor Actor, method string, params []json.RawMessage,
	change func(context.Context, pgx.Tx) (outbox.Range, error)) error {
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
	if r.Last > 0 {
		// A wake-up only: consumers and relays also poll.
		_, _ = a.Pool.Exec(ctx, "SELECT pg_notify($1, $2)", outbox.Channel, fmt.Sprint(r.Last))
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
		p, err := a.Store.AdmitTx(ctx, tx, a.TopicRules.OrDefault(), []string{pk}, unhide)
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

// paramReader reads NIP-86 params; the first problem is kept in err.
type paramReader struct {
	params []json.RawMessage
	err    error
}

func (p *paramReader) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
	}
}

// checkArity refuses a call whose number of params the method does not take:
// extra params are an error, not ignored.
func checkArity(method string, n int) error {
	lo, hi := 0, 0 // supportedmethods, list*
	switch method {
	case "banpubkey", "unbanpubkey", "allowpubkey", "unallowpubkey",
		"banevent", "unbanevent", "allowevent", "unallowevent",
		"blockip", "unblockip":
		lo, hi = 1, 2 // the subject, and an optional reason
	case "allowkind", "disallowkind", "changerelayname", "changerelaydescription", "changerelayicon":
		lo, hi = 1, 1
	case ReplayMethod:
		lo, hi = 3, 3
	}
	if n >= lo && n <= hi {
		return nil
	}
	want := fmt.Sprintf("%d to %d parameters", lo, hi)
	if lo == hi {
		want = fmt.Sprintf("%d parameters", lo)
	}
	return fmt.Errorf("%w: %s takes %s, got %d", ErrBadRequest, method, want, n)
}

// string reads a parameter that must be a JSON string (null is not).
func (p *paramReader) string(i int, what string) string {
	if i >= len(p.params) {
		p.fail("missing parameter %d (%s)", i+1, what)
		return ""
	}
	var s string
	raw := bytes.TrimSpace(p.params[i])
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		p.fail("parameter %d (%s) must be a string", i+1, what)
	}
	return s
}

func (p *paramReader) optString(i int) string {
	if i >= len(p.params) {
		return ""
	}
	return p.string(i, "reason")
}

func (p *paramReader) hex64(i int, what string) string {
	s := p.string(i, what)
	if p.err == nil && !protocol.IsHex64(s) {
		p.fail("%s must be 64 lowercase hex characters", what)
	}
	return s
}

func (p *paramReader) kind(i int) int {
	if i >= len(p.params) {
		p.fail("missing parameter 1 (kind)")
		return 0
	}
	var k int
	raw := bytes.TrimSpace(p.params[i])
	if len(raw) == 0 || raw[0] == 'n' || json.Unmarshal(raw, &k) != nil || k < 0 || k > 65535 {
		p.fail("the kind must be a number from 0 to 65535")
	}
	return k
}
