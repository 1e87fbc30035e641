package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/kukuri/communitynode/internal/dbroles"
)

// LoginAs creates a LOGIN role that is a member of group (a role that must exist,
// e.g. one of internal/dbroles) and returns the URL of db as that user. The server
// must accept it without a password (trust authentication, as the test servers
// here do). With setRole, its sessions start with SET ROLE group, so that objects
// it creates belong to the group. The role is dropped when t ends.
func (db *DB) LoginAs(t testing.TB, group string, setRole bool) string {
	t.Helper()
	ctx := context.Background()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "cn_login_" + strings.TrimPrefix(group, "cn_") + "_" + hex.EncodeToString(b[:])
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	stmt := fmt.Sprintf("CREATE ROLE %s LOGIN IN ROLE %s", pgx.Identifier{name}.Sanitize(), pgx.Identifier{group}.Sanitize())
	if _, err := admin.Exec(ctx, stmt); err != nil {
		t.Fatalf("pgtest: %s: %v", stmt, err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Errorf("pgtest: drop role %s: %v", name, err)
		}
	})
	if setRole {
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER ROLE %s SET role = %s", pgx.Identifier{name}.Sanitize(),
			pgx.Identifier{group}.Sanitize())); err != nil {
			t.Fatalf("pgtest: set role of %s: %v", name, err)
		}
	}
	u, err := url.Parse(db.URL)
	if err != nil || u.Scheme == "" {
		return db.URL + " user=" + name + " password=''"
	}
	u.User = url.User(name)
	return u.String()
}

// LoginAsService sets up the node's service roles in db (dbroles.Apply with the
// default prefix) and returns the URL of a new login user of service's role
// (dbroles.Relay, dbroles.Indexer, ...), dropped when t ends.
func (db *DB) LoginAsService(t testing.TB, service string) string {
	t.Helper()
	cfg := dbroles.Config{}
	if err := dbroles.Apply(context.Background(), db.Conn(t), cfg); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return db.LoginAs(t, cfg.Role(service), false)
}
