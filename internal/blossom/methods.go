package blossom

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/relayadmin/nip86"
)

// Flagged lists the blobs an operator should look at: the hidden ones and
// those open NIP-56 reports name, most open reports first, then hidden before
// visible, then largest; at most limit (the console's Media page).
func (d *DB) Flagged(ctx context.Context, limit int) ([]Listed, error) {
	rows, err := d.Pool.Query(ctx, `WITH r AS (
			SELECT target, count(*) AS n FROM cn_moderation.reports
			 WHERE target_kind = 'blob' AND withdrawn_seq IS NULL GROUP BY target)
		SELECT encode(b.sha256, 'hex'), b.size, b.type, b.created, coalesce(b.hidden, ''),
			array(SELECT pubkey FROM cn_blossom.owners o WHERE o.sha256 = b.sha256 ORDER BY uploaded),
			coalesce(r.n, 0)
		FROM cn_blossom.blobs b LEFT JOIN r ON r.target = encode(b.sha256, 'hex')
		WHERE b.hidden IS NOT NULL OR r.n > 0
		ORDER BY coalesce(r.n, 0) DESC, (b.hidden IS NOT NULL) DESC, b.size DESC, b.sha256 LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Listed, error) {
		var l Listed
		err := r.Scan(&l.SHA256, &l.Size, &l.Type, &l.Created, &l.Hidden, &l.Owners, &l.Reports)
		l.Uploaded = l.Created
		return l, err
	})
}

// The NIP-86 methods of blobs (Methods).
const (
	MethodHide   = "hideblob"
	MethodUnhide = "unhideblob"
)

// Methods are the relay's NIP-86 methods for blobs (a relayadmin.Extension,
// served while Blossom is on): hideblob [sha256, reason] and unhideblob
// [sha256], the changes `cnctl blobs hide|unhide` make, through the same
// functions (DB.Hide, DB.Unhide), logged in cn_blossom.log with the admin's
// pubkey as actor. Each answers true when it changed the blob, false when it
// was so already; a blob not stored is a bad request.
func (d *DB) Methods() []nip86.Method {
	run := func(ctx context.Context, c *nip86.Call) (any, error) {
		hash := c.Hex64(0, "the blob's sha256")
		reason := c.OptString(1, "the reason")
		if err := c.Err(); err != nil {
			return nil, err
		}
		var changed bool
		var err error
		if c.Method == MethodHide {
			changed, err = d.Hide(ctx, hash, c.Actor, reason)
		} else {
			changed, err = d.Unhide(ctx, hash, c.Actor)
		}
		if errors.Is(err, ErrNotFound) {
			return nil, nip86.Refuse("blob %s is not stored", hash)
		}
		return changed, err
	}
	return []nip86.Method{
		{Name: MethodHide, Min: 1, Max: 2, About: "the blob's sha256 and a reason", Do: run},
		{Name: MethodUnhide, Min: 1, Max: 1, About: "the blob's sha256", Do: run},
	}
}
