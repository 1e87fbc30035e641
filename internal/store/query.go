package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/readpath"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

const eventColumns = schema.EventColumns

// visibleSQL is what a reader may see (schema.VisibleSQL); $1 is now (unix).
var visibleSQL = schema.VisibleSQL("$1")

// scopeByIDSQL reads the (event id, topic) pairs of the events $1 (schema.ScopeSQL).
const scopeByIDSQL = "SELECT t.event_id, t.topic_id FROM cn_relay.event_topics t WHERE t.event_id = ANY($1) AND " + schema.ScopeSQL

// privateHiddenSQL keeps out the private kinds (protocol.IsPrivateKind), which
// only their parties may read.
var privateHiddenSQL = fmt.Sprintf("e.kind NOT IN (%d, %d)", protocol.KindEncryptedDM, protocol.KindGiftWrap)

// Query returns the visible events matching any filter that v may read
// (protocol.Viewer.MayRead): each filter's Limit applies to its own matches
// (LimitZero: none), the union is ordered newest first, ties by lowest id,
// without duplicates. Filters must have been validated (protocol.ValidateFilter):
// #t values normalised, Limit set.
func (s *Reader) Query(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) ([]*nostr.Event, error) {
	return s.query(ctx, s.pool, filters, v, nil)
}

// QuerySnapshot is Query run in one snapshot of the database, which also reads
// seq, the highest outbox seq that snapshot holds. Since outbox seq is committed
// in visibility order (see package outbox), the snapshot holds exactly the
// writes whose outbox rows have seq <= seq: an outbox row with a higher seq was
// committed after it, and its event is not among the results unless it was
// visible before. A relay that starts a subscription's live part after seq
// therefore sends no event twice and misses none.
//
// A lone filter that one statement answers (every shape but search) is read
// with the head in that one statement, which is its own snapshot: one round
// trip. Anything else runs in a read-only REPEATABLE READ transaction.
func (s *Reader) QuerySnapshot(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (evs []*nostr.Event, seq int64, err error) {
	return s.querySnapshot(ctx, filters, v, nil)
}

// Read is the read contract's primary read (readpath.Request, relay.Store):
// QuerySnapshot under req.Take, whose events come with their JSON built from
// the stored bytes (see readOpts): Content and Sig are left out of the
// events, and Tags but for addressable kinds.
func (s *Reader) Read(ctx context.Context, req readpath.Request) (readpath.Result, error) {
	o := newReadOpts(req)
	evs, seq, err := s.querySnapshot(ctx, req.Filters, req.Viewer, o)
	if err != nil {
		return readpath.Result{}, err
	}
	return o.result(evs, seq), nil
}

func (s *Reader) querySnapshot(ctx context.Context, filters []nostr.Filter, v protocol.Viewer, o *readOpts) (evs []*nostr.Event, seq int64, err error) {
	if len(filters) == 1 {
		evs, seq, ok, err := s.queryFolded(ctx, filters[0], v, o)
		if err != nil || ok {
			return evs, seq, err
		}
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The snapshot is taken by the transaction's first statement.
		if seq, err = outbox.Head(ctx, tx); err != nil {
			return err
		}
		evs, err = s.query(ctx, tx, filters, v, o)
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	return evs, seq, nil
}

// headSQL is outbox.Head's query as a derived table h(seq).
const headSQL = "(" + outbox.HeadSQL + ") h"

// queryFolded answers f and reads the outbox head in one statement:
//
//	SELECT q.*, h.seq FROM (head) h LEFT JOIN LATERAL (<f's query>) q ON true
//
// which returns f's rows, each with the head, or a single row of NULLs and the
// head when nothing matches. The outer ORDER BY restates f's order (newest
// first, ties by lowest id), which the subquery's rows already have. ok is
// false when f needs more than one statement (search; a (topic, author) page
// short of hidden events): the caller then takes a transaction.
func (s *Reader) queryFolded(ctx context.Context, f nostr.Filter, v protocol.Viewer, o *readOpts) (evs []*nostr.Event, seq int64, ok bool, err error) {
	if f.Search != "" {
		return nil, 0, false, nil
	}
	if f.LimitZero {
		seq, err = outbox.Head(ctx, s.pool)
		return nil, seq, err == nil, err
	}
	where, args, matchable := s.filterSQL(f, v)
	var sql string
	topic, byTopicAuthors := topicAuthorsDriven(f)
	byTopicAuthors = byTopicAuthors && len(f.Tags) == 1 && f.Limit > 0
	switch {
	case !matchable:
		seq, err = outbox.Head(ctx, s.pool)
		return nil, seq, err == nil, err
	case byTopicAuthors:
		var inner int
		sql, args, inner = s.topicAuthorsSQL(f, topic, v)
		var read int64
		evs, seq, stopped, err := s.collectFolded(ctx, o, sql, args, &read)
		if err != nil {
			return nil, 0, false, err
		}
		if topicAuthorsComplete(f, evs, stopped, read, inner) {
			return evs, seq, true, nil
		}
		return nil, 0, false, nil
	default:
		sql, args = s.selectSQL(f, where, args, v)
	}
	evs, seq, _, err = s.collectFolded(ctx, o, sql, args)
	return evs, seq, err == nil, err
}

// collectFolded runs sql (eventColumns, then one column per extra) folded with
// the outbox head (see queryFolded) and collects its events, under the row
// budget as collectEvents does.
func (s *Reader) collectFolded(ctx context.Context, o *readOpts, sql string, args []any, extra ...any) (evs []*nostr.Event, seq int64, stopped bool, err error) {
	folded := "SELECT q.*, h.seq FROM " + headSQL + " LEFT JOIN LATERAL (" + sql + ") q ON true ORDER BY q.created_at DESC, q.id"
	rows, err := s.pool.Query(ctx, folded, args...)
	if err != nil {
		return nil, 0, false, fmt.Errorf("query events: %w", err)
	}
	defer rows.Close()
	take, sv := o.budget(), o.json()
	dest := append(extra, &seq)
	for rows.Next() {
		raw := rows.RawValues()
		// The head alone (nothing matched), or a row the budget refuses: only
		// the head is read.
		if raw[0] == nil || sv == nil && take != nil && !take(rowSize(raw)) {
			skip := make([]any, len(raw)-1, len(raw))
			if err := rows.Scan(append(skip, &seq)...); err != nil {
				return nil, 0, false, fmt.Errorf("query events: %w", err)
			}
			if raw[0] == nil {
				continue
			}
			stopped = true
			break
		}
		if sv != nil {
			ev, size, err := scanServed(sv, rows, dest...)
			if err != nil {
				return nil, 0, false, fmt.Errorf("query events: %w", err)
			}
			if take != nil && !take(size) {
				delete(sv.json, ev)
				stopped = true
				break
			}
			evs = append(evs, ev)
			continue
		}
		ev, err := scanEvent(rows, dest...)
		if err != nil {
			return nil, 0, false, fmt.Errorf("query events: %w", err)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, false, fmt.Errorf("query events: %w", err)
	}
	return evs, seq, stopped, nil
}

// querier is what the read path needs: the pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func (s *Reader) query(ctx context.Context, q querier, filters []nostr.Filter, v protocol.Viewer, o *readOpts) ([]*nostr.Event, error) {
	seen := map[string]*nostr.Event{} // id -> the event returned
	var out []*nostr.Event
	sv := o.json()
	attribute := sv != nil && len(filters) > 1 && len(filters) <= 64 // (readpath.Result.From)
	if attribute && sv.from == nil {
		sv.from = make(map[*nostr.Event]uint64)
	}
	stopped := false
	if take := o.budget(); take != nil { // (a refusal ends the whole read: see readOpts)
		o = &readOpts{sv: sv, take: func(n int) bool {
			stopped = stopped || !take(n)
			return !stopped
		}}
	}
	for i, f := range filters {
		if stopped {
			break
		}
		evs, err := s.queryFilter(ctx, q, f, v, o)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			first := seen[ev.ID]
			if first == nil {
				first = ev
				seen[ev.ID] = ev
				out = append(out, ev)
			}
			if attribute {
				sv.from[first] |= 1 << i
			}
		}
	}
	if len(filters) > 1 { // (a lone search filter keeps its relevance order)
		slices.SortFunc(out, func(a, b *nostr.Event) int {
			if a.CreatedAt != b.CreatedAt {
				return int(b.CreatedAt - a.CreatedAt)
			}
			return strings.Compare(a.ID, b.ID)
		})
	}
	return out, nil
}

// queryFilter returns one filter's matches, in its order (relevance for search,
// else newest first), its Limit applied; it picks the query shape.
func (s *Reader) queryFilter(ctx context.Context, q querier, f nostr.Filter, v protocol.Viewer, o *readOpts) ([]*nostr.Event, error) {
	if f.LimitZero {
		return nil, nil
	}
	where, args, ok := s.filterSQL(f, v)
	if !ok {
		return nil, nil
	}
	if f.Search != "" {
		sql, sargs, ok := searchSQL(f, where, args)
		if !ok {
			return nil, nil
		}
		return s.queryEvents(ctx, o, q, sql, sargs...)
	}
	if topic, ok := topicAuthorsDriven(f); ok && len(f.Tags) == 1 && f.Limit > 0 {
		evs, complete, err := s.queryTopicAuthors(ctx, q, f, topic, v, o)
		if err != nil || complete {
			return evs, err
		}
	}
	sql, args := s.selectSQL(f, where, args, v)
	return s.queryEvents(ctx, o, q, sql, args...)
}

// selectSQL returns the query for a filter that is not a search, given its
// filterSQL: newest first, ties by lowest id, its Limit applied, driven by the
// index that suits the filter.
func (s *Reader) selectSQL(f nostr.Filter, where string, args []any, v protocol.Viewer) (string, []any) {
	topicAuthors, byTopicAuthors := topicAuthorsDriven(f)
	sql := "SELECT " + eventColumns + " FROM cn_relay.events e WHERE " + where +
		" ORDER BY e.created_at DESC, e.id"
	if byTopicAuthors {
		// One index range per author inside the topic, newest first: only the
		// author's events in this topic are read (schema 0006).
		args = append(args, topicAuthors, f.Authors)
		sql = "SELECT " + eventColumns + " FROM cn_relay.event_topics tt JOIN cn_relay.events e ON e.id = tt.event_id" +
			" WHERE tt.topic_id = $" + strconv.Itoa(len(args)-1) + " AND tt.own AND tt.pubkey = ANY($" + strconv.Itoa(len(args)) + ") AND " + where +
			" ORDER BY tt.created_at DESC, tt.event_id"
	} else if name, value, ok := tagDriven(f); ok {
		// Walk the tag's primary key (name, value, created_at, event_id)
		// backwards for the one value and stop at the limit: a tag value (a
		// pubkey, an event id) matches few events, and which ones does not
		// depend on statistics. The tag's own condition is the driving index.
		rest := f
		rest.Tags = maps.Clone(f.Tags)
		delete(rest.Tags, name)
		where, args, _ = s.filterSQL(rest, v)
		ph := func(v any) string {
			args = append(args, v)
			return "$" + strconv.Itoa(len(args))
		}
		conds := []string{"g.name = " + ph(name), "g.value = " + ph(value)}
		if f.Since != nil {
			conds = append(conds, "g.created_at >= "+ph(int64(*f.Since)))
		}
		if f.Until != nil {
			conds = append(conds, "g.created_at <= "+ph(int64(*f.Until)))
		}
		// The events are reached one by one through their primary key (a
		// LATERAL subquery with a LIMIT is never flattened into a join): on a
		// small table Postgres would otherwise hash-join a full scan of events.
		sql = "SELECT " + eventColumns + " FROM cn_relay.event_tags g CROSS JOIN LATERAL (SELECT " + eventColumns +
			" FROM cn_relay.events e WHERE e.id = g.event_id AND " + where + " LIMIT 1) e" +
			" WHERE " + strings.Join(conds, " AND ") + " ORDER BY g.created_at DESC, g.event_id"
	} else if topic, ok := topicDriven(f); ok {
		// Walk the topic's (topic_id, created_at DESC) index in order and stop
		// at the limit, instead of matching the whole topic first. The driving
		// row is the event's own row of the topic, so #t needs no probe per row.
		rest := f
		rest.Tags = maps.Clone(f.Tags)
		delete(rest.Tags, "t")
		where, args, _ = s.filterSQL(rest, v)
		args = append(args, topic)
		sql = "SELECT " + eventColumns + " FROM cn_relay.event_topics tt JOIN cn_relay.events e ON e.id = tt.event_id" +
			" WHERE tt.topic_id = $" + strconv.Itoa(len(args)) + " AND tt.own AND " + where +
			" ORDER BY tt.created_at DESC, tt.event_id"
	}
	if f.Limit > 0 {
		args = append(args, f.Limit)
		sql += " LIMIT $" + strconv.Itoa(len(args))
	}
	return sql, args
}

// Count returns how many distinct visible events that v may read match any
// filter (NIP-45); limits do not apply.
func (s *Reader) Count(ctx context.Context, filters []nostr.Filter, v protocol.Viewer) (int64, error) {
	var parts []string
	var args []any
	for _, f := range filters {
		where, fargs, ok := s.filterSQLFrom(f, len(args), v)
		if !ok {
			continue
		}
		args = append(args, fargs...)
		if f.Search != "" {
			q, ok := protocol.ParseSearch(f.Search)
			if !ok {
				args = args[:len(args)-len(fargs)]
				continue
			}
			args = append(args, q.TSQuery())
			parts = append(parts, "SELECT e.id FROM cn_index.documents d JOIN cn_relay.events e ON e.id = d.event_id WHERE d.tsv @@ $"+
				strconv.Itoa(len(args))+"::tsquery AND "+where)
			continue
		}
		parts = append(parts, "SELECT e.id FROM cn_relay.events e WHERE "+where)
	}
	if len(parts) == 0 {
		return 0, nil
	}
	var n int64
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM ("+strings.Join(parts, " UNION ")+") u", args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count events: %w", err)
	}
	return n, nil
}

