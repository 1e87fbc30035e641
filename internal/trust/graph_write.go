package trust

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kukuri/communitynode/pkg/consumer"
)

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
