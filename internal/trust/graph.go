package trust

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nbd-wtf/go-nostr"

	"github.com/kukuri/communitynode/internal/protocol"
	"github.com/kukuri/communitynode/internal/trust/gate"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// ConsumerName is the trust consumer's offset row; Algorithm names the scores
// (declared in the gate package, which the relay links without the rest of trust).
const (
	ConsumerName = "trust-v1"
	Algorithm    = gate.Algorithm
)

// Source event types (cn_trust.sources.etype).
const (
	etPost     = 1
	etReply    = 2
	etReaction = 3
	etRepost   = 4
	etZap      = 5
	etReport   = 6
	etLabel    = 7
)

// Graph applies outbox rows to the graph tables and counters. It is the
// consumer's Handler: everything it writes goes through the consumer's
// transaction, so it commits with the offset.
type Graph struct {
	// NodePubKey: 1985 labels by this key are graph input (other labels are not).
	NodePubKey string

	mu      sync.Mutex
	ids     map[string]int32 // committed pubkey ids (a cache; the table is the truth)
	pending map[string]int32 // ids inserted by the batch in flight
}

const maxCachedIDs = 4 << 20

// graphKinds are the kinds the graph reads; other rows are skipped unread.
func graphKind(kind int) bool {
	switch kind {
	case 1, 1111, 3, 10000, 6, 16, 7, 9735, 1984, 1985:
		return true
	}
	return false
}

type setKey struct {
	author int32
	kind   int
}

type set struct {
	sourceID  string
	createdAt int64
	targets   []int32
}

type source struct {
	author     int32
	etype      int16
	createdAt  int64
	targets    []int32
	amountMsat int64
	reportType string
}

// counters are the NIP-85 counts of one subject (deltas while applying).
type counters struct {
	followers, posts, replies, reactions, reportsRecd, reportsSent int64
	zapCntRecd, zapAmtRecd, zapCntSent, zapAmtSent                 int64
	firstSeen                                                      int64 // 0: none
}

type op struct {
	upsert bool
	id     string
}