// Events returns the visible events with these ids; missing ones are skipped.
// Private kinds are returned too: the caller (live fan-out) checks each reader
// with protocol.Viewer.MayRead.
func (s *Reader) Events(ctx context.Context, ids []string) ([]*nostr.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.queryEvents(ctx, nil, s.pool, "SELECT "+eventColumns+" FROM cn_relay.events e WHERE "+visibleSQL+" AND e.id = ANY($2)",
		s.now().Unix(), ids)
}

func (s *Reader) filterSQL(f nostr.Filter, v protocol.Viewer) (string, []any, bool) {
	return s.filterSQLFrom(f, 0, v)
}

// topicDriven reports whether a query is best driven by the topic index: one #t
// value and neither ids nor authors, which have more selective indexes.
func topicDriven(f nostr.Filter) (string, bool) {
	t, ok := f.Tags["t"]
	if !ok || len(t) != 1 || f.IDs != nil || f.Authors != nil {
		return "", false
	}
	return t[0], true
}

// tagDriven reports whether a query is best driven by the tag index: neither ids
// nor authors (whose indexes come first), and a single-letter tag other than t
// with exactly one value (a scan of the (name, value, created_at) key returns
// newest first only for one value). With several such tags, the first name in
// order drives; the others are probed per row. It comes before the topic index:
// a pubkey or an event id selects far fewer events than a topic.
func tagDriven(f nostr.Filter) (name, value string, ok bool) {
	if f.IDs != nil || f.Authors != nil {
		return "", "", false
	}
	for _, n := range slices.Sorted(maps.Keys(f.Tags)) {
		if vs := f.Tags[n]; len(n) == 1 && n != "t" && len(vs) == 1 {
			return n, vs[0], true
		}
	}
	return "", "", false
}

