package blossom

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrNotFound is a blob (or a claim on it) that is not stored.
var ErrNotFound = errors.New("blob not found")

// ErrHidden is an upload of a blob that moderation or an operator hid.
var ErrHidden = errors.New("blob is hidden")

// ErrQuota is an upload that would take its key past a quota.
var ErrQuota = errors.New("quota exceeded")

// Blob is a stored blob's metadata.
type Blob struct {
	SHA256   string // lower-case hex
	Size     int64
	Type     string
	Created  time.Time
	Uploaded time.Time // the owner's claim, when listed for an owner; else Created
	Hidden   string    // why it is not served; "" when it is
	Owners   []string
}

// Usage is what a key's claims add up to.
type Usage struct {
	Bytes int64
	Blobs int
}

// Quota bounds each key's claims: their total bytes and their number. Zero
// fields are no bound.
type Quota struct {
	Bytes int64
	Blobs int
}

// Files keeps blob files under one directory: <dir>/<first two hex digits>/<hash>,
// with uploads in progress under <dir>/tmp. Every name is built from a checked
// hash, never from a request's path.
type Files struct{ Dir string }

// Path is the file of hash.
func (f Files) Path(hash string) string { return filepath.Join(f.Dir, hash[:2], hash) }

func (f Files) tmpDir() string { return filepath.Join(f.Dir, "tmp") }

// Check reports whether Dir is a blob directory (it has its tmp directory).
func (f Files) Check() error {
	if st, err := os.Stat(f.tmpDir()); err != nil || !st.IsDir() {
		return fmt.Errorf("%s is not a blob directory (no tmp directory in it)", f.Dir)
	}
	return nil
}

// Init creates the directory and its tmp directory, and removes what an
// interrupted upload or delete left in tmp.
func (f Files) Init() error {
	if err := os.MkdirAll(f.tmpDir(), 0o750); err != nil {
		return fmt.Errorf("blob directory: %w", err)
	}
	entries, err := os.ReadDir(f.tmpDir())
	if err != nil {
		return fmt.Errorf("blob directory: %w", err)
	}
	for _, e := range entries {
		_ = os.Remove(filepath.Join(f.tmpDir(), e.Name()))
	}
	return nil
}

// Temp creates a file for an upload in progress.
func (f Files) Temp() (*os.File, error) {
	return os.CreateTemp(f.tmpDir(), "upload-*")
}

// place moves the synced upload tmp to hash's path unless a file is there
// already (the same bytes: the name is their hash), then syncs the directory
// so the rename survives a crash. It reports whether tmp was moved; if not,
// tmp is removed.
func (f Files) place(tmp, hash string) (bool, error) {
	final := f.Path(hash)
	if _, err := os.Stat(final); err == nil {
		_ = os.Remove(tmp)
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return false, err
	}
	return true, syncDir(dir)
}

// trash moves hash's file aside (into tmp) and returns where, or "" when
// there is none.
func (f Files) trash(hash string) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	to := filepath.Join(f.tmpDir(), "deleted-"+hash+"-"+hex.EncodeToString(b[:]))
	if _, err := os.Stat(f.Path(hash)); errors.Is(err, fs.ErrNotExist) {
		return "", nil // (a row without its file: nothing to move)
	}
	if err := os.Rename(f.Path(hash), to); err != nil {
		return "", err
	}
	return to, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// DB is the blobs' metadata in cn_blossom (schema 0038).
type DB struct {
	Pool  *pgxpool.Pool
	Files Files
}

func key(hash string) []byte {
	b, _ := hex.DecodeString(hash)
	return b
}

// Get returns hash's blob with its owners, or ErrNotFound.
func (d *DB) Get(ctx context.Context, hash string) (*Blob, error) {
	b := &Blob{SHA256: hash}
	var hidden *string
	err := d.Pool.QueryRow(ctx, `SELECT size, type, created, hidden,
			array(SELECT pubkey FROM cn_blossom.owners o WHERE o.sha256 = b.sha256 ORDER BY uploaded)
		FROM cn_blossom.blobs b WHERE sha256 = $1`, key(hash)).Scan(&b.Size, &b.Type, &b.Created, &hidden, &b.Owners)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get blob: %w", err)
	}
	if hidden != nil {
		b.Hidden = *hidden
	}
	b.Uploaded = b.Created
	return b, nil
}

// Usage returns what pubkey's claims add up to.
func (d *DB) Usage(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, pubkey string) (Usage, error) {
	var u Usage
	err := q.QueryRow(ctx, `SELECT coalesce(sum(b.size), 0), count(*) FROM cn_blossom.owners o
		JOIN cn_blossom.blobs b USING (sha256) WHERE o.pubkey = $1`, pubkey).Scan(&u.Bytes, &u.Blobs)
	if err != nil {
		return u, fmt.Errorf("blob usage: %w", err)
	}
	return u, nil
}