// Handle applies rows in seq order (see the package comment).
func (g *Graph) Handle(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
	g.mu.Lock()
	g.pending = nil
	g.mu.Unlock()

	// The rows of one change of one event (one per topic) are adjacent in seq:
	// they are one op. Rows of the same event that are not adjacent are separate
	// changes and are applied in order: `A upsert, B upsert, B delete, A upsert`
	// (follow list A replaced by B, B deleted, A effective again) needs A's
	// second upsert.
	var ops []op
	listed, loaded := map[string]bool{}, map[string]bool{}
	var upserts, all []string
	for i, r := range rows {
		if !graphKind(r.Kind) {
			continue
		}
		up := r.Op == outbox.OpUpsert
		if i > 0 && rows[i-1].EventID == r.EventID && rows[i-1].Op == r.Op {
			continue
		}
		ops = append(ops, op{upsert: up, id: r.EventID})
		if !listed[r.EventID] {
			listed[r.EventID] = true
			all = append(all, r.EventID)
		}
		if up && !loaded[r.EventID] {
			loaded[r.EventID] = true
			upserts = append(upserts, r.EventID)
		}
	}
	if len(ops) == 0 {
		return nil
	}

	// Read: the events, their existing source rows, the sets they name. An
	// upsert row's event is read in whatever state it is in now (not only
	// schema.LiveSQL): a later delete row removes what it added, so a replay
	// ends in the same graph.
	evs := map[string]*nostr.Event{}
	srcs := map[string]*source{}
	setBySource := map[string]setKey{}
	sets := map[setKey]*set{}
	var b pgx.Batch
	if len(upserts) > 0 {
		b.Queue(`SELECT id, pubkey, kind, created_at, tags FROM cn_relay.events WHERE id = ANY($1)`, upserts).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					ev := &nostr.Event{}
					var kind int32
					var createdAt int64
					if err := rows.Scan(&ev.ID, &ev.PubKey, &kind, &createdAt, &ev.Tags); err != nil {
						return fmt.Errorf("load events: %w", err)
					}
					ev.Kind, ev.CreatedAt = int(kind), nostr.Timestamp(createdAt)
					evs[ev.ID] = ev
				}
				return rows.Err()
			})
	}
	b.Queue(`SELECT event_id, author, etype, created_at, targets, amount_msat, coalesce(report_type, '')
		FROM cn_trust.sources WHERE event_id = ANY($1)`, all).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			s := &source{}
			var id string
			if err := rows.Scan(&id, &s.author, &s.etype, &s.createdAt, &s.targets, &s.amountMsat, &s.reportType); err != nil {
				return fmt.Errorf("load sources: %w", err)
			}
			srcs[id] = s
		}
		return rows.Err()
	})
	scanSets := func(rows pgx.Rows) error {
		for rows.Next() {
			var k setKey
			s := &set{}
			if err := rows.Scan(&k.author, &k.kind, &s.sourceID, &s.createdAt, &s.targets); err != nil {
				return fmt.Errorf("load sets: %w", err)
			}
			sets[k] = s
			setBySource[s.sourceID] = k
		}
		return rows.Err()
	}
	b.Queue(`SELECT author, kind, source_id, created_at, targets FROM cn_trust.sets WHERE source_id = ANY($1)`, all).Query(scanSets)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}

	// Pubkey ids for everything the new events name.
	var keys []string
	for _, ev := range evs {
		keys = append(keys, ev.PubKey)
		keys = append(keys, subjectsOf(ev)...)
		if ev.Kind == 9735 {
			if s, _ := zapSender(ev); s != "" {
				keys = append(keys, s)
			}
		}
	}
	ids, err := g.resolve(ctx, tx, keys)
	if err != nil {
		return err
	}
	// The current sets of the authors of new set versions.
	var setAuthors []int32
	for _, ev := range evs {
		if ev.Kind == 3 || ev.Kind == 10000 {
			setAuthors = append(setAuthors, ids[ev.PubKey])
		}
	}
	if len(setAuthors) > 0 {
		rows, err := tx.Query(ctx, `SELECT author, kind, source_id, created_at, targets FROM cn_trust.sets WHERE author = ANY($1)`, setAuthors)
		if err != nil {
			return fmt.Errorf("load sets: %w", err)
		}
		if err := scanSets(rows); err != nil {
			return err
		}
	}

	// Apply in order against the overlay.
	delta := map[int32]*counters{}
	d := func(id int32) *counters {
		c := delta[id]
		if c == nil {
			c = &counters{}
			delta[id] = c
		}
		return c
	}
	seen := func(id int32, at int64) {
		c := d(id)
		if c.firstSeen == 0 || at < c.firstSeen {
			c.firstSeen = at
		}
	}
	existed := map[string]bool{} // source rows present before the batch
	for id := range srcs {
		existed[id] = true
	}
	changedSets := map[setKey]bool{}
	for _, o := range ops {
		if !o.upsert {
			if s := srcs[o.id]; s != nil {
				s.count(d, -1)
				srcs[o.id] = nil
			}
			if k, ok := setBySource[o.id]; ok {
				if cur := sets[k]; cur != nil && cur.sourceID == o.id {
					if k.kind == 3 {
						for _, t := range cur.targets {
							d(t).followers--
						}
					}
					sets[k] = nil
					changedSets[k] = true
				}
				delete(setBySource, o.id)
			}
			continue
		}
		ev := evs[o.id]
		if ev == nil {
			continue // gone from events (never happens for an upsert row of a stored event)
		}
		author := ids[ev.PubKey]
		if ev.Kind == 3 || ev.Kind == 10000 {
			k := setKey{author, ev.Kind}
			cur := sets[k]
			if cur != nil && (cur.createdAt > int64(ev.CreatedAt) || (cur.createdAt == int64(ev.CreatedAt) && cur.sourceID <= ev.ID)) {
				continue // the row holds this version or a newer one
			}
			next := &set{sourceID: ev.ID, createdAt: int64(ev.CreatedAt), targets: idList(ids, subjectsOf(ev), author)}
			if ev.Kind == 3 {
				var old []int32
				if cur != nil {
					old = cur.targets
				}
				diffSorted(old, next.targets, func(t int32) { d(t).followers-- }, func(t int32) { d(t).followers++ })
			}
			if cur != nil {
				delete(setBySource, cur.sourceID)
			}
			sets[k], setBySource[ev.ID], changedSets[k] = next, k, true
			seen(author, int64(ev.CreatedAt))
			continue
		}
		if _, ok := srcs[o.id]; ok && srcs[o.id] != nil {
			continue // applied already
		}
		s := g.sourceOf(ev, ids)
		if s == nil {
			continue
		}
		s.count(d, 1)
		if s.etype != etLabel {
			seen(s.author, s.createdAt)
		}
		srcs[o.id] = s
	}
	return writeGraph(ctx, tx, srcs, existed, sets, changedSets, delta)
}

