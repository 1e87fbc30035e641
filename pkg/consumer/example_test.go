package consumer_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kukuri/communitynode/internal/pgtest"
	"github.com/kukuri/communitynode/pkg/consumer"
	"github.com/kukuri/communitynode/pkg/outbox"
)

// counter keeps a count per topic in the consumer's transaction, so that the
// counts and the offset commit together: a replay or a crash never counts a
// row twice.
type counter struct {
	want int
	seen int
	stop context.CancelFunc
}

func (c *counter) Handle(ctx context.Context, tx consumer.Tx, rows []outbox.Row) error {
	for _, r := range rows {
		if _, err := tx.Exec(ctx, `INSERT INTO topic_counts VALUES ($1, 1)
			ON CONFLICT (topic) DO UPDATE SET n = topic_counts.n + 1`, r.TopicID); err != nil {
			return err
		}
	}
	c.seen += len(rows)
	return nil
}

// AfterCommit runs once the batch and its offset have committed.
func (c *counter) AfterCommit() {
	if c.seen == c.want {
		c.stop() // the example is done; a service runs until it is stopped
	}
}

// A consumer applies the outbox in seq order and commits its offset with its
// effects.
func Example() {
	url, drop := pgtest.ForExample() // a database with the outbox's and consumers' tables (Schema)
	defer drop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		panic(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "CREATE TABLE topic_counts (topic text PRIMARY KEY, n int NOT NULL)"); err != nil {
		panic(err)
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { // some producer's rows
		_, err := outbox.Append(ctx, tx, []outbox.Record{
			{Op: outbox.OpUpsert, EventID: "e1", TopicID: "go", Kind: 1, CreatedAt: 1},
			{Op: outbox.OpUpsert, EventID: "e2", TopicID: "go", Kind: 1, CreatedAt: 2},
			{Op: outbox.OpUpsert, EventID: "e3", TopicID: "rust", Kind: 1, CreatedAt: 3},
		})
		return err
	})
	if err != nil {
		panic(err)
	}

	c, err := consumer.New(pool, &counter{want: 3, stop: cancel}, consumer.Config{Name: "example-v1"})
	if err != nil {
		panic(err)
	}
	if err := c.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		panic(err)
	}

	offset, _ := consumer.Offset(context.Background(), pool, "example-v1")
	var goN, rustN int
	_ = pool.QueryRow(context.Background(), `SELECT
		(SELECT n FROM topic_counts WHERE topic = 'go'), (SELECT n FROM topic_counts WHERE topic = 'rust')`).Scan(&goN, &rustN)
	fmt.Println("offset", offset, "go", goN, "rust", rustN)
	// Output:
	// offset 3 go 2 rust 1
}
