package blossom

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Listed is a blob as the operator sees it (`cnctl blobs list`).
type Listed struct {
	Blob
	Reports int // open NIP-56 reports naming it
}

// All lists every stored blob, largest first, at most limit; hiddenOnly
// keeps the hidden ones, owner (if set) one key's.
func (d *DB) All(ctx context.Context, owner string, hiddenOnly bool, limit int) ([]Listed, error) {
	rows, err := d.Pool.Query(ctx, `SELECT encode(b.sha256, 'hex'), b.size, b.type, b.created, coalesce(b.hidden, ''),
			array(SELECT pubkey FROM cn_blossom.owners o WHERE o.sha256 = b.sha256 ORDER BY uploaded),
			(SELECT count(*) FROM cn_moderation.reports r
			  WHERE r.target = encode(b.sha256, 'hex') AND r.target_kind = 'blob' AND r.withdrawn_seq IS NULL)
		FROM cn_blossom.blobs b
		WHERE ($1 = '' OR EXISTS (SELECT 1 FROM cn_blossom.owners o WHERE o.sha256 = b.sha256 AND o.pubkey = $1))
		  AND (NOT $2 OR b.hidden IS NOT NULL)
		ORDER BY b.size DESC, b.sha256 LIMIT $3`, owner, hiddenOnly, limit)
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Listed, error) {
		var l Listed
		err := r.Scan(&l.SHA256, &l.Size, &l.Type, &l.Created, &l.Hidden, &l.Owners, &l.Reports)
		l.Uploaded = l.Created
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return out, nil
}

// Uploader is a key and what its claims add up to.
type Uploader struct {
	Pubkey string
	Usage
}

// TopUploaders returns the keys holding the most bytes, at most limit.
func (d *DB) TopUploaders(ctx context.Context, limit int) ([]Uploader, error) {
	rows, err := d.Pool.Query(ctx, `SELECT o.pubkey, sum(b.size), count(*) FROM cn_blossom.owners o
		JOIN cn_blossom.blobs b USING (sha256) GROUP BY o.pubkey ORDER BY sum(b.size) DESC, o.pubkey LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("top uploaders: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Uploader, error) {
		var u Uploader
		err := r.Scan(&u.Pubkey, &u.Bytes, &u.Blobs)
		return u, err
	})
}

// Execer is a transaction's Exec and QueryRow (pgx.Tx, consumer.Tx).
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Hide stops hash from being served (ErrNotFound when it is not stored);
// hiding a hidden blob changes nothing. actor and reason go to the log.
// byRule hides only a blob no operator unhid (an operator's unhide is final
// for the moderator's rules, as for events).
func Hide(ctx context.Context, tx Execer, hash, actor, reason string, byRule bool, now time.Time) (bool, error) {
	if reason == "" {
		reason = "hidden"
	}
	tag, err := tx.Exec(ctx, `UPDATE cn_blossom.blobs b SET hidden = $2, hidden_at = $3 WHERE sha256 = $1 AND hidden IS NULL
		AND NOT ($4 AND EXISTS (SELECT 1 FROM cn_blossom.log l WHERE l.sha256 = b.sha256 AND l.op = 'unhide'))`,
		key(hash), reason, now, byRule)
	if err != nil {
		return false, fmt.Errorf("hide blob: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, exists(ctx, tx, hash)
	}
	_, err = tx.Exec(ctx, `INSERT INTO cn_blossom.log (at, op, sha256, actor, reason) VALUES ($1, 'hide', $2, $3, $4)`,
		now, key(hash), actor, reason)
	return err == nil, err
}

func exists(ctx context.Context, tx Execer, hash string) error {
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cn_blossom.blobs WHERE sha256 = $1)`, key(hash)).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return ErrNotFound
	}
	return nil
}

// Hide hides hash (see the function Hide).
func (d *DB) Hide(ctx context.Context, hash, actor, reason string) (changed bool, err error) {
	err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		changed, err = Hide(ctx, tx, hash, actor, reason, false, time.Now())
		return err
	})
	return changed, err
}

// Unhide serves hash again; a hidden blob that no key owns any more (its
// file is gone) is forgotten instead.
func (d *DB) Unhide(ctx context.Context, hash, actor string) (changed bool, err error) {
	err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE cn_blossom.blobs SET hidden = NULL, hidden_at = NULL WHERE sha256 = $1 AND hidden IS NOT NULL`, key(hash))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return exists(ctx, tx, hash)
		}
		changed = true
		if _, err := tx.Exec(ctx, `DELETE FROM cn_blossom.blobs b WHERE sha256 = $1
			AND NOT EXISTS (SELECT 1 FROM cn_blossom.owners o WHERE o.sha256 = b.sha256)`, key(hash)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO cn_blossom.log (op, sha256, actor) VALUES ('unhide', $1, $2)`, key(hash), actor)
		return err
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("unhide blob: %w", err)
	}
	return changed, err
}

// Purge removes hash's file and every claim on it, and keeps its row hidden
// so that it cannot be uploaded again (`cnctl blobs unhide` forgets it).
// It returns how many bytes were freed.
func (d *DB) Purge(ctx context.Context, hash, actor, reason string) (int64, error) {
	if reason == "" {
		reason = "purged"
	}
	var trashed string
	var size int64
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT size FROM cn_blossom.blobs WHERE sha256 = $1 FOR UPDATE`, key(hash)).Scan(&size); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM cn_blossom.owners WHERE sha256 = $1`, key(hash)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE cn_blossom.blobs SET hidden = $2, hidden_at = coalesce(hidden_at, now())
			WHERE sha256 = $1`, key(hash), reason); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_blossom.log (op, sha256, actor, reason) VALUES ('purge', $1, $2, $3)`,
			key(hash), actor, reason); err != nil {
			return err
		}
		var err error
		trashed, err = d.Files.trash(hash)
		return err
	})
	d.settle(hash, trashed, err)
	if err != nil && !errors.Is(err, ErrNotFound) {
		err = fmt.Errorf("purge blob: %w", err)
	}
	return size, err
}