// count adds (sign 1) or removes (-1) what s contributes to the counters.
func (s *source) count(d func(int32) *counters, sign int64) {
	switch s.etype {
	case etPost:
		d(s.author).posts += sign
	case etReply:
		d(s.author).replies += sign
	case etReaction:
		for _, t := range s.targets {
			d(t).reactions += sign
		}
	case etZap:
		for _, t := range s.targets {
			d(t).zapCntRecd += sign
			d(t).zapAmtRecd += sign * s.amountMsat
		}
		d(s.author).zapCntSent += sign
		d(s.author).zapAmtSent += sign * s.amountMsat
	case etReport:
		for _, t := range s.targets {
			d(t).reportsRecd += sign
		}
		d(s.author).reportsSent += sign
	}
}

// sourceOf turns a stored event into its graph row (nil: not graph input).
func (g *Graph) sourceOf(ev *nostr.Event, ids map[string]int32) *source {
	author := ids[ev.PubKey]
	s := &source{author: author, createdAt: int64(ev.CreatedAt), targets: idList(ids, subjectsOf(ev), author)}
	switch ev.Kind {
	case 1:
		s.etype = etPost
		if ev.Tags.GetFirst([]string{"e", ""}) != nil {
			s.etype = etReply
		}
	case 1111:
		s.etype = etReply
	case 7:
		s.etype = etReaction
	case 6, 16:
		s.etype = etRepost
	case 9735:
		s.etype = etZap
		sender, amount := zapSender(ev)
		if sender == "" {
			return nil // not a zap receipt we can attribute
		}
		s.author, s.amountMsat = ids[sender], amount
		s.targets = idList(ids, subjectsOf(ev), s.author)
	case 1984:
		s.etype = etReport
		s.reportType = reportType(ev)
		if len(s.targets) > 1 {
			s.targets = idList(ids, subjectsOf(ev)[:1], author) // NIP-56: the first p tag is the subject
		}
	case 1985:
		if ev.PubKey != g.NodePubKey {
			return nil
		}
		s.etype = etLabel
	default:
		return nil
	}
	return s
}

// subjectsOf returns the pubkeys of ev's p tags (well-formed, in tag order).
func subjectsOf(ev *nostr.Event) []string {
	var out []string
	for _, t := range ev.Tags {
		if len(t) >= 2 && t[0] == "p" && protocol.IsHex64(t[1]) {
			out = append(out, t[1])
		}
	}
	return out
}

