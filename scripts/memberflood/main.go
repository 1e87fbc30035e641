// Command memberflood runs the member flood of issue 47 against a relay and
// prints what it cost the database (scripts/member-flood.sh runs it).
//
// One fresh key posts a note in -topic (so that it is a community member),
// creates group -group (9007), adds -members made-up keys with one kind 9000,
// then sends -singles kind 9000s of one made-up key each, each waiting for its
// OK: every one makes the node sign a new member list (39002) naming every
// member. Before the first event and after the last it prints, from
// -database-url, pg_total_relation_size of each table the flood touches (an
// outbox's partitions summed), the live and dead tuples of each, the
// database's size and the WAL written (pg_current_wal_lsn difference, which
// counts the whole cluster: run it on a cluster of its own). -vacuum-every N
// runs a plain VACUUM of those tables after every N singles (as autovacuum
// would); -vacuum-end runs one after the flood and prints the sizes again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nbd-wtf/go-nostr"
)

var tables = []string{
	"cn_relay.events", "cn_relay.event_tags", "cn_relay.event_topics", "cn_relay.events_outbox",
	"cn_relay.groups", "cn_relay.group_users", "cn_relay.group_access", "cn_relay.group_withheld", "cn_relay.deletion_targets",
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "memberflood:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("url", "ws://127.0.0.1:7794", "relay WebSocket URL")
	dbURL := flag.String("database-url", "", "the relay's database (sizes, WAL, VACUUM)")
	group := flag.String("group", "flood", "NIP-29 group id")
	topic := flag.String("topic", "bench", "t tag of the creator's first note")
	members := flag.Int("members", 1500, "made-up keys added by the first 9000")
	singles := flag.Int("singles", 400, "9000s of one made-up key each")
	vacuumEvery := flag.Int("vacuum-every", 0, "VACUUM the tables after every N singles (0: never)")
	vacuumEnd := flag.Bool("vacuum-end", false, "VACUUM the tables after the flood and print the sizes again")
	flag.Parse()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, *dbURL)
	if err != nil {
		return fmt.Errorf("connect to the database: %w", err)
	}
	defer db.Close(ctx)
	relay, err := nostr.RelayConnect(ctx, *url)
	if err != nil {
		return fmt.Errorf("connect to the relay: %w", err)
	}
	defer relay.Close()

	before, err := measure(ctx, db)
	if err != nil {
		return err
	}
	sk := nostr.GeneratePrivateKey()
	at := nostr.Now() - nostr.Timestamp(*singles) - 10
	send := func(kind int, tags nostr.Tags) error {
		at++
		ev := nostr.Event{Kind: kind, CreatedAt: at, Tags: tags}
		if err := ev.Sign(sk); err != nil {
			return err
		}
		if err := relay.Publish(ctx, ev); err != nil {
			return fmt.Errorf("kind %d: %w", kind, err)
		}
		return nil
	}
	fake := func() string { pk, _ := nostr.GetPublicKey(nostr.GeneratePrivateKey()); return pk }
	h := nostr.Tag{"h", *group}
	start := time.Now()
	if err := send(1, nostr.Tags{{"t", *topic}}); err != nil {
		return err
	}
	if err := send(9007, nostr.Tags{h}); err != nil {
		return err
	}
	many := nostr.Tags{h}
	for range *members {
		many = append(many, nostr.Tag{"p", fake()})
	}
	if err := send(9000, many); err != nil {
		return err
	}
	for i := range *singles {
		if err := send(9000, nostr.Tags{h, {"p", fake()}}); err != nil {
			return err
		}
		if *vacuumEvery > 0 && (i+1)%*vacuumEvery == 0 {
			if err := vacuum(ctx, db); err != nil {
				return err
			}
		}
	}
	took := time.Since(start)
	if err := listsSigned(ctx, db); err != nil {
		return err
	}
	after, err := measure(ctx, db)
	if err != nil {
		return err
	}
	fmt.Printf("flood: 1 note, 1 9007, one 9000 of %d keys, %d single-key 9000s in %.1f s (vacuum every %d singles)\n",
		*members, *singles, took.Seconds(), *vacuumEvery)
	report("after the flood", before, after)
	if *vacuumEnd {
		if err := vacuum(ctx, db); err != nil {
			return err
		}
		vac, err := measure(ctx, db)
		if err != nil {
			return err
		}
		report("after the flood and a plain VACUUM of the tables", before, vac)
	}
	var superseded, rows int64
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE NOT e.is_effective), count(*) FROM cn_relay.event_tags g
		JOIN cn_relay.events e ON e.id = g.event_id WHERE e.kind = 39002`).Scan(&superseded, &rows); err != nil {
		return err
	}
	var versions int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM cn_relay.events WHERE kind = 39002`).Scan(&versions); err != nil {
		return err
	}
	fmt.Printf("39002: %d versions stored, %d event_tags rows (%d of superseded versions)\n", versions, rows, superseded)
	return nil
}