// Owns reports whether pubkey holds a claim on hash.
func (d *DB) Owns(ctx context.Context, hash, pubkey string) (bool, error) {
	var ok bool
	err := d.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cn_blossom.owners WHERE sha256 = $1 AND pubkey = $2)`,
		key(hash), pubkey).Scan(&ok)
	return ok, err
}

// UseAuth records an authorization's id until it expires; it reports false
// when the id was recorded already (a reused authorization). Expired ids are
// forgotten first.
func (d *DB) UseAuth(ctx context.Context, id string, expires, now time.Time) (bool, error) {
	var fresh bool
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM cn_blossom.auth_seen WHERE expires_at < $1`, now); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO cn_blossom.auth_seen (event_id, expires_at) VALUES ($1, $2)
			ON CONFLICT DO NOTHING`, id, expires)
		fresh = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record authorization: %w", err)
	}
	return fresh, nil
}

// Add makes pubkey an owner of the blob whose bytes are in the synced file
// tmp: in one transaction, holding pubkey's quota lock and then the blob
// row's lock, it checks the quota (ErrQuota; a claim pubkey holds already
// costs nothing), refuses a hidden blob (ErrHidden), inserts the blob if new,
// moves tmp to the blob's path unless its file is there, and records the
// claim and an upload in cn_blossom.log. tmp is gone when Add returns. It
// reports whether the blob row was new. A delete of the same hash takes the
// same row lock before it moves the file away, so the two cannot interleave
// between the file and the rows.
func (d *DB) Add(ctx context.Context, hash string, size int64, typ, pubkey, tmp string, quota Quota, now time.Time) (created bool, err error) {
	defer func() { _ = os.Remove(tmp) }() // no-op once moved
	err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('cn_blossom.quota:' || $1, 0))`, pubkey); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO cn_blossom.blobs (sha256, size, type, created) VALUES ($1, $2, $3, $4)
			ON CONFLICT DO NOTHING`, key(hash), size, typ, now)
		if err != nil {
			return err
		}
		created = tag.RowsAffected() == 1
		var hidden *string
		var owned bool
		if err := tx.QueryRow(ctx, `SELECT hidden, EXISTS (SELECT 1 FROM cn_blossom.owners WHERE sha256 = $1 AND pubkey = $2)
			FROM cn_blossom.blobs WHERE sha256 = $1 FOR UPDATE`, key(hash), pubkey).Scan(&hidden, &owned); err != nil {
			return err
		}
		if hidden != nil {
			return ErrHidden
		}
		if !owned {
			u, err := d.Usage(ctx, tx, pubkey)
			if err != nil {
				return err
			}
			if (quota.Bytes > 0 && u.Bytes+size > quota.Bytes) || (quota.Blobs > 0 && u.Blobs+1 > quota.Blobs) {
				return ErrQuota
			}
		}
		if _, err := d.Files.place(tmp, hash); err != nil {
			return fmt.Errorf("store blob file: %w", err)
		}
		if owned {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_blossom.owners (sha256, pubkey, uploaded) VALUES ($1, $2, $3)`,
			key(hash), pubkey, now); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO cn_blossom.log (at, op, sha256, pubkey) VALUES ($1, 'upload', $2, $3)`, now, key(hash), pubkey)
		return err
	})
	if err != nil && !errors.Is(err, ErrQuota) && !errors.Is(err, ErrHidden) {
		err = fmt.Errorf("add blob: %w", err)
	}
	return created, err
}

// Remove takes pubkey's claim on hash away (ErrNotFound when it holds none).
// When no claim remains the blob's file is moved aside while the row is
// locked and its row deleted (kept, without a file, if the blob is hidden,
// so that it cannot come back); the file is unlinked after the commit, or
// put back if the commit fails.
func (d *DB) Remove(ctx context.Context, hash, pubkey string, now time.Time) error {
	var trashed string
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		var hidden *string
		if err := tx.QueryRow(ctx, `SELECT hidden FROM cn_blossom.blobs WHERE sha256 = $1 FOR UPDATE`, key(hash)).Scan(&hidden); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM cn_blossom.owners WHERE sha256 = $1 AND pubkey = $2`, key(hash), pubkey)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, `INSERT INTO cn_blossom.log (at, op, sha256, pubkey) VALUES ($1, 'delete', $2, $3)`, now, key(hash), pubkey); err != nil {
			return err
		}
		var left bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cn_blossom.owners WHERE sha256 = $1)`, key(hash)).Scan(&left); err != nil {
			return err
		}
		if left {
			return nil
		}
		if hidden == nil {
			if _, err := tx.Exec(ctx, `DELETE FROM cn_blossom.blobs WHERE sha256 = $1`, key(hash)); err != nil {
				return err
			}
		}
		trashed, err = d.Files.trash(hash)
		return err
	})
	d.settle(hash, trashed, err)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("remove blob: %w", err)
	}
	return err
}

// settle unlinks a file moved aside by a committed transaction, or puts it
// back after a failed one.
func (d *DB) settle(hash, trashed string, err error) {
	if trashed == "" {
		return
	}
	if err == nil {
		_ = os.Remove(trashed)
		return
	}
	if _, serr := os.Stat(d.Files.Path(hash)); errors.Is(serr, fs.ErrNotExist) {
		_ = os.Rename(trashed, d.Files.Path(hash))
	} else {
		_ = os.Remove(trashed)
	}
}

// List returns pubkey's blobs that are not hidden, newest claim first, with
// claims made in [since, until] (zero: unbounded), at most limit.
func (d *DB) List(ctx context.Context, pubkey string, since, until time.Time, limit int) ([]Blob, error) {
	rows, err := d.Pool.Query(ctx, `SELECT encode(b.sha256, 'hex'), b.size, b.type, b.created, o.uploaded
		FROM cn_blossom.owners o JOIN cn_blossom.blobs b USING (sha256)
		WHERE o.pubkey = $1 AND b.hidden IS NULL
		  AND ($2::timestamptz IS NULL OR o.uploaded >= $2) AND ($3::timestamptz IS NULL OR o.uploaded <= $3)
		ORDER BY o.uploaded DESC, b.sha256 LIMIT $4`, pubkey, nullTime(since), nullTime(until), limit)
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Blob, error) {
		var b Blob
		err := r.Scan(&b.SHA256, &b.Size, &b.Type, &b.Created, &b.Uploaded)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	return out, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
