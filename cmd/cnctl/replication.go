package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/jackc/pgx/v5/pgxpool"
)

// replication is what cnctl status shows of the database server's
// replication: whether it is a primary or a standby, what a commit waits
// for, and each standby streaming from it (pg_stat_replication).
type replication struct {
	InRecovery        bool      `json:"in_recovery"`
	SynchronousNames  string    `json:"synchronous_standby_names"`
	SynchronousCommit string    `json:"synchronous_commit"`
	Standbys          []standby `json:"standbys"`
}

type standby struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	SyncMode string `json:"sync_state"` // async, potential, sync, quorum
	// LagBytes is the WAL the primary wrote that the standby has not replayed
	// (-1: unknown, the role may not read it).
	LagBytes int64 `json:"replay_lag_bytes"`
	// LagSeconds is the time of the last replay (pg_stat_replication.replay_lag;
	// -1 unknown; it is null when the standby is idle and caught up: 0).
	LagSeconds float64 `json:"replay_lag_seconds"`
}

func readReplication(ctx context.Context, pool *pgxpool.Pool) (replication, error) {
	var r replication
	err := pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), current_setting('synchronous_standby_names'), current_setting('synchronous_commit')`).
		Scan(&r.InRecovery, &r.SynchronousNames, &r.SynchronousCommit)
	if err != nil || r.InRecovery {
		return r, err
	}
	rows, err := pool.Query(ctx, `SELECT coalesce(application_name, ''), coalesce(state, '?'), coalesce(sync_state, '?'),
		coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint, -1),
		coalesce(extract(epoch FROM replay_lag)::float8, CASE WHEN replay_lsn IS NULL THEN -1 ELSE 0 END)
		FROM pg_stat_replication ORDER BY application_name`)
	if err != nil {
		return r, err
	}
	defer rows.Close()
	for rows.Next() {
		var s standby
		if err := rows.Scan(&s.Name, &s.State, &s.SyncMode, &s.LagBytes, &s.LagSeconds); err != nil {
			return r, err
		}
		r.Standbys = append(r.Standbys, s)
	}
	return r, rows.Err()
}

// writeReplication prints the replication state and what a failure of this
// server would lose.
func writeReplication(w io.Writer, r replication) error {
	if r.InRecovery {
		fmt.Fprintln(w, "replication: this server is a STANDBY (read-only, in recovery): point cnctl at the primary")
		return nil
	}
	sync := 0
	for _, s := range r.Standbys {
		if s.SyncMode == "sync" || s.SyncMode == "quorum" {
			sync++
		}
	}
	switch {
	case len(r.Standbys) == 0 && r.SynchronousNames == "":
		fmt.Fprintln(w, "replication: primary, no standby: losing this server loses everything since the last backup")
	case r.SynchronousNames != "" && sync == 0:
		fmt.Fprintf(w, "replication: primary, synchronous_standby_names '%s' but NO SYNCHRONOUS STANDBY connected: every write waits (events are answered error:)\n", r.SynchronousNames)
	case sync > 0:
		fmt.Fprintf(w, "replication: primary, %d synchronous standby(s) (synchronous_commit %s): a failover to one loses no acknowledged event\n", sync, r.SynchronousCommit)
	default:
		fmt.Fprintln(w, "replication: primary, asynchronous standbys only: a failover loses the commits a standby has not received (its lag below)")
	}
	if len(r.Standbys) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STANDBY\tSTATE\tSYNC\tREPLAY_LAG_BYTES\tREPLAY_LAG")
	for _, s := range r.Standbys {
		lag := "?"
		if s.LagSeconds >= 0 {
			lag = fmt.Sprintf("%.3fs", s.LagSeconds)
		}
		bytes := "?"
		if s.LagBytes >= 0 {
			bytes = fmt.Sprint(s.LagBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.State, s.SyncMode, bytes, lag)
	}
	return tw.Flush()
}
