package trust

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Computation describes one full computation (a row of cn_trust.runs).
type Computation struct {
	ID          int64     `json:"id"`
	SnapshotSeq int64     `json:"snapshot_seq"`
	AsOf        int64     `json:"as_of"`
	Params      Params    `json:"params"`
	SeedsSource string    `json:"seeds_source"`
	Subjects    int       `json:"subjects"`
	Edges       int64     `json:"edges"`
	Iterations  int       `json:"iterations"`
	Residual    float64   `json:"residual"`
	Changed     int       `json:"changed"`
	LoadMS      int64     `json:"load_ms"`
	ComputeMS   int64     `json:"compute_ms"`
	FinishedAt  time.Time `json:"finished_at"`
}

// Seeds is the teleport set of a computation and where it came from.
type Seeds struct {
	Pubkeys []string
	Source  string // "flag", "admins" or "uniform"
}

// riskEpsilon: a risk change smaller than this is not a change.
const riskEpsilon = 1e-6

// Recompute loads the snapshot, computes, and writes what changed: scores,
// the dirty marks of subjects whose rank changed (the publisher republishes
// them), the seed set, and the run's record. requestID, when > 0, is the
// cnctl request this run serves.
func Recompute(ctx context.Context, pool *pgxpool.Pool, seeds Seeds, p Params, asOf int64, requestID int64) (Computation, error) {
	started := time.Now()
	run := Computation{AsOf: asOf, Params: p, SeedsSource: seeds.Source}
	var snap *Snapshot
	// The scores in the table, by node; a scored key the graph no longer names
	// (its rows were all deleted) is in gone.
	var prevRank []int16
	var prevRisk []float64
	var had []bool
	var gone []string
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		if snap, err = Load(ctx, tx, seeds.Pubkeys); err != nil {
			return err
		}
		n := len(snap.Input.Pubkeys)
		prevRank, prevRisk, had = make([]int16, n), make([]float64, n), make([]bool, n)
		rows, err := tx.Query(ctx, `SELECT pubkey, rank, risk FROM cn_trust.scores`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k string
			var r int16
			var risk float64
			if err := rows.Scan(&k, &r, &risk); err != nil {
				return err
			}
			v, found := slices.BinarySearch(snap.Input.Pubkeys, k)
			if !found {
				gone = append(gone, k)
				continue
			}
			prevRank[v], prevRisk[v], had[v] = r, risk, true
		}
		return rows.Err()
	})
	if err != nil {
		return run, fmt.Errorf("load trust snapshot: %w", err)
	}
	loaded := time.Now()
	res := Compute(&snap.Input, p, asOf)
	computed := time.Now()
	run.SnapshotSeq, run.Subjects, run.Edges = snap.Seq, len(snap.Input.Pubkeys), res.Edges
	run.Iterations, run.Residual = res.Iterations, res.Residual
	run.LoadMS, run.ComputeMS = loaded.Sub(started).Milliseconds(), computed.Sub(loaded).Milliseconds()

	// What changed since the scores in the table.
	var upKey []string
	var upRank []int16
	var upScore, upRisk []float64
	var dirty []int32
	for v, key := range snap.Input.Pubkeys {
		rank, risk := res.Rank[v], res.Risk[v]
		if rank != prevRank[v] && snap.ids[v] >= 0 {
			dirty = append(dirty, snap.ids[v]) // its assertion changes (or goes)
		}
		if rank == 0 && risk == 0 {
			if had[v] {
				gone = append(gone, key)
			}
			continue
		}
		if had[v] && prevRank[v] == rank && math.Abs(prevRisk[v]-risk) < riskEpsilon {
			continue
		}
		upKey, upRank, upScore, upRisk = append(upKey, key), append(upRank, rank), append(upScore, res.Score[v]), append(upRisk, risk)
	}
	slices.Sort(dirty)
	run.Changed = len(upKey) + len(gone)
	params, _ := json.Marshal(p)

	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO cn_trust.runs (algorithm, snapshot_seq, as_of, params, seeds_source, started_at, finished_at,
				subjects, edges, iterations, residual, changed, load_ms, compute_ms)
			VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8, $9, $10, $11, $12, $13) RETURNING id, finished_at`,
			Algorithm, run.SnapshotSeq, asOf, params, seeds.Source, started, run.Subjects, run.Edges, run.Iterations,
			run.Residual, run.Changed, run.LoadMS, run.ComputeMS).Scan(&run.ID, &run.FinishedAt); err != nil {
			return fmt.Errorf("record run: %w", err)
		}
		var b pgx.Batch
		if len(gone) > 0 {
			b.Queue(`DELETE FROM cn_trust.scores WHERE pubkey = ANY($1)`, gone)
		}
		if len(upKey) > 0 {
			b.Queue(`INSERT INTO cn_trust.scores (pubkey, rank, score, risk, run_id)
				SELECT k, r, s, x, $5 FROM unnest($1::text[], $2::smallint[], $3::float8[], $4::float8[]) AS u(k, r, s, x)
				ON CONFLICT (pubkey) DO UPDATE SET rank = excluded.rank, score = excluded.score, risk = excluded.risk, run_id = excluded.run_id`,
				upKey, upRank, upScore, upRisk, run.ID)
		}
		if len(dirty) > 0 {
			b.Queue(`INSERT INTO cn_trust.subjects AS s (id) SELECT unnest($1::integer[])
				ON CONFLICT (id) DO UPDATE SET dirty = true, version = s.version + 1`, dirty)
		}
		b.Queue(`DELETE FROM cn_trust.seeds`)
		if len(seeds.Pubkeys) > 0 {
			b.Queue(`INSERT INTO cn_trust.seeds (pubkey) SELECT DISTINCT unnest($1::text[])`, seeds.Pubkeys)
		}
		if requestID > 0 {
			b.Queue(`UPDATE cn_trust.requests SET run_id = $1 WHERE id <= $2 AND run_id IS NULL`, run.ID, requestID)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return run, fmt.Errorf("write trust scores: %w", err)
	}
	return run, nil
}
