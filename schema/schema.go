// Package schema holds the node's SQL migrations and applies them.
//
// Migrations are the numbered files NNNN_name.sql in this directory, embedded into
// the binary. Migrate applies the ones a database has not recorded yet, each in its
// own transaction together with its row in cn_meta.schema_migrations, so a migration
// is either applied and recorded or not at all. Concurrent migrators serialise on a
// session advisory lock; running Migrate again is a no-op. Services never call
// Migrate at start-up: the operator runs `cnctl migrate`.
package schema

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

//go:embed *.sql
var files embed.FS

// Migration is one numbered SQL file.
type Migration struct {
	Version  int
	Name     string
	SQL      string
	Checksum string // hex SHA-256 of SQL
}

// Applied is a migration recorded in the database.
type Applied struct {
	Version   int
	Name      string
	Checksum  string
	AppliedAt time.Time
}

// StatusRow pairs a known migration with its applied record, if any.
type StatusRow struct {
	Migration
	AppliedAt *time.Time
}

// ErrChecksumMismatch reports that an applied migration's file has changed since.
var ErrChecksumMismatch = errors.New("applied migration differs from the embedded file")

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// Migrations returns the embedded migrations in version order.
func Migrations() ([]Migration, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil, fmt.Errorf("read embedded migrations: %w", err)
	}
	var out []Migration
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %q: name must be NNNN_name.sql", e.Name())
		}
		body, err := files.ReadFile(e.Name())
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", e.Name(), err)
		}
		v, _ := strconv.Atoi(m[1])
		sum := sha256.Sum256(body)
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(body), Checksum: hex.EncodeToString(sum[:])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations with version %04d", out[i].Version)
		}
	}
	return out, nil
}

// Fingerprint identifies the full set of embedded migrations (test harnesses key
// their template databases by it).
func Fingerprint() (string, error) {
	ms, err := Migrations()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d:%s\n", m.Version, m.Checksum)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Migrate applies every embedded migration the database has not recorded, in
// version order, and returns the ones it applied. It refuses to run if an applied
// migration's checksum differs from the embedded file.
func Migrate(ctx context.Context, conn *pgx.Conn) ([]Migration, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", MigrateLock); err != nil {
		return nil, fmt.Errorf("take migration lock: %w", err)
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", MigrateLock)
	}()
	if _, err := conn.Exec(ctx, `
		CREATE SCHEMA IF NOT EXISTS cn_meta;
		CREATE TABLE IF NOT EXISTS cn_meta.schema_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			checksum   text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return nil, fmt.Errorf("create cn_meta.schema_migrations: %w", err)
	}
	applied, err := appliedByVersion(ctx, conn)
	if err != nil {
		return nil, err
	}
	var done []Migration
	for _, m := range ms {
		if a, ok := applied[m.Version]; ok {
			if a.Checksum != m.Checksum {
				return done, fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, ErrChecksumMismatch)
			}
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.Exec(ctx,
				"INSERT INTO cn_meta.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)",
				m.Version, m.Name, m.Checksum)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("apply migration %04d_%s: %w", m.Version, m.Name, err)
		}
		done = append(done, m)
	}
	return done, nil
}

// Status lists every embedded migration with the time it was applied, if it was,
// followed by any applied version this binary does not know (a newer binary ran).
func Status(ctx context.Context, conn *pgx.Conn) ([]StatusRow, []Applied, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, nil, err
	}
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('cn_meta.schema_migrations') IS NOT NULL").Scan(&exists); err != nil {
		return nil, nil, fmt.Errorf("look for cn_meta.schema_migrations: %w", err)
	}
	applied := map[int]Applied{}
	if exists {
		if applied, err = appliedByVersion(ctx, conn); err != nil {
			return nil, nil, err
		}
	}
	rows := make([]StatusRow, 0, len(ms))
	for _, m := range ms {
		r := StatusRow{Migration: m}
		if a, ok := applied[m.Version]; ok {
			at := a.AppliedAt
			r.AppliedAt = &at
			delete(applied, m.Version)
		}
		rows = append(rows, r)
	}
	var unknown []Applied
	for _, a := range applied {
		unknown = append(unknown, a)
	}
	sort.Slice(unknown, func(i, j int) bool { return unknown[i].Version < unknown[j].Version })
	return rows, unknown, nil
}

func appliedByVersion(ctx context.Context, conn *pgx.Conn) (map[int]Applied, error) {
	rows, err := conn.Query(ctx, "SELECT version, name, checksum, applied_at FROM cn_meta.schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	out := map[int]Applied{}
	for rows.Next() {
		var a Applied
		if err := rows.Scan(&a.Version, &a.Name, &a.Checksum, &a.AppliedAt); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan applied migration: %w", err)
		}
		out[a.Version] = a
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	return out, nil
}
