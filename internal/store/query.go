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
)

const eventColumns = "e.id, e.pubkey, e.created_at, e.kind, e.tags, e.content, e.sig"

// visibleSQL is the one definition of what a reader may see; $1 is now (unix).
const visibleSQL = "e.deleted_at IS NULL AND e.is_effective AND (e.expires_at IS NULL OR e.expires_at > $1)"

// Query returns the visible events matching any filter: each filter's Limit applies
// to its own matches (LimitZero: none), the union is ordered newest first, ties by
// lowest id, without duplicates. Filters must have been validated (protocol.ValidateFilter):
// #t values normalised, Limit set.
func (s *Store) Query(ctx context.Context, filters []nostr.Filter) ([]*nostr.Event, error) {
	seen := map[string]bool{}
	var out []*nostr.Event
	for _, f := range filters {
		evs, err := s.queryFilter(ctx, f)
		if err != nil {
			return nil, err
		}
		for _, ev := range evs {
			if !seen[ev.ID] {
				seen[ev.ID] = true
				out = append(out, ev)
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
func (s *Store) queryFilter(ctx context.Context, f nostr.Filter) ([]*nostr.Event, error) {
	if f.LimitZero {
		return nil, nil
	}
	where, args, ok := s.filterSQL(f)
	if !ok {
		return nil, nil
	}
	if f.Search != "" {
		sql, sargs, ok := searchSQL(f, where, args)
		if !ok {
			return nil, nil
		}
		return s.queryEvents(ctx, sql, sargs...)
	}
	if topic, ok := topicAuthorsDriven(f); ok && len(f.Tags) == 1 && f.Limit > 0 {
		evs, complete, err := s.queryTopicAuthors(ctx, f, topic)
		if err != nil || complete {
			return evs, err
		}
	}
	sql, args := s.selectSQL(f, where, args)
	return s.queryEvents(ctx, sql, args...)
}

// selectSQL returns the query for a filter that is not a search, given its
// filterSQL: newest first, ties by lowest id, its Limit applied, driven by the
// index that suits the filter.
func (s *Store) selectSQL(f nostr.Filter, where string, args []any) (string, []any) {
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
		where, args, _ = s.filterSQL(rest)
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
		// at the limit, instead of matching the whole topic first.
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

// Count returns how many distinct visible events match any filter (NIP-45); limits
// do not apply.
func (s *Store) Count(ctx context.Context, filters []nostr.Filter) (int64, error) {
	var parts []string
	var args []any
	for _, f := range filters {
		where, fargs, ok := s.filterSQLFrom(f, len(args))
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
func (s *Store) Events(ctx context.Context, ids []string) ([]*nostr.Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.queryEvents(ctx, "SELECT "+eventColumns+" FROM cn_relay.events e WHERE "+visibleSQL+" AND e.id = ANY($2)",
		s.now().Unix(), ids)
}

func (s *Store) filterSQL(f nostr.Filter) (string, []any, bool) {
	return s.filterSQLFrom(f, 0)
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
func (s *Store) queryTopicAuthors(ctx context.Context, f nostr.Filter, topic string) (evs []*nostr.Event, complete bool, err error) {
	// The index rows carry topic, author, kind and created_at, so only visibility
	// is left to check on the events.
	where, args, _ := s.filterSQL(nostr.Filter{})
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
	inner := f.Limit + topicAuthorsSlack
	sql := "WITH p AS (SELECT tt.event_id, tt.created_at FROM cn_relay.event_topics tt WHERE " + strings.Join(conds, " AND ") +
		" ORDER BY tt.created_at DESC, tt.event_id LIMIT " + ph(inner) + ")" +
		" SELECT " + eventColumns + ", (SELECT count(*) FROM p) FROM p JOIN cn_relay.events e ON e.id = p.event_id WHERE " + where +
		" ORDER BY p.created_at DESC, p.event_id LIMIT " + ph(f.Limit)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, false, fmt.Errorf("query events: %w", err)
	}
	var read int64
	evs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (*nostr.Event, error) { return scanEvent(row, &read) })
	if err != nil {
		return nil, false, fmt.Errorf("query events: %w", err)
	}
	// Without a row, the count is unknown: "no match" and "all hidden" look alike.
	return evs, len(evs) == f.Limit || (len(evs) > 0 && read < int64(inner)), nil
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
// `offset`; ok is false when the filter can match nothing stored.
func (s *Store) filterSQLFrom(f nostr.Filter, offset int) (string, []any, bool) {
	args := []any{s.now().Unix()}
	ph := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(offset+len(args))
	}
	conds := []string{strings.ReplaceAll(visibleSQL, "$1", "$"+strconv.Itoa(offset+1))}
	if f.IDs != nil {
		conds = append(conds, "e.id = ANY("+ph(f.IDs)+")")
	}
	if f.Authors != nil {
		conds = append(conds, "e.pubkey = ANY("+ph(f.Authors)+")")
	}
	if f.Kinds != nil {
		conds = append(conds, "e.kind = ANY("+ph(int32s(f.Kinds))+")")
	}
	if f.Since != nil {
		conds = append(conds, "e.created_at >= "+ph(int64(*f.Since)))
	}
	if f.Until != nil {
		conds = append(conds, "e.created_at <= "+ph(int64(*f.Until)))
	}
	names := make([]string, 0, len(f.Tags))
	for name := range f.Tags {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
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

func (s *Store) queryEvents(ctx context.Context, sql string, args ...any) ([]*nostr.Event, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("query events: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*nostr.Event, error) { return scanEvent(row) })
	if err != nil {
		return nil, fmt.Errorf("query events: %w", err)
	}
	return evs, nil
}

// scanEvent reads eventColumns, then extra columns into extra.
func scanEvent(row pgx.CollectableRow, extra ...any) (*nostr.Event, error) {
	ev := &nostr.Event{}
	var createdAt int64
	var kind int32
	if err := row.Scan(append([]any{&ev.ID, &ev.PubKey, &createdAt, &kind, &ev.Tags, &ev.Content, &ev.Sig}, extra...)...); err != nil {
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
