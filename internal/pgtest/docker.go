package pgtest

import (
	"context"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

// dockerServer starts a throw-away Postgres container when a Docker daemon answers.
func dockerServer(ctx context.Context) (string, func(), bool) {
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", nil, false
	}
	defer provider.Close()
	if err := provider.Health(hctx); err != nil {
		return "", nil, false
	}
	ctr, err := tcpostgres.Run(ctx, "postgres:15-alpine",
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
	)
	if err != nil {
		return "", nil, false
	}
	u, err := ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = ctr.Terminate(context.Background())
		return "", nil, false
	}
	return u, func() { _ = ctr.Terminate(context.Background()) }, true
}
