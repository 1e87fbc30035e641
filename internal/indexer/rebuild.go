package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
	"github.com/kukuri/communitynode/schema"
)

// RebuildOptions configures Rebuild.
type RebuildOptions struct {
	Kinds       []int  // indexed kinds; DefaultKinds when nil
	RequestedBy string // recorded in cn_index.rebuilds
	Logger      *slog.Logger
	Now         func() time.Time
}

// ErrRebuildRunning is returned by Rebuild while another rebuild runs.
var ErrRebuildRunning = errors.New("another reindex is running")

// RebuildResult tells what a rebuild did.
type RebuildResult struct {
	SnapshotSeq int64 // outbox head the stored events were read at
	SwitchedSeq int64 // index-v1 offset at the switch-over
	Documents   int64 // documents in the index after the switch-over
	Loaded      int64 // documents loaded from the snapshot
	CaughtUp    int64 // outbox rows applied after the snapshot
}

// rebuildChunk is how many documents one INSERT of the initial load carries, and
// how many outbox rows one catch-up step applies.
const rebuildChunk = 2000

// Rebuild builds a new index from the stored events and switches it in, while the
// current index keeps answering searches and the live consumer keeps running:
//
//  1. Load: in one REPEATABLE READ snapshot, read the outbox head H and every
//     visible event of an indexed kind, analyse them, and insert the documents
//     into cn_index.documents_rebuild (created fresh; a leftover of an aborted
//     rebuild is dropped). Events and their outbox rows commit together, and seq
//     order is commit order, so the snapshot holds exactly the effects of the
//     rows up to H.
//  2. Index the new table, then catch up by applying the outbox rows after H.
//  3. Switch, in one transaction: take the switch lock exclusively (it waits for
//     the live consumer's running batch and holds off the next one), read the
//     index-v1 offset L, apply the rows up to L still missing, swap the tables,
//     drop the old one. Rows the new table has seen beyond L are applied again by
//     the live consumer after the switch: applying is idempotent.
//
// If index-v1 has never run, its offset is created at the rebuilt position, so
// the consumer starts where the rebuild ended. Rebuild is safe to run again after
// a failure at any step.
func Rebuild(ctx context.Context, pool *pgxpool.Pool, o RebuildOptions) (RebuildResult, error) {
	var res RebuildResult
	logger, kinds := orDiscard(o.Logger), kindsOrDefault(o.Kinds)
	h := &Handler{Kinds: NewKinds(kinds), Now: o.Now}

	// One rebuild at a time: a session lock, held on a connection of its own for
	// the whole run (it ends with the connection if the process dies).
	lockConn, err := pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("connect: %w", err)
	}
	defer lockConn.Release()
	var locked bool
	if err := lockConn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", schema.IndexRebuildLock).Scan(&locked); err != nil {
		return res, fmt.Errorf("take the rebuild lock: %w", err)
	}
	if !locked {
		return res, ErrRebuildRunning
	}
	defer func() {
		_, _ = lockConn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", schema.IndexRebuildLock)
	}()

	var id int64
	if err := pool.QueryRow(ctx, "INSERT INTO cn_index.rebuilds (requested_by) VALUES ($1) RETURNING id", o.RequestedBy).Scan(&id); err != nil {
		return res, fmt.Errorf("record rebuild: %w", err)
	}
	if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+rebuildTable+`;
		CREATE TABLE `+rebuildTable+` (LIKE `+documentsTable+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`, pgx.QueryExecModeSimpleProtocol); err != nil {
		return res, fmt.Errorf("create %s: %w", rebuildTable, err)
	}

	start := time.Now()
	if res.SnapshotSeq, res.Loaded, err = loadSnapshot(ctx, pool, h); err != nil {
		return res, err
	}
	logger.Info("reindex: snapshot loaded", "documents", res.Loaded, "snapshot_seq", res.SnapshotSeq, "took", time.Since(start).Round(time.Millisecond))
	if _, err := pool.Exec(ctx, "SET maintenance_work_mem = '256MB'; "+indexDDL(rebuildTable, "documents_rebuild")+"; ANALYZE "+rebuildTable, pgx.QueryExecModeSimpleProtocol); err != nil {
		return res, fmt.Errorf("index %s: %w", rebuildTable, err)
	}
	logger.Info("reindex: indexes built", "took", time.Since(start).Round(time.Millisecond))

	pos := res.SnapshotSeq
	for {
		n, next, err := catchUp(ctx, pool, h, pos)
		if err != nil {
			return res, err
		}
		res.CaughtUp += int64(n)
		pos = next
		if n < rebuildChunk {
			break
		}
	}
	// The switch-over renames the live table under an exclusive lock while
	// searches, the live consumer and the GIN pending-list merge hold their own:
	// Postgres may pick it as a deadlock victim or its lock_timeout may expire.
	// Its transaction is then rolled back whole (the rebuild table, the offset
	// and the live table are as before), so it is tried again.
	caughtUp := res.CaughtUp
	for attempt := 1; ; attempt++ {
		res.CaughtUp = caughtUp
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			return h.switchOver(ctx, tx, id, pos, &res)
		})
		if err == nil {
			break
		}
		var pgErr *pgconn.PgError
		if attempt < switchAttempts && errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "55P03") && ctx.Err() == nil {
			logger.Warn("reindex: switch-over lost a lock conflict; trying again", "attempt", attempt, "err", err)
			continue
		}
		return res, fmt.Errorf("switch over: %w", err)
	}
	logger.Info("reindex: switched", "documents", res.Documents, "offset", res.SwitchedSeq, "took", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// loadSnapshot fills the rebuild table from one snapshot of the stored events and
// returns the outbox head of that snapshot.
func loadSnapshot(ctx context.Context, pool *pgxpool.Pool, h *Handler) (head, loaded int64, err error) {
	read, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot: %w", err)
	}
	defer func() { _ = read.Rollback(context.WithoutCancel(ctx)) }()
	if head, err = outbox.Head(ctx, read); err != nil {
		return 0, 0, err
	}
	kinds := make([]int32, 0, len(h.Kinds))
	for k := range h.Kinds {
		kinds = append(kinds, int32(k))
	}
	rows, err := read.Query(ctx, loadAllSQL, kinds)
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot: %w", err)
	}
	defer rows.Close()
	var cols docColumns
	flush := func() error {
		if len(cols.ids) == 0 {
			return nil
		}
		var b pgx.Batch
		cols.queueInsert(&b, rebuildTable, true)
		if err := pool.SendBatch(ctx, &b).Close(); err != nil {
			return fmt.Errorf("load %s: %w", rebuildTable, err)
		}
		loaded += int64(len(cols.ids))
		cols = docColumns{}
		return nil
	}
	for rows.Next() {
		var s source
		if err := rows.Scan(&s.id, &s.pubkey, &s.kind, &s.createdAt, &s.content, &s.key, &s.visible, &s.expiresAt, &s.topics); err != nil {
			return 0, 0, fmt.Errorf("snapshot: %w", err)
		}
		if h.indexable(s) {
			cols.add(s)
		}
		if len(cols.ids) >= rebuildChunk {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("snapshot: %w", err)
	}
	return head, loaded, flush()
}

// catchUp applies the outbox rows after pos to the rebuild table.
func catchUp(ctx context.Context, pool *pgxpool.Pool, h *Handler, pos int64) (n int, next int64, err error) {
	rows, err := outbox.ReadAfter(ctx, pool, pos, rebuildChunk, nil)
	if err != nil || len(rows) == 0 {
		return 0, pos, err
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return h.apply(ctx, tx, rebuildTable, h.rowIDs(rows), false) })
	if err != nil {
		return 0, pos, fmt.Errorf("catch up: %w", err)
	}
	return len(rows), rows[len(rows)-1].Seq, nil
}

// switchAttempts bounds the switch-over's tries (see Rebuild).
const switchAttempts = 5

// switchOver is step 3 of Rebuild, inside tx.
func (h *Handler) switchOver(ctx context.Context, tx pgx.Tx, id, pos int64, res *RebuildResult) error {
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.IndexSwitchLock); err != nil {
		return fmt.Errorf("wait for the live consumer's batch: %w", err)
	}
	// If index-v1 never ran, it starts where the rebuilt index ends.
	if _, err := consumer.Register(ctx, tx, ConsumerName, pos); err != nil {
		return err
	}
	offset, err := consumer.LockOffset(ctx, tx, ConsumerName)
	if err != nil {
		return err
	}
	for pos < offset {
		rows, err := outbox.ReadAfter(ctx, tx, pos, rebuildChunk, nil)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		if rows[len(rows)-1].Seq > offset {
			cut := 0
			for cut < len(rows) && rows[cut].Seq <= offset {
				cut++
			}
			rows = rows[:cut]
		}
		if len(rows) == 0 {
			break
		}
		if err := h.apply(ctx, tx, rebuildTable, h.rowIDs(rows), false); err != nil {
			return err
		}
		res.CaughtUp += int64(len(rows))
		pos = rows[len(rows)-1].Seq
	}
	swap := `