// sizes is one measurement: bytes, live and dead tuples per table, the
// database's size and the WAL position.
type sizes struct {
	bytes, live, dead map[string]int64
	database          int64
	wal               string
}

func measure(ctx context.Context, db *pgx.Conn) (sizes, error) {
	s := sizes{bytes: map[string]int64{}, live: map[string]int64{}, dead: map[string]int64{}}
	// pg_stat counters are sent at the end of a transaction, by each backend,
	// at most every PGSTAT_MIN_INTERVAL: ask for a fresh snapshot.
	if _, err := db.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return s, err
	}
	for _, t := range tables {
		var exists bool // group_users is new in migration 0036: an older build has none
		if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&exists); err != nil || !exists {
			if err != nil {
				return s, err
			}
			continue
		}
		var n, live, dead int64
		// A partitioned table (the outbox) has no storage of its own: sum its partitions.
		err := db.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(r)), 0)::bigint,
				coalesce(sum(s.n_live_tup), 0)::bigint, coalesce(sum(s.n_dead_tup), 0)::bigint
			FROM (SELECT relid AS r FROM pg_partition_tree($1::regclass) WHERE isleaf
			      UNION SELECT oid FROM pg_class WHERE oid = $1::regclass AND relkind = 'r') p
			LEFT JOIN pg_stat_user_tables s ON s.relid = p.r`, t).Scan(&n, &live, &dead)
		if err != nil {
			return s, fmt.Errorf("size of %s: %w", t, err)
		}
		s.bytes[t], s.live[t], s.dead[t] = n, live, dead
	}
	err := db.QueryRow(ctx, "SELECT pg_database_size(current_database()), pg_current_wal_lsn()::text").Scan(&s.database, &s.wal)
	return s, err
}

func vacuum(ctx context.Context, db *pgx.Conn) error {
	var present []string
	for _, t := range tables {
		var exists bool
		if err := db.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t).Scan(&exists); err != nil {
			return err
		}
		if exists {
			present = append(present, t)
		}
	}
	_, err := db.Exec(ctx, "VACUUM "+strings.Join(present, ", "))
	if err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return nil
}

func report(label string, before, after sizes) {
	fmt.Printf("%s:\n  %-26s %12s %12s %12s %10s %10s\n", label, "table", "before", "after", "growth", "live", "dead")
	var total int64
	for _, t := range tables {
		d := after.bytes[t] - before.bytes[t]
		total += d
		fmt.Printf("  %-26s %12s %12s %12s %10d %10d\n", t, mb(before.bytes[t]), mb(after.bytes[t]), mb(d), after.live[t], after.dead[t])
	}
	fmt.Printf("  %-26s %12s %12s %12s\n", "these tables", "", "", mb(total))
	fmt.Printf("  %-26s %12s %12s %12s\n", "database", mb(before.database), mb(after.database), mb(after.database-before.database))
	fmt.Printf("  WAL written (%s -> %s): %s\n", before.wal, after.wal, mb(walDiff(before.wal, after.wal)))
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/(1<<20)) }

// walDiff returns the bytes between two pg_lsn values ("X/Y").
func walDiff(a, b string) int64 { return lsn(b) - lsn(a) }

func lsn(s string) int64 {
	var hi, lo uint64
	if _, err := fmt.Sscanf(s, "%X/%X", &hi, &lo); err != nil {
		return 0
	}
	return int64(hi<<32 | lo)
}

// listsSigned waits until the relay signed the member lists it deferred
// (groups.MemberLists, migration 0036), so that the figures include the
// group's last list; a build without deferred lists has nothing to wait for.
func listsSigned(ctx context.Context, db *pgx.Conn) error {
	var has bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = 'cn_relay' AND table_name = 'groups' AND column_name = 'list_due')`).Scan(&has); err != nil || !has {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var waiting int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM cn_relay.groups WHERE list_due IS NOT NULL`).Scan(&waiting); err != nil {
			return err
		}
		if waiting == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d member lists still deferred after a minute", waiting)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