// zapSender reads the NIP-57 zap request embedded in a receipt: its author and
// its amount tag (millisats; 0 when absent).
func zapSender(ev *nostr.Event) (string, int64) {
	desc := ev.Tags.GetFirst([]string{"description", ""})
	if desc == nil || len(*desc) < 2 {
		return "", 0
	}
	var req struct {
		PubKey string     `json:"pubkey"`
		Tags   [][]string `json:"tags"`
	}
	if json.Unmarshal([]byte((*desc)[1]), &req) != nil || !protocol.IsHex64(req.PubKey) {
		return "", 0
	}
	var amount int64
	for _, t := range req.Tags {
		if len(t) >= 2 && t[0] == "amount" {
			if v, err := strconv.ParseInt(t[1], 10, 64); err == nil && v > 0 {
				amount = v
			}
		}
	}
	return req.PubKey, amount
}

// ReportTypes are NIP-56's report types; anything else counts as "other".
var ReportTypes = []string{"nudity", "malware", "profanity", "illegal", "spam", "impersonation", "other"}

func reportType(ev *nostr.Event) string {
	for _, name := range []string{"p", "e"} {
		for _, t := range ev.Tags {
			if len(t) >= 3 && t[0] == name && slices.Contains(ReportTypes, t[2]) {
				return t[2]
			}
		}
	}
	return "other"
}

// idList maps pubkeys to sorted, distinct ids, leaving out self.
func idList(ids map[string]int32, keys []string, self int32) []int32 {
	out := make([]int32, 0, len(keys))
	for _, k := range keys {
		if id, ok := ids[k]; ok && id != self {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// diffSorted calls gone for every element of a not in b and added for every
// element of b not in a (both sorted, distinct).
func diffSorted(a, b []int32, gone, added func(int32)) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			gone(a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			added(b[j])
			j++
		default:
			i++
			j++
		}
	}
}

// resolve returns the ids of keys, creating the missing ones.
func (g *Graph) resolve(ctx context.Context, tx consumer.Tx, keys []string) (map[string]int32, error) {
	out := make(map[string]int32, len(keys))
	var missing []string
	g.mu.Lock()
	for _, k := range keys {
		if _, ok := out[k]; ok {
			continue
		}
		if id, ok := g.ids[k]; ok {
			out[k] = id
			continue
		}
		out[k] = 0
		missing = append(missing, k)
	}
	g.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	slices.Sort(missing)
	scan := func(rows pgx.Rows) error {
		for rows.Next() {
			var k string
			var id int32
			if err := rows.Scan(&id, &k); err != nil {
				return err
			}
			out[k] = id
		}
		return rows.Err()
	}
	rows, err := tx.Query(ctx, `SELECT id, pubkey FROM cn_trust.pubkeys WHERE pubkey = ANY($1)`, missing)
	if err != nil {
		return nil, fmt.Errorf("load pubkey ids: %w", err)
	}
	if err := scan(rows); err != nil {
		return nil, fmt.Errorf("load pubkey ids: %w", err)
	}
	var insert []string
	for _, k := range missing {
		if out[k] == 0 {
			insert = append(insert, k)
		}
	}
	if len(insert) > 0 {
		// AfterCommit caches the new ids. An asynchronous commit (pkg/consumer's
		// default) that a crash or a failover takes back would leave cached ids
		// that name no row, or another key's row once the id is drawn again,
		// and the counters written through them would be lost or misplaced
		// (internal/durability's failover test found it). So a batch that adds
		// keys commits durably, as a batch that appends outbox rows does
		// (cn_relay.consumer_advance reads the setting).
		if _, err := tx.Exec(ctx, "SELECT set_config($1, 'on', true)", outbox.AppendedSetting); err != nil {
			return nil, fmt.Errorf("add pubkeys: %w", err)
		}
		rows, err := tx.Query(ctx, `INSERT INTO cn_trust.pubkeys (pubkey) SELECT unnest($1::text[]) RETURNING id, pubkey`, insert)
		if err != nil {
			return nil, fmt.Errorf("add pubkeys: %w", err)
		}
		if err := scan(rows); err != nil {
			return nil, fmt.Errorf("add pubkeys: %w", err)
		}
	}
	g.mu.Lock()
	if g.pending == nil {
		g.pending = map[string]int32{}
	}
	for _, k := range missing {
		g.pending[k] = out[k]
	}
	g.mu.Unlock()
	return out, nil
}

// AfterCommit keeps the ids the committed batch resolved.
func (g *Graph) AfterCommit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ids == nil || len(g.ids)+len(g.pending) > maxCachedIDs {
		g.ids = make(map[string]int32, len(g.pending))
	}
	for k, id := range g.pending {
		g.ids[k] = id
	}
	g.pending = nil
}

