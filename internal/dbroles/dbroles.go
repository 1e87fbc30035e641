// Package dbroles sets up the node's least-privilege database roles.
//
// Apply creates NOLOGIN group roles, one per service, and (re)grants each the
// privileges its daemon needs in the current database. `cnctl migrate` runs it
// after the migrations, every time, so tables that later migrations add are
// covered; that is why this is Go and not a numbered migration (a migration runs
// once, and role names carry a configurable prefix). It is idempotent: roles that
// exist are kept, and the per-database privileges are rebuilt from scratch in one
// transaction (revoke everything the managed roles hold on the cn_* schemas, then
// grant the plan below), so what a role may do is exactly this file.
//
// With the default prefix the roles are:
//
//   - cn_role_operator: owns every cn_* schema and everything in it (Apply moves
//     ownership to it), so `cnctl` run by a member can do everything, including
//     migrate, outbox prune (drops partitions) and reindex (swaps tables).
//   - cn_role_relay: reads and writes its cn_relay tables (events, topics, tags,
//     deletion targets, members), appends to the outbox, extends its partitions
//     (cn_relay.outbox_ensure_partitions becomes SECURITY DEFINER), manages
//     cn_admin (NIP-86), reads cn_index (NIP-50), cn_moderation (the queue, and
//     records operator decisions in cn_moderation.actions) and cn_trust.
//   - cn_role_indexer: a consumer (below) that writes cn_index.
//   - cn_role_bridge: a consumer (below) and nothing else: it reads the outbox
//     and the events it publishes to NATS, and writes only its own offset row.
//   - cn_role_moderator, cn_role_trust: consumers that write their own schema and
//     also publish the node's events and hides through the store path, so they are
//     publishers too (below); the moderator reads cn_admin and records ban hides.
//   - Blossom media (cn_blossom, internal/blossom): the relay reads and writes
//     it; the moderator reads it and may only set blobs.hidden and append to
//     its log; the dashboard reads it.
//   - cn_role_dashboard: reads cn_relay, and for its console the NIP-86 lists
//     of cn_admin, cn_moderation and cn_trust.scores (never the NIP-98 replay
//     record or the change log).
//   - cn_role_consumer (granted to the four consumers): reads cn_relay, and may
//     insert and update only its own row of cn_relay.consumer_offsets and of
//     cn_relay.consumer_stream_positions (a stream consumer's position, schema
//     0021: the remote indexer's database) and its own rows of
//     cn_relay.consumer_dead_letters (row-level security: an update that names
//     another consumer's row fails with SQLSTATE 42501; the consumer column
//     itself is not updatable).
//   - cn_role_publisher (granted to the relay, the moderator and trust): the store
//     path: SELECT, INSERT, UPDATE on cn_relay's own tables, INSERT into the outbox,
//     DELETE of the tag rows of a version no longer effective, and DELETE on
//     cn_relay.events: a superseded version of the node's own state
//     (39000-39005, 13534, 33534, trust's 30382) is not kept (issue 47; the store path
//     deletes no other event).
//
// What "a consumer cannot write cn_relay.events" means: true for the indexer and
// the dashboard. The moderator and trust publish the node's signed events and
// hides through the same store path as the relay, so their roles can insert and
// update cn_relay's event tables and append to the outbox (never delete an
// event, only the tag rows of a version no longer effective; never touch the
// outbox's rows, partitions or another consumer's offset or schema).
// Narrowing that further would mean SECURITY DEFINER functions for the store path.
//
// Postgres keeps some maintenance to table owners: under these roles the
// indexer's merge of the GIN pending list (gin_clean_pending_list) and any
// ANALYZE a daemon runs are refused (the indexer logs it once and Postgres merges
// inline; ANALYZE only warns and skips). Run those as the operator, or add a
// SECURITY DEFINER wrapper here.
//
// Roles are cluster-wide while grants are per database: several node databases on
// one server share the roles (or use different prefixes). Creating a role tolerates
// a concurrent Apply creating it too.
package dbroles

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/kukuri/communitynode/schema"
)