// topicAuthorsSlack is how many more (topic, author) rows than the limit are
// read before the events are joined: hidden versions (replaced, deleted,
// expired) among them still leave a full page.
const topicAuthorsSlack = 16

// queryTopicAuthors answers a filter with one #t value, authors and a limit (and
// no other tags) from the (topic, author, created_at) index alone, joining only
// the newest limit+slack rows with the events. complete is false when hidden
// events left the page short although more rows may match: the caller then runs
// the general query.
func (s *Reader) queryTopicAuthors(ctx context.Context, q querier, f nostr.Filter, topic string, v protocol.Viewer, o *readOpts) (evs []*nostr.Event, complete bool, err error) {
	sql, args, inner := s.topicAuthorsSQL(f, topic, v)
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, false, fmt.Errorf("query events: %w", err)
	}
	var read int64
	evs, stopped, err := collectEvents(o, rows, &read)
	if err != nil {
		return nil, false, fmt.Errorf("query events: %w", err)
	}
	return evs, topicAuthorsComplete(f, evs, stopped, read, inner), nil
}

// topicAuthorsSQL is queryTopicAuthors' query: eventColumns and the number of
// index rows read (at most inner).
func (s *Reader) topicAuthorsSQL(f nostr.Filter, topic string, v protocol.Viewer) (sql string, args []any, inner int) {
	// The index rows carry topic, author, kind and created_at, so only visibility
	// is left to check on the events.
	where, args, _ := s.filterSQL(nostr.Filter{}, v)
	ph := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	conds := []string{"tt.topic_id = " + ph(topic), "tt.own", "tt.pubkey = ANY(" + ph(f.Authors) + ")"}
	if f.Kinds != nil {
		conds = append(conds, "tt.kind = ANY("+ph(int32s(f.Kinds))+")")
	}
	if f.Since != nil {
		conds = append(conds, "tt.created_at >= "+ph(int64(*f.Since)))
	}
	if f.Until != nil {
		conds = append(conds, "tt.created_at <= "+ph(int64(*f.Until)))
	}
	inner = f.Limit + topicAuthorsSlack
	sql = "WITH p AS (SELECT tt.event_id, tt.created_at FROM cn_relay.event_topics tt WHERE " + strings.Join(conds, " AND ") +
		" ORDER BY tt.created_at DESC, tt.event_id LIMIT " + ph(inner) + ")" +
		" SELECT " + eventColumns + ", (SELECT count(*) FROM p) AS read FROM p JOIN cn_relay.events e ON e.id = p.event_id WHERE " + where +
		" ORDER BY p.created_at DESC, p.event_id LIMIT " + ph(f.Limit)
	return sql, args, inner
}

