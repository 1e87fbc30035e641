package indexer

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// cleanPendingEvery is how often CleanPending merges the GIN pending list.
const cleanPendingEvery = 100 * time.Millisecond

// CleanPending merges the pending list of the documents' GIN index into the index
// until ctx is done, on a connection of its own: again at once while merges find
// work, else every cleanPendingEvery.
//
// Why: with fastupdate, an INSERT only appends its lexemes to the pending list;
// merging the list into the index is the most expensive part of indexing, and
// Postgres makes the inserting backend do it when the list is full — unless
// another backend is already merging, in which case the inserter goes on. So this
// loop moves the merge off the index-v1 transaction's critical path onto the
// other CPU, and keeps the list short for searches (which scan it whole). When
// the list is empty a call costs a metapage read. Needs ownership of the index
// (the role that ran the migrations); without it the loop logs once and stops.
// Other failures (a reindex swapping the index under it, a lost connection) are
// retried.
func CleanPending(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) {
	wait := time.NewTimer(cleanPendingEvery)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		var pages int64
		err := pool.QueryRow(ctx, "SELECT gin_clean_pending_list('cn_index.documents_tsv_idx'::regclass)").Scan(&pages)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege: for good
				logger.Warn("cannot merge the search index's pending list (not the index's owner); Postgres merges inline", "err", err)
				return
			}
			// Anything else passes (a reindex swapping the index, a lost connection):
			// try again later.
			logger.Debug("merging the search index's pending list failed; retrying", "err", err)
			wait.Reset(10 * cleanPendingEvery)
			continue
		}
		if pages > 0 {
			wait.Reset(0) // a backlog is being indexed: keep merging
		} else {
			wait.Reset(cleanPendingEvery)
		}
	}
}