// writeGraph writes what the batch changed, in id order (the publisher and a
// recompute lock subjects in the same order, so they never deadlock).
func writeGraph(ctx context.Context, tx consumer.Tx, srcs map[string]*source, existed map[string]bool,
	sets map[setKey]*set, changedSets map[setKey]bool, delta map[int32]*counters) error {
	var b pgx.Batch
	var gone []string
	var ins struct {
		id, targets, rtype []string
		author             []int32
		etype              []int16
		at, amount         []int64
	}
	for id, s := range srcs {
		switch {
		case s == nil && existed[id]:
			gone = append(gone, id)
		case s != nil && !existed[id]:
			ins.id, ins.author, ins.etype, ins.at = append(ins.id, id), append(ins.author, s.author), append(ins.etype, s.etype), append(ins.at, s.createdAt)
			ins.targets, ins.amount, ins.rtype = append(ins.targets, intArray(s.targets)), append(ins.amount, s.amountMsat), append(ins.rtype, s.reportType)
		}
	}
	if len(gone) > 0 {
		b.Queue(`DELETE FROM cn_trust.sources WHERE event_id = ANY($1)`, gone)
	}
	if len(ins.id) > 0 {
		b.Queue(`INSERT INTO cn_trust.sources (event_id, author, etype, created_at, targets, amount_msat, report_type)
			SELECT i, a, e, c, t::integer[], m, nullif(r, '') FROM unnest($1::text[], $2::integer[], $3::smallint[], $4::bigint[], $5::text[], $6::bigint[], $7::text[]) AS u(i, a, e, c, t, m, r)
			ON CONFLICT (event_id) DO NOTHING`, ins.id, ins.author, ins.etype, ins.at, ins.targets, ins.amount, ins.rtype)
	}
	var delAuthor []int32
	var delKind []int32
	var up struct {
		author, kind []int32
		source, tg   []string
		at           []int64
	}
	keys := make([]setKey, 0, len(changedSets))
	for k := range changedSets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b setKey) int {
		if a.author != b.author {
			return int(a.author - b.author)
		}
		return a.kind - b.kind
	})
	for _, k := range keys {
		s := sets[k]
		if s == nil {
			delAuthor, delKind = append(delAuthor, k.author), append(delKind, int32(k.kind))
			continue
		}
		up.author, up.kind, up.source, up.at, up.tg = append(up.author, k.author), append(up.kind, int32(k.kind)), append(up.source, s.sourceID), append(up.at, s.createdAt), append(up.tg, intArray(s.targets))
	}
	if len(delAuthor) > 0 {
		b.Queue(`DELETE FROM cn_trust.sets s USING unnest($1::integer[], $2::integer[]) AS u(a, k) WHERE s.author = u.a AND s.kind = u.k`, delAuthor, delKind)
	}
	if len(up.author) > 0 {
		b.Queue(`INSERT INTO cn_trust.sets (author, kind, source_id, created_at, targets)
			SELECT a, k, s, c, t::integer[] FROM unnest($1::integer[], $2::integer[], $3::text[], $4::bigint[], $5::text[]) AS u(a, k, s, c, t)
			ON CONFLICT (author, kind) DO UPDATE SET source_id = excluded.source_id, created_at = excluded.created_at, targets = excluded.targets`,
			up.author, up.kind, up.source, up.at, up.tg)
	}
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("write graph: %w", err)
		}
	}
	if len(delta) > 0 {
		ids := make([]int32, 0, len(delta))
		for id := range delta {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		rows := make([][]any, 0, len(ids))
		for _, id := range ids {
			c := delta[id]
			var first *int64
			if c.firstSeen != 0 {
				first = &c.firstSeen
			}
			rows = append(rows, []any{id, c.followers, c.posts, c.replies, c.reactions, c.reportsRecd, c.reportsSent,
				c.zapCntRecd, c.zapAmtRecd, c.zapCntSent, c.zapAmtSent, first})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"cn_trust", "subject_deltas"}, deltaColumns, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("write counter changes: %w", err)
		}
	}
	return nil
}