// topicAuthorsComplete reports whether evs, read from topicAuthorsSQL's rows
// (read: its index rows), is f's whole answer. Without a row, the count is
// unknown: "no match" and "all hidden" look alike.
func topicAuthorsComplete(f nostr.Filter, evs []*nostr.Event, stopped bool, read int64, inner int) bool {
	return stopped || len(evs) == f.Limit || (len(evs) > 0 && read < int64(inner))
}

// topicAuthorsDriven reports whether a query is best driven by the (topic,
// author) index: one #t value, authors, no ids.
func topicAuthorsDriven(f nostr.Filter) (string, bool) {
	t, ok := f.Tags["t"]
	if !ok || len(t) != 1 || f.IDs != nil || f.Authors == nil {
		return "", false
	}
	return t[0], true
}

// filterSQLFrom turns a filter into a WHERE clause whose placeholders start after
// `offset`, with the rows viewer may read only; ok is false when the filter can
// match nothing stored.
func (s *Reader) filterSQLFrom(f nostr.Filter, offset int, viewer protocol.Viewer) (string, []any, bool) {
	return s.filterSQLWith(f, offset, viewer, false)
}

// filterSQLWith is filterSQLFrom; indexOnly keeps the clause to the columns
// of events_sync_idx (see syncSQL), at the price of a dearer group check.
func (s *Reader) filterSQLWith(f nostr.Filter, offset int, viewer protocol.Viewer, indexOnly bool) (string, []any, bool) {
	args := []any{s.now().Unix()}
	ph := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(offset+len(args))
	}
	conds := []string{schema.VisibleSQL("$" + strconv.Itoa(offset+1))}
	switch {
	case viewer.Operator:
	case len(viewer.Authed) == 0:
		conds = append(conds, privateHiddenSQL)
	default:
		// protocol.Viewer.MayRead: a recipient (p tag, through the tag key) or,
		// for kind 4, the author (TestReadRuleSQLIsGo walks both).
		a := ph(viewer.Authed)
		conds = append(conds, "("+privateHiddenSQL+" OR (e.kind = "+strconv.Itoa(protocol.KindEncryptedDM)+" AND e.pubkey = ANY("+a+
			")) OR EXISTS (SELECT 1 FROM cn_relay.event_tags g WHERE g.name = 'p' AND g.value = ANY("+a+
			") AND g.created_at = e.created_at AND g.event_id = e.id))")
	}
	// protocol.Viewer.MayReadGroup: a private group's events, and a hidden
	// group's state, to its members only (schema.GroupReadableSQL), read from
	// cn_relay.group_access in this statement's snapshot.
	if !viewer.Operator && !viewer.AllGroups {
		readers := "'{}'::text[]"
		if len(viewer.Authed) > 0 {
			readers = ph(viewer.Authed) + "::text[]"
		}
		if indexOnly {
			conds = append(conds, schema.GroupReadableIndexSQL(readers))
		} else {
			conds = append(conds, schema.GroupReadableSQL(readers))
		}
	}
	// One value is an equality, not = ANY of a one-element array: Postgres 15
	// reads an index in order only under equalities, so "the newest 20 of one
	// author" walks (pubkey, created_at DESC, id) and stops after 20 rows
	// instead of fetching every event of the author and sorting them (at
	// 1,000,000 events: ~20 heap pages instead of ~200).
	if f.IDs != nil {
		conds = append(conds, oneOf("e.id", f.IDs, ph))
	}
	if f.Authors != nil {
		conds = append(conds, oneOf("e.pubkey", f.Authors, ph))
	}
	if f.Kinds != nil {
		conds = append(conds, oneOf("e.kind", int32s(f.Kinds), ph))
	}
	if f.Since != nil {
		conds = append(conds, "e.created_at >= "+ph(int64(*f.Since)))
	}
	if f.Until != nil {
		conds = append(conds, "e.created_at <= "+ph(int64(*f.Until)))
	}
	for _, name := range slices.Sorted(maps.Keys(f.Tags)) {
		values := f.Tags[name]
		switch {
		case len(name) != 1:
			return "", nil, false // only single-letter tags are indexed (NIP-01)
		case name == "t":
			// #t matches own t tags only (protocol.Match): rows with own set.
			// A per-row probe of the (event_id, topic_id) key: as EXISTS, Postgres
			// would hash the whole topic before looking at the few rows that
			// ids, authors or the topic index already select.
			conds = append(conds, "(SELECT true FROM cn_relay.event_topics t WHERE t.event_id = e.id AND t.topic_id = ANY("+ph(values)+") AND t.own LIMIT 1)")
		default:
			// One probe of the primary key (name, value, created_at, event_id)
			// per value: the tag row repeats its event's created_at.
			conds = append(conds, "EXISTS (SELECT 1 FROM cn_relay.event_tags g WHERE g.name = "+ph(name)+
				" AND g.value = ANY("+ph(values)+") AND g.created_at = e.created_at AND g.event_id = e.id)")
		}
	}
	return strings.Join(conds, " AND "), args, true
}