ALTER TABLE cn_index.documents RENAME TO documents_old;
ALTER INDEX cn_index.documents_pkey RENAME TO documents_old_pkey;
ALTER INDEX cn_index.documents_tsv_idx RENAME TO documents_old_tsv_idx;
ALTER INDEX cn_index.documents_effective_key_idx RENAME TO documents_old_effective_key_idx;
ALTER TABLE cn_index.documents_rebuild RENAME TO documents;
ALTER INDEX cn_index.documents_rebuild_pkey RENAME TO documents_pkey;
ALTER INDEX cn_index.documents_rebuild_tsv_idx RENAME TO documents_tsv_idx;
ALTER INDEX cn_index.documents_rebuild_effective_key_idx RENAME TO documents_effective_key_idx;
ALTER TABLE cn_index.documents SET (autovacuum_analyze_scale_factor = 0.05);
DROP TABLE cn_index.documents_old`
	if _, err := tx.Exec(ctx, swap, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fmt.Errorf("swap tables: %w", err)
	}
	res.SwitchedSeq = offset
	return tx.QueryRow(ctx, `UPDATE cn_index.rebuilds SET snapshot_seq = $2, switched_seq = $3, finished_at = now(),
		documents = (SELECT count(*) FROM cn_index.documents) WHERE id = $1 RETURNING documents`,
		id, res.SnapshotSeq, offset).Scan(&res.Documents)
}

// indexDDL creates the live index's indexes on table, named prefix_*. It must
// match schema/0005_search_index.sql.
func indexDDL(table, prefix string) string {
	return fmt.Sprintf(`
ALTER TABLE %[1]s ADD CONSTRAINT %[2]s_pkey PRIMARY KEY (event_id);
CREATE INDEX %[2]s_tsv_idx ON %[1]s USING gin (tsv);
CREATE UNIQUE INDEX %[2]s_effective_key_idx ON %[1]s (effective_key) WHERE effective_key IS NOT NULL`, table, prefix)
}

// rowIDs returns the events of rows of indexed kinds (see Handle).
func (h *Handler) rowIDs(rows []outbox.Row) []string {
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		if h.Kinds[r.Kind] {
			ids = append(ids, r.EventID)
		}
	}
	return ids
}
