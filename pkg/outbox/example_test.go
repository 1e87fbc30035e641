package outbox_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// A producer appends the rows that announce its change in the transaction
// that makes the change, as its last statement; a reader follows seq. (The
// node's producers also wake readers after the commit: Notifier.)
func Example() {
	url, drop := pgtest.ForExample() // a database with the outbox's tables (Schema)
	defer drop()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		panic(err)
	}
	defer pool.Close()

	// Producer: the change and its outbox rows commit together.
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// ... write the change itself with tx ...
		_, err := outbox.Append(ctx, tx, []outbox.Record{
			{Op: outbox.OpUpsert, EventID: "e1", TopicID: "go", Kind: 1, CreatedAt: 1_700_000_000},
			{Op: outbox.OpDelete, EventID: "e0", TopicID: "go", Kind: 1, CreatedAt: 1_690_000_000, Reason: outbox.ReasonNIP09},
		})
		return err // Append was the last statement: commit now
	})
	if err != nil {
		panic(err)
	}

	// Reader: every row after the last seq it has seen, in seq order.
	rows, err := outbox.ReadAfter(ctx, pool, 0, 100, nil)
	if err != nil {
		panic(err)
	}
	for _, r := range rows {
		fmt.Println(strings.TrimSpace(fmt.Sprint(r.Seq, " ", r.Op, " ", r.EventID, " ", r.TopicID, " ", r.Reason)))
	}
	// Output:
	// 1 upsert e1 go
	// 2 delete e0 go nip09
}