var deltaColumns = []string{"id", "followers", "post_cnt", "reply_cnt", "reactions_cnt", "reports_cnt_recd", "reports_cnt_sent",
	"zap_cnt_recd", "zap_amt_recd", "zap_cnt_sent", "zap_amt_sent", "first_created_at"}

// Fold adds the counter changes the consumer appended to cn_trust.subjects and
// marks those subjects dirty, in one statement (a change is folded exactly
// once). The publisher calls it before each round.
func Fold(ctx context.Context, q interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}) (int64, error) {
	tag, err := q.Exec(ctx, `WITH d AS (DELETE FROM cn_trust.subject_deltas RETURNING *),
		agg AS (SELECT id, sum(followers) AS f, sum(post_cnt) AS p, sum(reply_cnt) AS r, sum(reactions_cnt) AS x,
				sum(reports_cnt_recd) AS rr, sum(reports_cnt_sent) AS rs, sum(zap_cnt_recd) AS zcr, sum(zap_amt_recd) AS zar,
				sum(zap_cnt_sent) AS zcs, sum(zap_amt_sent) AS zas, min(first_created_at) AS fc
			FROM d GROUP BY id)
		INSERT INTO cn_trust.subjects AS s (id, followers, post_cnt, reply_cnt, reactions_cnt, reports_cnt_recd, reports_cnt_sent,
				zap_cnt_recd, zap_amt_recd, zap_cnt_sent, zap_amt_sent, first_created_at, version, dirty)
		SELECT id, f, p, r, x, rr, rs, zcr, zar, zcs, zas, fc, 1, true FROM agg ORDER BY id
		ON CONFLICT (id) DO UPDATE SET
			followers = s.followers + excluded.followers, post_cnt = s.post_cnt + excluded.post_cnt,
			reply_cnt = s.reply_cnt + excluded.reply_cnt, reactions_cnt = s.reactions_cnt + excluded.reactions_cnt,
			reports_cnt_recd = s.reports_cnt_recd + excluded.reports_cnt_recd, reports_cnt_sent = s.reports_cnt_sent + excluded.reports_cnt_sent,
			zap_cnt_recd = s.zap_cnt_recd + excluded.zap_cnt_recd, zap_amt_recd = s.zap_amt_recd + excluded.zap_amt_recd,
			zap_cnt_sent = s.zap_cnt_sent + excluded.zap_cnt_sent, zap_amt_sent = s.zap_amt_sent + excluded.zap_amt_sent,
			first_created_at = least(s.first_created_at, excluded.first_created_at),
			version = s.version + 1, dirty = true`)
	if err != nil {
		return 0, fmt.Errorf("fold counter changes: %w", err)
	}
	return tag.RowsAffected(), nil
}

// intArray renders ids as a Postgres array literal ("{1,2,3}").
func intArray(ids []int32) string {
	var sb strings.Builder
	sb.Grow(len(ids)*8 + 2)
	sb.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(int64(id), 10))
	}
	sb.WriteByte('}')
	return sb.String()
}
