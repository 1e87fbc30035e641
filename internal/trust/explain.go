package trust

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrUnknown is returned by Explain for a pubkey the graph never named.
var ErrUnknown = errors.New("pubkey unknown to the trust graph")

// Subject is what the node knows about one pubkey, with the reasons.
type Subject struct {
	Pubkey   string           `json:"pubkey"`
	Rank     int              `json:"rank"`
	Score    float64          `json:"score"`
	Risk     float64          `json:"risk"`
	Counts   map[string]int64 `json:"counts"` // NIP-85 names; zap amounts in sats
	FirstAt  *int64           `json:"first_created_at,omitempty"`
	Reports  map[string]int64 `json:"reports_by_type"`
	Run      *Computation     `json:"run,omitempty"` // the latest run (nil: none yet)
	Assert   *string          `json:"assertion_id,omitempty"`
	Explains *Explanation     `json:"explain,omitempty"`
}

// Explanation lists who lifts and who lowers a subject (the operator's "why").
type Explanation struct {
	TopFollowers []Ranked `json:"top_followers"` // by rank, at most 10
	Muters       []Ranked `json:"muted_by"`
	Reporters    []Ranked `json:"reported_by"`
}

// Ranked is a pubkey with its rank.
type Ranked struct {
	Pubkey string `json:"pubkey"`
	Rank   int    `json:"rank"`
}

// Explain reads a subject's scores and counts; with why, also its top
// followers, muters and reporters (these scan the sets: an operator's tool).
func Explain(ctx context.Context, q pgx.Tx, pubkey string, why bool) (*Subject, error) {
	s := &Subject{Pubkey: pubkey, Counts: map[string]int64{}, Reports: map[string]int64{}}
	var id int32
	var c [10]int64
	err := q.QueryRow(ctx, `SELECT k.id, coalesce(s.followers, 0), coalesce(s.post_cnt, 0), coalesce(s.reply_cnt, 0),
			coalesce(s.reactions_cnt, 0), coalesce(s.reports_cnt_recd, 0), coalesce(s.reports_cnt_sent, 0),
			coalesce(s.zap_cnt_recd, 0), coalesce(s.zap_amt_recd, 0), coalesce(s.zap_cnt_sent, 0), coalesce(s.zap_amt_sent, 0),
			s.first_created_at, coalesce(sc.rank, 0), coalesce(sc.score, 0), coalesce(sc.risk, 0), pb.event_id
		FROM cn_trust.pubkeys k
		LEFT JOIN cn_trust.subjects s ON s.id = k.id
		LEFT JOIN cn_trust.scores sc ON sc.pubkey = k.pubkey
		LEFT JOIN cn_trust.published pb ON pb.subject = k.pubkey
		WHERE k.pubkey = $1`, pubkey).Scan(&id, &c[0], &c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[7], &c[8], &c[9],
		&s.FirstAt, &s.Rank, &s.Score, &s.Risk, &s.Assert)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrUnknown
	}
	if err != nil {
		return nil, fmt.Errorf("read subject: %w", err)
	}
	for i, name := range []string{"followers", "post_cnt", "reply_cnt", "reactions_cnt", "reports_cnt_recd", "reports_cnt_sent",
		"zap_cnt_recd", "zap_amt_recd", "zap_cnt_sent", "zap_amt_sent"} {
		v := c[i]
		if name == "zap_amt_recd" || name == "zap_amt_sent" {
			v /= 1000
		}
		s.Counts[name] = v
	}
	rows, err := q.Query(ctx, `SELECT coalesce(report_type, 'other'), count(*) FROM cn_trust.sources
		WHERE etype = $1 AND targets @> ARRAY[$2::integer] GROUP BY 1 ORDER BY 1`, etReport, id)
	if err != nil {
		return nil, fmt.Errorf("read reports: %w", err)
	}
	for rows.Next() {
		var typ string
		var n int64
		if err := rows.Scan(&typ, &n); err != nil {
			return nil, err
		}
		s.Reports[typ] = n
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	run, err := LatestRun(ctx, q)
	if err != nil {
		return nil, err
	}
	s.Run = run
	if !why {
		return s, nil
	}
	s.Explains = &Explanation{}
	ranked := func(sql string, into *[]Ranked) error {
		rows, err := q.Query(ctx, sql, id)
		if err != nil {
			return err
		}
		*into = []Ranked{}
		for rows.Next() {
			var r Ranked
			if err := rows.Scan(&r.Pubkey, &r.Rank); err != nil {
				return err
			}
			*into = append(*into, r)
		}
		return rows.Err()
	}
	if err := ranked(`SELECT k.pubkey, coalesce(sc.rank, 0) AS r FROM cn_trust.sets s
		JOIN cn_trust.pubkeys k ON k.id = s.author LEFT JOIN cn_trust.scores sc ON sc.pubkey = k.pubkey
		WHERE s.kind = 3 AND s.targets @> ARRAY[$1::integer] ORDER BY r DESC, k.pubkey LIMIT 10`, &s.Explains.TopFollowers); err != nil {
		return nil, fmt.Errorf("read followers: %w", err)
	}
	if err := ranked(`SELECT k.pubkey, coalesce(sc.rank, 0) AS r FROM cn_trust.sets s
		JOIN cn_trust.pubkeys k ON k.id = s.author LEFT JOIN cn_trust.scores sc ON sc.pubkey = k.pubkey
		WHERE s.kind = 10000 AND s.targets @> ARRAY[$1::integer] ORDER BY r DESC, k.pubkey LIMIT 10`, &s.Explains.Muters); err != nil {
		return nil, fmt.Errorf("read muters: %w", err)
	}
	if err := ranked(`SELECT k.pubkey, max(coalesce(sc.rank, 0)) AS r FROM cn_trust.sources s
		JOIN cn_trust.pubkeys k ON k.id = s.author LEFT JOIN cn_trust.scores sc ON sc.pubkey = k.pubkey
		WHERE s.etype = 6 AND s.targets @> ARRAY[$1::integer] GROUP BY k.pubkey ORDER BY r DESC, k.pubkey LIMIT 10`, &s.Explains.Reporters); err != nil {
		return nil, fmt.Errorf("read reporters: %w", err)
	}
	return s, nil
}

// LatestRun returns the newest run (nil: none yet).
func LatestRun(ctx context.Context, q pgx.Tx) (*Computation, error) {
	r := &Computation{}
	var params []byte
	err := q.QueryRow(ctx, `SELECT id, snapshot_seq, as_of, params, seeds_source, subjects, edges, iterations, residual, changed,
			load_ms, compute_ms, finished_at FROM cn_trust.runs ORDER BY id DESC LIMIT 1`).
		Scan(&r.ID, &r.SnapshotSeq, &r.AsOf, &params, &r.SeedsSource, &r.Subjects, &r.Edges, &r.Iterations, &r.Residual,
			&r.Changed, &r.LoadMS, &r.ComputeMS, &r.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read latest run: %w", err)
	}
	if err := json.Unmarshal(params, &r.Params); err != nil {
		return nil, err
	}
	return r, nil
}