// oneOf is the condition col IN values: an equality for one value (see
// filterSQLFrom), else = ANY of the array; ph adds an argument and returns
// its placeholder.
func oneOf[T any](col string, values []T, ph func(any) string) string {
	if len(values) == 1 {
		return col + " = " + ph(values[0])
	}
	return col + " = ANY(" + ph(values) + ")"
}

func (s *Reader) queryEvents(ctx context.Context, o *readOpts, q querier, sql string, args ...any) ([]*nostr.Event, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query events: %w", err)
	}
	evs, _, err := collectEvents(o, rows)
	if err != nil {
		return nil, fmt.Errorf("query events: %w", err)
	}
	return evs, nil
}

// collectEvents scans every row (eventColumns, then extra) and closes rows. Under
// o's take it asks for each row before keeping it and stops at the first
// refusal (stopped).
func collectEvents(o *readOpts, rows pgx.Rows, extra ...any) (evs []*nostr.Event, stopped bool, err error) {
	defer rows.Close()
	take, sv := o.budget(), o.json()
	for rows.Next() {
		if sv != nil {
			ev, size, err := scanServed(sv, rows, extra...)
			if err != nil {
				return nil, false, err
			}
			if take != nil && !take(size) {
				delete(sv.json, ev)
				return evs, true, nil
			}
			evs = append(evs, ev)
			continue
		}
		if take != nil && !take(rowSize(rows.RawValues())) {
			return evs, true, nil
		}
		ev, err := scanEvent(rows, extra...)
		if err != nil {
			return nil, false, err
		}
		evs = append(evs, ev)
	}
	return evs, false, rows.Err()
}

// scanEvent reads eventColumns, then extra columns into extra.
func scanEvent(row pgx.CollectableRow, extra ...any) (*nostr.Event, error) {
	ev := &nostr.Event{}
	var createdAt int64
	var kind int32
	var tags string // (the jsonb text: decodeTags is faster than pgx's encoding/json)
	if err := row.Scan(append([]any{&ev.ID, &ev.PubKey, &createdAt, &kind, &tags, &ev.Content, &ev.Sig}, extra...)...); err != nil {
		return nil, err
	}
	var err error
	if ev.Tags, err = decodeTags(tags); err != nil {
		return nil, err
	}
	ev.CreatedAt, ev.Kind = nostr.Timestamp(createdAt), int(kind)
	return ev, nil
}

// int32s converts kinds for an int[] parameter.
func int32s(kinds []int) []int32 {
	out := make([]int32, len(kinds))
	for i, k := range kinds {
		out[i] = int32(k)
	}
	return out
}