// DefaultPrefix starts every role name unless configured otherwise.
const DefaultPrefix = "cn_role_"

// The services, as role name suffixes.
const (
	Operator  = "operator"
	Relay     = "relay"
	Indexer   = "indexer"
	Moderator = "moderator"
	Trust     = "trust"
	Dashboard = "dashboard"
	Bridge    = "bridge"
	Consumer  = "consumer"  // granted to the indexer, the moderator, trust and the bridge
	Publisher = "publisher" // granted to the relay, the moderator and trust
)

// ConsumerNames maps each consumer service to the consumer_offsets row it owns.
var ConsumerNames = map[string]string{
	Indexer:   "index-v1",
	Moderator: "moderation-v1",
	Trust:     "trust-v1",
	Bridge:    "bridge-v1",
}

// Services lists every role Apply manages, the operator first.
var Services = []string{Operator, Consumer, Publisher, Relay, Indexer, Moderator, Trust, Dashboard, Bridge}

// memberships: role -> the helper roles it is a member of.
var memberships = map[string][]string{
	Relay:     {Publisher},
	Indexer:   {Consumer},
	Moderator: {Consumer, Publisher},
	Trust:     {Consumer, Publisher},
	Bridge:    {Consumer},
}

var prefixPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,40}$`)

// Config names the roles.
type Config struct {
	Prefix string // default DefaultPrefix
}

// Validate checks the prefix is a plain lower-case identifier start.
func (c Config) Validate() error {
	if !prefixPattern.MatchString(c.prefix()) {
		return fmt.Errorf("role prefix %q: want lower-case letters, digits and _, at most 41", c.Prefix)
	}
	return nil
}

func (c Config) prefix() string {
	if c.Prefix == "" {
		return DefaultPrefix
	}
	return c.Prefix
}

// Role returns the role name of a service.
func (c Config) Role(service string) string { return c.prefix() + service }

// Apply creates the group roles if missing and rebuilds their privileges in the
// current database. The connecting user must be a superuser, or have CREATEROLE
// and own the cn_* objects; it is made a member of the operator role if it is not.
func Apply(ctx context.Context, conn *pgx.Conn, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = ensureRoles(ctx, conn, cfg); err == nil || !racing(err) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 20 * time.Millisecond) // back off from a concurrent Apply
	}
	if err != nil {
		return fmt.Errorf("create roles: %w", err)
	}
	// The grant transaction changes owners and policies, which lock tables
	// exclusively, on a node that may be running: a writer's transaction that
	// locks them in another order (an ingest: the event tables, then the outbox)
	// can make Postgres abort this one as a deadlock victim. It is all-or-nothing
	// and idempotent, so it is simply run again.
	for attempt := 0; ; attempt++ {
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return grant(ctx, tx, cfg) })
		if err == nil || attempt == grantAttempts-1 || !retryable(err) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
		}
	}
	if err != nil {
		return fmt.Errorf("grant roles: %w", err)
	}
	return nil
}

// grantAttempts bounds the runs of the grant transaction.
const grantAttempts = 8

// retryable reports errors after which the grant transaction, rolled back, may
// simply be run again.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// racing reports errors a concurrent Apply on another database can cause while
// both create the same cluster-wide roles or memberships.
func racing(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", "42710", "40001", "40P01", "XX000": // unique, duplicate, serialization, deadlock, "tuple concurrently updated"
		return true
	}
	return false
}

func ensureRoles(ctx context.Context, conn *pgx.Conn, cfg Config) error {
	for _, s := range Services {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN
			IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = %s) THEN
				CREATE ROLE %s NOLOGIN;
			END IF;
		EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
		END $$`, quoteLiteral(cfg.Role(s)), ident(cfg.Role(s)))); err != nil {
			return fmt.Errorf("role %s: %w", cfg.Role(s), err)
		}
	}
	for _, s := range Services {
		for _, group := range memberships[s] {
			if err := ensureMember(ctx, conn, cfg.Role(group), cfg.Role(s)); err != nil {
				return err
			}
		}
	}
	var super bool
	var user string
	if err := conn.QueryRow(ctx, "SELECT rolsuper, current_user FROM pg_roles WHERE rolname = current_user").Scan(&super, &user); err != nil {
		return fmt.Errorf("look up current user: %w", err)
	}
	if !super {
		// ALTER ... OWNER TO needs membership in the new owner.
		return ensureMember(ctx, conn, cfg.Role(Operator), user)
	}
	return nil
}

func ensureMember(ctx context.Context, conn *pgx.Conn, group, member string) error {
	var is bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_auth_members m
		JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles r ON r.oid = m.member
		WHERE g.rolname = $1 AND r.rolname = $2)`, group, member).Scan(&is); err != nil {
		return fmt.Errorf("look up membership of %s in %s: %w", member, group, err)
	}
	if is {
		return nil
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("GRANT %s TO %s", ident(group), ident(member))); err != nil {
		return fmt.Errorf("grant %s to %s: %w", group, member, err)
	}
	return nil
}

// operatorTables are cn_relay tables only the operator and the consumer runtime
// write; the publisher gets every other table of cn_relay.
var operatorTables = []string{"consumer_offsets", "consumer_dead_letters", "consumer_offset_resets", "consumer_stream_positions",
	"outbox_retention", "outbox_partitioning", "events_outbox", "outbox_head"}

// relayOnlyTables are cn_relay tables only relay processes write (not the
// publisher's other roles): the writer lease (schema 0037), which a
// moderator or trust process must not be able to take or drop.
var relayOnlyTables = []string{"writer_lease"}

func grant(ctx context.Context, tx pgx.Tx, cfg Config) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schema.RolesLock); err != nil {
		return err
	}
	// cn_relay.outbox_ensure_partitions, which every writer calls on its own,
	// takes this lock before it reads the outbox's tables and then locks the
	// outbox to add a partition; the owner changes below lock the same tables in
	// catalogue order. Holding the function's lock first makes the two queue
	// instead of deadlocking (TestApplyWhileTheNodeWrites).
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock("+schema.PartitionsLockSQL+")"); err != nil {
		return err
	}
	op := cfg.Role(Operator)
	schemas, err := collect(ctx, tx, `SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'cn\_%' ORDER BY 1`)
	if err != nil {
		return fmt.Errorf("list schemas: %w", err)
	}
	if !slices.Contains(schemas, "cn_relay") {
		return errors.New("schema cn_relay missing: run the migrations first")
	}
	has := func(s string) bool { return slices.Contains(schemas, s) }

	// 1. The operator owns everything in the node's schemas.
	alters, err := collect(ctx, tx, `
		SELECT format('ALTER SCHEMA %I OWNER TO %I', nspname, $1::text) FROM pg_namespace
		 WHERE nspname LIKE 'cn\_%' AND nspowner <> $1::text::regrole
		UNION ALL
		SELECT format('ALTER %s %s OWNER TO %I',
		       CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
		                      WHEN 'S' THEN 'SEQUENCE' WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END,
		       c.oid::regclass, $1::text)
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname LIKE 'cn\_%' AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
		   AND c.relowner <> $1::text::regrole
		   AND NOT (c.relkind = 'S' AND EXISTS (SELECT 1 FROM pg_depend d
		            WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
		UNION ALL
		SELECT format('ALTER ROUTINE %s OWNER TO %I', p.oid::regprocedure, $1::text)
		  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname LIKE 'cn\_%' AND p.proowner <> $1::text::regrole
		UNION ALL
		SELECT format('ALTER %s %s OWNER TO %I', CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END, t.oid::regtype, $1::text)
		  FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		 WHERE n.nspname LIKE 'cn\_%' AND t.typtype IN ('e', 'd') AND t.typowner <> $1::text::regrole`, op)
	if err != nil {
		return fmt.Errorf("list objects to give the operator: %w", err)
	}

	var sql []string
	sql = append(sql, alters...)

	// 2. Writers extend the outbox partitions through a function that runs as its
	// owner (creating a partition needs ownership of the outbox).
	ensure := "cn_relay.outbox_ensure_partitions(integer)"
	sql = append(sql,
		"ALTER FUNCTION "+ensure+" SECURITY DEFINER SET search_path = pg_catalog, pg_temp",
		"REVOKE ALL ON FUNCTION "+ensure+" FROM PUBLIC")

	// 3. Start from nothing for every managed role.
	var defaultsFor []string // roles whose new objects get default privileges
	defaultsFor = append(defaultsFor, op)
	var user string
	if err := tx.QueryRow(ctx, "SELECT current_user::text").Scan(&user); err != nil {
		return err
	}
	if user != op {
		defaultsFor = append(defaultsFor, user)
	}
	for _, s := range Services {
		if s == Operator {
			continue
		}
		r := ident(cfg.Role(s))
		for _, sc := range schemas {
			q := ident(sc)
			sql = append(sql,
				"REVOKE ALL ON SCHEMA "+q+" FROM "+r,
				"REVOKE ALL ON ALL TABLES IN SCHEMA "+q+" FROM "+r,
				"REVOKE ALL ON ALL SEQUENCES IN SCHEMA "+q+" FROM "+r,
				"REVOKE ALL ON ALL FUNCTIONS IN SCHEMA "+q+" FROM "+r)
			for _, d := range defaultsFor {
				sql = append(sql,
					"ALTER DEFAULT PRIVILEGES FOR ROLE "+ident(d)+" IN SCHEMA "+q+" REVOKE ALL ON TABLES FROM "+r,
					"ALTER DEFAULT PRIVILEGES FOR ROLE "+ident(d)+" IN SCHEMA "+q+" REVOKE ALL ON SEQUENCES FROM "+r)
			}
		}
	}

	// 4. The plan.
	role := func(s string) string { return ident(cfg.Role(s)) }
	// schemaWide grants on every table (and sequence) of a schema, now and for
	// tables the operator or the migrating user create later (a reindex).
	schemaWide := func(sc, privs string, sequences bool, services ...string) {
		if !has(sc) {
			return
		}
		q := ident(sc)
		for _, s := range services {
			sql = append(sql, "GRANT USAGE ON SCHEMA "+q+" TO "+role(s),
				"GRANT "+privs+" ON ALL TABLES IN SCHEMA "+q+" TO "+role(s))
			for _, d := range defaultsFor {
				sql = append(sql, "ALTER DEFAULT PRIVILEGES FOR ROLE "+ident(d)+" IN SCHEMA "+q+" GRANT "+privs+" ON TABLES TO "+role(s))
			}
			if sequences {
				sql = append(sql, "GRANT USAGE ON ALL SEQUENCES IN SCHEMA "+q+" TO "+role(s))
				for _, d := range defaultsFor {
					sql = append(sql, "ALTER DEFAULT PRIVILEGES FOR ROLE "+ident(d)+" IN SCHEMA "+q+" GRANT USAGE ON SEQUENCES TO "+role(s))
				}
			}
		}
	}
	on := func(privs, table string, services ...string) {
		for _, s := range services {
			sql = append(sql, "GRANT "+privs+" ON "+table+" TO "+role(s))
		}
	}

	// Reading cn_relay: everyone but the operator (who owns it).
	schemaWide("cn_relay", "SELECT", false, Relay, Consumer, Dashboard, Publisher)

	// The publisher: the store path writes every cn_relay table that is not the
	// outbox's or the consumers' (so a table a later migration adds for the store
	// is covered), and appends to the outbox.
	relayTables, err := collect(ctx, tx, `
		SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = 'cn_relay' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		   AND c.relname <> ALL ($1) ORDER BY 1`, append(slices.Clone(operatorTables), relayOnlyTables...))
	if err != nil {
		return fmt.Errorf("list relay tables: %w", err)
	}
	for _, t := range relayTables {
		on("SELECT, INSERT, UPDATE", t, Publisher)
	}
	on("INSERT", "cn_relay.events_outbox", Publisher)
	on("UPDATE", "cn_relay.outbox_head", Publisher)        // moved by every append (schema 0022)
	on("DELETE", "cn_relay.pending_events", Publisher)     // published or expired (schema 0017)
	on("DELETE", "cn_relay.membership_pending", Publisher) // admitted or denied join requests (schema 0031)
	on("DELETE", "cn_relay.group_access", Publisher)       // a group no longer private or hidden (schema 0026)
	on("DELETE", "cn_relay.event_tags", Publisher)         // a version no longer effective keeps no tag rows (issue 47)
	on("DELETE", "cn_relay.events", Publisher)             // a superseded version of the node's state is not kept (issue 47)
	on("DELETE", "cn_relay.group_users", Publisher)        // groups.Replace rewrites a group's users (schema 0036)
	for _, t := range relayOnlyTables {
		on("INSERT, UPDATE, DELETE", "cn_relay."+t, Relay) // a relay's row of the writer lease, and rows long expired (schema 0037)
	}
	on("USAGE", "SEQUENCE cn_relay.events_outbox_seq_seq", Publisher)
	on("EXECUTE", "FUNCTION "+ensure, Relay)
	on("EXECUTE", "FUNCTION cn_relay.analyze_query_table(text)", Relay) // statistics when autovacuum is off (schema 0014)
	// Every read for clients checks private and hidden NIP-29 groups (schema 0026):
	// the relay's queries, the indexer's search.
	on("EXECUTE", "FUNCTION cn_relay.group_keeps(text, integer, text[])", Relay, Consumer)
	on("EXECUTE", "FUNCTION cn_relay.group_keeps_doc(text[], integer)", Relay, Consumer)

	// The consumer runtime: its own offset row and dead letters (row-level
	// security below), never the consumer column.
	// Every column but consumer, which names the row's owner.
	butConsumer := func(table string) (string, error) {
		cols, err := collect(ctx, tx, `SELECT quote_ident(attname) FROM pg_attribute
			WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped
			  AND attname <> 'consumer' ORDER BY attnum`, table)
		if err != nil {
			return "", fmt.Errorf("list the columns of %s: %w", table, err)
		}
		return strings.Join(cols, ", "), nil
	}
	cols, err := butConsumer("cn_relay.consumer_offsets")
	if err != nil {
		return err
	}
	on("INSERT, UPDATE ("+cols+")", "cn_relay.consumer_offsets", Consumer)
	on("INSERT, UPDATE, DELETE", "cn_relay.consumer_dead_letters", Consumer)
	if cols, err = butConsumer("cn_relay.consumer_stream_positions"); err != nil {
		return err
	}
	on("INSERT, UPDATE ("+cols+")", "cn_relay.consumer_stream_positions", Consumer)
	on("EXECUTE", "FUNCTION cn_relay.consumer_advance(text, text, bigint, bigint, bigint, boolean)", Consumer)

	// Each consumer's own schema.
	schemaWide("cn_index", "SELECT, INSERT, UPDATE, DELETE", true, Indexer)
	schemaWide("cn_moderation", "SELECT, INSERT, UPDATE, DELETE", true, Moderator)
	schemaWide("cn_trust", "SELECT, INSERT, UPDATE, DELETE", true, Trust)
	schemaWide("cn_trust", "SELECT", false, Moderator) // report rules with min_reporter_rank read ranks

	// The relay: NIP-86 state, NIP-50 search, the moderation queue and operator
	// decisions, trust ranks.
	schemaWide("cn_admin", "SELECT, INSERT, UPDATE, DELETE", true, Relay)
	schemaWide("cn_index", "SELECT", false, Relay)
	schemaWide("cn_moderation", "SELECT", false, Relay)
	schemaWide("cn_trust", "SELECT", false, Relay)
	if has("cn_moderation") {
		on("INSERT", "cn_moderation.actions", Relay)
		sql = append(sql, "GRANT USAGE ON ALL SEQUENCES IN SCHEMA cn_moderation TO "+role(Relay))
	}

	// Blossom media (schema 0038): the relay serves and writes it; the
	// moderator hides reported blobs; the dashboard shows them.
	schemaWide("cn_blossom", "SELECT, INSERT, UPDATE, DELETE", true, Relay)
	schemaWide("cn_blossom", "SELECT", false, Moderator, Dashboard)
	if has("cn_blossom") {
		on("UPDATE (hidden, hidden_at)", "cn_blossom.blobs", Moderator)
		on("INSERT", "cn_blossom.log", Moderator)
		sql = append(sql, "GRANT USAGE ON ALL SEQUENCES IN SCHEMA cn_blossom TO "+role(Moderator))
	}

	// The moderator checks bans and records the hides it makes for them.
	schemaWide("cn_admin", "SELECT", false, Moderator)
	if has("cn_admin") {
		on("INSERT", "cn_admin.ban_hides", Moderator)
	}

	// The dashboard's console (internal/console) shows what admins decide on:
	// the NIP-86 lists, the moderation queue, reports and labels, trust ranks.
	// Not the NIP-98 replay record, the change log or the ban hides.
	if has("cn_admin") {
		sql = append(sql, "GRANT USAGE ON SCHEMA cn_admin TO "+role(Dashboard))
		for _, t := range []string{"state", "pubkeys", "events", "kinds", "ips", "info"} {
			on("SELECT", "cn_admin."+t, Dashboard)
		}
	}
	schemaWide("cn_moderation", "SELECT", false, Dashboard)
	if has("cn_trust") {
		sql = append(sql, "GRANT USAGE ON SCHEMA cn_trust TO "+role(Dashboard))
		on("SELECT", "cn_trust.scores", Dashboard)
	}

	// 5. Row-level security on the consumers' rows. The owner (the operator) and
	// superusers bypass it.
	for _, t := range []string{"cn_relay.consumer_offsets", "cn_relay.consumer_dead_letters", "cn_relay.consumer_stream_positions"} {
		sql = append(sql, "ALTER TABLE "+t+" ENABLE ROW LEVEL SECURITY",
			"DROP POLICY IF EXISTS read_all ON "+t,
			"CREATE POLICY read_all ON "+t+" FOR SELECT USING (true)")
		for _, s := range []string{Indexer, Moderator, Trust, Bridge} {
			own := "consumer = " + quoteLiteral(ConsumerNames[s])
			name := cfg.Role(s)
			for _, p := range []struct{ suffix, def string }{
				{"_insert", "FOR INSERT TO " + role(s) + " WITH CHECK (" + own + ")"},
				// USING (true): an UPDATE of another consumer's row reaches the check
				// and fails loudly instead of matching nothing.
				{"_update", "FOR UPDATE TO " + role(s) + " USING (true) WITH CHECK (" + own + ")"},
				{"_delete", "FOR DELETE TO " + role(s) + " USING (" + own + ")"},
			} {
				sql = append(sql, "DROP POLICY IF EXISTS "+ident(name+p.suffix)+" ON "+t,
					"CREATE POLICY "+ident(name+p.suffix)+" ON "+t+" "+p.def)
			}
		}
	}

	b := &pgx.Batch{}
	for _, s := range sql {
		b.Queue(s)
	}
	res := tx.SendBatch(ctx, b)
	for _, s := range sql {
		if _, err := res.Exec(); err != nil {
			_ = res.Close()
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return res.Close()
}

func collect(ctx context.Context, tx pgx.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
